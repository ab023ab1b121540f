//! The one error type of the crate: bad input is reported here, never by a
//! panic, and an optimizer that returns an error has changed nothing.

/// What was wrong with a call into an optimizer, a schedule or a saved state.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum OptimError {
    /// Parameter and gradient (or shape) disagree in length.
    #[error(
        "parameter `{name}`: {what} has {given} elements, expected {expected} (shape {shape:?})"
    )]
    LengthMismatch {
        /// The parameter's name.
        name: String,
        /// `"param"` or `"grad"` (or another buffer named by the call).
        what: &'static str,
        /// Elements expected from the shape.
        expected: usize,
        /// Elements given.
        given: usize,
        /// The shape given.
        shape: Vec<usize>,
    },
    /// A name seen before comes back with another shape or precision.
    #[error("parameter `{name}`: state was created for {expected}, this call gives {given}")]
    StateMismatch {
        /// The parameter's name.
        name: String,
        /// What the stored state holds (shape and dtype).
        expected: String,
        /// What this call gives.
        given: String,
    },
    /// The optimizer needs a parameter of another form (e.g. a matrix).
    #[error("parameter `{name}`: {optimizer} needs {need}, got shape {shape:?}")]
    UnsupportedShape {
        /// The parameter's name.
        name: String,
        /// The optimizer's name.
        optimizer: &'static str,
        /// What it needs, in words.
        need: &'static str,
        /// The shape given.
        shape: Vec<usize>,
    },
    /// A hyperparameter outside its valid range.
    #[error("invalid hyperparameter {name} = {value}: {why}")]
    InvalidHyperparameter {
        /// The hyperparameter's name as in the reference (`lr`, `betas[1]`, ...).
        name: &'static str,
        /// The value given.
        value: f64,
        /// The valid range, in words.
        why: &'static str,
    },
    /// A saved state that does not parse or does not fit.
    #[error("optimizer state: {0}")]
    BadState(String),
}

/// Result with [`OptimError`].
pub type Result<T, E = OptimError> = std::result::Result<T, E>;
