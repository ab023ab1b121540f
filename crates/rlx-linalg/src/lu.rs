//! `linalg.lu{output}`: `A = P L U` with partial pivoting, square `A`
//! (`scipy.linalg.lu`): `P` (output 0, a permutation matrix), `L` unit
//! lower (output 1), `U` upper (output 2).
//!
//! Derivatives (JAX `_lu_jvp_rule`): with `X = L^{-1} P^T Ȧ U^{-1}`,
//! `L̇ = L tril(X, -1)`, `U̇ = triu(X) U`, `Ṗ = 0`. Transposed:
//! `Ā = P L^{-T} (tril(L^T L̄, -1) + triu(Ū U^T)) U^{-T}`.
//! A singular `A` (a zero pivot) makes `U^{-1}` and the derivatives inf / NaN.

use crate::emit::*;
use crate::host::{read, square, write};
use rlx_ir::custom::{CustomAttr, CustomOp, KernelArg, KernelOut};
use rlx_ir::{Graph, IrError, NodeId};

fn output(op: &CustomOp) -> Result<i64, String> {
    let k = op.attrs.int_or("output", 0)?;
    if !(0..=2).contains(&k) {
        return Err(format!("output must be 0 (P), 1 (L) or 2 (U), is {k}"));
    }
    Ok(k)
}

/// The shape rule: every output is `[..., n, n]`.
pub(crate) fn lu_shape(op: &CustomOp, s: &[&rlx_ir::Shape]) -> Result<rlx_ir::Shape, String> {
    output(op)?;
    crate::shapes::same_square(op, s)
}

/// `(perm, L, U)` of one row-major matrix, LAPACK's partial pivoting
/// (largest magnitude, first on ties): row `i` of `P^T A` is row `perm[i]` of `A`.
fn lu_one(m: &[f64], n: usize) -> (Vec<usize>, Vec<f64>, Vec<f64>) {
    // faer's blocked LU pivots like LAPACK (strictly larger magnitude wins,
    // so the first row on ties).
    let f = faer::Mat::from_fn(n, n, |r, c| m[r * n + c]).partial_piv_lu();
    let perm = f.P().arrays().0.to_vec();
    let (l, u) = (f.L(), f.U());
    let l = (0..n * n).map(|k| l[(k / n, k % n)]).collect();
    let u = (0..n * n).map(|k| u[(k / n, k % n)]).collect();
    (perm, l, u)
}

/// The CPU kernel.
pub(crate) fn lu(op: &CustomOp, ins: &[KernelArg], out: &mut KernelOut) -> Result<(), String> {
    let which = output(op)?;
    let (batch, n) = square(&ins[0])?;
    let a = read(&ins[0])?;
    let mut res = Vec::with_capacity(a.len());
    for i in 0..batch {
        let (perm, l, u) = lu_one(&a[i * n * n..][..n * n], n);
        match which {
            0 => {
                // A = P L U with P^T A = rows perm of A: P[perm[i], i] = 1.
                let mut p = vec![0.0; n * n];
                for (i, &r) in perm.iter().enumerate() {
                    p[r * n + i] = 1.0;
                }
                res.extend(p);
            }
            1 => res.extend(l),
            _ => res.extend(u),
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

fn tri_mask(g: &mut Graph, x: NodeId, keep: fn(usize, usize) -> bool) -> Result<NodeId, IrError> {
    let n = last_dim(g, x)?;
    let m = mask(g, n, g.shape(x).dtype(), |i, j| {
        f64::from(u8::from(keep(i, j)))
    })?;
    mul(g, x, m)
}

fn err(op: &CustomOp) -> impl Fn(String) -> IrError + '_ {
    move |reason| IrError::InvalidOp {
        op: op.name.clone(),
        reason,
    }
}

pub(crate) fn lu_jvp(
    g: &mut Graph,
    op: &CustomOp,
    x: &[NodeId],
    y: NodeId,
    t: &[Option<NodeId>],
) -> Result<NodeId, IrError> {
    let which = output(op).map_err(err(op))?;
    if which == 0 {
        return zeros_like(g, y);
    }
    let p = part(g, op, x[0], 0)?;
    let l = part(g, op, x[0], 1)?;
    let u = part(g, op, x[0], 2)?;
    let pt = mt(g, p)?;
    let pa = matmul(g, pt, t[0].expect("a tangent"))?;
    let la = g.custom(crate::ops::solve_triangular_op(true, false), &[l, pa])?; // L^{-1} P^T Ȧ
    let lat = mt(g, la)?;
    let xt = g.custom(crate::ops::solve_triangular_op(false, true), &[u, lat])?; // U^{-T} (..)^T
    let xx = mt(g, xt)?; // L^{-1} P^T Ȧ U^{-1}
    if which == 1 {
        let lo = tri_mask(g, xx, |i, j| j < i)?;
        matmul(g, l, lo)
    } else {
        let up = tri_mask(g, xx, |i, j| j >= i)?;
        matmul(g, up, u)
    }
}

pub(crate) fn lu_vjp(
    g: &mut Graph,
    op: &CustomOp,
    x: &[NodeId],
    _y: NodeId,
    ct: NodeId,
) -> Result<Vec<Option<NodeId>>, IrError> {
    let which = output(op).map_err(err(op))?;
    if which == 0 {
        return Ok(vec![None]);
    }
    let p = part(g, op, x[0], 0)?;
    let l = part(g, op, x[0], 1)?;
    let u = part(g, op, x[0], 2)?;
    let inner = if which == 1 {
        let lt = mt(g, l)?;
        let m = matmul(g, lt, ct)?;
        tri_mask(g, m, |i, j| j < i)?
    } else {
        let ut = mt(g, u)?;
        let m = matmul(g, ct, ut)?;
        tri_mask(g, m, |i, j| j >= i)?
    };
    // L^{-T} inner U^{-T} = L^{-T} (U^{-1} inner^T)^T
    let it = mt(g, inner)?;
    let s = g.custom(crate::ops::solve_triangular_op(false, false), &[u, it])?;
    let st = mt(g, s)?;
    let z = g.custom(crate::ops::solve_triangular_op(true, true), &[l, st])?;
    Ok(vec![Some(matmul(g, p, z)?)])
}

#[cfg(test)]
mod tests {
    #[test]
    fn ties_pivot_on_the_first_row_as_scipy() {
        // scipy.linalg.lu([[1, 2], [1, 3]]): P = I, L = [[1, 0], [1, 1]],
        // U = [[1, 2], [0, 1]].
        let (perm, l, u) = super::lu_one(&[1.0, 2.0, 1.0, 3.0], 2);
        assert_eq!(perm, [0, 1]);
        assert_eq!(l, [1.0, 0.0, 1.0, 1.0]);
        assert_eq!(u, [1.0, 2.0, 0.0, 1.0]);
    }
}
