//! [`AutodiffError`]: what a transform could not do, naming the node.

use rlx_ir::{DType, IrError, Shape};
use thiserror::Error;

/// An error from a transform. A well-formed graph never makes a transform
/// panic: an unsupported case is one of these.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum AutodiffError {
    /// No rule of this transform for this op.
    #[error("no {transform} rule for {node}")]
    MissingRule {
        /// `vjp`, `jvp` or `vmap`.
        transform: &'static str,
        /// The node label.
        node: String,
    },
    /// A transform this op does not support by design (e.g. reverse mode through `While`).
    #[error("{transform} of {node} is not supported: {reason}")]
    Unsupported {
        /// `vjp`, `jvp` or `vmap`.
        transform: &'static str,
        /// The node label.
        node: String,
        /// Why, and what to use instead.
        reason: String,
    },
    /// A `wrt` / tangent node that is not an input or param.
    #[error(
        "{node} is not an input or param leaf; transforms differentiate with respect to leaves"
    )]
    NotALeaf {
        /// The node label.
        node: String,
    },
    /// A `wrt` node whose dtype carries no gradient.
    #[error("{node} has dtype {dtype}: only floating-point values carry derivatives")]
    NotDifferentiable {
        /// The node label.
        node: String,
        /// Its dtype.
        dtype: DType,
    },
    /// The transform needs a scalar first output.
    #[error("{transform} needs a scalar loss, but the first output {node} has shape {shape}")]
    NonScalarLoss {
        /// The transform.
        transform: &'static str,
        /// The loss node label.
        node: String,
        /// Its shape.
        shape: Shape,
    },
    /// A `wrt` the loss does not depend on (with `zero_missing_wrt` off).
    #[error("the loss does not depend on {node} (set zero_missing_wrt for a zero gradient)")]
    Unconnected {
        /// The node label.
        node: String,
    },
    /// A name that is no input or param of the graph.
    #[error("\"{name}\" is not an input or param of graph \"{graph}\"")]
    UnknownName {
        /// The name.
        name: String,
        /// The graph.
        graph: String,
    },
    /// The graph is not well formed (fails verification, has no outputs, symbolic dims).
    #[error("invalid graph: {0}")]
    InvalidGraph(String),
    /// Building a node failed.
    #[error(transparent)]
    Ir(#[from] IrError),
}

/// Result alias.
pub type Result<T, E = AutodiffError> = std::result::Result<T, E>;
