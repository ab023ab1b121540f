//! Derivative and batching rules of the sparse ops, as graph builders.
//!
//! With `A` the CSR matrix of `values` on the pattern:
//! * `y = op(A) x` (`op(A) = A` or `A^T`) is linear in each of `values`
//!   and `x`: `ẏ = op(Ȧ) x + op(A) ẋ`; `x̄ = op(A)^T ȳ`, and
//!   `v̄[p] = <ȳ[r_p], x[c_p]>` (`<ȳ[c_p], x[r_p]>` transposed), an SDDMM.
//! * `s = sddmm(a, b)`, `s[p] = <a[r_p], b[c_p]>`: `ā = S̄ b`, `b̄ = S̄^T a`
//!   with `S̄` the matrix of `s̄` on the pattern, and
//!   `ṡ = sddmm(ȧ, b) + sddmm(a, ḃ)`.
//!
//! The index inputs get no cotangent (they are integers).

use super::{sddmm_of, SPMM, SPMV};
use rlx_ir::custom::{CustomAttr, CustomOp};
use rlx_ir::op::BinaryOp;
use rlx_ir::{Graph, IrError, NodeId, Op, Shape};

fn err(op: &CustomOp, reason: impl Into<String>) -> IrError {
    IrError::InvalidOp {
        op: op.name.clone(),
        reason: reason.into(),
    }
}

fn trans_of(op: &CustomOp) -> Result<bool, IrError> {
    op.attrs.bool_or("trans", false).map_err(|e| err(op, e))
}

/// The product op over a dense operand of `rank` (spmv for 1, spmm for 2),
/// on `op`'s pattern, transposed when `trans`.
fn product_op(op: &CustomOp, rank: usize, trans: bool) -> CustomOp {
    let mut attrs = op.attrs.clone();
    attrs.insert("trans", CustomAttr::Bool(trans));
    CustomOp::new(if rank == 1 { SPMV } else { SPMM }, attrs)
}

fn rank(g: &Graph, x: NodeId) -> usize {
    g.shape(x).rank()
}

fn add(g: &mut Graph, a: Option<NodeId>, b: Option<NodeId>) -> Result<NodeId, IrError> {
    match (a, b) {
        (Some(a), Some(b)) => g.try_node(Op::Binary(BinaryOp::Add), &[a, b], None),
        (Some(t), None) | (None, Some(t)) => Ok(t),
        (None, None) => Err(IrError::InvalidOp {
            op: "sparse".into(),
            reason: "jvp rule called without a tangent".into(),
        }),
    }
}

pub(crate) fn product_vjp(
    g: &mut Graph,
    op: &CustomOp,
    x: &[NodeId],
    _y: NodeId,
    ct: NodeId,
) -> Result<Vec<Option<NodeId>>, IrError> {
    let trans = trans_of(op)?;
    let (v, ip, ix, xd) = (x[0], x[1], x[2], x[3]);
    let (rows, cols) = if trans { (xd, ct) } else { (ct, xd) };
    let dv = g.custom(sddmm_of(op), &[ip, ix, rows, cols])?;
    let dx = g.custom(product_op(op, rank(g, xd), !trans), &[v, ip, ix, ct])?;
    Ok(vec![Some(dv), None, None, Some(dx)])
}

/// The jvp of an op bilinear in its inputs `i` and `j`: the op with each
/// tangent in its operand's place, summed.
fn bilinear_jvp(
    g: &mut Graph,
    op: &CustomOp,
    x: &[NodeId],
    t: &[Option<NodeId>],
    (i, j): (usize, usize),
) -> Result<NodeId, IrError> {
    let mut term = |k: usize| -> Result<Option<NodeId>, IrError> {
        t[k].map(|tk| {
            let mut ins = x.to_vec();
            ins[k] = tk;
            g.custom(op.clone(), &ins)
        })
        .transpose()
    };
    let (ti, tj) = (term(i)?, term(j)?);
    add(g, ti, tj)
}

pub(crate) fn product_jvp(
    g: &mut Graph,
    op: &CustomOp,
    x: &[NodeId],
    _y: NodeId,
    t: &[Option<NodeId>],
) -> Result<NodeId, IrError> {
    bilinear_jvp(g, op, x, t, (0, 3))
}

pub(crate) fn sddmm_vjp(
    g: &mut Graph,
    op: &CustomOp,
    x: &[NodeId],
    _y: NodeId,
    ct: NodeId,
) -> Result<Vec<Option<NodeId>>, IrError> {
    let (ip, ix, a, b) = (x[0], x[1], x[2], x[3]);
    let r = rank(g, a);
    let da = g.custom(product_op(op, r, false), &[ct, ip, ix, b])?;
    let db = g.custom(product_op(op, r, true), &[ct, ip, ix, a])?;
    Ok(vec![None, None, Some(da), Some(db)])
}

pub(crate) fn sddmm_jvp(
    g: &mut Graph,
    op: &CustomOp,
    x: &[NodeId],
    _y: NodeId,
    t: &[Option<NodeId>],
) -> Result<NodeId, IrError> {
    bilinear_jvp(g, op, x, t, (2, 3))
}

fn transpose(g: &mut Graph, x: NodeId, perm: Vec<usize>) -> Result<NodeId, IrError> {
    g.try_node(Op::Transpose { perm }, &[x], None)
}

fn reshape(g: &mut Graph, x: NodeId, dims: &[usize]) -> Result<NodeId, IrError> {
    let dtype = g.shape(x).dtype();
    g.try_node(Op::Reshape, &[x], Some(Shape::new(dims, dtype)))
}

/// vmap over the dense operand only (axis 0, size `b`): the batch becomes
/// extra columns of one spmm, `[b, n(, k)] -> [n, b(·k)]`, and back.
/// Batched values or patterns are refused, naming the op.
pub(crate) fn product_vmap(
    g: &mut Graph,
    op: &CustomOp,
    ins: &[NodeId],
    batched: &[bool],
    b: usize,
) -> Result<NodeId, IrError> {
    if batched[..3].iter().any(|&x| x) || !batched[3] {
        return Err(err(
            op,
            "vmap is supported over the dense operand only (not over values or the pattern)",
        ));
    }
    let trans = trans_of(op)?;
    let x = ins[3];
    let xd = g
        .shape(x)
        .static_dims()
        .ok_or_else(|| err(op, "vmap needs static dims"))?;
    let n = xd[1];
    let k = xd.get(2).copied().unwrap_or(1);
    let cols = if xd.len() == 2 {
        transpose(g, x, vec![1, 0])?
    } else {
        let t = transpose(g, x, vec![1, 0, 2])?;
        reshape(g, t, &[n, b * k])?
    };
    let y = g.custom(product_op(op, 2, trans), &[ins[0], ins[1], ins[2], cols])?;
    let m = g.shape(y).static_dims().expect("static")[0];
    if xd.len() == 2 {
        transpose(g, y, vec![1, 0])
    } else {
        let y = reshape(g, y, &[m, b, k])?;
        transpose(g, y, vec![1, 0, 2])
    }
}
