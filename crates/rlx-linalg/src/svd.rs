//! `linalg.svd`: the thin SVD `A = U diag(s) Vt`
//! (`numpy.linalg.svd(full_matrices=False)`) of `A` `[..., m, n]`,
//! `k = min(m, n)`, as one node with a packed output `[..., m + 1 + k, n]`:
//! rows `0..m` hold `U` (columns `k..n` zero), row `m` holds `s` descending
//! (then zeros), rows `m + 1..` hold `Vt`. [`svd_nodes`] slices the three
//! out of it, so a graph that uses them all decomposes once. Each column of
//! `U` has its largest-magnitude entry (first on ties) positive, the
//! matching row of `Vt` flipped with it.
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
//! singular value makes `S^{-1}` infinite. Singular-value derivatives stay
//! finite (an exactly zero `Ū` / `V̄` contributes 0, as JAX's symbolic zero).

use crate::emit::*;
use crate::host::{by_dtype, column_signs, load, matrices, put, Real};
use crate::qr::matrix_dims;
use rlx_ir::custom::{CustomAttrs, CustomOp, KernelArg, KernelOut};
use rlx_ir::op::BinaryOp;
use rlx_ir::{Dim, Graph, IrError, NodeId, Op, Shape};

/// The shape rule: `[..., m, n] -> [..., m + 1 + k, n]`.
pub(crate) fn svd_shape(_: &CustomOp, s: &[&Shape]) -> Result<Shape, String> {
    let (m, _, k) = matrix_dims(s[0])?;
    let mut d = s[0].dims().to_vec();
    let r = d.len();
    d[r - 2] = Dim::Static(m + 1 + k);
    Ok(Shape::from_dims(d, s[0].dtype()))
}

/// The CPU kernel.
pub(crate) fn svd(_: &CustomOp, ins: &[KernelArg], out: &mut KernelOut) -> Result<(), String> {
    by_dtype!(ins[0].dtype, svd_t(&ins[0], out))
}

fn svd_t<T: Real>(a: &KernelArg, out: &mut KernelOut) -> Result<(), String> {
    let (batch, m, n) = matrices(a)?;
    let k = m.min(n);
    let zero = T::of(0.0);
    let len = (m + 1 + k) * n;
    for i in 0..batch {
        let at = i * len;
        let Ok(f) = load::<T>(a, i, m, n).thin_svd() else {
            (0..len).for_each(|j| put(out, at + j, T::of(f64::NAN)));
            continue;
        };
        let (u, s, v) = (f.U(), f.S().column_vector(), f.V());
        let sign = column_signs(u);
        for r in 0..m {
            for c in 0..n {
                put(
                    out,
                    at + r * n + c,
                    if c < k { u[(r, c)] * sign[c] } else { zero },
                );
            }
        }
        for c in 0..n {
            put(out, at + m * n + c, if c < k { s[c] } else { zero });
        }
        let at = at + (m + 1) * n;
        for r in 0..k {
            for c in 0..n {
                put(out, at + r * n + c, v[(c, r)] * sign[r]);
            }
        }
    }
    Ok(())
}

/// `(U, s, Vt)` of `a`'s packed `linalg.svd` output.
fn unpack(g: &mut Graph, a: NodeId, packed: NodeId) -> Result<(NodeId, NodeId, NodeId), IrError> {
    let (m, n, k) = matrix_dims(g.shape(a)).map_err(|reason| IrError::InvalidOp {
        op: crate::ops::SVD.into(),
        reason,
    })?;
    let u = block(g, packed, (0, m), (0, k))?;
    let s = block(g, packed, (m, 1), (0, k))?;
    let s = from_row(g, s)?;
    let vt = block(g, packed, (m + 1, k), (0, n))?;
    Ok((u, s, vt))
}

/// `s [..., k]` as a column `[..., k, 1]`.
fn as_col(g: &mut Graph, s: NodeId) -> Result<NodeId, IrError> {
    let sh = g.shape(s).clone();
    let mut d = sh.dims().to_vec();
    d.push(Dim::Static(1));
    g.try_node(Op::Reshape, &[s], Some(Shape::from_dims(d, sh.dtype())))
}

