//! The one error type of this crate.

use std::time::Duration;

/// `Result` with a [`CollectiveError`].
pub type Result<T> = std::result::Result<T, CollectiveError>;

/// Everything that can go wrong in a process group or a collective.
///
/// Transport failures name the peer rank they concern. After any transport
/// error a TCP group is failed for good (its sockets are shut so that the
/// other ranks learn of it at once): later receives return the error that
/// failed it, later sends [`CollectiveError::GroupFailed`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CollectiveError {
    /// A configuration value is out of range (world size 0, rank >= world, ...).
    #[error("invalid configuration: {0}")]
    InvalidConfig(String),
    /// A rank argument is not a rank of the group.
    #[error("rank {rank} is not in a group of {world} ranks")]
    InvalidRank {
        /// The offending rank.
        rank: usize,
        /// The group's world size.
        world: usize,
    },
    /// Nothing arrived from `peer` within the configured timeout.
    #[error("timed out after {after:?} waiting for {what} from rank {peer}")]
    Timeout {
        /// The rank that did not answer.
        peer: usize,
        /// The timeout that ran out.
        after: Duration,
        /// What was being waited for.
        what: String,
    },
    /// The connection to `peer` closed or failed (the peer died or left).
    #[error("rank {peer} disconnected: {detail}")]
    PeerDisconnected {
        /// The rank that went away.
        peer: usize,
        /// What the transport saw.
        detail: String,
    },
    /// `peer` announced a frame longer than the configured maximum.
    #[error("rank {peer} sent a frame of {len} bytes, over the maximum of {max}")]
    FrameTooLarge {
        /// The sender.
        peer: usize,
        /// The announced length.
        len: u64,
        /// The configured maximum frame size.
        max: u64,
    },
    /// A frame from `peer` ended (connection closed or stalled) before its end.
    #[error("truncated frame from rank {peer}: {detail}")]
    TruncatedFrame {
        /// The sender.
        peer: usize,
        /// How much arrived.
        detail: String,
    },
    /// A frame from `peer` failed its integrity check (bad magic, MAC, sequence, dtype).
    #[error("corrupted frame from rank {peer}: {reason}")]
    CorruptFrame {
        /// The sender.
        peer: usize,
        /// Which check failed.
        reason: String,
    },
    /// The shared-secret handshake with a peer failed (wrong secret or not an RLX peer).
    #[error("authentication with {peer_addr} failed: {detail}")]
    AuthFailed {
        /// The peer's socket address.
        peer_addr: String,
        /// Which step failed.
        detail: String,
    },
    /// Two processes claimed the same rank while the group was forming.
    #[error("rank {rank} joined twice")]
    DuplicateRank {
        /// The rank claimed twice.
        rank: usize,
    },
    /// The group could not be formed.
    #[error("rendezvous failed: {0}")]
    RendezvousFailed(String),
    /// An earlier error failed the group; it cannot be used any more.
    #[error("process group failed earlier: {0}")]
    GroupFailed(String),
    /// Ranks passed buffers of different lengths (or dtypes) to one collective.
    #[error("{op}: rank {peer} sent {got} elements where {expected} were expected")]
    LengthMismatch {
        /// The collective.
        op: &'static str,
        /// The rank whose buffer did not match.
        peer: usize,
        /// The length this rank expected.
        expected: usize,
        /// The length that arrived.
        got: usize,
    },
    /// An output buffer's length is not the input's (`all_reduce_into`).
    #[error("{op}: an output buffer of {output} elements for an input of {input}")]
    OutputLength {
        /// The collective.
        op: &'static str,
        /// The input's length.
        input: usize,
        /// The output's length.
        output: usize,
    },
    /// A buffer split into one chunk per rank is not a multiple of the world size.
    #[error("{op}: a buffer of {len} elements does not split into {world} equal chunks")]
    NotDivisible {
        /// The collective.
        op: &'static str,
        /// The buffer length.
        len: usize,
        /// The world size.
        world: usize,
    },
    /// This reduction is not defined for this element type.
    #[error("reduction {kind} is not supported for {dtype}")]
    UnsupportedReduce {
        /// The reduction.
        kind: &'static str,
        /// The element type.
        dtype: &'static str,
    },
    /// A `ppermute` permutation is not a partial permutation of the ranks.
    #[error("invalid permutation: {0}")]
    InvalidPermutation(String),
    /// No group with this id is registered.
    #[error("unknown process group id {0}")]
    UnknownGroup(u16),
    /// This rank is not a member of the registered sub-group.
    #[error("rank {rank} is not a member of group {id}")]
    NotAMember {
        /// The group id.
        id: u16,
        /// This process's world rank.
        rank: usize,
    },
    /// An operating-system I/O error outside a peer connection (bind, accept).
    #[error("{context}: {message}")]
    Io {
        /// What was being done.
        context: String,
        /// The error's kind.
        kind: std::io::ErrorKind,
        /// The error's text.
        message: String,
    },
    /// An error reported by the MPI library.
    #[error("MPI: {0}")]
    Mpi(String),
}

impl CollectiveError {
    /// Wraps an I/O error with what was being done.
    pub fn io(context: impl Into<String>, e: &std::io::Error) -> Self {
        CollectiveError::Io {
            context: context.into(),
            kind: e.kind(),
            message: e.to_string(),
        }
    }
}
