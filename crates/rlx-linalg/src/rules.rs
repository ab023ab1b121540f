//! Derivative and batching rules, as graph builders, following JAX
//! (`jax/_src/lax/linalg.py`, `jax/_src/numpy/linalg.py`). Each rule emits
//! ordinary ops and linalg custom ops, so higher orders and fusion apply.

use crate::emit::*;
use crate::ops::{inv_op, solve_op, solve_triangular_op};
use rlx_ir::custom::CustomOp;
use rlx_ir::{Graph, IrError, NodeId, Op, Shape};

fn attr_err(op: &CustomOp) -> impl Fn(String) -> IrError + '_ {
    move |reason| IrError::InvalidOp {
        op: op.name.clone(),
        reason,
    }
}

fn flags(op: &CustomOp) -> Result<(bool, bool), IrError> {
    let e = attr_err(op);
    Ok((
        op.attrs.bool_or("lower", false).map_err(&e)?,
        op.attrs.bool_or("trans", false).map_err(&e)?,
    ))
}

/// `Φ(X)`: the lower triangle with the diagonal halved (JAX's `phi` in
/// `_cholesky_jvp_rule`).
fn phi(g: &mut Graph, x: NodeId) -> Result<NodeId, IrError> {
    let n = last_dim(g, x)?;
    let m = mask(g, n, g.shape(x).dtype(), |i, j| match i.cmp(&j) {
        std::cmp::Ordering::Greater => 1.0,
        std::cmp::Ordering::Equal => 0.5,
        std::cmp::Ordering::Less => 0.0,
    })?;
    mul(g, x, m)
}

/// The triangle (diagonal included) a triangular solve reads.
fn tri(g: &mut Graph, x: NodeId, lower: bool) -> Result<NodeId, IrError> {
    let n = last_dim(g, x)?;
    let m = mask(g, n, g.shape(x).dtype(), |i, j| {
        f64::from(u8::from(if lower { j <= i } else { j >= i }))
    })?;
    mul(g, x, m)
}

fn trisolve(
    g: &mut Graph,
    a: NodeId,
    b: NodeId,
    lower: bool,
    trans: bool,
) -> Result<NodeId, IrError> {
    g.custom(solve_triangular_op(lower, trans), &[a, b])
}

// ── cholesky ──
// JAX: L = cholesky((A + A^H) / 2); jvp (`_cholesky_jvp_rule`):
//   L̇ = L Φ(L^{-1} Ȧs L^{-H}),  Ȧs = (Ȧ + Ȧ^H) / 2.
// Its transpose (the vjp): with P = L^{-H} Φ(L^H L̄) L^{-1}, Ā = (P + P^H) / 2.

pub(crate) fn cholesky_jvp(
    g: &mut Graph,
    _: &CustomOp,
    _x: &[NodeId],
    l: NodeId,
    t: &[Option<NodeId>],
) -> Result<NodeId, IrError> {
    let ta = t[0].expect("a tangent");
    let s = sym(g, ta)?;
    let w = trisolve(g, l, s, true, false)?; // L^{-1} Ȧs
    let wt = mt(g, w)?;
    let v = trisolve(g, l, wt, true, false)?; // L^{-1} (L^{-1} Ȧs)^T
    let x = mt(g, v)?; // L^{-1} Ȧs L^{-T}
    let p = phi(g, x)?;
    matmul(g, l, p)
}

pub(crate) fn cholesky_vjp(
    g: &mut Graph,
    _: &CustomOp,
    _x: &[NodeId],
    l: NodeId,
    ct: NodeId,
) -> Result<Vec<Option<NodeId>>, IrError> {
    let lt = mt(g, l)?;
    let m = matmul(g, lt, ct)?;
    let m = phi(g, m)?;
    let z = trisolve(g, l, m, true, true)?; // L^{-T} Φ
    let zt = mt(g, z)?;
    let v = trisolve(g, l, zt, true, true)?; // L^{-T} (L^{-T} Φ)^T
    let p = mt(g, v)?; // L^{-T} Φ L^{-1}
    Ok(vec![Some(sym(g, p)?)])
}

