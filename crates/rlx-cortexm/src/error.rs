use core::fmt;

/// Why a kernel refused its arguments (nothing is written then).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KernelError {
    /// A buffer's length differs from what the geometry needs.
    Length {
        /// Which buffer (`"input"`, `"weights"`, `"bias"`, `"output"`, ...).
        what: &'static str,
        /// Elements the geometry needs.
        expected: usize,
        /// Elements passed.
        actual: usize,
    },
    /// A geometry field is zero or inconsistent (window larger than the padded input, ...).
    Geometry(&'static str),
    /// The worst-case int32 accumulator of a layer can overflow.
    AccumulatorOverflow {
        /// Products summed per output.
        depth: usize,
    },
    /// A quantization parameter is out of range (shift, zero point, activation bounds).
    QParam(&'static str),
}

impl fmt::Display for KernelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KernelError::Length {
                what,
                expected,
                actual,
            } => write!(f, "{what} has {actual} elements, expected {expected}"),
            KernelError::Geometry(why) => write!(f, "bad geometry: {why}"),
            KernelError::AccumulatorOverflow { depth } => write!(
                f,
                "a sum of {depth} int8 products (plus bias) can overflow the int32 accumulator"
            ),
            KernelError::QParam(why) => write!(f, "bad quantization parameter: {why}"),
        }
    }
}

impl core::error::Error for KernelError {}

/// `Err(Length)` unless `actual == expected`.
pub(crate) fn check_len(
    what: &'static str,
    expected: usize,
    actual: usize,
) -> Result<(), KernelError> {
    if expected == actual {
        Ok(())
    } else {
        Err(KernelError::Length {
            what,
            expected,
            actual,
        })
    }
}
