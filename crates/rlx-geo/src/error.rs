//! Typed errors of rlx-geo: each names the offending input.

/// What went wrong, with the index of the offending point or the argument.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum GeoError {
    /// A coordinate is NaN or infinite.
    #[error("point {index} has a non-finite coordinate ({x}, {y})")]
    NonFinite {
        /// The point's index in the input.
        index: usize,
        /// Its x coordinate.
        x: f64,
        /// Its y coordinate.
        y: f64,
    },
    /// A coordinate outside the range the exact predicates handle
    /// (`0` or `2^-142 <= |v| <= 2^201`).
    #[error("point {index} coordinate {value} is outside the exact range (0 or 2^-142 ..= 2^201 in magnitude)")]
    OutOfRange {
        /// The point's index in the input.
        index: usize,
        /// The coordinate.
        value: f64,
    },
    /// An integer coordinate that f64 cannot hold exactly (|v| > 2^53).
    #[error(
        "point {index} integer coordinate {value} exceeds 2^53 in magnitude (not exact in f64)"
    )]
    IntegerTooLarge {
        /// The point's index in the input.
        index: usize,
        /// The coordinate.
        value: i64,
    },
    /// More points than I32 indices address.
    #[error("{count} points; at most {max} are supported (I32 indices)")]
    TooManyPoints {
        /// Points given.
        count: usize,
        /// The limit.
        max: usize,
    },
    /// A grid or site list that does not fit the request.
    #[error("invalid argument {name}: {reason}")]
    InvalidArgument {
        /// The argument.
        name: &'static str,
        /// What is wrong.
        reason: String,
    },
}

/// `Result` with [`GeoError`].
pub type Result<T> = std::result::Result<T, GeoError>;
