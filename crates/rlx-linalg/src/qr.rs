//! `linalg.qr`: the reduced QR (`numpy.linalg.qr`) of `A` `[..., m, n]`,
//! `k = min(m, n)`, as one node with a packed output `[..., m + k, n]`:
//! rows `0..m` hold `Q` (columns `k..n` zero), rows `m..m + k` hold `R`.
//! [`qr_unpack`] slices `(Q, R)` out of it, so a graph that uses both
//! factors once. `R`'s diagonal is made non-negative (LAPACK leaves the
//! signs to the algorithm; ours are fixed so derivatives are well defined).
//!
//! Derivatives (JAX `qr_jvp_rule`, real, `m >= n`): `X = Ȧ R^{-1}`,
//! `C = Q^T X`, `Ω = tril(C, -1) - tril(C, -1)^T`: `Q̇ = Q (Ω - C) + X`,
//! `Ṙ = (C - Ω) R`. Transposed: `M = Q^T Q̄ - R̄ R^T`,
//! `N = tril(M - M^T, -1) - M`, `Ā = (Q N + Q̄) R^{-T}`. Wide matrices
//! (`m < n`) have no rule (JAX raises too); `R` must be nonsingular (`A` of
//! full column rank).

use crate::emit::*;
use crate::host::{by_dtype, load, matrices, put, Real};
use rlx_ir::custom::{CustomOp, KernelArg, KernelOut};
use rlx_ir::{Dim, Graph, IrError, NodeId, Shape};

/// `(m, n, k)` of `[..., m, n]` with static matrix dims, for f32 / f64.
pub(crate) fn matrix_dims(a: &Shape) -> Result<(usize, usize, usize), String> {
    if !matches!(a.dtype(), rlx_ir::DType::F32 | rlx_ir::DType::F64) || a.rank() < 2 {
        return Err(format!("needs f32 / f64 matrices [..., m, n], given {a}"));
    }
    let d = a.dims();
    let r = d.len();
    let (Some(m), Some(n)) = (d[r - 2].as_static(), d[r - 1].as_static()) else {
        return Err(format!("needs static matrix dims, given {a}"));
    };
    Ok((m, n, m.min(n)))
}

/// The shape rule: `[..., m, n] -> [..., m + k, n]`.
pub(crate) fn qr_shape(_: &CustomOp, s: &[&Shape]) -> Result<Shape, String> {
    let (m, _, k) = matrix_dims(s[0])?;
    let mut d = s[0].dims().to_vec();
    let r = d.len();
    d[r - 2] = Dim::Static(m + k);
    Ok(Shape::from_dims(d, s[0].dtype()))
}

/// The CPU kernel.
pub(crate) fn qr(_: &CustomOp, ins: &[KernelArg], out: &mut KernelOut) -> Result<(), String> {
    by_dtype!(ins[0].dtype, qr_t(&ins[0], out))
}

fn qr_t<T: Real>(a: &KernelArg, out: &mut KernelOut) -> Result<(), String> {
    let (batch, m, n) = matrices(a)?;
    let k = m.min(n);
    let zero = T::of(0.0);
    for i in 0..batch {
        let f = load::<T>(a, i, m, n).qr();
        let q = f.compute_thin_Q();
        let rr = f.thin_R();
        let sign: Vec<T> = (0..k)
            .map(|j| T::of(if rr[(j, j)] < zero { -1.0 } else { 1.0 }))
            .collect();
        let at = i * (m + k) * n;
        for r in 0..m {
            for c in 0..n {
                put(
                    out,
                    at + r * n + c,
                    if c < k { q[(r, c)] * sign[c] } else { zero },
                );
            }
        }
        let at = at + m * n;
        for r in 0..k {
            for c in 0..n {
                put(
                    out,
                    at + r * n + c,
                    if c >= r { rr[(r, c)] * sign[r] } else { zero },
                );
            }
        }
    }
    Ok(())
}

