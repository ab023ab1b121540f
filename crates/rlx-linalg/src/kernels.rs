//! The CPU kernels of the one-output ops, on faer in the tensor's dtype
//! (f32 computed in f32). Singular or non-positive-definite inputs give the
//! values JAX gives, not an error: NaN for a failed Cholesky, inf / NaN from
//! a zero pivot.
//!
//! A row-major block read in order is `A^T` in faer's column-major layout,
//! so the LU-based kernels factor `A^T` and solve with its transpose
//! (`A = (A^T)^T`) instead of transposing `A` first.

use crate::host::{by_dtype, load, load_sym_lower, load_t, put, square, store, system, Real};
use faer::linalg::solvers::{DenseSolveCore, Solve};
use rlx_ir::custom::{CustomOp, KernelArg, KernelOut};

/// `linalg.cholesky`: the lower factor of `(A + A^T) / 2`; NaN in the lower
/// triangle where it is not positive definite (as `jnp.linalg.cholesky`).
pub(crate) fn cholesky(_: &CustomOp, ins: &[KernelArg], out: &mut KernelOut) -> Result<(), String> {
    by_dtype!(ins[0].dtype, cholesky_t(&ins[0], out))
}

fn cholesky_t<T: Real>(a: &KernelArg, out: &mut KernelOut) -> Result<(), String> {
    let (batch, n) = square(a)?;
    let zero = T::of(0.0);
    for i in 0..batch {
        let s = load_sym_lower::<T>(a, i, n);
        let at = i * n * n;
        match s.llt(faer::Side::Lower) {
            Ok(llt) => {
                let l = llt.L();
                for r in 0..n {
                    for c in 0..n {
                        put(out, at + r * n + c, if c <= r { l[(r, c)] } else { zero });
                    }
                }
            }
            // JAX: NaN in the lower triangle, zeros above it.
            Err(_) => {
                for k in 0..n * n {
                    put(
                        out,
                        at + k,
                        T::of(if k % n <= k / n { f64::NAN } else { 0.0 }),
                    );
                }
            }
        }
    }
    Ok(())
}

fn flag(op: &CustomOp, name: &str) -> Result<bool, String> {
    op.attrs.bool_or(name, false)
}

/// `linalg.solve_triangular{lower, trans}`: `op(A)^{-1} B` by blocked
/// substitution, reading only A's `lower` (or upper) triangle; `op(A) = A^T`
/// when `trans`.
pub(crate) fn solve_triangular(
    op: &CustomOp,
    ins: &[KernelArg],
    out: &mut KernelOut,
) -> Result<(), String> {
    let (lower, trans) = (flag(op, "lower")?, flag(op, "trans")?);
    by_dtype!(
        ins[0].dtype,
        solve_triangular_t(lower, trans, &ins[0], &ins[1], out)
    )
}

fn solve_triangular_t<T: Real>(
    lower: bool,
    trans: bool,
    a: &KernelArg,
    b: &KernelArg,
    out: &mut KernelOut,
) -> Result<(), String> {
    use faer::linalg::triangular_solve as ts;
    let (batch, n, k) = system(a, b)?;
    for i in 0..batch {
        let at = load_t::<T>(a, i, n, n); // A^T, column-major
        let op_a = if trans { at.as_ref() } else { at.transpose() };
        let mut x = load::<T>(b, i, n, k);
        // op(A) is lower triangular iff lower != trans.
        if lower != trans {
            ts::solve_lower_triangular_in_place(op_a, x.as_mut(), faer::Par::Seq);
        } else {
            ts::solve_upper_triangular_in_place(op_a, x.as_mut(), faer::Par::Seq);
        }
        store(out, i * n * k, k, x.as_ref());
    }
    Ok(())
}

/// `linalg.solve{trans}`: `op(A)^{-1} B` by LU with partial pivoting (of
/// `A^T`, which is what the row-major bytes are in column-major order).
pub(crate) fn solve(op: &CustomOp, ins: &[KernelArg], out: &mut KernelOut) -> Result<(), String> {
    let trans = flag(op, "trans")?;
    by_dtype!(ins[0].dtype, solve_t(trans, &ins[0], &ins[1], out))
}

fn solve_t<T: Real>(
    trans: bool,
    a: &KernelArg,
    b: &KernelArg,
    out: &mut KernelOut,
) -> Result<(), String> {
    let (batch, n, k) = system(a, b)?;
    for i in 0..batch {
        let lu = load_t::<T>(a, i, n, n).partial_piv_lu(); // of A^T
        let mut x = load::<T>(b, i, n, k);
        if trans {
            lu.solve_in_place(x.as_mut()); // A^T x = b
        } else {
            lu.solve_transpose_in_place(x.as_mut()); // (A^T)^T x = b
        }
        store(out, i * n * k, k, x.as_ref());
    }
    Ok(())
}

