//! Typed errors of rlx-sparse: each names the offending array, position or
//! value.

/// What went wrong.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum SparseError {
    /// The compressed pointer array is malformed.
    #[error("indptr: {0}")]
    BadIndptr(String),
    /// An index outside the matrix.
    #[error(
        "{axis} index {index} at position {position} is out of range for {axis} count {bound}"
    )]
    IndexOutOfRange {
        /// `"row"` or `"column"`.
        axis: &'static str,
        /// The index.
        index: usize,
        /// Its position in the index array.
        position: usize,
        /// The number of rows / columns.
        bound: usize,
    },
    /// Arrays whose lengths do not agree.
    #[error("length mismatch: {0}")]
    Length(String),
    /// Operand shapes that do not fit.
    #[error("shape mismatch in {op}: {detail}")]
    Shape {
        /// The operation.
        op: &'static str,
        /// Expected and given shapes.
        detail: String,
    },
    /// A direct factorization failed.
    #[error("{method} factorization failed: {reason}")]
    Factorization {
        /// `"LU"` or `"Cholesky"`.
        method: &'static str,
        /// Why (singular, not positive definite, ...).
        reason: String,
    },
    /// A malformed or unsupported `.npz` / `.npy` file.
    #[error("npz: {0}")]
    Npz(String),
    /// An invalid solver argument.
    #[error("invalid {name}: {reason}")]
    InvalidArgument {
        /// The argument.
        name: &'static str,
        /// What is wrong.
        reason: String,
    },
}

/// `Result` with [`SparseError`].
pub type Result<T> = std::result::Result<T, SparseError>;
