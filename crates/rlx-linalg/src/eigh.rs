//! `linalg.eigh`: the symmetric eigendecomposition of `(A + A^T) / 2`
//! (`jnp.linalg.eigh`) as one node with a packed output `[..., n + 1, n]`:
//! rows `0..n` hold `V` (eigenvectors as columns), row `n` the eigenvalues
//! `w` ascending. [`eigh_unpack`] slices `(w, V)` out of it, so a graph that
//! uses both decomposes once.
//!
//! Signs (LAPACK leaves them to the algorithm; ours are fixed so results
//! are reproducible and derivatives are well defined): each eigenvector
//! column has its largest-magnitude entry (the first, on ties) positive.
//!
//! Derivatives (JAX `eigh_jvp_rule`, `Ȧs = (Ȧ + Ȧ^T) / 2`, `M = V^T Ȧs V`):
//! `ẇ = diag(M)`, `V̇ = V (F ∘ M)`, `F_ij = 1 / (w_j - w_i)` off the
//! diagonal, 0 on it. Transposed: `Ā = sym(V (diag(w̄) + F ∘ (V^T V̄)) V^T)`.
//! Caveat (as in JAX): with repeated eigenvalues `F` is infinite and the
//! eigenvector derivatives are inf / NaN — the eigenvectors are not unique
//! there; the eigenvalue derivatives stay finite (an exactly zero `V̄`
//! contributes 0, as JAX's symbolic zero).

use crate::emit::*;
use crate::host::{by_dtype, column_signs, load_sym_lower, put, square, Real};
use rlx_ir::custom::{CustomOp, KernelArg, KernelOut};
use rlx_ir::op::ReduceOp;
use rlx_ir::{Dim, Graph, IrError, NodeId, Op, Shape};

/// The shape rule: `[..., n, n] -> [..., n + 1, n]`.
pub(crate) fn eigh_shape(op: &CustomOp, s: &[&Shape]) -> Result<Shape, String> {
    let a = crate::shapes::same_square(op, s)?;
    let mut d = a.dims().to_vec();
    let r = d.len();
    let Some(n) = d[r - 1].as_static() else {
        return Err(format!("needs a static matrix size, given {a}"));
    };
    d[r - 2] = Dim::Static(n + 1);
    Ok(Shape::from_dims(d, a.dtype()))
}

/// The CPU kernel.
pub(crate) fn eigh(_: &CustomOp, ins: &[KernelArg], out: &mut KernelOut) -> Result<(), String> {
    by_dtype!(ins[0].dtype, eigh_t(&ins[0], out))
}

fn eigh_t<T: Real>(a: &KernelArg, out: &mut KernelOut) -> Result<(), String> {
    let (batch, n) = square(a)?;
    for i in 0..batch {
        let at = i * (n + 1) * n;
        let s = load_sym_lower::<T>(a, i, n);
        let Ok(e) = s.self_adjoint_eigen(faer::Side::Lower) else {
            (0..(n + 1) * n).for_each(|k| put(out, at + k, T::of(f64::NAN)));
            continue;
        };
        let (w, u) = (e.S().column_vector(), e.U());
        let sign = column_signs(u);
        for r in 0..n {
            for c in 0..n {
                put(out, at + r * n + c, u[(r, c)] * sign[c]);
            }
        }
        (0..n).for_each(|j| put(out, at + n * n + j, w[j]));
    }
    Ok(())
}

/// `(w [..., n], V [..., n, n])` of a packed `linalg.eigh` output.
pub(crate) fn eigh_unpack(g: &mut Graph, packed: NodeId) -> Result<(NodeId, NodeId), IrError> {
    let n = last_dim(g, packed)?;
    let v = block(g, packed, (0, n), (0, n))?;
    let w = block(g, packed, (n, 1), (0, n))?;
    Ok((from_row(g, w)?, v))
}

fn eye(g: &mut Graph, like: NodeId) -> Result<NodeId, IrError> {
    let n = last_dim(g, like)?;
    mask(g, n, g.shape(like).dtype(), |i, j| {
        f64::from(u8::from(i == j))
    })
}

/// `F` of the eigenvalues `w` (`[..., n]`), `[..., n, n]`.
fn eig_gaps(g: &mut Graph, w: NodeId) -> Result<NodeId, IrError> {
    let s = g.shape(w).clone();
    let mut col = s.dims().to_vec();
    col.push(Dim::Static(1));
    let wr = as_row(g, w)?;
    let wc = g.try_node(Op::Reshape, &[w], Some(Shape::from_dims(col, s.dtype())))?;
    let d = sub(g, wr, wc)?; // w_j - w_i
    let e = eye(g, w)?;
    let d = add(g, d, e)?;
    let r = g.try_node(Op::Unary(rlx_ir::op::UnaryOp::Reciprocal), &[d], None)?;
    sub(g, r, e)
}

pub(crate) fn eigh_jvp(
    g: &mut Graph,
    _: &CustomOp,
    _x: &[NodeId],
    y: NodeId,
    t: &[Option<NodeId>],
) -> Result<NodeId, IrError> {
    let (w, v) = eigh_unpack(g, y)?;
    let s = sym(g, t[0].expect("a tangent"))?;
    let vt = mt(g, v)?;
    let sv = matmul(g, s, v)?;
    let m = matmul(g, vt, sv)?;
    // diag(M) as a row [..., 1, n].
    let e = eye(g, w)?;
    let d = mul(g, m, e)?;
    let r = g.shape(d).rank();
    let dw = g.try_node(
        Op::Reduce {
            op: ReduceOp::Sum,
            axes: vec![r - 2],
            keep_dim: true,
        },
        &[d],
        None,
    )?;
    let f = eig_gaps(g, w)?;
    let fm = mul(g, f, m)?;
    let dv = matmul(g, v, fm)?;
    stack_rows(g, &[dv, dw])
}

pub(crate) fn eigh_vjp(
    g: &mut Graph,
    _: &CustomOp,
    _x: &[NodeId],
    y: NodeId,
    ct: NodeId,
) -> Result<Vec<Option<NodeId>>, IrError> {
    let (w, v) = eigh_unpack(g, y)?;
    let n = last_dim(g, v)?;
    let ct_v = block(g, ct, (0, n), (0, n))?;
    let ct_w = block(g, ct, (n, 1), (0, n))?; // a row
    let e = eye(g, w)?;
    let diag_w = mul(g, e, ct_w)?;
    let f = eig_gaps(g, w)?;
    let vt = mt(g, v)?;
    let vtc = matmul(g, vt, ct_v)?;
    let fm = mul(g, f, vtc)?;
    let fm = where_nonzero(g, vtc, fm)?;
    let inner = add(g, diag_w, fm)?;
    let a = matmul(g, v, inner)?;
    let a = matmul(g, a, vt)?;
    Ok(vec![Some(sym(g, a)?)])
}
