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

// ── eigh ──
// JAX `eigh_jvp_rule` (A symmetrized, Ȧs = (Ȧ + Ȧ^T) / 2, M = V^T Ȧs V):
//   ẇ = diag(M),  V̇ = V (F ∘ M),  F_ij = 1 / (w_j - w_i) off the diagonal, 0 on it.
// Transposed: Ā = sym(V (diag(w̄) + F ∘ (V^T V̄)) V^T).
// Caveat (as in JAX): with repeated eigenvalues F is infinite and the
// eigenvector derivatives are inf / NaN — the eigenvectors are not unique
// there; the eigenvalue derivatives stay finite.

fn sibling(op: &CustomOp, k: i64) -> CustomOp {
    CustomOp::new(
        op.name.clone(),
        op.attrs
            .clone()
            .with("output", rlx_ir::custom::CustomAttr::Int(k)),
    )
}

/// `F` of the eigenvalues `w` (`[..., n]`), `[..., n, n]`.
fn eig_gaps(g: &mut Graph, w: NodeId) -> Result<NodeId, IrError> {
    let s = g.shape(w).clone();
    let n = last_dim(g, w)?;
    let mut row = s.dims().to_vec();
    row.insert(row.len() - 1, rlx_ir::Dim::Static(1));
    let mut col = s.dims().to_vec();
    col.push(rlx_ir::Dim::Static(1));
    let wr = g.try_node(Op::Reshape, &[w], Some(Shape::from_dims(row, s.dtype())))?;
    let wc = g.try_node(Op::Reshape, &[w], Some(Shape::from_dims(col, s.dtype())))?;
    let d = sub(g, wr, wc)?; // w_j - w_i
    let eye = mask(g, n, s.dtype(), |i, j| f64::from(u8::from(i == j)))?;
    let d = add(g, d, eye)?;
    let r = g.try_node(Op::Unary(rlx_ir::op::UnaryOp::Reciprocal), &[d], None)?;
    sub(g, r, eye)
}

fn eigh_parts(g: &mut Graph, op: &CustomOp, a: NodeId) -> Result<(NodeId, NodeId), IrError> {
    let w = g.custom(sibling(op, 0), &[a])?;
    let v = g.custom(sibling(op, 1), &[a])?;
    Ok((w, v))
}

pub(crate) fn eigh_jvp(
    g: &mut Graph,
    op: &CustomOp,
    x: &[NodeId],
    _y: NodeId,
    t: &[Option<NodeId>],
) -> Result<NodeId, IrError> {
    let (w, v) = eigh_parts(g, op, x[0])?;
    let s = sym(g, t[0].expect("a tangent"))?;
    let vt = mt(g, v)?;
    let sv = matmul(g, s, v)?;
    let m = matmul(g, vt, sv)?;
    if output(op)? == 0 {
        let n = last_dim(g, w)?;
        let eye = mask(g, n, g.shape(w).dtype(), |i, j| f64::from(u8::from(i == j)))?;
        let d = mul(g, m, eye)?;
        let r = g.shape(d).rank();
        return g.try_node(
            Op::Reduce {
                op: rlx_ir::op::ReduceOp::Sum,
                axes: vec![r - 1],
                keep_dim: false,
            },
            &[d],
            None,
        );
    }
    let f = eig_gaps(g, w)?;
    let fm = mul(g, f, m)?;
    matmul(g, v, fm)
}

pub(crate) fn eigh_vjp(
    g: &mut Graph,
    op: &CustomOp,
    x: &[NodeId],
    _y: NodeId,
    ct: NodeId,
) -> Result<Vec<Option<NodeId>>, IrError> {
    let (w, v) = eigh_parts(g, op, x[0])?;
    let vt = mt(g, v)?;
    let inner = if output(op)? == 0 {
        // diag(w̄) V^T: scale the rows of V^T.
        let s = g.shape(ct).clone();
        let mut col = s.dims().to_vec();
        col.push(rlx_ir::Dim::Static(1));
        let c = g.try_node(Op::Reshape, &[ct], Some(Shape::from_dims(col, s.dtype())))?;
        mul(g, c, vt)?
    } else {
        let f = eig_gaps(g, w)?;
        let vtc = matmul(g, vt, ct)?;
        let fm = mul(g, f, vtc)?;
        matmul(g, fm, vt)?
    };
    let a = matmul(g, v, inner)?;
    Ok(vec![Some(sym(g, a)?)])
}

