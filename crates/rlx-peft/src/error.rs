//! [`PeftError`]: every way building, applying or loading an adapter can fail.

use std::path::PathBuf;

/// Errors of this crate. Each names the culprit: the tensor or config key,
/// and the expected and given shape or value.
#[derive(Debug, thiserror::Error)]
pub enum PeftError {
    /// A tensor has the wrong shape.
    #[error("{what}: expected shape {expected:?}, given {given:?}")]
    Shape {
        /// Which tensor (an adapter tensor's key, `x`, `base weight`, ...).
        what: String,
        /// The shape that was required.
        expected: Vec<usize>,
        /// The shape that was given.
        given: Vec<usize>,
    },
    /// A tensor has a dtype this crate does not take.
    #[error("{what}: expected dtype {expected}, given {given}")]
    DType {
        /// Which tensor.
        what: String,
        /// The dtype(s) accepted.
        expected: String,
        /// The dtype given.
        given: String,
    },
    /// A hyper-parameter is out of range (`r = 0`, a negative alpha, ...).
    #[error("invalid {what}: {reason}")]
    Invalid {
        /// Which parameter.
        what: String,
        /// Why it is invalid.
        reason: String,
    },
    /// `adapter_config.json` is missing a field or has one of the wrong type.
    #[error("adapter_config.json: {0}")]
    Config(String),
    /// A PEFT feature this crate does not implement (named, never silently ignored).
    #[error("unsupported: {0}")]
    Unsupported(String),
    /// A tensor the adapter needs is absent from `adapter_model.safetensors`.
    #[error("missing tensor {key:?} in the adapter weights")]
    MissingTensor {
        /// The key PEFT would have written.
        key: String,
    },
    /// A tensor in `adapter_model.safetensors` that no target module explains.
    #[error("unexpected tensor {key:?} in the adapter weights: {reason}")]
    UnexpectedTensor {
        /// The key found.
        key: String,
        /// Why it does not fit.
        reason: String,
    },
    /// `adapter_model.safetensors` is malformed.
    #[error("adapter_model.safetensors: {0}")]
    Safetensors(String),
    /// The `safetensors` crate refused to read or write the adapter file.
    #[error("adapter_model.safetensors: {context}{source}")]
    SafetensorsCrate {
        /// `tensor "key": ` when about one tensor, else empty.
        context: String,
        /// The crate's error.
        #[source]
        source: safetensors::SafeTensorError,
    },
    /// A stored tensor could not become a host tensor.
    #[error("adapter_model.safetensors: tensor {name:?}: {source}")]
    Tensor {
        /// The tensor's key.
        name: String,
        /// The IR's error.
        #[source]
        source: rlx_ir::IrError,
    },
    /// Reading a file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// Building a graph failed (the IR's error, with the builder that hit it).
    #[error("graph builder {builder}: {source}")]
    Graph {
        /// Which builder.
        builder: String,
        /// The IR error.
        source: rlx_ir::IrError,
    },
}

/// `Result` with [`PeftError`].
pub type Result<T> = std::result::Result<T, PeftError>;

pub(crate) fn invalid(what: impl Into<String>, reason: impl Into<String>) -> PeftError {
    PeftError::Invalid {
        what: what.into(),
        reason: reason.into(),
    }
}
