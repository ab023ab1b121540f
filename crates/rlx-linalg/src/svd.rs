//! `linalg.svd{output}`: the thin SVD `A = U diag(s) Vt`
//! (`numpy.linalg.svd(full_matrices=False)`): `U [..., m, k]` (output 0),
//! `s [..., k]` descending (output 1), `Vt [..., k, n]` (output 2),
//! `k = min(m, n)`; each column of `U` has its largest-magnitude entry
//! (first on ties) positive, the matching row of `Vt` flipped with it.
//!
//! Derivatives (real case of JAX's `_svd_jvp_rule`, and its transpose as
//! in Townsend, "Differentiating the singular value decomposition", 2016),
//! with `F_ij = 1 / (s_j^2 - s_i^2)` off the diagonal, 0 on it:
//!   ṡ = diag(U^T Ȧ V),
//!   U̇ = U (F ∘ (dS S + S dS^T)) + (I - U U^T) Ȧ V S^{-1},   dS = U^T Ȧ V,
//!   V̇ = V (F ∘ (S dS + dS^T S)) + (I - V V^T) Ȧ^T U S^{-1};
//!   Ā = U [(F ∘ (U^T Ū - Ū^T U)) S + diag(s̄) + S (F ∘ (V^T V̄ - V̄^T V))] V^T
//!       + (I - U U^T) Ū S^{-1} V^T + U S^{-1} V̄^T (I - V V^T).
//! Caveat (as in JAX): repeated singular values make `F` infinite and the
//! U / V derivatives inf / NaN (the vectors are not unique there); a zero
//! singular value makes `S^{-1}` infinite. Singular-value derivatives stay finite.

use crate::emit::*;
use crate::host::{column_signs, mat, push, read, write};
use rlx_ir::custom::{CustomAttr, CustomOp, KernelArg, KernelOut};
use rlx_ir::{Dim, Graph, IrError, NodeId, Op, Shape};

fn output(op: &CustomOp) -> Result<i64, String> {
    let k = op.attrs.int_or("output", 0)?;
    if !(0..=2).contains(&k) {
        return Err(format!("output must be 0 (U), 1 (s) or 2 (Vt), is {k}"));
    }
    Ok(k)
}

/// The shape rule.
pub(crate) fn svd_shape(op: &CustomOp, s: &[&Shape]) -> Result<Shape, String> {
    let which = output(op)?;
    let a = s[0];
    if !matches!(a.dtype(), rlx_ir::DType::F32 | rlx_ir::DType::F64) || a.rank() < 2 {
        return Err(format!("needs f32 / f64 matrices [..., m, n], given {a}"));
    }
    let d = a.dims();
    let r = d.len();
    let (Some(m), Some(n)) = (d[r - 2].as_static(), d[r - 1].as_static()) else {
        return Err(format!("needs static matrix dims, given {a}"));
    };
    let k = m.min(n);
    let mut out = d.to_vec();
    match which {
        0 => out[r - 1] = Dim::Static(k),
        1 => {
            out.truncate(r - 2);
            out.push(Dim::Static(k));
        }
        _ => out[r - 2] = Dim::Static(k),
    }
    Ok(Shape::from_dims(out, a.dtype()))
}

/// The CPU kernel.
pub(crate) fn svd(op: &CustomOp, ins: &[KernelArg], out: &mut KernelOut) -> Result<(), String> {
    let which = output(op)?;
    let d = ins[0].dims;
    let r = d.len();
    let (m, n) = (d[r - 2], d[r - 1]);
    let k = m.min(n);
    let batch: usize = d[..r - 2].iter().product();
    let a = read(&ins[0])?;
    let mut res = Vec::new();
    for i in 0..batch {
        let Ok(f) = mat(&a, i, m, n).thin_svd() else {
            let len = [m * k, k, k * n][which as usize];
            res.extend(std::iter::repeat_n(f64::NAN, len));
            continue;
        };
        let (u, s, v) = (f.U(), f.S().column_vector(), f.V());
        let sign = column_signs(u);
        match which {
            0 => push(
                &mut res,
                faer::Mat::from_fn(m, k, |r, c| u[(r, c)] * sign[c]).as_ref(),
            ),
            1 => res.extend((0..k).map(|j| s[j])),
            _ => push(
                &mut res,
                faer::Mat::from_fn(k, n, |r, c| v[(c, r)] * sign[r]).as_ref(),
            ),
        }
    }
    write(out, &res)
}

