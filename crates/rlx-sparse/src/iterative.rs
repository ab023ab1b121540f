//! Krylov solvers with scipy.sparse.linalg's stopping rules: conjugate
//! gradient ([`cg`], symmetric positive definite `A`) and BiCGSTAB
//! ([`bicgstab`], general square `A`), optionally Jacobi-preconditioned.
//! Non-convergence and breakdown are reported in the [`IterativeResult`],
//! never as a panic.

use crate::error::{Result, SparseError};
use crate::matrix::CsrMatrix;
use crate::scalar::Scalar;

/// A preconditioner `M⁻¹`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Preconditioner {
    /// None (`M = I`).
    Identity,
    /// Jacobi: `M = diag(A)` (a zero on the diagonal is an error).
    Jacobi,
}

/// Tolerances and limits, scipy's names and defaults.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct IterativeOptions {
    /// Relative tolerance: stop when `‖r‖ < max(atol, rtol ‖b‖)` (1e-5).
    pub rtol: f64,
    /// Absolute tolerance (0).
    pub atol: f64,
    /// Iteration limit (`None`: `10 n`, as scipy).
    pub maxiter: Option<usize>,
    /// The preconditioner (none).
    pub preconditioner: Preconditioner,
}

impl Default for IterativeOptions {
    fn default() -> Self {
        IterativeOptions {
            rtol: 1e-5,
            atol: 0.0,
            maxiter: None,
            preconditioner: Preconditioner::Identity,
        }
    }
}

/// Why an iteration stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    /// The residual met the tolerance (scipy's `info == 0`).
    Converged,
    /// The iteration limit was reached first (scipy's `info == maxiter`).
    MaxIterations,
    /// A breakdown (a vanishing `ρ` or `ω`, scipy's negative `info`).
    Breakdown(&'static str),
}

/// What an iterative solve returns.
#[derive(Debug, Clone, PartialEq)]
pub struct IterativeResult<T> {
    /// The last iterate.
    pub x: Vec<T>,
    /// Iterations run.
    pub iterations: usize,
    /// `‖b - A x‖` of the returned `x` (recomputed).
    pub residual_norm: f64,
    /// Why it stopped.
    pub stop: StopReason,
}

impl<T> IterativeResult<T> {
    /// Whether the tolerance was met.
    pub fn converged(&self) -> bool {
        self.stop == StopReason::Converged
    }
}

fn dot<T: Scalar>(a: &[T], b: &[T]) -> T {
    let mut s = T::ZERO;
    for (&x, &y) in a.iter().zip(b) {
        s += x * y;
    }
    s
}

fn norm<T: Scalar>(a: &[T]) -> f64 {
    dot(a, a).to_f64().sqrt()
}

/// `y += alpha x`.
fn axpy<T: Scalar>(alpha: T, x: &[T], y: &mut [T]) {
    y.iter_mut().zip(x).for_each(|(y, &x)| *y += alpha * x);
}

struct Setup<T> {
    inv_diag: Option<Vec<T>>,
    x: Vec<T>,
    r: Vec<T>,
    atol: f64,
    maxiter: usize,
}

fn setup<T: Scalar>(
    a: &CsrMatrix<T>,
    b: &[T],
    x0: Option<&[T]>,
    opts: &IterativeOptions,
) -> Result<Setup<T>> {
    let (m, n) = a.shape();
    if m != n {
        return Err(SparseError::Shape {
            op: "iterative solve",
            detail: format!("A is {m} x {n}, not square"),
        });
    }
    if b.len() != n {
        return Err(SparseError::Shape {
            op: "iterative solve",
            detail: format!("b has {} values for A of {n} x {n}", b.len()),
        });
    }
    if x0.is_some_and(|x| x.len() != n) {
        return Err(SparseError::Shape {
            op: "iterative solve",
            detail: format!(
                "x0 has {} values for A of {n} x {n}",
                x0.map_or(0, <[T]>::len)
            ),
        });
    }
    for (name, v) in [("rtol", opts.rtol), ("atol", opts.atol)] {
        if !(v.is_finite() && v >= 0.0) {
            return Err(SparseError::InvalidArgument {
                name,
                reason: format!("{v} is not a finite value >= 0"),
            });
        }
    }
    let inv_diag = match opts.preconditioner {
        Preconditioner::Identity => None,
        Preconditioner::Jacobi => {
            let d = a.diagonal();
            if let Some(i) = d.iter().position(|&v| v == T::ZERO) {
                return Err(SparseError::InvalidArgument {
                    name: "preconditioner",
                    reason: format!("Jacobi needs a non-zero diagonal; A[{i}, {i}] is 0"),
                });
            }
            Some(d.into_iter().map(|v| T::ONE / v).collect())
        }
    };
    let x = x0.map_or_else(|| vec![T::ZERO; n], <[T]>::to_vec);
    let ax = a.spmv(&x)?;
    let r: Vec<T> = b.iter().zip(&ax).map(|(&b, &ax)| b - ax).collect();
    Ok(Setup {
        inv_diag,
        x,
        r,
        atol: opts.atol.max(opts.rtol * norm(b)),
        maxiter: opts.maxiter.unwrap_or(10 * n),
    })
}

fn psolve<T: Scalar>(inv_diag: &Option<Vec<T>>, r: &[T]) -> Vec<T> {
    match inv_diag {
        None => r.to_vec(),
        Some(d) => r.iter().zip(d).map(|(&r, &d)| r * d).collect(),
    }
}

