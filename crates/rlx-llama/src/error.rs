//! [`LlamaError`]: everything that can go wrong loading or running a model.

use rlx_gguf::GgufError;

/// An error of this crate; each names the key / tensor / value at fault.
#[derive(Debug, thiserror::Error)]
pub enum LlamaError {
    /// The GGUF file could not be read, or a metadata key is missing or of
    /// another type (the inner error names the key).
    #[error("GGUF: {0}")]
    Gguf(#[from] GgufError),
    /// A metadata value is present but unusable.
    #[error("metadata '{key}' = {given}: {expected}")]
    BadMetadata {
        /// The key.
        key: String,
        /// What was expected.
        expected: String,
        /// The value found.
        given: String,
    },
    /// A tensor the architecture needs is not in the file.
    #[error("tensor '{name}' is missing from the GGUF file")]
    MissingTensor {
        /// The tensor name.
        name: String,
    },
    /// A tensor has other dims than the metadata implies.
    #[error("tensor '{name}' has shape {given:?}, expected {expected:?}")]
    TensorShape {
        /// The tensor name.
        name: String,
        /// The row-major shape the config implies.
        expected: Vec<usize>,
        /// The row-major shape in the file.
        given: Vec<usize>,
    },
    /// A tensor type this crate cannot use there.
    #[error("tensor '{name}' has type {ty}, which {why}")]
    TensorType {
        /// The tensor name.
        name: String,
        /// The ggml type name.
        ty: String,
        /// Why it is unusable.
        why: String,
    },
    /// The tokenizer metadata is inconsistent.
    #[error("tokenizer: {0}")]
    Tokenizer(String),
    /// A token id outside the vocabulary.
    #[error("token id {id} is outside the vocabulary of {vocab} tokens")]
    TokenOutOfRange {
        /// The id.
        id: u32,
        /// The vocabulary size.
        vocab: usize,
    },
    /// The KV cache has no room for more tokens.
    #[error(
        "the context is full: {used} of {capacity} positions used, {requested} more requested"
    )]
    ContextFull {
        /// Positions already in the cache.
        used: usize,
        /// The cache's capacity.
        capacity: usize,
        /// Positions asked for.
        requested: usize,
    },
    /// Invalid sampling or generation settings.
    #[error("invalid setting {name} = {given}: {expected}")]
    BadSetting {
        /// The setting.
        name: &'static str,
        /// What is allowed.
        expected: &'static str,
        /// The value given.
        given: String,
    },
    /// The GGUF's chat template does not parse or fails to render.
    #[error("chat template ({stage}): {message}")]
    ChatTemplate {
        /// `"parse"` or `"render"`.
        stage: &'static str,
        /// The template engine's message (with the line where it applies).
        message: String,
    },
    /// Compiling or running the graph failed.
    #[error("runtime: {0}")]
    Runtime(#[from] rlx_runtime::RuntimeError),
    /// Building the graph failed.
    #[error("graph: {0}")]
    Ir(#[from] rlx_ir::IrError),
}

/// This crate's result type.
pub type Result<T, E = LlamaError> = std::result::Result<T, E>;
