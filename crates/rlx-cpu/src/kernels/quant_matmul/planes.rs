//! Row dots straight from the GGUF block bytes (the GEMV of decoding).
//!
//! For one activation row, decoding a weight row to i8 quants first
//! (`decode`) writes and re-reads `K` bytes per row; these kernels instead
//! unpack each block's 4 / 5 / 6 / 8-bit planes in registers and feed them
//! to `vpdpbusd` (AVX-512 VNNI on 256-bit vectors) or `vpmaddubsw` +
//! `vpmaddwd` (AVX2), for Q4_0, Q4_1, Q8_0, Q4_K, Q5_K and Q6_K.
//!
//! Every path computes the same numbers in the same order, so the SIMD
//! results are bit-identical to the portable one:
//! - weights enter the integer products unsigned where the format stores
//!   them so (Q4_0's `q + 8`, Q6_K's `q + 32`, the K-quants' nibbles) and
//!   signed for Q8_0 (through the `|w|`, `sign(x, w)` trick); the offset
//!   comes back through the activation sums (`-8 * sum x`, `-32 * scale *
//!   sum x`), exactly, in integers;
//! - each 32-weight chunk gives eight i32 lanes of four products (lane `l`:
//!   weights `4l..4l + 4` of the chunk), times the lane's group scale;
//! - per block, the lanes are summed in integers, converted to f32 and
//!   fused-multiply-added with the block scale `d_w * d_x` into eight f32
//!   lane accumulators (even blocks into one set, odd blocks into another,
//!   added lane-wise at the end, so two chains run at once); the block's
//!   offset terms (mins, the unsigned
//!   offset) go into one f32 sum in block order;
//! - the lanes are reduced as `(l0 + l4) + (l2 + l6)) + ((l1 + l5) + (l3 +
//!   l7)` and the offset sum added last.
//!
//! Integer sums cannot overflow: a lane takes at most 4 products of
//! `|w| <= 128` and `|x| <= 127` per chunk, times a 6- or 8-bit scale, for
//! 8 chunks. AVX2's `vpmaddubsw` adds two products in i16 first, at most
//! `2 * 128 * 127 < 32767` (the activation quantizers keep `|x| <= 127`).

use half::f16;
use rlx_ir::quant::QuantScheme;

use super::decode::{layout, WeightRow};
use super::dot::QuantIsa;

/// One quantized activation row, as the matmul's `Act` holds it.
pub(crate) struct ActRow<'a> {
    /// Quants, one per input feature.
    pub(crate) q: &'a [i8],
    /// Scale per activation block (32 or 256 values).
    pub(crate) d: &'a [f32],
    /// Q8_1's `d * sum(q)` per block (Q4_1 only).
    pub(crate) s: &'a [f32],
    /// Sum of the quants per weight group (16 or 32 values).
    pub(crate) gsum: &'a [i32],
}

/// Whether [`plane_dot`] runs weights of `scheme`.
pub(crate) fn runs(scheme: QuantScheme) -> bool {
    use QuantScheme::*;
    matches!(
        scheme,
        GgufQ4_0 | GgufQ4_1 | GgufQ8_0 | GgufQ4K | GgufQ5K | GgufQ6K
    )
}

