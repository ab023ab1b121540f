//! Why a render could not run.

/// An invalid render request.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SplatRenderError {
    /// The camera / image parameters are invalid.
    #[error("invalid render parameters: {0}")]
    Params(String),
    /// The Gaussian tensors are inconsistent or invalid.
    #[error("invalid Gaussians: {0}")]
    Input(String),
    /// A buffer (prep buffer, image cotangent) has the wrong length or content.
    #[error("invalid buffer: {0}")]
    Buffer(String),
}