/// `linalg.inv`: `A^{-1} = ((A^T)^{-1})^T` by LU with partial pivoting;
/// `(A^T)^{-1}` in column-major order is `A^{-1}` row-major.
pub(crate) fn inv(_: &CustomOp, ins: &[KernelArg], out: &mut KernelOut) -> Result<(), String> {
    by_dtype!(ins[0].dtype, inv_t(&ins[0], out))
}

fn inv_t<T: Real>(a: &KernelArg, out: &mut KernelOut) -> Result<(), String> {
    let (batch, n) = square(a)?;
    for i in 0..batch {
        let x = load_t::<T>(a, i, n, n).partial_piv_lu().inverse();
        crate::host::store_t(out, i * n * n, x.as_ref());
    }
    Ok(())
}

/// `(sign, log|det|)` of `m` by LU with partial pivoting (`(0, -inf)` for an
/// exactly singular one, as numpy).
pub(crate) fn slogdet_of<T: Real>(m: faer::MatRef<'_, T>) -> (f64, f64) {
    let f = m.partial_piv_lu();
    let u = f.U();
    let (mut sign, mut logabs) = (permutation_sign(f.P().arrays().0), 0.0f64);
    for c in 0..m.nrows() {
        let piv = u[(c, c)].f64();
        // The first zero / NaN pivot decides, as in elimination order.
        if piv == 0.0 {
            return (0.0, f64::NEG_INFINITY);
        }
        if piv.is_nan() {
            return (f64::NAN, f64::NAN);
        }
        sign *= piv.signum();
        logabs += piv.abs().ln();
    }
    (sign, logabs)
}

/// `+1` for an even permutation, `-1` for an odd one (by its cycles).
fn permutation_sign(perm: &[usize]) -> f64 {
    let mut seen = vec![false; perm.len()];
    let mut odd = false;
    for start in 0..perm.len() {
        let mut len = 0;
        let mut i = start;
        while !seen[i] {
            seen[i] = true;
            i = perm[i];
            len += 1;
        }
        // A cycle of length k is k - 1 transpositions.
        if len > 0 && len % 2 == 0 {
            odd = !odd;
        }
    }
    if odd {
        -1.0
    } else {
        1.0
    }
}

/// `linalg.det`: `sign * exp(log|det|)`.
pub(crate) fn det(_: &CustomOp, ins: &[KernelArg], out: &mut KernelOut) -> Result<(), String> {
    by_dtype!(ins[0].dtype, slogdet_t(None, &ins[0], out))
}

/// `linalg.slogdet{output}`: the sign (`output=0`) or `log|det|` (`output=1`).
pub(crate) fn slogdet(op: &CustomOp, ins: &[KernelArg], out: &mut KernelOut) -> Result<(), String> {
    let which = op.attrs.int_or("output", 0)?;
    by_dtype!(ins[0].dtype, slogdet_t(Some(which), &ins[0], out))
}

/// `det` (`which = None`), the sign (`Some(0)`) or `log|det|` per matrix.
/// The log-determinant is accumulated in f64 for f32 input too (it is a sum
/// of `n` logs; the factorization itself runs in f32). `A` itself is
/// factored, not `A^T`: rounding differs between the two, and only the
/// factorization numpy runs finds the exact zero pivot of an exactly
/// singular `A` that numpy reports as `(0, -inf)`.
fn slogdet_t<T: Real>(
    which: Option<i64>,
    a: &KernelArg,
    out: &mut KernelOut,
) -> Result<(), String> {
    let (batch, n) = square(a)?;
    for i in 0..batch {
        let (s, l) = slogdet_of(load::<T>(a, i, n, n).as_ref());
        let v = match which {
            None => s * l.exp(),
            Some(0) => s,
            Some(_) => l,
        };
        put(out, i, T::of(v));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    fn slogdet(m: &[f64], n: usize) -> (f64, f64) {
        super::slogdet_of(faer::MatRef::from_row_major_slice(m, n, n))
    }

    #[test]
    fn slogdet_signs_and_singular_matrices_as_numpy() {
        // np.linalg.slogdet of each.
        assert_eq!(slogdet(&[0.0, 1.0, 1.0, 0.0], 2), (-1.0, 0.0));
        let p3 = [0.0, 1.0, 0.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0];
        assert_eq!(slogdet(&p3, 3), (1.0, 0.0));
        assert_eq!(slogdet(&[1.0, 2.0, 2.0, 4.0], 2), (0.0, f64::NEG_INFINITY));
        let (s, l) = slogdet(&[2.0, 0.0, 0.0, -3.0], 2);
        assert_eq!(s, -1.0);
        assert!((l - 6f64.ln()).abs() < 1e-15);
    }
}
