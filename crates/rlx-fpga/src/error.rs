//! Export errors: every way a model can fail to become RTL is named here,
//! at export time, instead of producing broken hardware.

use rlx_quant_int8::QuantError;
use thiserror::Error;

/// Why a model could not be exported (or its RTL not simulated).
#[derive(Debug, Error)]
pub enum FpgaError {
    /// A layer kind the datapath generator has no hardware for.
    #[error("layer {layer} ({kind}) is not supported by the FPGA export (dense, conv2d, relu, maxpool and argmax are)")]
    UnsupportedLayer {
        /// Layer index.
        layer: usize,
        /// The layer kind.
        kind: &'static str,
    },
    /// The model has no layers.
    #[error("the model has no layers to export")]
    EmptyModel,
    /// Consecutive layers disagree on a tensor size, or a geometry is degenerate.
    #[error("layer {layer}: {detail}")]
    Shape {
        /// Layer index.
        layer: usize,
        /// What disagrees.
        detail: String,
    },
    /// A layer's worst-case accumulator does not fit the declared width.
    #[error("layer {layer}, channel {channel}: worst-case accumulator magnitude {bound} does not fit a signed {acc_bits}-bit accumulator")]
    AccumulatorOverflow {
        /// Layer index.
        layer: usize,
        /// Output channel.
        channel: usize,
        /// `|bias| + 255 * sum |w|` for that channel.
        bound: u64,
        /// The accumulator width asked for.
        acc_bits: u32,
    },
    /// A tensor (or all memories together) does not fit the declared memory.
    #[error("memory {memory} needs {bits} bits, more than the declared {capacity}")]
    MemoryOverflow {
        /// The memory's name (or `all memories`).
        memory: String,
        /// Bits it needs.
        bits: u64,
        /// Bits declared available.
        capacity: u64,
    },
    /// An export option is malformed (port name, widths, test images).
    #[error("invalid export configuration: {0}")]
    InvalidConfig(String),
    /// The graph could not be imported or quantized.
    #[error(transparent)]
    Quant(#[from] QuantError),
    /// Writing the files failed.
    #[error("writing {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// An HDL tool (iverilog / vvp / verilator) failed or is missing.
    #[error("{tool}: {detail}")]
    Tool {
        /// The tool.
        tool: String,
        /// Its output, or why it did not run.
        detail: String,
    },
}
