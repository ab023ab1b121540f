//! Element traits the kernels are generic over.
//!
//! Float kernels are written once for [`Real`] (f32, f64); F16 / BF16 run
//! the f32 kernel on widened data (see [`super::widen`]). Integer kernels
//! use [`Int`] with numpy's wrapping / floor-division semantics.

use half::{bf16, f16};
use rlx_ir::Complex32;
use std::ops::{Add, Div, Mul, Neg, Sub};

/// Plain old data: any bit pattern is a value and the type has no padding,
/// so a byte slice of the right length and alignment can be viewed as `[Self]`.
///
/// # Safety
/// Implement only for types where every bit pattern is valid and
/// `size_of::<Self>()` equals the dtype width.
pub unsafe trait Pod: Copy + Send + Sync + 'static {}

unsafe impl Pod for f32 {}
unsafe impl Pod for f64 {}
unsafe impl Pod for f16 {}
unsafe impl Pod for bf16 {}
unsafe impl Pod for i8 {}
unsafe impl Pod for i16 {}
unsafe impl Pod for i32 {}
unsafe impl Pod for i64 {}
unsafe impl Pod for u8 {}
unsafe impl Pod for u32 {}
unsafe impl Pod for Complex32 {}

/// A real floating-point type with the math the kernels need.
pub trait Real:
    Pod
    + PartialOrd
    + Default
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Div<Output = Self>
    + Neg<Output = Self>
{
    /// 0.
    const ZERO: Self;
    /// 1.
    const ONE: Self;
    /// +inf.
    const INFINITY: Self;
    /// -inf.
    const NEG_INFINITY: Self;
    /// NaN.
    const NAN: Self;
    /// From f64 (rounding).
    fn from_f64(v: f64) -> Self;
    /// To f64 (exact).
    fn to_f64(self) -> f64;
    /// e^x.
    fn exp(self) -> Self;
    /// ln x.
    fn ln(self) -> Self;
    /// sqrt.
    fn sqrt(self) -> Self;
    /// tanh.
    fn tanh(self) -> Self;
    /// sin.
    fn sin(self) -> Self;
    /// cos.
    fn cos(self) -> Self;
    /// floor.
    fn floor(self) -> Self;
    /// ceil.
    fn ceil(self) -> Self;
    /// Round half to even.
    fn round_even(self) -> Self;
    /// |x|.
    fn abs(self) -> Self;
    /// erf.
    fn erf(self) -> Self;
    /// x^y.
    fn powf(self, y: Self) -> Self;
    /// atan2(self, x).
    fn atan2(self, x: Self) -> Self;
    /// ln(1 + x).
    fn ln_1p(self) -> Self;
    /// NaN test.
    fn is_nan(self) -> bool;
    /// x mod y with the sign of y (numpy `mod`).
    fn rem_floor(self, y: Self) -> Self;
}

macro_rules! real_impl {
    ($t:ty, $erf:path) => {
        impl Real for $t {
            const ZERO: Self = 0.0;
            const ONE: Self = 1.0;
            const INFINITY: Self = <$t>::INFINITY;
            const NEG_INFINITY: Self = <$t>::NEG_INFINITY;
            const NAN: Self = <$t>::NAN;
            fn from_f64(v: f64) -> Self {
                v as $t
            }
            fn to_f64(self) -> f64 {
                self as f64
            }
            fn exp(self) -> Self {
                <$t>::exp(self)
            }
            fn ln(self) -> Self {
                <$t>::ln(self)
            }
            fn sqrt(self) -> Self {
                <$t>::sqrt(self)
            }
            fn tanh(self) -> Self {
                <$t>::tanh(self)
            }
            fn sin(self) -> Self {
                <$t>::sin(self)
            }
            fn cos(self) -> Self {
                <$t>::cos(self)
            }
            fn floor(self) -> Self {
                <$t>::floor(self)
            }
            fn ceil(self) -> Self {
                <$t>::ceil(self)
            }
            fn round_even(self) -> Self {
                <$t>::round_ties_even(self)
            }
            fn abs(self) -> Self {
                <$t>::abs(self)
            }
            fn erf(self) -> Self {
                $erf(self)
            }
            fn powf(self, y: Self) -> Self {
                <$t>::powf(self, y)
            }
            fn atan2(self, x: Self) -> Self {
                <$t>::atan2(self, x)
            }
            fn ln_1p(self) -> Self {
                <$t>::ln_1p(self)
            }
            fn is_nan(self) -> bool {
                <$t>::is_nan(self)
            }
            fn rem_floor(self, y: Self) -> Self {
                // numpy: fmod, then shift into the divisor's sign.
                let r = self % y;
                if r != 0.0 && ((r < 0.0) != (y < 0.0)) {
                    r + y
                } else if r == 0.0 {
                    (0.0 as $t).copysign(y)
                } else {
                    r
                }
            }
        }
    };
}

real_impl!(f32, libm::erff);
real_impl!(f64, libm::erf);

/// NaN-propagating maximum (numpy `maximum`).
pub(crate) fn nan_max<T: Real>(a: T, b: T) -> T {
    if a.is_nan() || b.is_nan() {
        T::NAN
    } else if a >= b {
        a
    } else {
        b
    }
}

/// NaN-propagating minimum (numpy `minimum`).
pub(crate) fn nan_min<T: Real>(a: T, b: T) -> T {
    if a.is_nan() || b.is_nan() {
        T::NAN
    } else if a <= b {
        a
    } else {
        b
    }
}

/// An integer type with numpy semantics (wrapping arithmetic, floor division, x // 0 = 0).
pub(crate) trait Int: Pod + Ord + Default {
    /// Smallest value.
    const MIN: Self;
    /// Largest value.
    const MAX: Self;
    /// Wrapping conversion from i64.
    fn from_i64(v: i64) -> Self;
    /// Conversion to i64 (u32 fits; u64 past i64::MAX wraps).
    fn to_i64(self) -> i64;
}

macro_rules! int_impl {
    ($($t:ty),*) => {$(
        impl Int for $t {
            const MIN: Self = <$t>::MIN;
            const MAX: Self = <$t>::MAX;
            fn from_i64(v: i64) -> Self { v as $t }
            fn to_i64(self) -> i64 { self as i64 }
        }
    )*};
}

int_impl!(i8, i16, i32, i64, u8, u16, u32, u64);

/// numpy floor division on i64 (x // 0 = 0).
pub(crate) fn floor_div(a: i64, b: i64) -> i64 {
    if b == 0 {
        return 0;
    }
    let q = a.wrapping_div(b);
    if (a % b != 0) && ((a < 0) != (b < 0)) {
        q - 1
    } else {
        q
    }
}

/// numpy mod on i64: sign of the divisor (x % 0 = 0).
pub(crate) fn floor_mod(a: i64, b: i64) -> i64 {
    if b == 0 {
        return 0;
    }
    let r = a.wrapping_rem(b);
    if r != 0 && ((r < 0) != (b < 0)) {
        r + b
    } else {
        r
    }
}

unsafe impl Pod for u16 {}
unsafe impl Pod for u64 {}