/// `W_row · x` for one weight row of whole blocks (`runs(scheme)` holds,
/// `isa` is one of [`QuantIsa::available`], `a` quantized as the format
/// pairs, with `K` = `a.q.len()`).
#[inline(always)]
pub(crate) fn plane_dot(isa: QuantIsa, scheme: QuantScheme, w: &[u8], a: &ActRow) -> f32 {
    match isa {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: the caller picked `isa` from `QuantIsa::available()`.
        QuantIsa::Avx2 => unsafe { x86::dot_avx2(scheme, w, a) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: as above.
        QuantIsa::Avx512Vnni => unsafe { x86::dot_vnni(scheme, w, a) },
        _ => dot_scalar(scheme, w, a),
    }
}

/// The f16 at byte `at`.
#[inline(always)]
fn f16_at(b: &[u8], at: usize) -> f32 {
    f16::from_bits(u16::from_le_bytes([b[at], b[at + 1]])).to_f32()
}

/// The sum of the eight lane accumulators, in the SIMD paths' order.
#[inline(always)]
fn reduce_lanes(l: &[f32; 8]) -> f32 {
    let s: [f32; 4] = std::array::from_fn(|i| l[i] + l[i + 4]);
    (s[0] + s[2]) + (s[1] + s[3])
}

/// The scalar, per-block facts every path shares: the block scale `d_w *
/// d_x` and the block's offset term (added to the offset sum).
#[derive(Clone, Copy)]
struct BlockTerms {
    scale: f32,
    offset: f32,
}

/// The block terms of block `b` of `w` (`bytes` = the block's bytes).
#[inline(always)]
fn block_terms(
    scheme: QuantScheme,
    bytes: &[u8],
    b: usize,
    a: &ActRow,
    f16_at: impl Fn(&[u8], usize) -> f32,
) -> BlockTerms {
    use QuantScheme::*;
    let dx = a.d[b];
    match scheme {
        GgufQ4_0 => {
            let scale = f16_at(bytes, 0) * dx;
            BlockTerms {
                scale,
                offset: scale * (-8 * a.gsum[b]) as f32,
            }
        }
        GgufQ4_1 => BlockTerms {
            scale: f16_at(bytes, 0) * dx,
            offset: f16_at(bytes, 2) * a.s[b],
        },
        GgufQ8_0 => BlockTerms {
            scale: f16_at(bytes, 0) * dx,
            offset: 0.0,
        },
        GgufQ4K | GgufQ5K => {
            let (_, mins) = scales_mins_k4(&bytes[4..16]);
            let gsum = &a.gsum[b * 8..b * 8 + 8];
            let isum: i32 = mins.iter().zip(gsum).map(|(&m, &s)| m * s).sum();
            BlockTerms {
                scale: f16_at(bytes, 0) * dx,
                offset: -(f16_at(bytes, 2) * dx) * isum as f32,
            }
        }
        // Q6_K.
        _ => {
            let scale = f16_at(bytes, 208) * dx;
            let gsum = &a.gsum[b * 16..b * 16 + 16];
            let isum: i32 = bytes[192..208]
                .iter()
                .zip(gsum)
                .map(|(&sc, &s)| i32::from(sc as i8) * s)
                .sum();
            BlockTerms {
                scale,
                offset: scale * (-32 * isum) as f32,
            }
        }
    }
}

/// The 6-bit scales and mins of Q4_K / Q5_K's eight groups of 32.
#[inline(always)]
fn scales_mins_k4(s: &[u8]) -> ([i32; 8], [i32; 8]) {
    let mut out = ([0; 8], [0; 8]);
    for j in 0..8 {
        let (sc, m) = if j < 4 {
            (s[j] & 63, s[j + 4] & 63)
        } else {
            (
                (s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4),
                (s[j + 4] >> 4) | ((s[j] >> 6) << 4),
            )
        };
        out.0[j] = i32::from(sc);
        out.1[j] = i32::from(m);
    }
    out
}

/// The unsigned offset each format's integer products carry.
fn unsigned_offset(scheme: QuantScheme) -> i32 {
    match scheme {
        QuantScheme::GgufQ4_0 => 8,
        QuantScheme::GgufQ6K => 32,
        _ => 0,
    }
}

/// The portable path: the row decoded by `decode`'s reference decoders,
/// then the lanes formed as the SIMD paths form them.
pub(crate) fn dot_scalar(scheme: QuantScheme, w: &[u8], a: &ActRow) -> f32 {
    let lay = layout(scheme).expect("a block format");
    let k = a.q.len();
    let mut wr = WeightRow::default();
    wr.decode(&lay, w, k);
    let off = unsigned_offset(scheme);
    let mut acc = [[0f32; 8]; 2];
    let mut offsets = 0f32;
    for (b, bytes) in w.chunks_exact(lay.block_bytes).enumerate() {
        let t = block_terms(scheme, bytes, b, a, f16_at);
        let mut lanes = [0i32; 8];
        for c in (b * lay.block..(b + 1) * lay.block).step_by(32) {
            for (l, lane) in lanes.iter_mut().enumerate() {
                let e = c + 4 * l;
                let p: i32 = (e..e + 4)
                    .map(|i| (i32::from(wr.q[i]) + off) * i32::from(a.q[i]))
                    .sum();
                let scale = if lay.unit_scales {
                    1
                } else {
                    wr.scale[e / lay.group]
                };
                *lane += p * scale;
            }
        }
        for (acc, &lane) in acc[b % 2].iter_mut().zip(&lanes) {
            *acc = (lane as f32).mul_add(t.scale, *acc);
        }
        offsets += t.offset;
    }
    reduce_lanes(&std::array::from_fn(|l| acc[0][l] + acc[1][l])) + offsets
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::{block_terms, reduce_lanes, scales_mins_k4, ActRow};
    use rlx_ir::quant::QuantScheme;
    use std::arch::x86_64::*;

    /// Eight i32 lanes of four `u8 x i8` products each.
    trait Dot4 {
        /// `acc + dot4(u, s)`.
        unsafe fn dot4(acc: __m256i, u: __m256i, s: __m256i) -> __m256i;
    }

    struct Avx2;
    struct Vnni;

    impl Dot4 for Avx2 {
        #[inline(always)]
        unsafe fn dot4(acc: __m256i, u: __m256i, s: __m256i) -> __m256i {
            let p = _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1));
            _mm256_add_epi32(acc, p)
        }
    }

    impl Dot4 for Vnni {
        #[inline(always)]
        unsafe fn dot4(acc: __m256i, u: __m256i, s: __m256i) -> __m256i {
            _mm256_dpbusd_epi32(acc, u, s)
        }
    }

    /// AVX2 path. Safety: the CPU has AVX2, FMA and F16C.
    #[target_feature(enable = "avx2,fma,f16c")]
    pub(super) unsafe fn dot_avx2(scheme: QuantScheme, w: &[u8], a: &ActRow) -> f32 {
        dot_with::<Avx2>(scheme, w, a)
    }

    /// VNNI path. Safety: the CPU has AVX2, FMA, F16C, AVX512-VNNI and
    /// AVX512-VL.
    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512vl,avx512vnni")]
    pub(super) unsafe fn dot_vnni(scheme: QuantScheme, w: &[u8], a: &ActRow) -> f32 {
        dot_with::<Vnni>(scheme, w, a)
    }

    /// The f16 at byte `at` with F16C (the same value as `half`'s).
    #[inline(always)]
    unsafe fn f16c_at(b: &[u8], at: usize) -> f32 {
        let bits = u16::from_le_bytes([b[at], b[at + 1]]);
        _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(i32::from(bits))))
    }

    #[inline(always)]
    unsafe fn load32(p: *const u8) -> __m256i {
        _mm256_loadu_si256(p as *const __m256i)
    }

    /// 16 bytes of nibble pairs as 32 bytes: low nibbles, then high ones.
    #[inline(always)]
    unsafe fn nibbles16(p: *const u8) -> __m256i {
        let q = _mm_loadu_si128(p as *const __m128i);
        let m = _mm_set1_epi8(0x0F);
        let lo = _mm_and_si128(q, m);
        let hi = _mm_and_si128(_mm_srli_epi16(q, 4), m);
        _mm256_set_m128i(hi, lo)
    }

    /// The lane sums of one Q4_K / Q5_K block: `q(chunk)` gives chunk
    /// `c`'s 32 unsigned weights.
    #[inline(always)]
    unsafe fn k4_lanes<D: Dot4>(
        bytes: &[u8],
        x: *const i8,
        q: impl Fn(usize) -> __m256i,
    ) -> __m256i {
        let (scales, _) = scales_mins_k4(&bytes[4..16]);
        let mut iacc = _mm256_setzero_si256();
        for (c, &sc) in scales.iter().enumerate() {
            let p = D::dot4(_mm256_setzero_si256(), q(c), load32(x.add(32 * c) as _));
            iacc = _mm256_add_epi32(iacc, _mm256_mullo_epi32(p, _mm256_set1_epi32(sc)));
        }
        iacc
    }

    #[inline(always)]
    unsafe fn dot_with<D: Dot4>(scheme: QuantScheme, w: &[u8], a: &ActRow) -> f32 {
        use QuantScheme::*;
        let (block, block_bytes) = (scheme.block_size(), scheme.gguf_block_bytes());
        let nb = a.q.len() / block;
        assert!(w.len() >= nb * block_bytes && a.d.len() >= nb);
        let mut acc = [_mm256_setzero_ps(); 2];
        let mut offsets = 0f32;
        let low4 = _mm256_set1_epi8(0x0F);
        for b in 0..nb {
            let bytes = &w[b * block_bytes..(b + 1) * block_bytes];
            let (wp, x) = (bytes.as_ptr(), a.q.as_ptr().add(b * block));
            let t = block_terms(scheme, bytes, b, a, |b, at| f16c_at(b, at));
            let lanes = match scheme {
                GgufQ4_0 => D::dot4(_mm256_setzero_si256(), nibbles16(wp.add(2)), load32(x as _)),
                GgufQ4_1 => D::dot4(_mm256_setzero_si256(), nibbles16(wp.add(4)), load32(x as _)),
                GgufQ8_0 => {
                    let wv = load32(wp.add(2));
                    let xv = load32(x as _);
                    D::dot4(
                        _mm256_setzero_si256(),
                        _mm256_sign_epi8(wv, wv),
                        _mm256_sign_epi8(xv, wv),
                    )
                }
                GgufQ4K => k4_lanes::<D>(bytes, x, |c| {
                    let q = load32(wp.add(16 + 32 * (c / 2)));
                    let q = if c % 2 == 0 {
                        q
                    } else {
                        _mm256_srli_epi16(q, 4)
                    };
                    _mm256_and_si256(q, low4)
                }),
                GgufQ5K => {
                    let qh = load32(wp.add(16));
                    k4_lanes::<D>(bytes, x, |c| {
                        let q = load32(wp.add(48 + 32 * (c / 2)));
                        let q = if c % 2 == 0 {
                            q
                        } else {
                            _mm256_srli_epi16(q, 4)
                        };
                        let bit = _mm256_set1_epi8(1 << c);
                        let hi = _mm256_cmpeq_epi8(_mm256_and_si256(qh, bit), bit);
                        _mm256_or_si256(
                            _mm256_and_si256(q, low4),
                            _mm256_and_si256(hi, _mm256_set1_epi8(16)),
                        )
                    })
                }
                // Q6_K.
                _ => {
                    let low2 = _mm256_set1_epi8(3);
                    let sc = wp.add(192) as *const i8;
                    let mut iacc = _mm256_setzero_si256();
                    for n in 0..2 {
                        let ql0 = load32(wp.add(64 * n));
                        let ql1 = load32(wp.add(64 * n + 32));
                        let qh = load32(wp.add(128 + 32 * n));
                        let chunks = [
                            (ql0, qh),
                            (ql1, _mm256_srli_epi16(qh, 2)),
                            (_mm256_srli_epi16(ql0, 4), _mm256_srli_epi16(qh, 4)),
                            (_mm256_srli_epi16(ql1, 4), _mm256_srli_epi16(qh, 6)),
                        ];
                        for (j, (lo, hi)) in chunks.into_iter().enumerate() {
                            let c = 4 * n + j;
                            let q = _mm256_or_si256(
                                _mm256_and_si256(lo, low4),
                                _mm256_slli_epi16(_mm256_and_si256(hi, low2), 4),
                            );
                            let p = D::dot4(_mm256_setzero_si256(), q, load32(x.add(32 * c) as _));
                            let (s0, s1) =
                                (i32::from(*sc.add(2 * c)), i32::from(*sc.add(2 * c + 1)));
                            let s = _mm256_setr_epi32(s0, s0, s0, s0, s1, s1, s1, s1);
                            iacc = _mm256_add_epi32(iacc, _mm256_mullo_epi32(p, s));
                        }
                    }
                    iacc
                }
            };
            acc[b % 2] = _mm256_fmadd_ps(
                _mm256_cvtepi32_ps(lanes),
                _mm256_set1_ps(t.scale),
                acc[b % 2],
            );
            offsets += t.offset;
        }
        let mut l = [0f32; 8];
        _mm256_storeu_ps(l.as_mut_ptr(), _mm256_add_ps(acc[0], acc[1]));
        reduce_lanes(&l) + offsets
    }
}
