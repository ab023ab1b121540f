//! The 16 x 16 f32 transpose in AVX-512 registers, shared by the kernels
//! that move 16-channel blocks between planes and vector lanes (the NCHWc
//! conv's output rows, the small-plane depthwise tiles).

/// The 16 x 16 transpose of `r` (row `k` of the result: lane `k` of each
/// input), in registers: 32-bit, 64-bit, then two 128-bit interleaves.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
pub(super) fn transpose16(r: &[std::arch::x86_64::__m512; 16]) -> [std::arch::x86_64::__m512; 16] {
    use std::arch::x86_64::*;
    let t: [__m512; 16] = std::array::from_fn(|k| {
        let (a, b) = (r[k & !1], r[k | 1]);
        if k % 2 == 0 {
            _mm512_unpacklo_ps(a, b)
        } else {
            _mm512_unpackhi_ps(a, b)
        }
    });
    // u[4q + m]: in each 128-bit block j, column 4j + m of rows 4q..4q+4.
    let u: [__m512; 16] = std::array::from_fn(|k| {
        let (q, m) = (k / 4, k % 4);
        let a = _mm512_castps_pd(t[4 * q + m / 2]);
        let b = _mm512_castps_pd(t[4 * q + 2 + m / 2]);
        _mm512_castpd_ps(if m % 2 == 0 {
            _mm512_unpacklo_pd(a, b)
        } else {
            _mm512_unpackhi_pd(a, b)
        })
    });
    // v[8h + 4e + m]: rows 8h..8h+8, blocks 0 / 2 (e = 0) or 1 / 3.
    let v: [__m512; 16] = std::array::from_fn(|k| {
        let (h, e, m) = (k / 8, (k / 4) % 2, k % 4);
        let (a, b) = (u[8 * h + m], u[8 * h + 4 + m]);
        if e == 0 {
            _mm512_shuffle_f32x4::<0x88>(a, b)
        } else {
            _mm512_shuffle_f32x4::<0xdd>(a, b)
        }
    });
    std::array::from_fn(|i| {
        let (m, e, hi) = (i % 4, (i / 4) % 2, i / 8);
        let (a, b) = (v[4 * e + m], v[8 + 4 * e + m]);
        if hi == 0 {
            _mm512_shuffle_f32x4::<0x88>(a, b)
        } else {
            _mm512_shuffle_f32x4::<0xdd>(a, b)
        }
    })
}
