//! The CPU kernels, computed in f64 on faer (f32 data is widened and the
//! result rounded once). Singular or non-positive-definite inputs give the
//! values JAX gives, not an error: NaN for a failed Cholesky, inf / NaN from
//! a zero pivot.

use crate::host::{mat, push, read, square, system, write};
use faer::linalg::solvers::Solve;
use rlx_ir::custom::{CustomOp, KernelArg, KernelOut};

/// `linalg.cholesky`: the lower factor of `(A + A^T) / 2`; NaN in the lower
/// triangle where it is not positive definite (as `jnp.linalg.cholesky`).
pub(crate) fn cholesky(_: &CustomOp, ins: &[KernelArg], out: &mut KernelOut) -> Result<(), String> {
    let (batch, n) = square(&ins[0])?;
    let a = read(&ins[0])?;
    let mut res = Vec::with_capacity(a.len());
    for i in 0..batch {
        let m = mat(&a, i, n, n);
        let s = faer::Mat::from_fn(n, n, |r, c| 0.5 * (m[(r, c)] + m[(c, r)]));
        match s.llt(faer::Side::Lower) {
            Ok(llt) => {
                let l = llt.L();
                let l = faer::Mat::from_fn(n, n, |r, c| if c <= r { l[(r, c)] } else { 0.0 });
                push(&mut res, l.as_ref());
            }
            // JAX: NaN in the lower triangle, zeros above it.
            Err(_) => res.extend((0..n * n).map(|k| if k % n <= k / n { f64::NAN } else { 0.0 })),
        }
    }
    write(out, &res)
}

fn flag(op: &CustomOp, name: &str) -> Result<bool, String> {
    op.attrs.bool_or(name, false)
}

/// `linalg.solve_triangular{lower, trans}`: `op(A)^{-1} B` by substitution,
/// reading only A's `lower` (or upper) triangle; `op(A) = A^T` when `trans`.
pub(crate) fn solve_triangular(
    op: &CustomOp,
    ins: &[KernelArg],
    out: &mut KernelOut,
) -> Result<(), String> {
    let (lower, trans) = (flag(op, "lower")?, flag(op, "trans")?);
    let (batch, n, k) = system(&ins[0], &ins[1])?;
    let (a, b) = (read(&ins[0])?, read(&ins[1])?);
    let mut x = b.clone();
    for i in 0..batch {
        let ab = &a[i * n * n..][..n * n];
        let xb = &mut x[i * n * k..][..n * k];
        // op(A) as a triangular matrix: element (r, c) of op(A).
        let at = |r: usize, c: usize| if trans { ab[c * n + r] } else { ab[r * n + c] };
        // op(A) is lower triangular iff lower != trans.
        let forward = lower != trans;
        for step in 0..n {
            let r = if forward { step } else { n - 1 - step };
            for col in 0..k {
                let mut s = xb[r * k + col];
                let range: Box<dyn Iterator<Item = usize>> = if forward {
                    Box::new(0..r)
                } else {
                    Box::new(r + 1..n)
                };
                for c in range {
                    s -= at(r, c) * xb[c * k + col];
                }
                xb[r * k + col] = s / at(r, r);
            }
        }
    }
    write(out, &x)
}

/// `linalg.solve{trans}`: `op(A)^{-1} B` by LU with partial pivoting.
pub(crate) fn solve(op: &CustomOp, ins: &[KernelArg], out: &mut KernelOut) -> Result<(), String> {
    let trans = flag(op, "trans")?;
    let (batch, n, k) = system(&ins[0], &ins[1])?;
    let (a, b) = (read(&ins[0])?, read(&ins[1])?);
    let mut res = Vec::with_capacity(b.len());
    for i in 0..batch {
        let mut m = mat(&a, i, n, n);
        if trans {
            m = m.transpose().to_owned();
        }
        let x = m.partial_piv_lu().solve(mat(&b, i, n, k));
        push(&mut res, x.as_ref());
    }
    write(out, &res)
}

/// `linalg.inv`: `A^{-1}` by LU with partial pivoting.
pub(crate) fn inv(_: &CustomOp, ins: &[KernelArg], out: &mut KernelOut) -> Result<(), String> {
    let (batch, n) = square(&ins[0])?;
    let a = read(&ins[0])?;
    let mut res = Vec::with_capacity(a.len());
    for i in 0..batch {
        let m = mat(&a, i, n, n);
        let eye = faer::Mat::<f64>::identity(n, n);
        let x = m.partial_piv_lu().solve(eye);
        push(&mut res, x.as_ref());
    }
    write(out, &res)
}

/// `(sign, log|det|)` of a row-major `n x n` matrix by LU with partial
/// pivoting (`(0, -inf)` for an exactly singular one, as numpy).
pub(crate) fn slogdet_of(m: &[f64], n: usize) -> (f64, f64) {
    let f = faer::Mat::from_fn(n, n, |r, c| m[r * n + c]).partial_piv_lu();
    let u = f.U();
    let (mut sign, mut logabs) = (permutation_sign(f.P().arrays().0), 0.0f64);
    for c in 0..n {
        let piv = u[(c, c)];
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
    let (batch, n) = square(&ins[0])?;
    let a = read(&ins[0])?;
    let res: Vec<f64> = (0..batch)
        .map(|i| {
            let (s, l) = slogdet_of(&a[i * n * n..][..n * n], n);
            s * l.exp()
        })
        .collect();
    write(out, &res)
}

/// `linalg.slogdet{output}`: the sign (`output=0`) or `log|det|` (`output=1`).
pub(crate) fn slogdet(op: &CustomOp, ins: &[KernelArg], out: &mut KernelOut) -> Result<(), String> {
    let which = op.attrs.int_or("output", 0)?;
    let (batch, n) = square(&ins[0])?;
    let a = read(&ins[0])?;
    let res: Vec<f64> = (0..batch)
        .map(|i| {
            let (s, l) = slogdet_of(&a[i * n * n..][..n * n], n);
            if which == 0 {
                s
            } else {
                l
            }
        })
        .collect();
    write(out, &res)
}

#[cfg(test)]
mod tests {
    #[test]
    fn slogdet_signs_and_singular_matrices_as_numpy() {
        // np.linalg.slogdet of each.
        assert_eq!(super::slogdet_of(&[0.0, 1.0, 1.0, 0.0], 2), (-1.0, 0.0));
        let p3 = [0.0, 1.0, 0.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0];
        assert_eq!(super::slogdet_of(&p3, 3), (1.0, 0.0));
        assert_eq!(
            super::slogdet_of(&[1.0, 2.0, 2.0, 4.0], 2),
            (0.0, f64::NEG_INFINITY)
        );
        let (s, l) = super::slogdet_of(&[2.0, 0.0, 0.0, -3.0], 2);
        assert_eq!(s, -1.0);
        assert!((l - 6f64.ln()).abs() < 1e-15);
    }
}