// ── solve_triangular / solve ──
// X = op(A)^{-1} B with op(A) = A or A^T (JAX `triangular_solve` /
// `jnp.linalg.solve`): Ẋ = op(A)^{-1} (Ḃ - op(Ȧ) X); transposed:
// B̄ = op(A)^{-T} X̄,  Ā = -B̄ X^T (op = id) or -X B̄^T (op = ^T).
// A triangular solve reads one triangle of A, so Ȧ and Ā are masked to it
// (`triangular_solve_jvp_rule_a`).

fn solve_like_jvp(
    g: &mut Graph,
    op: &CustomOp,
    x: &[NodeId],
    y: NodeId,
    t: &[Option<NodeId>],
    triangular: bool,
) -> Result<NodeId, IrError> {
    let (lower, trans) = flags(op)?;
    let mut rhs = t[1];
    if let Some(ta) = t[0] {
        let ta = if triangular { tri(g, ta, lower)? } else { ta };
        let opa = if trans { mt(g, ta)? } else { ta };
        let d = matmul(g, opa, y)?;
        rhs = Some(match rhs {
            Some(tb) => sub(g, tb, d)?,
            None => scale(g, d, -1.0)?,
        });
    }
    let rhs = rhs.expect("a tangent");
    g.custom(op.clone(), &[x[0], rhs])
}

fn solve_like_vjp(
    g: &mut Graph,
    op: &CustomOp,
    x: &[NodeId],
    y: NodeId,
    ct: NodeId,
    triangular: bool,
) -> Result<Vec<Option<NodeId>>, IrError> {
    let (lower, trans) = flags(op)?;
    let bbar = if triangular {
        trisolve(g, x[0], ct, lower, !trans)?
    } else {
        g.custom(solve_op(!trans), &[x[0], ct])?
    };
    let outer = if trans {
        let bt = mt(g, bbar)?;
        matmul(g, y, bt)?
    } else {
        let yt = mt(g, y)?;
        matmul(g, bbar, yt)?
    };
    let mut abar = scale(g, outer, -1.0)?;
    if triangular {
        abar = tri(g, abar, lower)?;
    }
    Ok(vec![Some(abar), Some(bbar)])
}

pub(crate) fn solve_triangular_jvp(
    g: &mut Graph,
    op: &CustomOp,
    x: &[NodeId],
    y: NodeId,
    t: &[Option<NodeId>],
) -> Result<NodeId, IrError> {
    solve_like_jvp(g, op, x, y, t, true)
}

pub(crate) fn solve_triangular_vjp(
    g: &mut Graph,
    op: &CustomOp,
    x: &[NodeId],
    y: NodeId,
    ct: NodeId,
) -> Result<Vec<Option<NodeId>>, IrError> {
    solve_like_vjp(g, op, x, y, ct, true)
}

pub(crate) fn solve_jvp(
    g: &mut Graph,
    op: &CustomOp,
    x: &[NodeId],
    y: NodeId,
    t: &[Option<NodeId>],
) -> Result<NodeId, IrError> {
    solve_like_jvp(g, op, x, y, t, false)
}

pub(crate) fn solve_vjp(
    g: &mut Graph,
    op: &CustomOp,
    x: &[NodeId],
    y: NodeId,
    ct: NodeId,
) -> Result<Vec<Option<NodeId>>, IrError> {
    solve_like_vjp(g, op, x, y, ct, false)
}

// ── inv ──
// Y = A^{-1}: Ẏ = -Y Ȧ Y;  Ā = -Y^T Ȳ Y^T.

pub(crate) fn inv_jvp(
    g: &mut Graph,
    _: &CustomOp,
    _x: &[NodeId],
    y: NodeId,
    t: &[Option<NodeId>],
) -> Result<NodeId, IrError> {
    let ya = matmul(g, y, t[0].expect("a tangent"))?;
    let yay = matmul(g, ya, y)?;
    scale(g, yay, -1.0)
}

