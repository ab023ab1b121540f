//! The 32-weight block formats: Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q8_1.
//!
//! Each function works on one block. Quantizers follow ggml's
//! `quantize_row_*_ref` operation for operation (no fused multiply-add), which
//! is also what gguf-py's numpy quantizers compute, so their bytes match.

use super::float::{f16_at, put_f16};

const QK: usize = 32;

/// The value with the largest magnitude (first one on ties), as ggml's
/// `if (amax < fabsf(v)) { amax = fabsf(v); max = v; }`.
#[inline]
fn signed_absmax(x: &[f32]) -> f32 {
    let (mut amax, mut max) = (0.0f32, 0.0f32);
    for &v in x {
        if amax < v.abs() {
            amax = v.abs();
            max = v;
        }
    }
    max
}

#[inline]
fn absmax(x: &[f32]) -> f32 {
    x.iter().fold(0.0f32, |a, v| a.max(v.abs()))
}

#[inline]
fn min_max(x: &[f32]) -> (f32, f32) {
    let (mut min, mut max) = (f32::MAX, -f32::MAX);
    for &v in x {
        if v < min {
            min = v;
        }
        if v > max {
            max = v;
        }
    }
    (min, max)
}

#[inline]
fn inv(d: f32) -> f32 {
    if d != 0.0 {
        1.0 / d
    } else {
        0.0
    }
}

/// Q4_0 (18 bytes): `d: f16, qs: [u8; 16]`; `x = (q - 8) * d`.
pub(crate) fn dequant_q4_0(b: &[u8], y: &mut [f32]) {
    let d = f16_at(b, 0);
    for j in 0..QK / 2 {
        let q = b[2 + j];
        y[j] = ((q & 0x0F) as i32 - 8) as f32 * d;
        y[j + QK / 2] = ((q >> 4) as i32 - 8) as f32 * d;
    }
}

pub(crate) fn quant_q4_0(x: &[f32], b: &mut [u8]) {
    let d = signed_absmax(x) / -8.0;
    let id = inv(d);
    put_f16(b, 0, d);
    for j in 0..QK / 2 {
        let xi0 = ((x[j] * id + 8.5) as i8).min(15) as u8;
        let xi1 = ((x[j + QK / 2] * id + 8.5) as i8).min(15) as u8;
        b[2 + j] = xi0 | (xi1 << 4);
    }
}

/// Q4_1 (20 bytes): `d: f16, m: f16, qs: [u8; 16]`; `x = q * d + m`.
pub(crate) fn dequant_q4_1(b: &[u8], y: &mut [f32]) {
    let (d, m) = (f16_at(b, 0), f16_at(b, 2));
    for j in 0..QK / 2 {
        let q = b[4 + j];
        y[j] = (q & 0x0F) as f32 * d + m;
        y[j + QK / 2] = (q >> 4) as f32 * d + m;
    }
}

pub(crate) fn quant_q4_1(x: &[f32], b: &mut [u8]) {
    let (min, max) = min_max(x);
    let d = (max - min) / 15.0;
    let id = inv(d);
    put_f16(b, 0, d);
    put_f16(b, 2, min);
    for j in 0..QK / 2 {
        let xi0 = (((x[j] - min) * id + 0.5) as i8).min(15) as u8;
        let xi1 = (((x[j + QK / 2] - min) * id + 0.5) as i8).min(15) as u8;
        b[4 + j] = xi0 | (xi1 << 4);
    }
}

#[inline]
fn qh_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// Q5_0 (22 bytes): `d: f16, qh: u32, qs: [u8; 16]`; `x = (q - 16) * d`.
pub(crate) fn dequant_q5_0(b: &[u8], y: &mut [f32]) {
    let d = f16_at(b, 0);
    let qh = qh_at(b, 2);
    for j in 0..QK / 2 {
        let h0 = ((qh >> j) << 4) & 0x10;
        let h1 = (qh >> (j + 12)) & 0x10;
        let q = u32::from(b[6 + j]);
        y[j] = (((q & 0x0F) | h0) as i32 - 16) as f32 * d;
        y[j + QK / 2] = (((q >> 4) | h1) as i32 - 16) as f32 * d;
    }
}