/// `(Q [..., m, k], R [..., k, n])` of `a`'s packed `linalg.qr` output.
pub(crate) fn qr_unpack(
    g: &mut Graph,
    a: NodeId,
    packed: NodeId,
) -> Result<(NodeId, NodeId), IrError> {
    let (m, n, k) = dims(g, a)?;
    let q = block(g, packed, (0, m), (0, k))?;
    let r = block(g, packed, (m, k), (0, n))?;
    Ok((q, r))
}

fn dims(g: &Graph, a: NodeId) -> Result<(usize, usize, usize), IrError> {
    matrix_dims(g.shape(a)).map_err(|reason| IrError::InvalidOp {
        op: crate::ops::QR.into(),
        reason,
    })
}

/// `(Q, R)` for the derivative rules, which need `m >= n` (as JAX).
fn parts(g: &mut Graph, a: NodeId, y: NodeId) -> Result<(NodeId, NodeId), IrError> {
    let (m, n, _) = dims(g, a)?;
    if m < n {
        return Err(IrError::InvalidOp {
            op: crate::ops::QR.into(),
            reason: format!(
                "derivatives of a QR need m >= n (as JAX), given {}",
                g.shape(a)
            ),
        });
    }
    qr_unpack(g, a, y)
}

fn strict_lower(g: &mut Graph, x: NodeId) -> Result<NodeId, IrError> {
    let n = last_dim(g, x)?;
    let m = mask(g, n, g.shape(x).dtype(), |i, j| f64::from(u8::from(j < i)))?;
    mul(g, x, m)
}

pub(crate) fn qr_jvp(
    g: &mut Graph,
    _: &CustomOp,
    x: &[NodeId],
    y: NodeId,
    t: &[Option<NodeId>],
) -> Result<NodeId, IrError> {
    let (q, r) = parts(g, x[0], y)?;
    let ta = t[0].expect("a tangent");
    let tat = mt(g, ta)?;
    let xt = g.custom(crate::ops::solve_triangular_op(false, true), &[r, tat])?; // R^{-T} Ȧ^T
    let xx = mt(g, xt)?; // Ȧ R^{-1}
    let qt = mt(g, q)?;
    let c = matmul(g, qt, xx)?;
    let lo = strict_lower(g, c)?;
    let lot = mt(g, lo)?;
    let omega = sub(g, lo, lot)?;
    let dq = sub(g, omega, c)?;
    let dq = matmul(g, q, dq)?;
    let dq = add(g, dq, xx)?;
    let dr = sub(g, c, omega)?;
    let dr = matmul(g, dr, r)?;
    stack_rows(g, &[dq, dr])
}

pub(crate) fn qr_vjp(
    g: &mut Graph,
    _: &CustomOp,
    x: &[NodeId],
    y: NodeId,
    ct: NodeId,
) -> Result<Vec<Option<NodeId>>, IrError> {
    let (q, r) = parts(g, x[0], y)?;
    let (m, n, k) = dims(g, x[0])?;
    let ct_q = block(g, ct, (0, m), (0, k))?;
    let ct_r = block(g, ct, (m, k), (0, n))?;
    let qt = mt(g, q)?;
    let qtc = matmul(g, qt, ct_q)?;
    let rt = mt(g, r)?;
    let crt = matmul(g, ct_r, rt)?;
    let mm = sub(g, qtc, crt)?;
    let mtr = mt(g, mm)?;
    let diff = sub(g, mm, mtr)?;
    let lo = strict_lower(g, diff)?;
    let nn = sub(g, lo, mm)?;
    let gg = matmul(g, q, nn)?;
    let gg = add(g, gg, ct_q)?;
    let ggt = mt(g, gg)?;
    let s = g.custom(crate::ops::solve_triangular_op(false, false), &[r, ggt])?; // R^{-1} G^T
    Ok(vec![Some(mt(g, s)?)])
}
