//! Scalar, lane-for-lane ports of the two functions of PyTorch's
//! `avx_mathfun.h` (Pommier / Garberoglio's Cephes-style AVX log and
//! sincos) that torch's AVX2 `randn` uses for float32 tensors of 16 or
//! more elements. Every operation is the float32 operation of one AVX
//! instruction, in the same order, and a multiply whose only use is an add
//! is one fused multiply-add, as the compiler of torch's AVX2 build
//! (`-mfma`, floating-point contraction on) emits it; so the results are
//! that build's bits.

// The constants are the source's decimal literals, converted to f64 and
// then to f32, as C converts a double literal stored in a float array.
#![allow(clippy::excessive_precision)]

// 0.707106781186547524 in the source: the f64 nearest to 1 / sqrt(2)
const SQRTHF: f32 = std::f64::consts::FRAC_1_SQRT_2 as f32;
const LOG_P: [f32; 9] = [
    7.0376836292E-2_f64 as f32,
    -1.1514610310E-1_f64 as f32,
    1.1676998740E-1_f64 as f32,
    -1.2420140846E-1_f64 as f32,
    1.4249322787E-1_f64 as f32,
    -1.6668057665E-1_f64 as f32,
    2.0000714765E-1_f64 as f32,
    -2.4999993993E-1_f64 as f32,
    3.3333331174E-1_f64 as f32,
];
const LOG_Q1: f32 = -2.12194440e-4_f64 as f32;
const LOG_Q2: f32 = 0.693359375_f64 as f32;

const MINUS_DP1: f32 = -0.78515625_f64 as f32;
const MINUS_DP2: f32 = -2.4187564849853515625e-4_f64 as f32;
const MINUS_DP3: f32 = -3.77489497744594108e-8_f64 as f32;
const SINCOF: [f32; 3] = [
    -1.9515295891E-4_f64 as f32,
    8.3321608736E-3_f64 as f32,
    -1.6666654611E-1_f64 as f32,
];
const COSCOF: [f32; 3] = [
    2.443315711809948E-005_f64 as f32,
    -1.388731625493765E-003_f64 as f32,
    4.166664568298827E-002_f64 as f32,
];
const FOPI: f32 = 1.27323954473516_f64 as f32;

/// `log256_ps`, one lane: natural log, NaN for `x <= 0`.
pub(crate) fn log_ps(x: f32) -> f32 {
    let invalid = x <= 0.0;
    // _mm256_max_ps(x, min_norm_pos): the second operand when x is NaN
    let min_norm = f32::from_bits(0x0080_0000);
    let mut x = if x > min_norm { x } else { min_norm };
    let imm0 = (x.to_bits() >> 23) as i32;
    x = f32::from_bits((x.to_bits() & !0x7f80_0000) | 0.5f32.to_bits());
    let mut e = (imm0 - 0x7f) as f32;
    e += 1.0;
    let mask = x < SQRTHF;
    let tmp = if mask { x } else { 0.0 };
    x -= 1.0;
    e -= if mask { 1.0 } else { 0.0 };
    x += tmp;
    let z = x * x;
    let mut y = LOG_P[0];
    for &p in &LOG_P[1..] {
        y = y.mul_add(x, p);
    }
    y *= x;
    y = y.mul_add(z, e * LOG_Q1);
    y = (-z).mul_add(0.5, y);
    x += y;
    x = e.mul_add(LOG_Q2, x);
    if invalid {
        f32::from_bits(u32::MAX)
    } else {
        x
    }
}

/// `sincos256_ps`, one lane: `(sin x, cos x)`.
pub(crate) fn sincos_ps(x: f32) -> (f32, f32) {
    let mut sign_sin = x.to_bits() & 0x8000_0000;
    let mut x = f32::from_bits(x.to_bits() & 0x7fff_ffff);
    let mut y = x * FOPI;
    // cvttps: truncation (out of range gives i32::MIN, as the instruction does)
    let mut j = if y.is_finite() && y.abs() < 2_147_483_648.0 {
        y as i32
    } else {
        i32::MIN
    };
    j = j.wrapping_add(1) & !1;
    y = j as f32;
    let swap_sign_sin = ((j & 4) as u32) << 29;
    let poly_mask = (j & 2) == 0;
    x = y.mul_add(MINUS_DP1, x);
    x = y.mul_add(MINUS_DP2, x);
    x = y.mul_add(MINUS_DP3, x);
    let j4 = j.wrapping_sub(2);
    let sign_cos = ((!j4 & 4) as u32) << 29;
    sign_sin ^= swap_sign_sin;

    let z = x * x;
    let mut yc = COSCOF[0].mul_add(z, COSCOF[1]);
    yc = yc.mul_add(z, COSCOF[2]);
    yc *= z;
    yc = yc.mul_add(z, -(z * 0.5));
    yc += 1.0;

    let mut ys = SINCOF[0].mul_add(z, SINCOF[1]);
    ys = ys.mul_add(z, SINCOF[2]);
    ys *= z;
    ys = ys.mul_add(x, x);

    let (ysin2, ysin1) = if poly_mask { (ys, 0.0) } else { (0.0, yc) };
    let y2 = ys - ysin2;
    let yc = yc - ysin1;
    let s = f32::from_bits((ysin1 + ysin2).to_bits() ^ sign_sin);
    let c = f32::from_bits((yc + y2).to_bits() ^ sign_cos);
    (s, c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn close_to_libm() {
        for i in 1..1000 {
            let u = i as f32 / 1000.0;
            assert!(
                (log_ps(u) - u.ln()).abs() <= 2e-7 * u.ln().abs().max(1.0),
                "log {u}"
            );
            let t = u * std::f32::consts::TAU;
            let (s, c) = sincos_ps(t);
            assert!(
                (s - t.sin()).abs() < 1e-6 && (c - t.cos()).abs() < 1e-6,
                "sincos {t}"
            );
        }
        assert!(log_ps(0.0).is_nan() && log_ps(-1.0).is_nan());
    }
}