fn part(g: &mut Graph, op: &CustomOp, a: NodeId, k: i64) -> Result<NodeId, IrError> {
    let o = CustomOp::new(
        op.name.clone(),
        op.attrs.clone().with("output", CustomAttr::Int(k)),
    );
    g.custom(o, &[a])
}

/// `(U, s, V)` (V, not Vt) of `a`.
fn parts(g: &mut Graph, op: &CustomOp, a: NodeId) -> Result<(NodeId, NodeId, NodeId), IrError> {
    let u = part(g, op, a, 0)?;
    let s = part(g, op, a, 1)?;
    let vt = part(g, op, a, 2)?;
    Ok((u, s, mt(g, vt)?))
}

/// `s [..., k]` as a row `[..., 1, k]` (`col = false`) or column `[..., k, 1]`.
fn as_vec(g: &mut Graph, s: NodeId, col: bool) -> Result<NodeId, IrError> {
    let sh = g.shape(s).clone();
    let mut d = sh.dims().to_vec();
    if col {
        d.push(Dim::Static(1));
    } else {
        d.insert(d.len() - 1, Dim::Static(1));
    }
    g.try_node(Op::Reshape, &[s], Some(Shape::from_dims(d, sh.dtype())))
}

/// `F`, `[..., k, k]`.
fn gaps(g: &mut Graph, s: NodeId) -> Result<NodeId, IrError> {
    let k = last_dim(g, s)?;
    let sr = as_vec(g, s, false)?;
    let sc = as_vec(g, s, true)?;
    let sr2 = mul(g, sr, sr)?;
    let sc2 = mul(g, sc, sc)?;
    let d = sub(g, sr2, sc2)?; // s_j^2 - s_i^2
    let eye = mask(g, k, g.shape(s).dtype(), |i, j| f64::from(u8::from(i == j)))?;
    let d = add(g, d, eye)?;
    let r = g.try_node(Op::Unary(rlx_ir::op::UnaryOp::Reciprocal), &[d], None)?;
    sub(g, r, eye)
}

/// `x - P P^T x` (the part of `x` outside the columns of `P`).
fn outside(g: &mut Graph, p: NodeId, x: NodeId) -> Result<NodeId, IrError> {
    let pt = mt(g, p)?;
    let ptx = matmul(g, pt, x)?;
    let pp = matmul(g, p, ptx)?;
    sub(g, x, pp)
}

fn diag_of(g: &mut Graph, x: NodeId) -> Result<NodeId, IrError> {
    let k = last_dim(g, x)?;
    let eye = mask(g, k, g.shape(x).dtype(), |i, j| f64::from(u8::from(i == j)))?;
    let d = mul(g, x, eye)?;
    let r = g.shape(d).rank();
    g.try_node(
        Op::Reduce {
            op: rlx_ir::op::ReduceOp::Sum,
            axes: vec![r - 1],
            keep_dim: false,
        },
        &[d],
        None,
    )
}

