//! The element types of sparse matrices (f32, f64).

use std::ops::{Add, AddAssign, Div, Mul, Neg, Sub};

/// A real element type: f32 or f64.
pub trait Scalar:
    Copy
    + PartialEq
    + PartialOrd
    + Default
    + std::fmt::Debug
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Div<Output = Self>
    + Neg<Output = Self>
    + AddAssign
    + Send
    + Sync
    + 'static
{
    /// Zero.
    const ZERO: Self;
    /// One.
    const ONE: Self;
    /// numpy's dtype string (`"<f4"`, `"<f8"`).
    const NPY_DESCR: &'static str;
    /// Rounds a double.
    fn from_f64(v: f64) -> Self;
    /// Widens to a double.
    fn to_f64(self) -> f64;
    /// Little-endian bytes.
    fn to_le(self) -> Vec<u8>;
    /// From little-endian bytes (`size_of::<Self>()` of them).
    fn from_le(b: &[u8]) -> Self;
}

macro_rules! scalar {
    ($t:ty, $descr:literal) => {
        impl Scalar for $t {
            const ZERO: Self = 0.0;
            const ONE: Self = 1.0;
            const NPY_DESCR: &'static str = $descr;
            fn from_f64(v: f64) -> Self {
                v as $t
            }
            fn to_f64(self) -> f64 {
                self as f64
            }
            fn to_le(self) -> Vec<u8> {
                self.to_le_bytes().to_vec()
            }
            fn from_le(b: &[u8]) -> Self {
                let mut a = [0u8; std::mem::size_of::<$t>()];
                a.copy_from_slice(b);
                <$t>::from_le_bytes(a)
            }
        }
    };
}
scalar!(f32, "<f4");
scalar!(f64, "<f8");