fn finish<T: Scalar>(
    a: &CsrMatrix<T>,
    b: &[T],
    x: Vec<T>,
    iterations: usize,
    stop: StopReason,
) -> Result<IterativeResult<T>> {
    let ax = a.spmv(&x)?;
    let r: Vec<T> = b.iter().zip(&ax).map(|(&b, &ax)| b - ax).collect();
    Ok(IterativeResult {
        residual_norm: norm(&r),
        x,
        iterations,
        stop,
    })
}

/// Conjugate gradient for symmetric positive definite `A`
/// (scipy.sparse.linalg.cg's iteration and stopping rule).
pub fn cg<T: Scalar>(
    a: &CsrMatrix<T>,
    b: &[T],
    x0: Option<&[T]>,
    opts: &IterativeOptions,
) -> Result<IterativeResult<T>> {
    if norm(b) == 0.0 {
        return finish(a, b, b.to_vec(), 0, StopReason::Converged);
    }
    let Setup {
        inv_diag,
        mut x,
        mut r,
        atol,
        maxiter,
    } = setup(a, b, x0, opts)?;
    // One pass per vector update: z = M r with r·z, q = A p with p·q,
    // and x += αp, r -= αq with the new r·r; no allocation per iteration.
    let n = b.len();
    let (mut z, mut p, mut q) = (vec![T::ZERO; n], vec![T::ZERO; n], vec![T::ZERO; n]);
    let mut rr = dot(&r, &r);
    let mut rho_prev = T::ZERO;
    for it in 0..maxiter {
        if rr.to_f64().sqrt() < atol {
            return finish(a, b, x, it, StopReason::Converged);
        }
        let (rho, zs) = match &inv_diag {
            None => (rr, &r),
            Some(d) => {
                let mut rz = T::ZERO;
                for ((zi, &ri), &di) in z.iter_mut().zip(&r).zip(d) {
                    *zi = ri * di;
                    rz += ri * *zi;
                }
                (rz, &z)
            }
        };
        if it > 0 {
            let beta = rho / rho_prev;
            p.iter_mut().zip(zs).for_each(|(p, &z)| *p = *p * beta + z);
        } else {
            p.copy_from_slice(zs);
        }
        let alpha = rho / a.spmv_dot_into(&p, &mut q);
        rr = T::ZERO;
        for (((xi, ri), &pi), &qi) in x.iter_mut().zip(r.iter_mut()).zip(&p).zip(&q) {
            *xi += alpha * pi;
            *ri += -alpha * qi;
            rr += *ri * *ri;
        }
        rho_prev = rho;
    }
    finish(a, b, x, maxiter, StopReason::MaxIterations)
}

/// BiCGSTAB for general square `A` (scipy.sparse.linalg.bicgstab's
/// iteration, stopping rule and breakdown tests).
pub fn bicgstab<T: Scalar>(
    a: &CsrMatrix<T>,
    b: &[T],
    x0: Option<&[T]>,
    opts: &IterativeOptions,
) -> Result<IterativeResult<T>> {
    if norm(b) == 0.0 {
        return finish(a, b, b.to_vec(), 0, StopReason::Converged);
    }
    let Setup {
        inv_diag,
        mut x,
        mut r,
        atol,
        maxiter,
    } = setup(a, b, x0, opts)?;
    let eps = if std::mem::size_of::<T>() == 4 {
        f32::EPSILON as f64
    } else {
        f64::EPSILON
    };
    let tol = eps * eps;
    let rtilde = r.clone();
    let (mut rho_prev, mut omega, mut alpha) = (T::ZERO, T::ZERO, T::ZERO);
    let (mut p, mut v): (Vec<T>, Vec<T>) = (Vec::new(), Vec::new());
    for it in 0..maxiter {
        if norm(&r) < atol {
            return finish(a, b, x, it, StopReason::Converged);
        }
        let rho = dot(&rtilde, &r);
        if rho.to_f64().abs() < tol {
            return finish(a, b, x, it, StopReason::Breakdown("rho vanished"));
        }
        if it > 0 {
            if omega.to_f64().abs() < tol {
                return finish(a, b, x, it, StopReason::Breakdown("omega vanished"));
            }
            let beta = (rho / rho_prev) * (alpha / omega);
            for ((p, &v), &r) in p.iter_mut().zip(&v).zip(&r) {
                *p = (*p - omega * v) * beta + r;
            }
        } else {
            p = r.clone();
        }
        let phat = psolve(&inv_diag, &p);
        v = a.spmv(&phat)?;
        let rv = dot(&rtilde, &v);
        if rv == T::ZERO {
            return finish(a, b, x, it, StopReason::Breakdown("r~ . v vanished"));
        }
        alpha = rho / rv;
        axpy(-alpha, &v, &mut r);
        if norm(&r) < atol {
            axpy(alpha, &phat, &mut x);
            return finish(a, b, x, it + 1, StopReason::Converged);
        }
        let shat = psolve(&inv_diag, &r);
        let t = a.spmv(&shat)?;
        omega = dot(&t, &r) / dot(&t, &t);
        axpy(alpha, &phat, &mut x);
        axpy(omega, &shat, &mut x);
        axpy(-omega, &t, &mut r);
        rho_prev = rho;
    }
    finish(a, b, x, maxiter, StopReason::MaxIterations)
}