pub(crate) fn svd_jvp(
    g: &mut Graph,
    op: &CustomOp,
    x: &[NodeId],
    _y: NodeId,
    t: &[Option<NodeId>],
) -> Result<NodeId, IrError> {
    let which = output(op).map_err(|e| IrError::InvalidOp {
        op: op.name.clone(),
        reason: e,
    })?;
    let (u, s, v) = parts(g, op, x[0])?;
    let da = t[0].expect("a tangent");
    let ut = mt(g, u)?;
    let dav = matmul(g, da, v)?;
    let ds = matmul(g, ut, dav)?;
    if which == 1 {
        return diag_of(g, ds);
    }
    let f = gaps(g, s)?;
    let srow = as_vec(g, s, false)?;
    let scol = as_vec(g, s, true)?;
    if which == 0 {
        let dss = mul(g, ds, srow)?; // dS S
        let dsst = mt(g, dss)?; // S dS^T
        let sum = add(g, dss, dsst)?;
        let inner = mul(g, f, sum)?;
        let du = matmul(g, u, inner)?;
        let rest = outside(g, u, dav)?;
        let rest = bin(g, rlx_ir::op::BinaryOp::Div, rest, srow)?;
        return add(g, du, rest);
    }
    let sds = mul(g, scol, ds)?; // S dS
    let sdst = mt(g, sds)?; // dS^T S
    let sum = add(g, sds, sdst)?;
    let inner = mul(g, f, sum)?;
    let dv = matmul(g, v, inner)?;
    let dat = mt(g, da)?;
    let datu = matmul(g, dat, u)?;
    let rest = outside(g, v, datu)?;
    let rest = bin(g, rlx_ir::op::BinaryOp::Div, rest, srow)?;
    let dv = add(g, dv, rest)?;
    mt(g, dv)
}

pub(crate) fn svd_vjp(
    g: &mut Graph,
    op: &CustomOp,
    x: &[NodeId],
    _y: NodeId,
    ct: NodeId,
) -> Result<Vec<Option<NodeId>>, IrError> {
    let which = output(op).map_err(|e| IrError::InvalidOp {
        op: op.name.clone(),
        reason: e,
    })?;
    let (u, s, v) = parts(g, op, x[0])?;
    let ut = mt(g, u)?;
    let vt = mt(g, v)?;
    let srow = as_vec(g, s, false)?;
    let scol = as_vec(g, s, true)?;
    let abar = match which {
        1 => {
            // U diag(s̄) V^T
            let c = as_vec(g, ct, false)?;
            let us = mul(g, u, c)?;
            matmul(g, us, vt)?
        }
        0 => {
            // U (F ∘ (U^T Ū - Ū^T U)) S V^T + (I - U U^T) Ū S^{-1} V^T
            let f = gaps(g, s)?;
            let utu = matmul(g, ut, ct)?;
            let utut = mt(g, utu)?;
            let skew = sub(g, utu, utut)?;
            let inner = mul(g, f, skew)?;
            let inner = mul(g, inner, srow)?;
            let core = matmul(g, u, inner)?;
            let rest = outside(g, u, ct)?;
            let rest = bin(g, rlx_ir::op::BinaryOp::Div, rest, srow)?;
            let sum = add(g, core, rest)?;
            matmul(g, sum, vt)?
        }
        _ => {
            // ct is V̄t; V̄ = ct^T.
            // U S (F ∘ (V^T V̄ - V̄^T V)) V^T + U S^{-1} V̄^T (I - V V^T)
            let vbar = mt(g, ct)?;
            let f = gaps(g, s)?;
            let vtv = matmul(g, vt, vbar)?;
            let vtvt = mt(g, vtv)?;
            let skew = sub(g, vtv, vtvt)?;
            let inner = mul(g, f, skew)?;
            let inner = mul(g, scol, inner)?;
            let inner = matmul(g, inner, vt)?;
            let rest = outside(g, v, vbar)?; // (I - V V^T) V̄
            let rest = bin(g, rlx_ir::op::BinaryOp::Div, rest, srow)?; // ... S^{-1}
            let rest_t = mt(g, rest)?; // S^{-1} V̄^T (I - V V^T)
            let sum = add(g, inner, rest_t)?;
            matmul(g, u, sum)?
        }
    };
    Ok(vec![Some(abar)])
}

/// `(U, s, Vt)`: see the module docs.
pub fn svd_nodes(g: &mut Graph, a: NodeId) -> Result<(NodeId, NodeId, NodeId), IrError> {
    crate::register();
    let op = CustomOp::new(crate::ops::SVD, rlx_ir::custom::CustomAttrs::new());
    let u = part(g, &op, a, 0)?;
    let s = part(g, &op, a, 1)?;
    let vt = part(g, &op, a, 2)?;
    Ok((u, s, vt))
}
