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

/// A foreign error kept as the `#[source]` of one of ours, so that a chain
/// walked with [`std::error::Error::source`] reaches it (and can downcast
/// it) even where our error type is `Clone` and `PartialEq`.
///
/// It is shared (an `Arc`), compares by message, and dereferences to the
/// inner `dyn Error`: it deliberately does not implement `Error` itself,
/// so `thiserror`'s `#[source]` yields the inner error, not a wrapper.
#[derive(Clone)]
pub struct ErrorSource(std::sync::Arc<dyn std::error::Error + Send + Sync + 'static>);

impl ErrorSource {
    /// Wraps `error`.
    pub fn new(error: impl std::error::Error + Send + Sync + 'static) -> Self {
        ErrorSource(std::sync::Arc::new(error))
    }

    /// Wraps an already boxed error.
    pub fn from_boxed(error: Box<dyn std::error::Error + Send + Sync + 'static>) -> Self {
        ErrorSource(std::sync::Arc::from(error))
    }

    /// The inner error, to downcast or print.
    pub fn get(&self) -> &(dyn std::error::Error + Send + Sync + 'static) {
        &*self.0
    }
}

impl std::ops::Deref for ErrorSource {
    type Target = dyn std::error::Error + Send + Sync + 'static;
    fn deref(&self) -> &Self::Target {
        &*self.0
    }
}

impl std::fmt::Debug for ErrorSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&*self.0, f)
    }
}

impl std::fmt::Display for ErrorSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(&*self.0, f)
    }
}

/// Two sources are equal when they are the same error or print the same.
impl PartialEq for ErrorSource {
    fn eq(&self, other: &Self) -> bool {
        std::sync::Arc::ptr_eq(&self.0, &other.0) || self.0.to_string() == other.0.to_string()
    }
}

impl Eq for ErrorSource {}

/// A boxed error of a known type kept as a `#[source]` (for a recursive
/// error, such as a sub-graph's error inside its parent's). A plain `Box<T>`
/// would itself be the source (`Box<T>` implements `Error`), so a chain
/// walker's `downcast_ref::<T>()` would miss it; this box dereferences to
/// `T` and does not implement `Error`, so the source is the `T`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceBox<T>(pub Box<T>);

impl<T> SourceBox<T> {
    /// Boxes `inner`.
    pub fn new(inner: T) -> Self {
        SourceBox(Box::new(inner))
    }
}

impl<T> std::ops::Deref for SourceBox<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T: std::fmt::Display> std::fmt::Display for SourceBox<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(&*self.0, f)
    }
}

#[cfg(test)]
mod source_tests {
    use super::ErrorSource;
    use std::error::Error as _;

    #[derive(Debug, thiserror::Error)]
    #[error("inner")]
    struct Inner;

    #[derive(Debug, Clone, PartialEq, thiserror::Error)]
    #[error("outer: {source}")]
    struct Outer {
        #[source]
        source: ErrorSource,
    }

    #[derive(Debug, Clone, PartialEq, thiserror::Error)]
    #[error("nested: {source}")]
    struct Nested {
        #[source]
        source: super::SourceBox<Outer>,
    }

    #[test]
    fn a_boxed_source_is_the_inner_error() {
        let e = Nested {
            source: super::SourceBox::new(Outer {
                source: ErrorSource::new(Inner),
            }),
        };
        assert_eq!(e.to_string(), "nested: outer: inner");
        assert!(e.source().unwrap().downcast_ref::<Outer>().is_some());
        let inner = e.source().unwrap().source().unwrap();
        assert!(inner.downcast_ref::<Inner>().is_some());
    }

    #[test]
    fn the_source_is_the_inner_error() {
        let e = Outer {
            source: ErrorSource::new(Inner),
        };
        assert_eq!(e.to_string(), "outer: inner");
        assert!(e.source().unwrap().downcast_ref::<Inner>().is_some());
        assert_eq!(e.clone(), e);
    }
}
