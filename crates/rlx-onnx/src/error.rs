//! [`OnnxError`]: every way loading, importing or running a model can fail.

use rlx_ir::IrError;
use rlx_runtime::RuntimeError;
use thiserror::Error;

/// One node whose op the importer cannot express in the RLX IR.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnsupportedNode {
    /// The ONNX op type (with its domain when not the default one).
    pub op_type: String,
    /// The node's name (or `#index` when it has none).
    pub node: String,
    /// Why: an unknown op, or the missing IR capability.
    pub reason: String,
}

impl std::fmt::Display for UnsupportedNode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} (node \"{}\"): {}",
            self.op_type, self.node, self.reason
        )
    }
}

fn list(nodes: &[UnsupportedNode]) -> String {
    nodes
        .iter()
        .map(|n| format!("\n  - {n}"))
        .collect::<String>()
}

fn opset_message(version: &Option<i64>, min: i64, max: i64) -> String {
    let what = match version {
        None => "the model imports no default-domain (ai.onnx) opset".to_string(),
        Some(v) => format!("the model imports default-domain (ai.onnx) opset {v}"),
    };
    format!("{what}; RLX imports opsets {min} to {max}")
}

/// An error from `rlx-onnx`.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum OnnxError {
    /// Reading a file failed.
    #[error("reading {path}: {message}")]
    Io {
        /// The file.
        path: String,
        /// The OS error.
        message: String,
    },
    /// The bytes are not a valid protobuf message of the expected type.
    #[error("decoding {what}: {message}")]
    Decode {
        /// What was being decoded (`ModelProto`, `TensorProto`, ...).
        what: String,
        /// prost's message (names the field and the problem).
        message: String,
    },
    /// The model is well-formed protobuf but breaks an ONNX rule or a limit.
    #[error("invalid model: {0}")]
    Invalid(String),
    /// The model's default-domain (`ai.onnx`) opset import is missing
    /// (`version: None`) or outside the range RLX imports (`min..=max`).
    #[error("{}", opset_message(.version, *.min, *.max))]
    Opset {
        /// The imported version, `None` when the model imports none.
        version: Option<i64>,
        /// The lowest supported opset.
        min: i64,
        /// The highest supported opset.
        max: i64,
    },
    /// A tensor's data is inconsistent with its dims / dtype, or too large.
    #[error("tensor \"{name}\": {reason}")]
    Tensor {
        /// The tensor's name.
        name: String,
        /// What is wrong.
        reason: String,
    },
    /// An ONNX element type RLX has no dtype for.
    #[error("{what}: ONNX element type {elem_type} ({type_name}) is not supported by RLX")]
    UnsupportedDType {
        /// Where it appeared.
        what: String,
        /// The ONNX `TensorProto.DataType` code.
        elem_type: i32,
        /// Its name.
        type_name: String,
    },
    /// Ops the importer cannot express, all of them at once.
    #[error("{} unsupported node(s):{}", .0.len(), list(.0))]
    Unsupported(Vec<UnsupportedNode>),
    /// A node's inputs or attributes are invalid for its op.
    #[error("node \"{node}\" ({op_type}): {reason}")]
    Node {
        /// The node.
        node: String,
        /// Its op type.
        op_type: String,
        /// What is wrong.
        reason: String,
    },
    /// A value the importer must know at import (a shape, axes, pads) is
    /// computed at run time. `OnnxModel` specialises on graph inputs named here.
    #[error("node \"{node}\": {what} must be known at import, but \"{value}\" is only known at run time")]
    NeedsValue {
        /// The ONNX value name.
        value: String,
        /// The node that needs it.
        node: String,
        /// What it is for.
        what: String,
    },
    /// Building the RLX graph failed.
    #[error("IR: {0}")]
    Ir(#[from] IrError),
    /// Compiling or running failed.
    #[error("runtime: {0}")]
    Runtime(#[from] RuntimeError),
}

/// `Result` with [`OnnxError`].
pub type Result<T> = std::result::Result<T, OnnxError>;
