//! Plain float types (F32, F16, BF16, F64) and the scalar conversions every
//! block codec uses.

use half::f16;

/// f16 bits to f32 (exact).
#[inline]
pub(crate) fn f16_to_f32(bits: u16) -> f32 {
    f16::from_bits(bits).to_f32()
}

/// f32 to f16 bits, round to nearest even (ggml's `GGML_FP32_TO_FP16`,
/// numpy's `astype(float16)`).
#[inline]
pub(crate) fn f32_to_f16(x: f32) -> u16 {
    f16::from_f32(x).to_bits()
}

/// Rounds `x` through f16 and back (what storing a scale does to it).
#[cfg(test)]
fn round_f16(x: f32) -> f32 {
    f16_to_f32(f32_to_f16(x))
}

/// bf16 bits to f32 (exact).
#[inline]
pub(crate) fn bf16_to_f32(bits: u16) -> f32 {
    f32::from_bits(u32::from(bits) << 16)
}

/// f32 to bf16 bits exactly as ggml's `ggml_compute_fp32_to_bf16` (and
/// gguf-py): NaN becomes a quiet NaN, everything else rounds to nearest even.
#[inline]
pub(crate) fn f32_to_bf16(x: f32) -> u16 {
    let u = x.to_bits();
    if u & 0x7fff_ffff > 0x7f80_0000 {
        return ((u >> 16) | 64) as u16;
    }
    ((u64::from(u) + 0x7fff + u64::from((u >> 16) & 1)) >> 16) as u16
}

/// The little-endian f16 at `b[at..at + 2]`, widened.
#[inline]
pub(crate) fn f16_at(b: &[u8], at: usize) -> f32 {
    f16_to_f32(u16::from_le_bytes([b[at], b[at + 1]]))
}

/// Stores `x` as a little-endian f16 at `b[at..at + 2]`.
#[inline]
pub(crate) fn put_f16(b: &mut [u8], at: usize, x: f32) {
    b[at..at + 2].copy_from_slice(&f32_to_f16(x).to_le_bytes());
}

pub(crate) fn dequant_f32(src: &[u8], dst: &mut [f32]) {
    for (o, c) in dst.iter_mut().zip(src.chunks_exact(4)) {
        *o = f32::from_le_bytes([c[0], c[1], c[2], c[3]]);
    }
}

pub(crate) fn dequant_f16(src: &[u8], dst: &mut [f32]) {
    for (o, c) in dst.iter_mut().zip(src.chunks_exact(2)) {
        *o = f16_to_f32(u16::from_le_bytes([c[0], c[1]]));
    }
}

pub(crate) fn dequant_bf16(src: &[u8], dst: &mut [f32]) {
    for (o, c) in dst.iter_mut().zip(src.chunks_exact(2)) {
        *o = bf16_to_f32(u16::from_le_bytes([c[0], c[1]]));
    }
}

pub(crate) fn dequant_f64(src: &[u8], dst: &mut [f32]) {
    for (o, c) in dst.iter_mut().zip(src.chunks_exact(8)) {
        let mut a = [0u8; 8];
        a.copy_from_slice(c);
        *o = f64::from_le_bytes(a) as f32;
    }
}

pub(crate) fn quant_f32(src: &[f32], dst: &mut [u8]) {
    for (x, c) in src.iter().zip(dst.chunks_exact_mut(4)) {
        c.copy_from_slice(&x.to_le_bytes());
    }
}

pub(crate) fn quant_f16(src: &[f32], dst: &mut [u8]) {
    for (x, c) in src.iter().zip(dst.chunks_exact_mut(2)) {
        c.copy_from_slice(&f32_to_f16(*x).to_le_bytes());
    }
}

pub(crate) fn quant_bf16(src: &[f32], dst: &mut [u8]) {
    for (x, c) in src.iter().zip(dst.chunks_exact_mut(2)) {
        c.copy_from_slice(&f32_to_bf16(*x).to_le_bytes());
    }
}

pub(crate) fn quant_f64(src: &[f32], dst: &mut [u8]) {
    for (x, c) in src.iter().zip(dst.chunks_exact_mut(8)) {
        c.copy_from_slice(&f64::from(*x).to_le_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bf16_rounds_to_nearest_even_and_quiets_nan() {
        assert_eq!(f32_to_bf16(1.0), 0x3f80);
        // Halfway between 0x3f80 and 0x3f81: ties to even (0x3f80).
        assert_eq!(f32_to_bf16(f32::from_bits(0x3f80_8000)), 0x3f80);
        assert_eq!(f32_to_bf16(f32::from_bits(0x3f81_8000)), 0x3f82);
        assert_eq!(f32_to_bf16(f32::from_bits(0x7f80_0001)), 0x7fc0);
        assert_eq!(f32_to_bf16(f32::INFINITY), 0x7f80);
        assert_eq!(bf16_to_f32(0xc000), -2.0);
    }

    #[test]
    fn f16_round_trip() {
        assert_eq!(f32_to_f16(1.0), 0x3c00);
        assert_eq!(f16_to_f32(0x3c00), 1.0);
        assert_eq!(round_f16(0.1), f16_to_f32(0x2e66));
    }
}
