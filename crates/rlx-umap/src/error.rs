//! Typed errors of rlx-umap: each names the offending argument.

/// What went wrong, naming the argument or the input row.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum UmapError {
    /// A parameter outside its valid range.
    #[error("invalid parameter {name}: {reason}")]
    InvalidParameter {
        /// The parameter.
        name: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// Data whose shape does not fit the request.
    #[error("invalid data {name}: {reason}")]
    InvalidData {
        /// The argument.
        name: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// A NaN or infinite input value.
    #[error("{name} row {row} column {col} is not finite ({value})")]
    NonFinite {
        /// The argument.
        name: &'static str,
        /// Its row.
        row: usize,
        /// Its column.
        col: usize,
        /// The value.
        value: f64,
    },
    /// `transform` or an embedding accessor before `fit`.
    #[error("the model is not fitted yet; call fit first")]
    NotFitted,
    /// A failure of the RLX runtime while training parametric UMAP.
    #[error("runtime: {0}")]
    Runtime(String),
}

/// `Result` with [`UmapError`].
pub type Result<T> = std::result::Result<T, UmapError>;