// ── qr ──
// JAX `qr_jvp_rule` (real, m >= n): X = Ȧ R^{-1}, C = Q^T X,
// Ω = tril(C, -1) - tril(C, -1)^T:  Q̇ = Q (Ω - C) + X,  Ṙ = (C - Ω) R.
// Transposed: M = Q^T Q̄ - R̄ R^T, N = tril(M - M^T, -1) - M,
// Ā = (Q N + Q̄) R^{-T}. Wide matrices (m < n) have no rule here (JAX
// raises too); R must be nonsingular (A of full column rank).

fn qr_parts(g: &mut Graph, op: &CustomOp, a: NodeId) -> Result<(NodeId, NodeId), IrError> {
    let s = g.shape(a);
    let d = s.dims();
    if d[d.len() - 2].as_static() < d[d.len() - 1].as_static() {
        return Err(IrError::InvalidOp {
            op: op.name.clone(),
            reason: format!("derivatives of a QR need m >= n (as JAX), given {s}"),
        });
    }
    let q = g.custom(sibling(op, 0), &[a])?;
    let r = g.custom(sibling(op, 1), &[a])?;
    Ok((q, r))
}

fn strict_lower(g: &mut Graph, x: NodeId) -> Result<NodeId, IrError> {
    let n = last_dim(g, x)?;
    let m = mask(g, n, g.shape(x).dtype(), |i, j| f64::from(u8::from(j < i)))?;
    mul(g, x, m)
}

pub(crate) fn qr_jvp(
    g: &mut Graph,
    op: &CustomOp,
    x: &[NodeId],
    _y: NodeId,
    t: &[Option<NodeId>],
) -> Result<NodeId, IrError> {
    let (q, r) = qr_parts(g, op, x[0])?;
    let ta = t[0].expect("a tangent");
    let tat = mt(g, ta)?;
    let xt = trisolve(g, r, tat, false, true)?; // R^{-T} Ȧ^T
    let xx = mt(g, xt)?; // Ȧ R^{-1}
    let qt = mt(g, q)?;
    let c = matmul(g, qt, xx)?;
    let lo = strict_lower(g, c)?;
    let lot = mt(g, lo)?;
    let omega = sub(g, lo, lot)?;
    if output(op)? == 0 {
        let d = sub(g, omega, c)?;
        let qd = matmul(g, q, d)?;
        add(g, qd, xx)
    } else {
        let d = sub(g, c, omega)?;
        matmul(g, d, r)
    }
}

pub(crate) fn qr_vjp(
    g: &mut Graph,
    op: &CustomOp,
    x: &[NodeId],
    _y: NodeId,
    ct: NodeId,
) -> Result<Vec<Option<NodeId>>, IrError> {
    let (q, r) = qr_parts(g, op, x[0])?;
    let first = output(op)? == 0;
    let m = if first {
        let qt = mt(g, q)?;
        matmul(g, qt, ct)?
    } else {
        let rt = mt(g, r)?;
        let p = matmul(g, ct, rt)?;
        scale(g, p, -1.0)?
    };
    let mtr = mt(g, m)?;
    let diff = sub(g, m, mtr)?;
    let lo = strict_lower(g, diff)?;
    let nn = sub(g, lo, m)?;
    let mut gg = matmul(g, q, nn)?;
    if first {
        gg = add(g, gg, ct)?;
    }
    let ggt = mt(g, gg)?;
    let s = trisolve(g, r, ggt, false, false)?; // R^{-1} G^T
    Ok(vec![Some(mt(g, s)?)])
}
