//! `linalg.lu`: one partial-pivoting factorization `A = P L U` of square
//! `A` (`scipy.linalg.lu`), as one node with a packed output
//! `[..., n, n + 1]` (LAPACK's `getrf` layout plus the permutation):
//! columns `0..n` hold `U` on and above the diagonal and `L`'s strict lower
//! part below it (its unit diagonal implied), column `n` holds `perm` (row
//! `i` of `P^T A` is row `perm[i]` of `A`) as a float. [`unpack`] reads
//! `P`, `L` and `U` out of it (`linalg.lu_unpack`, one pass each), so a
//! graph that uses all three factors once.
//!
//! Derivatives (JAX `_lu_jvp_rule`): with `X = L^{-1} P^T Ȧ U^{-1}`,
//! `L̇ = L tril(X, -1)`, `U̇ = triu(X) U`, `Ṗ = 0`, so the packed tangent is
//! `[L̇ + U̇ | 0]`. Transposed, for a packed cotangent `C` (its first `n`
//! columns): `Ā = P L^{-T} (tril(L^T C, -1) + triu(C U^T)) U^{-T}`
//! (`tril(L^T C, -1)` reads only `C`'s strict lower part, `triu(C U^T)` only
//! its upper part: each factor's own cotangent).
//! A singular `A` (a zero pivot) makes `U^{-1}` and the derivatives inf / NaN.

use crate::emit::*;
use crate::host::{by_dtype, load, put, square, store, Real};
use faer::dyn_stack::{MemBuffer, MemStack};
use faer::linalg::lu::partial_pivoting::factor as plu;
use rlx_ir::custom::{CustomOp, KernelArg, KernelOut};
use rlx_ir::{DType, Dim, Graph, IrError, NodeId, Shape};

/// The shape rule: `[..., n, n] -> [..., n, n + 1]`.
pub(crate) fn lu_shape(op: &CustomOp, s: &[&Shape]) -> Result<Shape, String> {
    let a = crate::shapes::same_square(op, s)?;
    let d = a.dims();
    let Some(n) = d[d.len() - 1].as_static() else {
        return Err(format!("needs a static matrix size, given {a}"));
    };
    // The permutation is stored as floats: exact up to 2^24 in f32.
    if a.dtype() == DType::F32 && n > 1 << 24 {
        return Err(format!("f32 pivots are exact up to n = 2^24, given {a}"));
    }
    let mut out = d.to_vec();
    out[d.len() - 1] = Dim::Static(n + 1);
    Ok(Shape::from_dims(out, a.dtype()))
}

/// The CPU kernel.
pub(crate) fn lu(_: &CustomOp, ins: &[KernelArg], out: &mut KernelOut) -> Result<(), String> {
    by_dtype!(ins[0].dtype, lu_t(&ins[0], out))
}

fn lu_t<T: Real>(a: &KernelArg, out: &mut KernelOut) -> Result<(), String> {
    let (batch, n) = square(a)?;
    let mut perm = vec![0usize; n];
    let mut perm_inv = vec![0usize; n];
    let par = faer::Par::Seq;
    let mut mem = MemBuffer::new(plu::lu_in_place_scratch::<usize, T>(
        n,
        n,
        par,
        Default::default(),
    ));
    for i in 0..batch {
        // faer's blocked LU pivots like LAPACK (strictly larger magnitude
        // wins, so the first row on ties).
        let mut m = load::<T>(a, i, n, n);
        plu::lu_in_place(
            m.as_mut(),
            &mut perm,
            &mut perm_inv,
            par,
            MemStack::new(&mut mem),
            Default::default(),
        );
        let at = i * n * (n + 1);
        store(out, at, n + 1, m.as_ref());
        for (r, &p) in perm.iter().enumerate() {
            put(out, at + r * (n + 1) + n, T::of(p as f64));
        }
    }
    Ok(())
}

fn tri_mask(g: &mut Graph, x: NodeId, keep: fn(usize, usize) -> bool) -> Result<NodeId, IrError> {
    let n = last_dim(g, x)?;
    let m = mask(g, n, g.shape(x).dtype(), |i, j| {
        f64::from(u8::from(keep(i, j)))
    })?;
    mul(g, x, m)
}

