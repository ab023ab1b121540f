//! [`TensorError`]: what went wrong while building with [`crate::Tensor`]s.

use rlx_autodiff::AutodiffError;
use rlx_ir::{IrError, Shape};
#[cfg(feature = "optim")]
use rlx_optim::OptimError;
use rlx_runtime::{RuntimeError, WeightError};
use thiserror::Error;

/// An error raised while building a graph with [`crate::Tensor`]s, running a
/// transform over a closure, or compiling a [`crate::jit`]ed function.
///
/// Operators (`a + b`) cannot return a `Result`, so a failed operator yields
/// a *failed* tensor that carries this error and records it in the active
/// scope; [`crate::graph`] then returns it. The `try_` form of each method
/// returns it at once.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum TensorError {
    /// Two shapes do not broadcast under numpy's rules.
    #[error(
        "{op}: shapes {lhs} and {rhs} do not broadcast (numpy rules: trailing dims equal or 1)"
    )]
    Broadcast {
        /// The operation.
        op: String,
        /// Left operand's shape.
        lhs: Shape,
        /// Right operand's shape.
        rhs: Shape,
    },
    /// A tensor used while no graph scope is active on this thread.
    #[error("{op}: no graph scope is active on this thread; a Tensor is only usable inside the graph(..) / graph_with(..) closure that made it")]
    NoScope {
        /// The operation.
        op: String,
    },
    /// A tensor of one scope used in another scope that cannot see it.
    #[error("{op}: tensor of scope \"{owner}\" (#{owner_id}) used in scope \"{current}\" (#{current_id}); pass it in as an input of the inner graph instead")]
    ForeignScope {
        /// The operation.
        op: String,
        /// Name of the scope the tensor belongs to.
        owner: String,
        /// Its id.
        owner_id: u64,
        /// Name of the active scope.
        current: String,
        /// Its id.
        current_id: u64,
    },
    /// An argument is invalid for the operation (axis out of range, bad
    /// reshape, wrong number of arguments, ...).
    #[error("{op}: {reason}")]
    Invalid {
        /// The operation.
        op: String,
        /// What was wrong.
        reason: String,
    },
    /// The IR refused the node.
    #[error("{op}: {source}")]
    Ir {
        /// The operation.
        op: String,
        /// The IR's error.
        #[source]
        source: Box<IrError>,
    },
    /// A transform (grad, jvp, vmap, ...) failed.
    #[error("{transform}: {source}")]
    Autodiff {
        /// The transform.
        transform: &'static str,
        /// The autodiff error.
        #[source]
        source: Box<AutodiffError>,
    },
    /// Compiling or running a jitted function failed.
    #[error("{what}: {source}")]
    Runtime {
        /// What was being done.
        what: String,
        /// The runtime error.
        #[source]
        source: Box<RuntimeError>,
    },
    /// A model ([`crate::Model`]) was misused: an unknown param, a value of
    /// the wrong shape, a param not set, a weights file that does not fit.
    #[error("model {model}: {reason}")]
    Model {
        /// The model's name.
        model: String,
        /// What was wrong, naming the param or tensor.
        reason: String,
    },
    /// A weights file could not be read.
    #[error("model {model}: {source}")]
    Weights {
        /// The model's name.
        model: String,
        /// The reader's error.
        #[source]
        source: Box<WeightError>,
    },
    #[cfg(feature = "optim")]
    /// An optimizer refused a param's update in a training step.
    #[error("optimizer step of \"{param}\": {source}")]
    Optim {
        /// The param.
        param: String,
        /// The optimizer's error.
        #[source]
        source: Box<OptimError>,
    },
}

impl TensorError {
    /// An [`TensorError::Invalid`].
    pub(crate) fn invalid(op: impl Into<String>, reason: impl Into<String>) -> TensorError {
        TensorError::Invalid {
            op: op.into(),
            reason: reason.into(),
        }
    }

    /// An [`TensorError::Ir`].
    pub(crate) fn ir(op: impl Into<String>, source: IrError) -> TensorError {
        TensorError::Ir {
            op: op.into(),
            source: Box::new(source),
        }
    }
}

/// `Result<T, TensorError>`.
pub type Result<T, E = TensorError> = std::result::Result<T, E>;
