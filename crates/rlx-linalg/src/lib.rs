//! # rlx-linalg — dense linear algebra as RLX custom ops
//!
//! Graph builders for dense linear algebra on `[..., n, n]` matrices
//! (leading axes are batch axes, f32 or f64), each a custom op
//! (`rlx_ir::custom`) with a CPU kernel on [faer](https://docs.rs/faer)
//! (pure Rust, no system LAPACK; f32 computed in f32, f64 in f64), reverse (vjp) and
//! forward (jvp) rules as JAX defines them, written as graph builders, and
//! a batching (vmap) rule:
//!
//! | builder | op | reference |
//! |---|---|---|
//! | [`cholesky`] | `linalg.cholesky` | `jnp.linalg.cholesky` (input symmetrized) |
//! | [`solve_triangular`] | `linalg.solve_triangular{lower, trans}` | `scipy.linalg.solve_triangular` |
//! | [`lu`] / [`lu_solve`] | `linalg.lu` (packed) + `linalg.lu_unpack{output}` (+ triangular solves) | `scipy.linalg.lu` / `lu_solve` |
//! | [`solve`] | `linalg.solve{trans}` | `numpy.linalg.solve` |
//! | [`inv`] | `linalg.inv` | `numpy.linalg.inv` |
//! | [`det`] | `linalg.det` | `numpy.linalg.det` |
//! | [`slogdet`] | `linalg.slogdet{output}` | `numpy.linalg.slogdet` |
//! | [`eigh`] | `linalg.eigh` (packed) | `jnp.linalg.eigh` (column signs fixed) |
//! | [`qr`] | `linalg.qr` (packed) | `numpy.linalg.qr` reduced (diag R >= 0) |
//! | [`svd`] | `linalg.svd` (packed) | `numpy.linalg.svd(full_matrices=False)` (column signs fixed) |
//! | [`expm`] | `linalg.expm` | `scipy.linalg.expm` (Padé 13, scaling and squaring) |
//! | [`matrix_power`] | matmuls (and `linalg.inv`) | `numpy.linalg.matrix_power` |
//! | [`pinv`] | `svd` + elementwise | `numpy.linalg.pinv` |
//! | [`lstsq`] | `qr` + `solve_triangular` | `numpy.linalg.lstsq` (full column rank) |
//!
//! The multi-output decompositions (`lu`, `eigh`, `qr`, `svd`) are one
//! node each with a packed output (documented per op) that the builders
//! slice into the factors, so a graph using every factor decomposes once.
//!
//! Degenerate input follows JAX, not an error: a matrix that is not
//! positive definite has an all-NaN Cholesky factor; a singular matrix
//! gives inf / NaN from solves and inverses, `det = 0`,
//! `slogdet = (0, -inf)`. Derivatives of `det` / `slogdet` go through
//! `A^{-1}`, so they are inf / NaN at a singular `A` (JAX's `det` uses a
//! cofactor solve there and stays finite).
//!
//! ```
//! use rlx_ir::{DType, Graph, Shape};
//! let mut g = Graph::new("chol");
//! let a = g.input("a", Shape::new(&[4, 3, 3], DType::F64));
//! let l = rlx_linalg::cholesky(&mut g, a).unwrap();
//! let b = g.input("b", Shape::new(&[4, 3, 2], DType::F64));
//! let y = rlx_linalg::solve_triangular(&mut g, l, b, true, false).unwrap();
//! assert_eq!(g.node(y).op.mnemonic(), "custom.linalg.solve_triangular{lower=true, trans=false}");
//! ```
#![deny(missing_docs)]

mod compose;
mod eigh;
mod emit;
mod expm;
mod host;
mod kernels;
mod lu;
mod lu_unpack;
mod ops;
mod qr;
mod rules;
mod shapes;
mod svd;

pub use compose::{lstsq, matrix_power, pinv};
pub use ops::{
    cholesky, det, eigh, expm, inv, lu, lu_solve, qr, register, slogdet, solve, solve_triangular,
    svd, CHOLESKY, DET, EIGH, EXPM, INV, LU, LU_UNPACK, QR, SLOGDET, SOLVE, SOLVE_TRIANGULAR, SVD,
};