/// `(P, L, U)` of a packed `linalg.lu` output, each `[..., n, n]`
/// (`linalg.lu_unpack` nodes).
pub(crate) fn unpack(g: &mut Graph, packed: NodeId) -> Result<(NodeId, NodeId, NodeId), IrError> {
    let p = g.custom(crate::lu_unpack::unpack_op(0), &[packed])?;
    let l = g.custom(crate::lu_unpack::unpack_op(1), &[packed])?;
    let u = g.custom(crate::lu_unpack::unpack_op(2), &[packed])?;
    Ok((p, l, u))
}

pub(crate) fn lu_jvp(
    g: &mut Graph,
    _: &CustomOp,
    _x: &[NodeId],
    y: NodeId,
    t: &[Option<NodeId>],
) -> Result<NodeId, IrError> {
    let (p, l, u) = unpack(g, y)?;
    let pt = mt(g, p)?;
    let pa = matmul(g, pt, t[0].expect("a tangent"))?;
    let la = g.custom(crate::ops::solve_triangular_op(true, false), &[l, pa])?; // L^{-1} P^T Ȧ
    let lat = mt(g, la)?;
    let xt = g.custom(crate::ops::solve_triangular_op(false, true), &[u, lat])?; // U^{-T} (..)^T
    let xx = mt(g, xt)?; // L^{-1} P^T Ȧ U^{-1}
    let lo = tri_mask(g, xx, |i, j| j < i)?;
    let dl = matmul(g, l, lo)?;
    let up = tri_mask(g, xx, |i, j| j >= i)?;
    let du = matmul(g, up, u)?;
    let dlu = add(g, dl, du)?;
    let n = last_dim(g, dlu)?;
    pad_cols(g, dlu, n + 1)
}

pub(crate) fn lu_vjp(
    g: &mut Graph,
    _: &CustomOp,
    _x: &[NodeId],
    y: NodeId,
    ct: NodeId,
) -> Result<Vec<Option<NodeId>>, IrError> {
    let (p, l, u) = unpack(g, y)?;
    let n = last_dim(g, u)?;
    let c = block(g, ct, (0, n), (0, n))?;
    let lt = mt(g, l)?;
    let ltc = matmul(g, lt, c)?;
    let lower = tri_mask(g, ltc, |i, j| j < i)?;
    let ut = mt(g, u)?;
    let cut = matmul(g, c, ut)?;
    let upper = tri_mask(g, cut, |i, j| j >= i)?;
    let inner = add(g, lower, upper)?;
    // L^{-T} inner U^{-T} = L^{-T} (U^{-1} inner^T)^T
    let it = mt(g, inner)?;
    let s = g.custom(crate::ops::solve_triangular_op(false, false), &[u, it])?;
    let st = mt(g, s)?;
    let z = g.custom(crate::ops::solve_triangular_op(true, true), &[l, st])?;
    Ok(vec![Some(matmul(g, p, z)?)])
}

#[cfg(test)]
mod tests {
    use rlx_ir::custom::{CustomAttrs, CustomOp, KernelArg, KernelOut};
    use rlx_ir::DType;

    #[test]
    fn ties_pivot_on_the_first_row_as_scipy() {
        // scipy.linalg.lu([[1, 2], [1, 3]]): P = I, L = [[1, 0], [1, 1]],
        // U = [[1, 2], [0, 1]]: packed [[1, 2 | 0], [1, 1 | 1]].
        let a: Vec<u8> = [1.0f64, 2.0, 1.0, 3.0]
            .iter()
            .flat_map(|x| x.to_le_bytes())
            .collect();
        let mut o = vec![0u8; 6 * 8];
        let arg = KernelArg {
            dims: &[2, 2],
            dtype: DType::F64,
            bytes: &a,
        };
        let mut out = KernelOut {
            dims: &[2, 3],
            dtype: DType::F64,
            bytes: &mut o,
        };
        super::lu(
            &CustomOp::new("linalg.lu", CustomAttrs::new()),
            &[arg],
            &mut out,
        )
        .unwrap();
        let got: Vec<f64> = o
            .chunks_exact(8)
            .map(|b| f64::from_le_bytes(b.try_into().unwrap()))
            .collect();
        assert_eq!(got, [1.0, 2.0, 0.0, 1.0, 1.0, 1.0]);
    }
}
