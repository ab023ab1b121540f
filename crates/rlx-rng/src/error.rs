//! The one error type of the crate: every invalid argument is reported here,
//! never by a panic.

/// An invalid argument to one of the samplers. The message names the
/// argument and its value, in the words numpy / PyTorch use.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RngError {
    /// An integer range with nothing in it (`low >= high`, or `low > high`
    /// for a closed range).
    #[error("empty integer range: low = {low}, high = {high}{}", if *.closed { " (closed)" } else { "" })]
    EmptyRange {
        /// The lower bound given.
        low: i128,
        /// The upper bound given.
        high: i128,
        /// Whether `high` was meant inclusive (`endpoint=True`).
        closed: bool,
    },
    /// An integer bound that the output dtype cannot hold.
    #[error("{which} = {value} is out of bounds for {dtype}")]
    BoundOutOfRange {
        /// `"low"` or `"high"`.
        which: &'static str,
        /// The bound given.
        value: i128,
        /// The output dtype, in numpy's spelling (`"int64"`, `"uint8"`, ...).
        dtype: &'static str,
    },
    /// A probability outside `[0, 1]` (or NaN).
    #[error("probability {name} = {value} is outside [0, 1]")]
    Probability {
        /// The argument's name (`"p"`).
        name: &'static str,
        /// The value given.
        value: f64,
    },
    /// A probability vector that numpy's `choice` rejects (wrong length,
    /// negative or NaN entries, does not sum to 1, too few non-zero
    /// entries).
    #[error("invalid probabilities: {0}")]
    InvalidProbabilities(String),
    /// `choice` from an empty population while samples are requested.
    #[error("cannot take {size} samples from an empty population")]
    EmptyPopulation {
        /// How many samples were requested.
        size: usize,
    },
    /// `choice(replace=False)` asked for more samples than there are items.
    #[error("cannot take a larger sample ({size}) than the population ({population}) when replace is false")]
    SampleTooLarge {
        /// How many samples were requested.
        size: usize,
        /// The population size.
        population: usize,
    },
    /// A negative standard deviation / scale.
    #[error("{name} must be non-negative, got {value}")]
    NegativeScale {
        /// The argument's name (`"scale"`, `"std"`).
        name: &'static str,
        /// The value given.
        value: f64,
    },
    /// `uniform(low, high)` whose `high - low` is not finite.
    #[error("range exceeds valid bounds: high - low = {0} is not finite")]
    NonFiniteRange(f64),
    /// torch's `uniform_(low, high)` with `low > high` or a non-finite width.
    #[error(
        "uniform_ expects low <= high with a finite difference, got low = {low}, high = {high}"
    )]
    InvalidUniformRange {
        /// The lower bound given.
        low: f64,
        /// The upper bound given.
        high: f64,
    },
    /// A distribution parameter outside its domain, in numpy's words
    /// (`a <= 0`, `lam < 0 or lam is NaN`, `lam value too large`, ...).
    #[error("invalid {name} = {value}: {reason}")]
    InvalidParameter {
        /// The argument's name (`"a"`, `"lam"`, `"shape"`, ...).
        name: &'static str,
        /// The value given.
        value: f64,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A count that must be non-negative (`binomial`'s `n`).
    #[error("{name} must be non-negative, got {value}")]
    NegativeCount {
        /// The argument's name (`"n"`).
        name: &'static str,
        /// The value given.
        value: i64,
    },
    /// An array shape / axis that does not fit the data.
    #[error("invalid shape: {0}")]
    Shape(String),
    /// A seed numpy rejects (empty seed array).
    #[error("invalid seed: {0}")]
    InvalidSeed(String),
}

/// `Result` with [`RngError`].
pub type Result<T> = std::result::Result<T, RngError>;
