//! [`RuntimeError`]: every way a compile or run can fail, naming the culprit.

use rlx_compile::CompileError;
use rlx_driver::{BackendError, Device};
use rlx_ir::{DType, IrError, Shape};
use thiserror::Error;

/// An error from the runtime.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum RuntimeError {
    /// An input name the graph does not have.
    #[error("unknown input \"{name}\" (the graph's inputs are {known:?})")]
    UnknownInput {
        /// The name given.
        name: String,
        /// The graph's input names.
        known: Vec<String>,
    },
    /// An input the graph needs was not given.
    #[error("missing input \"{name}\" of shape {shape}")]
    MissingInput {
        /// The input.
        name: String,
        /// Its shape.
        shape: Shape,
    },
    /// The same input given twice.
    #[error("input \"{name}\" given twice")]
    DuplicateInput {
        /// The input.
        name: String,
    },
    /// A param name the graph does not have.
    #[error("unknown param \"{name}\" (the graph's params are {known:?})")]
    UnknownParam {
        /// The name given.
        name: String,
        /// The graph's param names.
        known: Vec<String>,
    },
    /// An output index the graph does not have.
    #[error("output index {index} out of range (the graph has {outputs} outputs)")]
    UnknownOutput {
        /// The index given.
        index: usize,
        /// How many outputs the graph has.
        outputs: usize,
    },
    /// A run given a number of output tensors other than its outputs'.
    #[error("{given} output tensors given for {expected} outputs")]
    OutputCount {
        /// How many outputs a run returns.
        expected: usize,
        /// How many tensors were given.
        given: usize,
    },
    /// A param update that clashes with one already bound.
    #[error("cannot make output {output} the update of param \"{param}\": {reason}")]
    UpdateConflict {
        /// The output index given.
        output: usize,
        /// The param given.
        param: String,
        /// The binding it clashes with.
        reason: String,
    },
    /// A param was never set before a run.
    #[error("param \"{name}\" of shape {shape} is not set (call set_param first)")]
    ParamNotSet {
        /// The param.
        name: String,
        /// Its shape.
        shape: Shape,
    },
    /// Data of the wrong element count.
    #[error("{what}: expected {expected} values for shape {shape}, given {given}")]
    Length {
        /// `input "x"` / `param "w"`.
        what: String,
        /// Its shape.
        shape: Shape,
        /// Expected element count.
        expected: usize,
        /// Given element count.
        given: usize,
    },
    /// Data of the wrong dtype.
    #[error("{what}: expected dtype {expected} (shape {shape}), given {given}")]
    DType {
        /// `input "x"` / `param "w"`.
        what: String,
        /// Its shape.
        shape: Shape,
        /// Expected dtype.
        expected: DType,
        /// Given dtype.
        given: DType,
    },
    /// Data of the wrong dims.
    #[error("{what}: expected shape {expected}, given dims {given:?}")]
    Shape {
        /// `input "x"` / `param "w"`.
        what: String,
        /// The expected shape.
        expected: Shape,
        /// The given dims.
        given: Vec<usize>,
    },
    /// A symbolic dim the inputs of one run give two sizes.
    #[error("dim \"{symbol}\" is {first} from {first_from} but {second} from {second_from}")]
    DimConflict {
        /// The symbol.
        symbol: String,
        /// The first size seen.
        first: usize,
        /// Where it came from (`input "x"`, or a fixed binding).
        first_from: String,
        /// The conflicting size.
        second: usize,
        /// Where that came from.
        second_from: String,
    },
    /// A symbolic dim that no input determines and no binding fixes.
    #[error(
        "dim \"{symbol}\" is not determined by any input; fix it with CompileOptions::bind_dim"
    )]
    UnboundDim {
        /// The symbol.
        symbol: String,
    },
    /// The device cannot be used.
    #[error("device {device} is not available: {reason}")]
    DeviceUnavailable {
        /// The device.
        device: Device,
        /// Why.
        reason: String,
    },
    /// The graph does not compile.
    #[error(transparent)]
    Compile(#[from] CompileError),
    /// The backend failed.
    #[error(transparent)]
    Backend(#[from] BackendError),
    /// An IR error.
    #[error(transparent)]
    Ir(#[from] IrError),
    /// Weights could not be loaded (the message names the file and tensor;
    /// the [`crate::WeightError`] keeps the I/O or safetensors error as its source).
    #[error(transparent)]
    Weights(#[from] crate::WeightError),
    /// `DispatchPolicy::ErrorOnUnsupported`: these ops would not run natively.
    #[error("graph \"{graph}\": ops without a native kernel on {device} under DispatchPolicy::ErrorOnUnsupported: {kinds}")]
    NotNative {
        /// Graph name.
        graph: String,
        /// The device.
        device: Device,
        /// `Kind (decomposed x2), ...`.
        kinds: String,
    },
    /// `assert_fusion_clean`: fusion missed opportunities.
    #[error("graph \"{graph}\": assert_fusion_clean, but fusion missed {count}:\n{report}")]
    FusionNotClean {
        /// Graph name.
        graph: String,
        /// Number of misses.
        count: usize,
        /// The fusion report.
        report: String,
    },
    /// An `RLX_*` environment variable has a bad value.
    #[error(transparent)]
    Env(#[from] rlx_ir::env::EnvError),
}

/// Result alias of this crate.
pub type Result<T, E = RuntimeError> = std::result::Result<T, E>;
