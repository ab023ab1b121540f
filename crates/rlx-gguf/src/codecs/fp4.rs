//! FP4 (e2m1) formats: MXFP4 (e8m0 scale per 32) and NVFP4 (ue4m3 scale per 16).

use std::cmp::Ordering;

/// e2m1 values, doubled (ggml's `kvalues_mxfp4`).
const KVALUES: [i8; 16] = [0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12];

/// ggml's `GGML_E8M0_TO_FP32_HALF`: 2^(e - 127) / 2.
#[inline]
fn e8m0_to_f32_half(e: u8) -> f32 {
    let bits = if e < 2 {
        0x0020_0000u32 << e
    } else {
        u32::from(e - 1) << 23
    };
    f32::from_bits(bits)
}

/// MXFP4 (17 bytes): `e: u8, qs: [u8; 16]`.
pub(crate) fn dequant_mxfp4(b: &[u8], y: &mut [f32]) {
    let d = e8m0_to_f32_half(b[0]);
    for j in 0..16 {
        y[j] = f32::from(KVALUES[(b[1 + j] & 0xF) as usize]) * d;
        y[j + 16] = f32::from(KVALUES[(b[1 + j] >> 4) as usize]) * d;
    }
}

/// The first code whose value is nearest `x` (ggml's `best_index_mxfp4`).
fn best_index(x: f32, d: f32) -> u8 {
    let mut best = 0u8;
    let mut best_err = (f32::from(KVALUES[0]) * d - x).abs();
    for (i, k) in KVALUES.iter().enumerate().skip(1) {
        let err = (f32::from(*k) * d - x).abs();
        if err.partial_cmp(&best_err) == Some(Ordering::Less) {
            best = i as u8;
            best_err = err;
        }
    }
    best
}

pub(crate) fn quant_mxfp4(x: &[f32], b: &mut [u8]) {
    let mut amax = 0.0f32;
    for v in &x[..32] {
        if amax < v.abs() {
            amax = v.abs();
        }
    }
    let e = if amax > 0.0 {
        (amax.log2().floor() - 2.0 + 127.0) as u8
    } else {
        0
    };
    let d = e8m0_to_f32_half(e);
    b[0] = e;
    for j in 0..16 {
        b[1 + j] = best_index(x[j], d) | (best_index(x[j + 16], d) << 4);
    }
}

/// Unsigned e4m3 scale, halved for the doubled `KVALUES` (gguf-py's
/// `NVFP4.ue4m3_to_fp32`); 0 and 0x7F decode to 0.
#[inline]
fn ue4m3_to_f32_half(x: u8) -> f32 {
    if x == 0 || x == 0x7F {
        return 0.0;
    }
    let exp = i32::from((x >> 3) & 0xF);
    let man = f32::from(x & 7);
    let raw = if exp == 0 {
        man * (2.0f32).powi(-9)
    } else {
        (1.0 + man / 8.0) * (2.0f32).powi(exp - 7)
    };
    raw * 0.5
}

/// NVFP4 (36 bytes per 64): `d: [u8; 4]` (ue4m3 per 16), `qs: [u8; 32]`.
pub(crate) fn dequant_nvfp4(b: &[u8], y: &mut [f32]) {
    for s in 0..4 {
        let d = ue4m3_to_f32_half(b[s]);
        for j in 0..8 {
            let q = b[4 + s * 8 + j];
            y[s * 16 + j] = d * f32::from(KVALUES[(q & 0xF) as usize]);
            y[s * 16 + j + 8] = d * f32::from(KVALUES[(q >> 4) as usize]);
        }
    }
}
