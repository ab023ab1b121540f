//! gemmlowp / TFLite fixed-point primitives on int32 raw values.
//!
//! Each function is the scalar form of the TFLite reference code it is
//! named after; `tools/gen_cortexm_fixtures.py` re-implements them in numpy
//! and the tests compare both on edge cases.

/// `SaturatingRoundingDoublingHighMul`: the high 32 bits of `2 * a * b`,
/// rounded half away from zero; `i32::MIN * i32::MIN` saturates to `i32::MAX`.
#[inline]
pub fn saturating_rounding_doubling_high_mul(a: i32, b: i32) -> i32 {
    if a == i32::MIN && b == i32::MIN {
        return i32::MAX;
    }
    let ab = a as i64 * b as i64;
    let nudge: i64 = if ab >= 0 { 1 << 30 } else { 1 - (1 << 30) };
    // Rust's `/` truncates toward zero, as C's does.
    ((ab + nudge) / (1i64 << 31)) as i32
}

/// `RoundingDivideByPOT`: `x / 2^exponent` rounded half away from zero
/// (`exponent` in `0..=31`).
#[inline]
pub fn rounding_divide_by_pot(x: i32, exponent: u32) -> i32 {
    debug_assert!(exponent <= 31);
    let mask = ((1i64 << exponent) - 1) as i32;
    let remainder = x & mask;
    let threshold = (mask >> 1) + i32::from(x < 0);
    (x >> exponent) + i32::from(remainder > threshold)
}

/// `MultiplyByQuantizedMultiplier`: `x * multiplier * 2^shift / 2^31`, the
/// requantization of an int32 accumulator (`shift` in `-31..=30`; a left
/// shift wraps like TFLite's int32 product).
#[inline]
pub fn multiply_by_quantized_multiplier(x: i32, multiplier: i32, shift: i32) -> i32 {
    let left = if shift > 0 { shift as u32 } else { 0 };
    let right = if shift > 0 { 0 } else { (-shift) as u32 };
    rounding_divide_by_pot(
        saturating_rounding_doubling_high_mul(x.wrapping_mul(1i32 << left), multiplier),
        right,
    )
}

/// gemmlowp's `SaturatingRoundingMultiplyByPOT` with a positive exponent:
/// `x << exponent`, saturated to the int32 range.
#[inline]
pub fn saturating_left_shift(x: i32, exponent: u32) -> i32 {
    let threshold = (1i32 << (31 - exponent)) - 1;
    if x > threshold {
        i32::MAX
    } else if x < -threshold {
        i32::MIN
    } else {
        x << exponent
    }
}

/// gemmlowp's `RoundingHalfSum`: `(a + b) / 2` rounded half away from zero.
#[inline]
pub fn rounding_half_sum(a: i32, b: i32) -> i32 {
    let sum = a as i64 + b as i64;
    let sign = if sum >= 0 { 1 } else { -1 };
    ((sum + sign) / 2) as i32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubling_high_mul_saturates_only_at_min_min() {
        assert_eq!(
            saturating_rounding_doubling_high_mul(i32::MIN, i32::MIN),
            i32::MAX
        );
        assert_eq!(
            saturating_rounding_doubling_high_mul(i32::MIN, i32::MAX),
            -i32::MAX
        );
    }

    #[test]
    fn divide_by_pot_rounds_half_away() {
        assert_eq!(rounding_divide_by_pot(5, 1), 3);
        assert_eq!(rounding_divide_by_pot(-5, 1), -3);
        assert_eq!(rounding_divide_by_pot(-4, 1), -2);
        assert_eq!(rounding_divide_by_pot(7, 0), 7);
    }
}
