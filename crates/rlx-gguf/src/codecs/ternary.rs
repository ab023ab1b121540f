//! Ternary and binary formats: TQ1_0, TQ2_0 (BitNet b1.58 / TriLM) and Q1_0.
//! Ports of ggml's reference (de)quantizers; gguf-py has the TQ ones too and
//! the bytes match.

use super::float::{f16_at, put_f16};

const QK_K: usize = 256;
const POW3: [u8; 6] = [1, 3, 9, 27, 81, 243];

#[inline]
fn trit(q: u8) -> f32 {
    // `(q * 3) >> 8` is the leading base-3 digit of a byte scaled by 256/243.
    f32::from((((u16::from(q) * 3) >> 8) as i16 - 1) as i8)
}

/// TQ1_0 (54 bytes): `qs: [u8; 48], qh: [u8; 4], d: f16`; 5 trits per `qs`
/// byte, 4 per `qh` byte.
pub(crate) fn dequant_tq1_0(b: &[u8], y: &mut [f32]) {
    let d = f16_at(b, 52);
    let mut o = 0;
    for n in 0..5 {
        for m in 0..32 {
            y[o + n * 32 + m] = trit(b[m].wrapping_mul(POW3[n])) * d;
        }
    }
    o += 160;
    for n in 0..5 {
        for m in 0..16 {
            y[o + n * 16 + m] = trit(b[32 + m].wrapping_mul(POW3[n])) * d;
        }
    }
    o += 80;
    for n in 0..4 {
        for j in 0..4 {
            y[o + n * 4 + j] = trit(b[48 + j].wrapping_mul(POW3[n])) * d;
        }
    }
}

#[inline]
fn absmax(x: &[f32]) -> f32 {
    x.iter().fold(0.0f32, |a, v| a.max(v.abs()))
}

#[inline]
fn to_trit(v: f32, id: f32) -> u8 {
    // lroundf(v * id) + 1, in 0..=2 for |v| <= amax.
    ((v * id).round() as i32).wrapping_add(1) as u8
}

pub(crate) fn quant_tq1_0(x: &[f32], b: &mut [u8]) {
    let d = absmax(x);
    let id = if d != 0.0 { 1.0 / d } else { 0.0 };
    put_f16(b, 52, d);
    // Ceiling division by 243 = 3^5, as ggml: `(q * 256 + 242) / 243`.
    let ceil_div = |q: u8| (u16::from(q) * 256).div_ceil(243) as u8;
    for m in 0..32 {
        let mut q = 0u8;
        for n in 0..5 {
            q = q.wrapping_mul(3).wrapping_add(to_trit(x[m + n * 32], id));
        }
        b[m] = ceil_div(q);
    }
    for m in 0..16 {
        let mut q = 0u8;
        for n in 0..5 {
            q = q
                .wrapping_mul(3)
                .wrapping_add(to_trit(x[160 + m + n * 16], id));
        }
        b[32 + m] = ceil_div(q);
    }
    for j in 0..4 {
        let mut q = 0u8;
        for m in 0..4 {
            q = q
                .wrapping_mul(3)
                .wrapping_add(to_trit(x[240 + j + m * 4], id));
        }
        b[48 + j] = ceil_div(q.wrapping_mul(3));
    }
}

/// TQ2_0 (66 bytes): `qs: [u8; 64], d: f16`; 2-bit codes 0..=2 meaning -1..=1.
pub(crate) fn dequant_tq2_0(b: &[u8], y: &mut [f32]) {
    let d = f16_at(b, 64);
    for j in (0..64).step_by(32) {
        for l in 0..4 {
            for m in 0..32 {
                let q = ((b[j + m] >> (2 * l)) & 3) as i8;
                y[j * 4 + l * 32 + m] = f32::from(q - 1) * d;
            }
        }
    }
}

pub(crate) fn quant_tq2_0(x: &[f32], b: &mut [u8]) {
    let d = absmax(&x[..QK_K]);
    let id = if d != 0.0 { 1.0 / d } else { 0.0 };
    put_f16(b, 64, d);
    for j in (0..64).step_by(32) {
        for m in 0..32 {
            let mut q = 0u8;
            for n in 0..4 {
                q += (to_trit(x[j * 4 + m + n * 32], id) & 3) << (2 * n);
            }
            b[j + m] = q;
        }
    }
}

/// Q1_0 (18 bytes per 128): `d: f16, qs: [u8; 16]`; bit set means `+d`, clear `-d`.
pub(crate) fn dequant_q1_0(b: &[u8], y: &mut [f32]) {
    let d = f16_at(b, 0);
    for (j, o) in y.iter_mut().enumerate().take(128) {
        *o = if (b[2 + j / 8] >> (j % 8)) & 1 != 0 {
            d
        } else {
            -d
        };
    }
}

pub(crate) fn quant_q1_0(x: &[f32], b: &mut [u8]) {
    let mut sum_abs = 0.0f32;
    for v in &x[..128] {
        sum_abs += v.abs();
    }
    put_f16(b, 0, sum_abs / 128.0);
    b[2..18].iter_mut().for_each(|q| *q = 0);
    for (j, v) in x[..128].iter().enumerate() {
        if *v >= 0.0 {
            b[2 + j / 8] |= 1 << (j % 8);
        }
    }
}