/// `F`, `[..., k, k]`.
fn gaps(g: &mut Graph, s: NodeId) -> Result<NodeId, IrError> {
    let k = last_dim(g, s)?;
    let sr = as_row(g, s)?;
    let sc = as_col(g, s)?;
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

/// `x / s_row` where `x != 0`, else 0 (see [`where_nonzero`]).
fn div_nonzero(g: &mut Graph, x: NodeId, srow: NodeId) -> Result<NodeId, IrError> {
    let q = bin(g, BinaryOp::Div, x, srow)?;
    where_nonzero(g, x, q)
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
    _: &CustomOp,
    x: &[NodeId],
    y: NodeId,
    t: &[Option<NodeId>],
) -> Result<NodeId, IrError> {
    let (u, s, vt) = unpack(g, x[0], y)?;
    let v = mt(g, vt)?;
    let n = last_dim(g, vt)?;
    let da = t[0].expect("a tangent");
    let ut = mt(g, u)?;
    let dav = matmul(g, da, v)?;
    let ds = matmul(g, ut, dav)?;
    let dsv = diag_of(g, ds)?;
    let f = gaps(g, s)?;
    let srow = as_row(g, s)?;
    let scol = as_col(g, s)?;
    // U̇
    let dss = mul(g, ds, srow)?; // dS S
    let dsst = mt(g, dss)?; // S dS^T
    let sum = add(g, dss, dsst)?;
    let inner = mul(g, f, sum)?;
    let du = matmul(g, u, inner)?;
    let rest = outside(g, u, dav)?;
    let rest = bin(g, BinaryOp::Div, rest, srow)?;
    let du = add(g, du, rest)?;
    // V̇
    let sds = mul(g, scol, ds)?; // S dS
    let sdst = mt(g, sds)?; // dS^T S
    let sum = add(g, sds, sdst)?;
    let inner = mul(g, f, sum)?;
    let dv = matmul(g, v, inner)?;
    let dat = mt(g, da)?;
    let datu = matmul(g, dat, u)?;
    let rest = outside(g, v, datu)?;
    let rest = bin(g, BinaryOp::Div, rest, srow)?;
    let dv = add(g, dv, rest)?;
    let dvt = mt(g, dv)?;
    let du = pad_cols(g, du, n)?;
    let ds = as_row(g, dsv)?;
    let ds = pad_cols(g, ds, n)?;
    stack_rows(g, &[du, ds, dvt])
}

pub(crate) fn svd_vjp(
    g: &mut Graph,
    _: &CustomOp,
    x: &[NodeId],
    y: NodeId,
    ct: NodeId,
) -> Result<Vec<Option<NodeId>>, IrError> {
    let (u, s, vt) = unpack(g, x[0], y)?;
    let (m, n, k) = matrix_dims(g.shape(x[0])).map_err(|reason| IrError::InvalidOp {
        op: crate::ops::SVD.into(),
        reason,
    })?;
    let ct_u = block(g, ct, (0, m), (0, k))?;
    let ct_s = block(g, ct, (m, 1), (0, k))?; // a row
    let ct_vt = block(g, ct, (m + 1, k), (0, n))?;
    let v = mt(g, vt)?;
    let ut = mt(g, u)?;
    let srow = as_row(g, s)?;
    let scol = as_col(g, s)?;
    let f = gaps(g, s)?;
    // s̄: U diag(s̄) V^T
    let us = mul(g, u, ct_s)?;
    let from_s = matmul(g, us, vt)?;
    // Ū: U (F ∘ (U^T Ū - Ū^T U)) S V^T + (I - U U^T) Ū S^{-1} V^T
    let utu = matmul(g, ut, ct_u)?;
    let utut = mt(g, utu)?;
    let skew = sub(g, utu, utut)?;
    let inner = mul(g, f, skew)?;
    let inner = where_nonzero(g, skew, inner)?;
    let inner = mul(g, inner, srow)?;
    let core = matmul(g, u, inner)?;
    let rest = outside(g, u, ct_u)?;
    let rest = div_nonzero(g, rest, srow)?;
    let sum = add(g, core, rest)?;
    let from_u = matmul(g, sum, vt)?;
    // V̄t (V̄ = V̄t^T): U S (F ∘ (V^T V̄ - V̄^T V)) V^T + U S^{-1} V̄^T (I - V V^T)
    let vbar = mt(g, ct_vt)?;
    let vtv = matmul(g, vt, vbar)?;
    let vtvt = mt(g, vtv)?;
    let skew = sub(g, vtv, vtvt)?;
    let inner = mul(g, f, skew)?;
    let inner = where_nonzero(g, skew, inner)?;
    let inner = mul(g, scol, inner)?;
    let inner = matmul(g, inner, vt)?;
    let rest = outside(g, v, vbar)?; // (I - V V^T) V̄
    let rest = div_nonzero(g, rest, srow)?; // ... S^{-1}
    let rest_t = mt(g, rest)?; // S^{-1} V̄^T (I - V V^T)
    let sum = add(g, inner, rest_t)?;
    let from_v = matmul(g, u, sum)?;
    let abar = add(g, from_s, from_u)?;
    Ok(vec![Some(add(g, abar, from_v)?)])
}

/// `(U, s, Vt)`: see the module docs.
pub fn svd_nodes(g: &mut Graph, a: NodeId) -> Result<(NodeId, NodeId, NodeId), IrError> {
    crate::register();
    let packed = g.custom(CustomOp::new(crate::ops::SVD, CustomAttrs::new()), &[a])?;
    unpack(g, a, packed)
}
