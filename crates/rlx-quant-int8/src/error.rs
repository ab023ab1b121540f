use thiserror::Error;

/// Why a graph could not be quantized or a quantized model not run.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum QuantError {
    /// The graph holds an op the int8 targets have no kernel for.
    #[error("node {node} ({op}) is not supported by the int8 targets")]
    UnsupportedOp {
        /// Node index.
        node: usize,
        /// The op's textual form.
        op: String,
    },
    /// The graph is not a chain of supported layers (or a param is missing / misshapen).
    #[error("graph structure: {0}")]
    Structure(String),
    /// A layer's worst-case int32 accumulator can overflow.
    #[error("layer {layer}: {depth} products per output can overflow the int32 accumulator")]
    AccumulatorOverflow {
        /// Layer index.
        layer: usize,
        /// Products summed per output.
        depth: usize,
    },
    /// A quantized bias does not fit the kernels' `±2^30`.
    #[error(
        "layer {layer}: channel {channel}'s bias {bias} is too large for int32 after quantization"
    )]
    BiasOverflow {
        /// Layer index.
        layer: usize,
        /// Output channel.
        channel: usize,
        /// The float bias.
        bias: f32,
    },
    /// No calibration data, or data of the wrong length.
    #[error("calibration: {0}")]
    Calibration(String),
    /// An input of the wrong length.
    #[error("input has {actual} values, the model takes {expected}")]
    InputLength {
        /// Values the model takes.
        expected: usize,
        /// Values passed.
        actual: usize,
    },
    /// A model file could not be parsed.
    #[error("model json: {0}")]
    Json(String),
}
