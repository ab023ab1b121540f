//! Typed IR errors.

use crate::{DType, Shape};
use thiserror::Error;

/// An error raised while building, verifying or transforming a graph.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum IrError {
    /// An op's inputs are not valid for it (wrong rank, dims, dtype, attributes).
    #[error("{op}: {reason}")]
    InvalidOp {
        /// The op mnemonic (and node label where known).
        op: String,
        /// What was wrong, naming the shapes involved.
        reason: String,
    },
    /// A builder was given an output shape that differs from the inferred one.
    #[error("{op}: given shape {given} but inference gives {expected}")]
    ShapeMismatch {
        /// The op.
        op: String,
        /// Inferred.
        expected: Shape,
        /// Given.
        given: Shape,
    },
    /// A node refers to an id that does not exist (yet).
    #[error("{node}: input {input} does not exist (the graph has {len} nodes)")]
    DanglingInput {
        /// The node.
        node: String,
        /// The missing id.
        input: String,
        /// Node count.
        len: usize,
    },
    /// Data of the wrong length.
    #[error("{what}: expected {expected} values, given {given}")]
    DataLength {
        /// What the data is for.
        what: String,
        /// Expected count.
        expected: usize,
        /// Given count.
        given: usize,
    },
    /// Data of the wrong dtype.
    #[error("{what}: expected dtype {expected}, given {given}")]
    DTypeMismatch {
        /// What the data is for.
        what: String,
        /// Expected.
        expected: DType,
        /// Given.
        given: DType,
    },
    /// A name used twice for inputs / params.
    #[error("duplicate {kind} name \"{name}\"")]
    DuplicateName {
        /// "input" or "param".
        kind: &'static str,
        /// The name.
        name: String,
    },
}

impl IrError {
    pub(crate) fn invalid(op: impl Into<String>, reason: impl Into<String>) -> IrError {
        IrError::InvalidOp {
            op: op.into(),
            reason: reason.into(),
        }
    }
}