pub(crate) fn inv_vjp(
    g: &mut Graph,
    _: &CustomOp,
    _x: &[NodeId],
    y: NodeId,
    ct: NodeId,
) -> Result<Vec<Option<NodeId>>, IrError> {
    let yt = mt(g, y)?;
    let a = matmul(g, yt, ct)?;
    let b = matmul(g, a, yt)?;
    Ok(vec![Some(scale(g, b, -1.0)?)])
}

// ── det / slogdet ──
// d = det A: ḋ = d tr(A^{-1} Ȧ), Ā = d̄ d A^{-T}; log|det A|: the same
// without the factor d; the sign is piecewise constant (zero derivative).
// At a singular A these are inf / NaN (A^{-1} does not exist); JAX's `det`
// instead differentiates through a cofactor solve and stays finite there.

/// `A^{-T}` of the input, as a node.
fn inv_t(g: &mut Graph, a: NodeId) -> Result<NodeId, IrError> {
    let i = g.custom(inv_op(), &[a])?;
    mt(g, i)
}

/// `tr(A^{-1} Ȧ)` per batch element.
fn trace_inv_times(g: &mut Graph, a: NodeId, ta: NodeId) -> Result<NodeId, IrError> {
    let it = inv_t(g, a)?;
    let p = mul(g, it, ta)?;
    sum_last2(g, p)
}

pub(crate) fn det_jvp(
    g: &mut Graph,
    _: &CustomOp,
    x: &[NodeId],
    d: NodeId,
    t: &[Option<NodeId>],
) -> Result<NodeId, IrError> {
    let tr = trace_inv_times(g, x[0], t[0].expect("a tangent"))?;
    mul(g, d, tr)
}

pub(crate) fn det_vjp(
    g: &mut Graph,
    _: &CustomOp,
    x: &[NodeId],
    d: NodeId,
    ct: NodeId,
) -> Result<Vec<Option<NodeId>>, IrError> {
    let k = mul(g, ct, d)?;
    let k = unsqueeze2(g, k)?;
    let it = inv_t(g, x[0])?;
    Ok(vec![Some(mul(g, k, it)?)])
}

fn output(op: &CustomOp) -> Result<i64, IrError> {
    op.attrs.int_or("output", 0).map_err(attr_err(op))
}

pub(crate) fn slogdet_jvp(
    g: &mut Graph,
    op: &CustomOp,
    x: &[NodeId],
    y: NodeId,
    t: &[Option<NodeId>],
) -> Result<NodeId, IrError> {
    if output(op)? == 0 {
        return zeros_like(g, y);
    }
    trace_inv_times(g, x[0], t[0].expect("a tangent"))
}

pub(crate) fn slogdet_vjp(
    g: &mut Graph,
    op: &CustomOp,
    x: &[NodeId],
    _y: NodeId,
    ct: NodeId,
) -> Result<Vec<Option<NodeId>>, IrError> {
    if output(op)? == 0 {
        return Ok(vec![None]);
    }
    let k = unsqueeze2(g, ct)?;
    let it = inv_t(g, x[0])?;
    Ok(vec![Some(mul(g, k, it)?)])
}

// ── batching ──

/// Every linalg op already maps over leading axes: unbatched operands are
/// broadcast to the batch, then the same op runs on the batched operands.
pub(crate) fn vmap_leading(
    g: &mut Graph,
    op: &CustomOp,
    ins: &[NodeId],
    batched: &[bool],
    b: usize,
) -> Result<NodeId, IrError> {
    let mut args = Vec::with_capacity(ins.len());
    for (&x, &bx) in ins.iter().zip(batched) {
        args.push(if bx {
            x
        } else {
            let s = g.shape(x).clone();
            let mut dims = vec![rlx_ir::Dim::Static(b)];
            dims.extend(s.dims().iter().cloned());
            g.try_node(Op::Broadcast, &[x], Some(Shape::from_dims(dims, s.dtype())))?
        });
    }
    g.custom(op.clone(), &args)
}
