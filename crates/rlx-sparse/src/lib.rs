//! # rlx-sparse — sparse matrices for RLX
//!
//! * Formats: [`CsrMatrix`], [`CscMatrix`], [`CooMatrix`] (f32 / f64),
//!   validated on construction (a malformed `indptr`, an out-of-range
//!   index, mismatched lengths → a [`SparseError`] naming the position);
//!   unsorted indices are sorted and duplicates summed, as scipy's
//!   `sum_duplicates`. Conversions between them and to / from dense.
//! * Products: [`CsrMatrix::spmv`], [`CsrMatrix::spmm`], and the pieces of
//!   their derivatives ([`CsrMatrix::spmv_transpose`],
//!   [`CsrMatrix::spmm_values_grad`]).
//! * Solves: [`solve_lu`] / [`solve_cholesky`] (`faer::sparse`), and
//!   [`cg`] / [`bicgstab`] with scipy's stopping rules, an optional Jacobi
//!   preconditioner and a result that reports non-convergence.
//! * In graphs ([`graph`]): `sparse.spmv` / `sparse.spmm` / `sparse.sddmm`
//!   custom ops on a CSR pattern, with CPU kernels and vjp / jvp / vmap
//!   rules, differentiable in the values and the dense operand;
//!   [`register`] adds them (every builder calls it).
//! * scipy's `.npz` ([`load_npz`] / [`save_npz`]): `save_npz` / `load_npz`
//!   files of `csr`, `csc` and `coo` matrices, compressed or not.
//!
//! Checked against scipy.sparse (`tools/gen_sparse_fixtures.py`).
#![deny(missing_docs)]

mod compressed;
mod direct;
mod error;
pub mod graph;
mod iterative;
mod kernel;
mod matrix;
mod npz;
mod scalar;

pub use direct::{solve_cholesky, solve_lu};
pub use error::{Result, SparseError};
pub use graph::register;
pub use iterative::{bicgstab, cg, IterativeOptions, IterativeResult, Preconditioner, StopReason};
pub use matrix::{CooMatrix, CscMatrix, CsrMatrix};
pub use npz::{load_npz, save_npz, NpzMatrix};
pub use scalar::Scalar;
