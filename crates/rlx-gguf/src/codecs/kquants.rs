//! K-quant super-blocks (256 weights): dequantization of Q2_K, Q3_K, Q4_K,
//! Q5_K, Q6_K, Q8_K. Each function decodes one block with ggml's (and
//! gguf-py's) order of float operations, so results are bit-identical.
//! The quantizers are in `kquants_quant.rs`.

use super::float::f16_at;

pub(crate) const QK_K: usize = 256;

/// The 6-bit scale and min `j` (0..8) of a Q4_K / Q5_K block's 12 scale bytes.
#[inline]
pub(crate) fn scale_min_k4(j: usize, q: &[u8]) -> (u8, u8) {
    if j < 4 {
        (q[j] & 63, q[j + 4] & 63)
    } else {
        (
            (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4),
            (q[j + 4] >> 4) | ((q[j] >> 6) << 4),
        )
    }
}

/// The 16 signed 6-bit scales of a Q3_K block's 12 scale bytes (-32..31).
#[inline]
pub(crate) fn q3k_scales(s: &[u8]) -> [i8; 16] {
    let mut out = [0i8; 16];
    for (j, o) in out.iter_mut().enumerate() {
        let lo = if j < 8 { s[j] & 0xF } else { s[j - 8] >> 4 };
        let hi = (s[8 + j % 4] >> (2 * (j / 4))) & 3;
        *o = (lo | (hi << 4)) as i8 - 32;
    }
    out
}

/// Q2_K (84 bytes): `scales: [u8; 16], qs: [u8; 64], d: f16, dmin: f16`.
pub(crate) fn dequant_q2_k(b: &[u8], y: &mut [f32]) {
    let (scales, qs) = (&b[0..16], &b[16..80]);
    let (d, min) = (f16_at(b, 80), f16_at(b, 82));
    for n in 0..2 {
        for j in 0..4 {
            let shift = 2 * j;
            for half in 0..2 {
                let sc = scales[n * 8 + j * 2 + half];
                let dl = d * f32::from(sc & 0xF);
                let ml = min * f32::from(sc >> 4);
                for l in 0..16 {
                    let q = (qs[n * 32 + half * 16 + l] >> shift) & 3;
                    y[n * 128 + j * 32 + half * 16 + l] = dl * f32::from(q) - ml;
                }
            }
        }
    }
}

/// Q3_K (110 bytes): `hmask: [u8; 32], qs: [u8; 64], scales: [u8; 12], d: f16`.
pub(crate) fn dequant_q3_k(b: &[u8], y: &mut [f32]) {
    let (hmask, qs) = (&b[0..32], &b[32..96]);
    let scales = q3k_scales(&b[96..108]);
    let d = f16_at(b, 108);
    for n in 0..2 {
        for j in 0..4 {
            let shift = 2 * j;
            let m = 1u8 << (n * 4 + j);
            for half in 0..2 {
                let dl = d * f32::from(scales[n * 8 + j * 2 + half]);
                for l in 0..16 {
                    let i = half * 16 + l;
                    let low = ((qs[n * 32 + i] >> shift) & 3) as i8;
                    let q = low - if hmask[i] & m != 0 { 0 } else { 4 };
                    y[n * 128 + j * 32 + i] = dl * f32::from(q);
                }
            }
        }
    }
}

/// Q4_K (144 bytes): `d: f16, dmin: f16, scales: [u8; 12], qs: [u8; 128]`.
pub(crate) fn dequant_q4_k(b: &[u8], y: &mut [f32]) {
    let (d, min) = (f16_at(b, 0), f16_at(b, 2));
    let (scales, qs) = (&b[4..16], &b[16..144]);
    for c in 0..4 {
        let (sc1, m1) = scale_min_k4(2 * c, scales);
        let (sc2, m2) = scale_min_k4(2 * c + 1, scales);
        let (d1, min1) = (d * f32::from(sc1), min * f32::from(m1));
        let (d2, min2) = (d * f32::from(sc2), min * f32::from(m2));
        for l in 0..32 {
            let q = qs[c * 32 + l];
            y[c * 64 + l] = d1 * f32::from(q & 0xF) - min1;
            y[c * 64 + 32 + l] = d2 * f32::from(q >> 4) - min2;
        }
    }
}

/// Q5_K (176 bytes): `d: f16, dmin: f16, scales: [u8; 12], qh: [u8; 32], qs: [u8; 128]`.
pub(crate) fn dequant_q5_k(b: &[u8], y: &mut [f32]) {
    let (d, min) = (f16_at(b, 0), f16_at(b, 2));
    let (scales, qh, qs) = (&b[4..16], &b[16..48], &b[48..176]);
    for c in 0..4 {
        let (sc1, m1) = scale_min_k4(2 * c, scales);
        let (sc2, m2) = scale_min_k4(2 * c + 1, scales);
        let (d1, min1) = (d * f32::from(sc1), min * f32::from(m1));
        let (d2, min2) = (d * f32::from(sc2), min * f32::from(m2));
        let (u1, u2) = (1u8 << (2 * c), 2u8 << (2 * c));
        for l in 0..32 {
            let q = qs[c * 32 + l];
            let h1 = if qh[l] & u1 != 0 { 16 } else { 0 };
            let h2 = if qh[l] & u2 != 0 { 16 } else { 0 };
            y[c * 64 + l] = d1 * f32::from((q & 0xF) + h1) - min1;
            y[c * 64 + 32 + l] = d2 * f32::from((q >> 4) + h2) - min2;
        }
    }
}

/// Q6_K (210 bytes): `ql: [u8; 128], qh: [u8; 64], scales: [i8; 16], d: f16`.
pub(crate) fn dequant_q6_k(b: &[u8], y: &mut [f32]) {
    let d = f16_at(b, 208);
    for n in 0..2 {
        let ql = &b[n * 64..n * 64 + 64];
        let qh = &b[128 + n * 32..128 + n * 32 + 32];
        let sc = &b[192 + n * 8..192 + n * 8 + 8];
        let yb = &mut y[n * 128..n * 128 + 128];
        for l in 0..32 {
            let is = l / 16;
            let q1 = ((ql[l] & 0xF) | ((qh[l] & 3) << 4)) as i8 - 32;
            let q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) as i8 - 32;
            let q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) as i8 - 32;
            let q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) as i8 - 32;
            let s = |k: usize| d * f32::from(sc[is + k] as i8);
            yb[l] = s(0) * f32::from(q1);
            yb[l + 32] = s(2) * f32::from(q2);
            yb[l + 64] = s(4) * f32::from(q3);
            yb[l + 96] = s(6) * f32::from(q4);
        }
    }
}

/// Q8_K (292 bytes): `d: f32, qs: [i8; 256], bsums: [i16; 16]`.
pub(crate) fn dequant_q8_k(b: &[u8], y: &mut [f32]) {
    let d = f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
    for (j, o) in y.iter_mut().enumerate().take(QK_K) {
        *o = d * f32::from(b[4 + j] as i8);
    }
}
