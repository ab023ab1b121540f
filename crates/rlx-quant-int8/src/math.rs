//! Host-side quantization arithmetic: TFLite's `QuantizeMultiplier`, the
//! softmax input scaling, and the reference fixed-point requantization in
//! wide integers (written from the definitions, independently of the
//! kernels' int32 code).

use rlx_cortexm::SoftmaxParams;

/// C's `frexp`: `(mantissa, exponent)` with `v = mantissa * 2^exponent`
/// and `|mantissa|` in `[0.5, 1)`, exact (read off the bits).
fn frexp(v: f64) -> (f64, i32) {
    if v == 0.0 || !v.is_finite() {
        return (v, 0);
    }
    if v.abs() < f64::MIN_POSITIVE {
        let (m, e) = frexp(v * 2f64.powi(64));
        return (m, e - 64);
    }
    let bits = v.to_bits();
    let exponent = ((bits >> 52) & 0x7ff) as i32 - 1022;
    let mantissa = f64::from_bits((bits & !(0x7ffu64 << 52)) | (1022u64 << 52));
    (mantissa, exponent)
}

/// TFLite's `QuantizeMultiplier`: `real ≈ multiplier * 2^shift / 2^31`
/// with a Q0.31 `multiplier` in `[2^30, 2^31)` (0 for 0 and for values
/// below `2^-32`; saturated at shift 30).
pub fn quantize_multiplier(real: f64) -> (i32, i32) {
    if real == 0.0 {
        return (0, 0);
    }
    let (q, mut shift) = frexp(real);
    // f64::round is half away from zero, as std::round.
    let mut q_fixed = (q * (1u64 << 31) as f64).round() as i64;
    if q_fixed == 1 << 31 {
        q_fixed /= 2;
        shift += 1;
    }
    if shift < -31 {
        shift = 0;
        q_fixed = 0;
    }
    if shift > 30 {
        shift = 30;
        q_fixed = (1 << 31) - 1;
    }
    (q_fixed as i32, shift)
}

/// TFLite's `PreprocessSoftmaxScaling` + `CalculateInputRadius` for int8
/// softmax of inputs with scale `input_scale` (5 integer bits).
pub fn softmax_params(beta: f64, input_scale: f64) -> SoftmaxParams {
    let real = (beta * input_scale * (1u64 << 26) as f64).min((1u64 << 31) as f64 - 1.0);
    let (input_multiplier, input_left_shift) = quantize_multiplier(real);
    let input_left_shift = input_left_shift.max(0);
    let radius = (31.0 * (1u64 << 26) as f64 / 2f64.powi(input_left_shift)).floor();
    SoftmaxParams {
        input_multiplier,
        input_left_shift,
        diff_min: -(radius as i32),
    }
}

/// `acc * multiplier * 2^shift / 2^31` with TFLite's two roundings, computed
/// in i128 from their definitions: the doubling high product `acc * m / 2^31`
/// rounded to nearest with ties toward +inf for positive products and
/// toward zero for negative ones (gemmlowp's nudge; only `MIN * MIN`
/// saturates), then the power-of-two division rounded half away from zero.
/// A left shift wraps the int32 first, as TFLite's does.
pub fn requantize_reference(acc: i32, multiplier: i32, shift: i32) -> i32 {
    let x = if shift > 0 {
        (acc as i64 * (1i64 << shift)) as i32 // wraps like the int32 product
    } else {
        acc
    };
    let high: i128 = if x == i32::MIN && multiplier == i32::MIN {
        i32::MAX as i128
    } else {
        let p = x as i128 * multiplier as i128;
        let half = 1i128 << 30;
        if p >= 0 {
            (p + half) >> 31
        } else {
            -((-p + half - 1) >> 31)
        }
    };
    let right = if shift > 0 { 0 } else { -shift };
    let d = 1i128 << right;
    (high.signum() * ((high.abs() + d / 2) / d)) as i32
}
