//! The crate's error type.

use thiserror::Error;

/// A failure loading or running a model; each variant names its culprit.
#[derive(Debug, Error)]
pub enum ModelError {
    /// A model file could not be read.
    #[error("{path}: {reason}")]
    Io {
        /// The file.
        path: String,
        /// The OS error.
        reason: String,
    },
    /// `config.json` is malformed or describes a model this builder cannot make.
    #[error("{path}: {reason}")]
    Config {
        /// The file (or `<config>`).
        path: String,
        /// What is wrong.
        reason: String,
    },
    /// Reading or converting a weight failed.
    #[error(transparent)]
    Weights(#[from] rlx_runtime::WeightError),
    /// Compiling, setting a param or running failed.
    #[error(transparent)]
    Runtime(#[from] rlx_runtime::RuntimeError),
    /// The tokenizer could not be loaded or failed on a sentence.
    #[error("tokenizer: {0}")]
    Tokenizer(String),
    /// The `tokenizers` crate failed (loading the file, or encoding).
    #[error("tokenizer: {context}{source}")]
    TokenizerLib {
        /// `path: ` when loading a file, else empty.
        context: String,
        /// The crate's error.
        #[source]
        source: tokenizers::Error,
    },
    /// Inputs that do not fit the model (shape, token id, length).
    #[error("input: {0}")]
    Input(String),
}
