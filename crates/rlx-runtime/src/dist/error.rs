//! The one error type of the ship-graph layer.

use rlx_collectives::CollectiveError;

/// `Result` with a [`DistError`].
pub type DistResult<T> = std::result::Result<T, DistError>;

/// Everything that can go wrong shipping, serving or training a graph.
#[derive(Debug, thiserror::Error)]
pub enum DistError {
    /// The transport failed (peer died, timed out, bad frame, wrong secret).
    #[error(transparent)]
    Collective(#[from] CollectiveError),
    /// A message from `peer` is not a valid ship-graph frame.
    #[error("bad message from rank {peer}: {reason}")]
    BadMessage {
        /// The sender.
        peer: usize,
        /// Which check failed.
        reason: String,
    },
    /// A message or spec is larger than the configured limit.
    #[error("{what} of {len} bytes is over the limit of {max}")]
    TooLarge {
        /// What was too large.
        what: String,
        /// Its size.
        len: u64,
        /// The limit.
        max: u64,
    },
    /// A spec is well formed but cannot be used (unknown param, bad sizes, ...).
    #[error("invalid spec: {0}")]
    InvalidSpec(String),
    /// A weight reference could not be resolved.
    #[error("weight {uri}: {reason}")]
    Weight {
        /// The reference.
        uri: String,
        /// Why it failed.
        reason: String,
    },
    /// The graph failed to parse, compile or run.
    #[error("{context}: {message}")]
    Graph {
        /// What was being done.
        context: String,
        /// The underlying error.
        message: String,
    },
    /// A node configuration value is missing or malformed.
    #[error("node configuration: {0}")]
    Config(String),
    /// A fixed-function device was called with inputs it does not take.
    #[error("fixed function {device}: {reason}")]
    FixedFunction {
        /// The device's name.
        device: String,
        /// What did not match.
        reason: String,
    },
    /// The optimizer refused an update.
    #[error("optimizer: {0}")]
    Optim(#[from] rlx_optim::OptimError),
    /// A clean shutdown was requested through a [`NodeStopHandle`](super::node::NodeStopHandle).
    #[error("stopped by request")]
    Stopped,
}

impl DistError {
    /// Wraps a graph-side error with what was being done.
    pub fn graph(context: impl Into<String>, e: impl std::fmt::Display) -> Self {
        DistError::Graph {
            context: context.into(),
            message: e.to_string(),
        }
    }
}
