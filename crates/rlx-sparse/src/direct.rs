//! Sparse direct solves through `faer::sparse`: LU with partial pivoting
//! (fill-reducing COLAMD ordering) for general square systems, Cholesky
//! (AMD ordering) for symmetric positive definite ones. f32 systems are
//! solved in f64 and rounded once.

use crate::error::{Result, SparseError};
use crate::matrix::CsrMatrix;
use crate::scalar::Scalar;
use faer::linalg::solvers::Solve;
use faer::sparse::{SparseColMat, Triplet};
use faer::{Mat, Side};

fn to_faer<T: Scalar>(
    a: &CsrMatrix<T>,
    b: &[T],
    op: &'static str,
) -> Result<(SparseColMat<usize, f64>, Mat<f64>)> {
    let (m, n) = a.shape();
    if m != n {
        return Err(SparseError::Shape {
            op,
            detail: format!("A is {m} x {n}, not square"),
        });
    }
    if !b.len().is_multiple_of(n.max(1)) || (n == 0 && !b.is_empty()) {
        return Err(SparseError::Shape {
            op,
            detail: format!("b has {} values, not a multiple of n = {n}", b.len()),
        });
    }
    let k = b.len().checked_div(n).unwrap_or(0);
    let mut triplets = Vec::with_capacity(a.nnz());
    for i in 0..m {
        for p in a.indptr()[i]..a.indptr()[i + 1] {
            triplets.push(Triplet::new(
                i,
                a.indices()[p] as usize,
                a.values()[p].to_f64(),
            ));
        }
    }
    let mat = SparseColMat::<usize, f64>::try_new_from_triplets(m, n, &triplets).map_err(|e| {
        SparseError::Factorization {
            method: "matrix",
            reason: format!("{e:?}"),
        }
    })?;
    // b is row-major n x k.
    let rhs = Mat::<f64>::from_fn(n, k, |i, j| b[i * k + j].to_f64());
    Ok((mat, rhs))
}

fn back<T: Scalar>(x: Mat<f64>, method: &'static str) -> Result<Vec<T>> {
    let (n, k) = (x.nrows(), x.ncols());
    let mut out = Vec::with_capacity(n * k);
    for i in 0..n {
        for j in 0..k {
            let v = x[(i, j)];
            if !v.is_finite() {
                return Err(SparseError::Factorization {
                    method,
                    reason: format!("the matrix is numerically singular (x[{i}] = {v})"),
                });
            }
            out.push(T::from_f64(v));
        }
    }
    Ok(out)
}

/// Solves `A X = B` by sparse LU; `b` is row-major `n × k` (`k = 1`: a
/// vector). A structurally or numerically singular `A` is an error.
pub fn solve_lu<T: Scalar>(a: &CsrMatrix<T>, b: &[T]) -> Result<Vec<T>> {
    let (mat, rhs) = to_faer(a, b, "solve_lu")?;
    let lu = mat.sp_lu().map_err(|e| SparseError::Factorization {
        method: "LU",
        reason: format!("{e}"),
    })?;
    back(lu.solve(&rhs), "LU")
}

/// Solves `A X = B` by sparse Cholesky for symmetric positive definite `A`
/// (only the lower triangle is read); a matrix that is not positive
/// definite is an error.
pub fn solve_cholesky<T: Scalar>(a: &CsrMatrix<T>, b: &[T]) -> Result<Vec<T>> {
    let (mat, rhs) = to_faer(a, b, "solve_cholesky")?;
    let llt = mat
        .sp_cholesky(Side::Lower)
        .map_err(|e| SparseError::Factorization {
            method: "Cholesky",
            reason: format!("{e} (A is not symmetric positive definite)"),
        })?;
    back(llt.solve(&rhs), "Cholesky")
}
