//! Int8 softmax with TFLite's reference semantics: differences to the row
//! maximum scaled into Q5.26, gemmlowp's fixed-point `exp` on negative
//! values, sums in Q12.19, a Newton-Raphson reciprocal, output with scale
//! 1/256 and zero point -128.

use crate::error::{check_len, KernelError};
use crate::fixed::{
    rounding_divide_by_pot, rounding_half_sum, saturating_left_shift,
    saturating_rounding_doubling_high_mul as mul,
};

/// Integer bits of the scaled differences (TFLite's `kScaledDiffIntegerBits`).
pub const SCALED_DIFF_INTEGER_BITS: u32 = 5;
/// Integer bits of the sum of exponentials (`kAccumulationIntegerBits`).
const ACCUMULATION_INTEGER_BITS: u32 = 12;

/// The input-side parameters of TFLite's `SoftmaxParams`, computed on the
/// host from `beta * input_scale` (`PreprocessSoftmaxScaling`,
/// `CalculateInputRadius`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SoftmaxParams {
    /// Q0.31 multiplier of `beta * input_scale * 2^26`.
    pub input_multiplier: i32,
    /// Left shift applied with it (`0..=31`).
    pub input_left_shift: i32,
    /// Differences below this (non-positive) give probability 0.
    pub diff_min: i32,
}

/// `exp(a)` for `a` in `[-1/4, 0)`, Q0.31 in and out.
fn exp_on_interval_between_negative_one_quarter_and_0_excl(a: i32) -> i32 {
    const CONSTANT_TERM: i32 = 1_895_147_668;
    const ONE_THIRD: i32 = 715_827_883;
    let x = a.wrapping_add(1 << 28);
    let x2 = mul(x, x);
    let x3 = mul(x2, x);
    let x4 = mul(x2, x2);
    let x4_over_4 = rounding_divide_by_pot(x4, 2);
    let poly = rounding_divide_by_pot(
        mul(x4_over_4.wrapping_add(x3), ONE_THIRD).wrapping_add(x2),
        1,
    );
    CONSTANT_TERM.wrapping_add(mul(CONSTANT_TERM, x.wrapping_add(poly)))
}

/// gemmlowp's `exp_on_negative_values`: Q5.26 input `a <= 0`, Q0.31 output.
pub fn exp_on_negative_values(a: i32) -> i32 {
    const FRACTIONAL_BITS: u32 = 31 - SCALED_DIFF_INTEGER_BITS;
    let one_quarter = 1i32 << (FRACTIONAL_BITS - 2);
    let mask = one_quarter - 1;
    let a_mod_quarter_minus_one_quarter = (a & mask).wrapping_sub(one_quarter);
    let mut result = exp_on_interval_between_negative_one_quarter_and_0_excl(
        saturating_left_shift(a_mod_quarter_minus_one_quarter, SCALED_DIFF_INTEGER_BITS),
    );
    let remainder = a_mod_quarter_minus_one_quarter.wrapping_sub(a);
    // exp(-2^k) for k = -2..=4, Q0.31: the barrel shifter over the whole quarters.
    const BARREL: [(i32, i32); 7] = [
        (-2, 1_672_461_947),
        (-1, 1_302_514_674),
        (0, 790_015_084),
        (1, 290_630_308),
        (2, 39_332_535),
        (3, 720_401),
        (4, 242),
    ];
    for (exponent, multiplier) in BARREL {
        let bit = (FRACTIONAL_BITS as i32 + exponent) as u32;
        if remainder & (1 << bit) != 0 {
            result = mul(result, multiplier);
        }
    }
    if a == 0 {
        i32::MAX
    } else {
        result
    }
}

/// gemmlowp's `one_over_one_plus_x_for_x_in_0_1`: Q0.31 in and out.
fn one_over_one_plus_x_for_x_in_0_1(a: i32) -> i32 {
    let half_denominator = rounding_half_sum(a, i32::MAX);
    const C48_OVER_17: i32 = 1_515_870_810; // Q2.29
    const NEG_C32_OVER_17: i32 = -1_010_580_540; // Q2.29
    const ONE_Q2: i32 = 1 << 29;
    let mut x = C48_OVER_17.wrapping_add(mul(half_denominator, NEG_C32_OVER_17));
    for _ in 0..3 {
        let half_denominator_times_x = mul(half_denominator, x);
        let one_minus = ONE_Q2.wrapping_sub(half_denominator_times_x);
        x = x.wrapping_add(saturating_left_shift(mul(x, one_minus), 2));
    }
    saturating_left_shift(x, 1)
}

/// TFLite's `GetReciprocal`: `1 / x` of a Q12.19 sum as a Q0.31 scale and
/// the number of bits it is over one.
fn reciprocal(x: i32) -> (i32, i32) {
    let headroom_plus_one = (x as u32).leading_zeros();
    let num_bits_over_unit = ACCUMULATION_INTEGER_BITS as i32 - headroom_plus_one as i32;
    let shifted_sum_minus_one = ((x as u32) << headroom_plus_one).wrapping_sub(1u32 << 31) as i32;
    (
        one_over_one_plus_x_for_x_in_0_1(shifted_sum_minus_one),
        num_bits_over_unit,
    )
}

/// Softmax of each row of `classes` int8 values; output scale 1/256,
/// zero point -128.
pub fn softmax(
    input: &[i8],
    classes: usize,
    params: &SoftmaxParams,
    output: &mut [i8],
) -> Result<(), KernelError> {
    if classes == 0 {
        return Err(KernelError::Geometry("softmax over zero classes"));
    }
    if !(0..=31).contains(&params.input_left_shift) || params.diff_min > 0 {
        return Err(KernelError::QParam(
            "softmax left shift outside 0..=31 or positive diff_min",
        ));
    }
    check_len("output", input.len(), output.len())?;
    if !input.len().is_multiple_of(classes) {
        return Err(KernelError::Length {
            what: "input",
            expected: input.len() / classes * classes,
            actual: input.len(),
        });
    }
    let scaled = |diff: i32| {
        mul(
            diff.wrapping_mul(1i32 << params.input_left_shift),
            params.input_multiplier,
        )
    };
    for (row, out) in input
        .chunks_exact(classes)
        .zip(output.chunks_exact_mut(classes))
    {
        let max = row.iter().copied().max().unwrap_or(i8::MIN) as i32;
        let mut sum_of_exps: i32 = 0;
        for &v in row {
            let diff = v as i32 - max;
            if diff >= params.diff_min {
                let e = exp_on_negative_values(scaled(diff));
                sum_of_exps =
                    sum_of_exps.wrapping_add(rounding_divide_by_pot(e, ACCUMULATION_INTEGER_BITS));
            }
        }
        let (shifted_scale, num_bits_over_unit) = reciprocal(sum_of_exps);
        for (&v, o) in row.iter().zip(out.iter_mut()) {
            let diff = v as i32 - max;
            *o = if diff >= params.diff_min {
                let e = exp_on_negative_values(scaled(diff));
                // Past 31 bits the quotient of a Q0.31 value is 0 (> 512 classes).
                let exponent = (num_bits_over_unit + 31 - 8) as u32;
                let unsat = if exponent > 31 {
                    0
                } else {
                    rounding_divide_by_pot(mul(shifted_scale, e), exponent)
                };
                (unsat + i8::MIN as i32).clamp(-128, 127) as i8
            } else {
                i8::MIN
            };
        }
    }
    Ok(())
}