pub(crate) fn quant_q5_0(x: &[f32], b: &mut [u8]) {
    let d = signed_absmax(x) / -16.0;
    let id = inv(d);
    put_f16(b, 0, d);
    let mut qh = 0u32;
    for j in 0..QK / 2 {
        let xi0 = ((x[j] * id + 16.5) as i8).min(31) as u8;
        let xi1 = ((x[j + QK / 2] * id + 16.5) as i8).min(31) as u8;
        b[6 + j] = (xi0 & 0x0F) | ((xi1 & 0x0F) << 4);
        qh |= u32::from((xi0 & 0x10) >> 4) << j;
        qh |= u32::from((xi1 & 0x10) >> 4) << (j + QK / 2);
    }
    b[2..6].copy_from_slice(&qh.to_le_bytes());
}

/// Q5_1 (24 bytes): `d: f16, m: f16, qh: u32, qs: [u8; 16]`; `x = q * d + m`.
pub(crate) fn dequant_q5_1(b: &[u8], y: &mut [f32]) {
    let (d, m) = (f16_at(b, 0), f16_at(b, 2));
    let qh = qh_at(b, 4);
    for j in 0..QK / 2 {
        let h0 = ((qh >> j) << 4) & 0x10;
        let h1 = (qh >> (j + 12)) & 0x10;
        let q = u32::from(b[8 + j]);
        y[j] = ((q & 0x0F) | h0) as f32 * d + m;
        y[j + QK / 2] = ((q >> 4) | h1) as f32 * d + m;
    }
}

pub(crate) fn quant_q5_1(x: &[f32], b: &mut [u8]) {
    let (min, max) = min_max(x);
    let d = (max - min) / 31.0;
    let id = inv(d);
    put_f16(b, 0, d);
    put_f16(b, 2, min);
    let mut qh = 0u32;
    for j in 0..QK / 2 {
        // ggml stores `(uint8_t)(x0 + 0.5f)`; gguf-py clips to 31, which is
        // the same for every finite input.
        let xi0 = (((x[j] - min) * id + 0.5) as u8).min(31);
        let xi1 = (((x[j + QK / 2] - min) * id + 0.5) as u8).min(31);
        b[8 + j] = (xi0 & 0x0F) | ((xi1 & 0x0F) << 4);
        qh |= u32::from((xi0 & 0x10) >> 4) << j;
        qh |= u32::from((xi1 & 0x10) >> 4) << (j + QK / 2);
    }
    b[4..8].copy_from_slice(&qh.to_le_bytes());
}

/// Q8_0 (34 bytes): `d: f16, qs: [i8; 32]`; `x = q * d`.
pub(crate) fn dequant_q8_0(b: &[u8], y: &mut [f32]) {
    let d = f16_at(b, 0);
    for j in 0..QK {
        y[j] = f32::from(b[2 + j] as i8) * d;
    }
}

pub(crate) fn quant_q8_0(x: &[f32], b: &mut [u8]) {
    let d = absmax(x) / 127.0;
    let id = inv(d);
    put_f16(b, 0, d);
    for j in 0..QK {
        b[2 + j] = (x[j] * id).round() as i8 as u8;
    }
}

/// Q8_1 (36 bytes): `d: f16, s: f16, qs: [i8; 32]` with `s = d * sum(q)`;
/// `x = q * d`.
pub(crate) fn dequant_q8_1(b: &[u8], y: &mut [f32]) {
    let d = f16_at(b, 0);
    for j in 0..QK {
        y[j] = f32::from(b[4 + j] as i8) * d;
    }
}

pub(crate) fn quant_q8_1(x: &[f32], b: &mut [u8]) {
    let d = absmax(x) / 127.0;
    let id = inv(d);
    put_f16(b, 0, d);
    let mut sum = 0i32;
    for j in 0..QK {
        let q = (x[j] * id).round() as i8;
        b[4 + j] = q as u8;
        sum += i32::from(q);
    }
    put_f16(b, 2, sum as f32 * d);
}
