//! [`ConvertError`]: every way a conversion can fail, naming the tensor,
//! the type or the file involved.

use rlx_gguf::{GgmlType, GgufError};
use std::path::PathBuf;
use thiserror::Error;

/// The crate's result type.
pub type Result<T, E = ConvertError> = std::result::Result<T, E>;

/// An error from a conversion. Nothing is written when one is returned.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum ConvertError {
    /// The OS refused to open, map or write a file.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The safetensors source could not be parsed.
    #[error("safetensors source {source_name}: {message}")]
    Safetensors {
        /// The file (or `<bytes>`).
        source_name: String,
        /// The parser's message.
        message: String,
    },
    /// The ONNX source could not be parsed or one of its initializers read.
    #[error("ONNX source {source_name}: {message}")]
    Onnx {
        /// The file (or `<bytes>`).
        source_name: String,
        /// What went wrong.
        message: String,
    },
    /// A source tensor's element type has no GGUF counterpart.
    #[error("tensor '{tensor}': dtype {dtype} cannot be stored in GGUF (floats F32/F16/BF16/F64 and integers I8/I16/I32/I64 can)")]
    UnsupportedDtype {
        /// The tensor.
        tensor: String,
        /// Its element type, as the source names it.
        dtype: String,
    },
    /// A target type this crate cannot encode (e.g. an i-quant).
    #[error("{context}: cannot quantize to {ty}: {reason}")]
    CannotQuantize {
        /// The tensor, or the option that named the type.
        context: String,
        /// The type.
        ty: GgmlType,
        /// Why.
        reason: String,
    },
    /// A type name (CLI, override) that is not a ggml type.
    #[error("unknown GGUF type name '{given}' (expected a ggml name such as F16, Q8_0, Q4_K)")]
    UnknownTypeName {
        /// The name given.
        given: String,
    },
    /// A tensor whose shape and data disagree (or whose shape overflows).
    #[error("tensor '{tensor}': {reason}")]
    InvalidTensor {
        /// The tensor.
        tensor: String,
        /// What is wrong.
        reason: String,
    },
    /// A NaN or infinity in a tensor that is to be quantized.
    #[error("tensor '{tensor}': element {index} is {value}, which a {ty} block cannot encode")]
    NonFinite {
        /// The tensor.
        tensor: String,
        /// Its flat (row-major) index.
        index: usize,
        /// The value.
        value: f32,
        /// The target type.
        ty: GgmlType,
    },
    /// The GGUF writer or a codec refused (duplicate name, bad alignment,
    /// size mismatch).
    #[error("{context}: {source}")]
    Gguf {
        /// The tensor or setting involved.
        context: String,
        /// The underlying error.
        source: GgufError,
    },
}

impl ConvertError {
    pub(crate) fn gguf(context: impl Into<String>) -> impl FnOnce(GgufError) -> ConvertError {
        let context = context.into();
        move |source| ConvertError::Gguf { context, source }
    }
}
