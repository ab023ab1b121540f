//! Decode's GEMV for the K-quants (Q4_K, Q5_K, Q6_K) on 512-bit AVX-512
//! VNNI, straight from the GGUF block bytes: the same numbers as `planes`,
//! bit for bit (as `gemv512` is for the 32-weight formats).
//!
//! With one activation row, `planes` read SmolLM2's Q4_K / Q6_K down
//! projections at 10-12 GB/s on one thread against 16-20 for the 32-weight
//! formats under `gemv512`. Here a step takes chunk `c` (32 weights) of two
//! blocks side by side (the low 256 bits the even block, the high ones the
//! odd block: `planes`' two sets of lane accumulators), against the
//! activations copied once per call into that layout, two weight rows at
//! once:
//! - `vpmaddubsw` forms the byte-pair sums (at most `2 * 63 * 127`, no
//!   saturation) and `vpdpwssd` adds them times the i16 group scales (one
//!   `vpermw` spreads a block pair's scales over a chunk), so each i32 lane
//!   ends the block as `planes`' exact integer;
//! - each block's scalar facts are decoded with whole-word operations (the
//!   twelve bytes of Q4_K / Q5_K's 6-bit scales and mins as three u32s, the
//!   mins' or Q6_K's scales' integer products with the activation sums as
//!   one vector multiply), the same values as `planes::block_weights` /
//!   `block_terms`; the block scale `d_w * d_x` and the offset are their
//!   float operations, and the offsets are added in block order;
//! - the tile's bytes (its rows are contiguous) are prefetched 4 KB ahead
//!   in the order the tile reads them: per row, 8 blocks ahead fell inside
//!   the tile's own other row at SmolLM2's 6 blocks a row and left these
//!   GEMVs slower than `planes`' (whose single-row walk runs ahead into the
//!   next rows).

use rlx_ir::quant::QuantScheme;

use super::out_cols::OutCols;
use super::planes::ActRow;

/// Whether [`rows`] runs weights of `scheme`.
pub(crate) fn runs(scheme: QuantScheme) -> bool {
    use QuantScheme::*;
    matches!(scheme, GgufQ4K | GgufQ5K | GgufQ6K)
}

/// Output columns `lo..hi` of weights `w` (`row_bytes` a row) against the
/// single activation row `act`, into `out`'s `(0, j - lo)`.
///
/// # Safety
/// The CPU runs AVX-512 F / BW / VL / VNNI, AVX2, FMA and F16C
/// (`QuantIsa::Avx512Vnni`), and `runs(scheme)` holds.
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512vl,avx512bw,avx512vnni")]
pub(crate) unsafe fn rows(
    scheme: QuantScheme,
    w: &[u8],
    row_bytes: usize,
    (lo, hi): (usize, usize),
    act: &ActRow,
    out: &mut OutCols,
) {
    use QuantScheme::*;
    match scheme {
        GgufQ4K => x86::rows::<{ x86::Q4K }>(w, row_bytes, (lo, hi), act, out),
        GgufQ5K => x86::rows::<{ x86::Q5K }>(w, row_bytes, (lo, hi), act, out),
        GgufQ6K => x86::rows::<{ x86::Q6K }>(w, row_bytes, (lo, hi), act, out),
        _ => unreachable!("`runs` holds for {scheme:?}"),
    }
}

mod x86 {
    use super::super::gemv512::x86::{pair_scales, row_value};
    use super::super::planes::x86::f16c_at;
    use super::{ActRow, OutCols};
    use std::arch::x86_64::*;

    // Format codes (const generics take no enums).
    pub(super) const Q4K: u8 = 0;
    pub(super) const Q5K: u8 = 1;
    pub(super) const Q6K: u8 = 2;

    const fn block_bytes(f: u8) -> usize {
        match f {
            Q4K => 144,
            Q5K => 176,
            _ => 210,
        }
    }

    /// How far ahead the weights are prefetched (about `gemv512`'s 192
    /// blocks of Q4_1).
    const PREFETCH_BYTES: usize = 4096;

    /// The activation quants of one call: per block pair `p` and chunk `c`
    /// (`8 * p + c`), the chunk's 32 quants of block `2p`, then those of
    /// block `2p + 1` (zeros past the last block).
    fn prepare(act: &ActRow, nb: usize) -> Vec<[i8; 64]> {
        let pairs = nb.div_ceil(2);
        let mut q = vec![[0i8; 64]; pairs * 8];
        for b in 0..nb {
            for c in 0..8 {
                let at = 256 * b + 32 * c;
                let half = 32 * (b % 2);
                q[8 * (b / 2) + c][half..half + 32].copy_from_slice(&act.q[at..at + 32]);
            }
        }
        q
    }

    /// The 32 bytes at `at` of the blocks at `w0` (low half) and `w1`.
    #[inline(always)]
    unsafe fn pair(w0: *const u8, w1: *const u8, at: usize) -> __m512i {
        let lo = _mm512_castsi256_si512(_mm256_loadu_si256(w0.add(at) as *const __m256i));
        _mm512_inserti64x4::<1>(lo, _mm256_loadu_si256(w1.add(at) as *const __m256i))
    }

    /// Chunk `c`'s nibbles from the quant bytes at `qs`: the low (even `c`)
    /// or high (odd `c`) half of the bytes `32 * (c / 2)..`.
    #[inline(always)]
    unsafe fn nibbles(w0: *const u8, w1: *const u8, qs: usize, c: usize) -> __m512i {
        let q = pair(w0, w1, qs + 32 * (c / 2));
        let q = if c.is_multiple_of(2) {
            q
        } else {
            _mm512_srli_epi16::<4>(q)
        };
        _mm512_and_si512(q, _mm512_set1_epi8(0x0F))
    }

    /// Chunk `c`'s 32 weights of the blocks at `w0` (low half) and `w1`
    /// (high half), as unsigned bytes.
    #[inline(always)]
    unsafe fn chunk<const F: u8>(w0: *const u8, w1: *const u8, c: usize) -> __m512i {
        match F {
            Q4K => nibbles(w0, w1, 16, c),
            Q5K => {
                // The fifth bit is bit c of each qh byte.
                let hi = _mm512_test_epi8_mask(pair(w0, w1, 16), _mm512_set1_epi8(1 << c));
                _mm512_or_si512(
                    nibbles(w0, w1, 48, c),
                    _mm512_maskz_mov_epi8(hi, _mm512_set1_epi8(16)),
                )
            }
            _ => {
                // Q6_K: chunk c = 4n + j of half n: low 4 bits from ql
                // (bytes 64n, 64n + 32, then their high nibbles), high 2
                // bits from qh's bit pair j.
                let (n, j) = (c / 4, c % 4);
                let ql = pair(w0, w1, 64 * n + 32 * (j % 2));
                let ql = if j < 2 {
                    ql
                } else {
                    _mm512_srli_epi16::<4>(ql)
                };
                let qh = pair(w0, w1, 128 + 32 * n);
                let qh = match j {
                    0 => qh,
                    1 => _mm512_srli_epi16::<2>(qh),
                    2 => _mm512_srli_epi16::<4>(qh),
                    _ => _mm512_srli_epi16::<6>(qh),
                };
                let hi = _mm512_slli_epi16::<4>(_mm512_and_si512(qh, _mm512_set1_epi8(3)));
                _mm512_or_si512(_mm512_and_si512(ql, _mm512_set1_epi8(0x0F)), hi)
            }
        }
    }

    /// One block's scalar facts, as `planes::block_weights` and
    /// `block_terms` give them (the same values), decoded with whole-word
    /// operations: the block scale `d_w * d_x`, the offset, and the group
    /// scales as i16 words (Q4_K / Q5_K: words 0..8; Q6_K: 0..16).
    struct Block {
        scale: f32,
        offset: f32,
        groups: __m256i,
    }

    /// The facts of block `b` at `w` against `act`.
    #[inline(always)]
    unsafe fn block<const F: u8>(w: *const u8, b: usize, act: &ActRow) -> Block {
        let dx = *act.d.get_unchecked(b);
        let bytes = std::slice::from_raw_parts(w, block_bytes(F));
        if F == Q6K {
            let scale = f16c_at(bytes, 208) * dx;
            let g = _mm_loadu_si128(w.add(192) as *const __m128i);
            let gsum = _mm512_loadu_si512(act.gsum.as_ptr().add(16 * b) as *const _);
            let isum = _mm512_reduce_add_epi32(_mm512_mullo_epi32(_mm512_cvtepi8_epi32(g), gsum));
            return Block {
                scale,
                offset: scale * (-32 * isum) as f32,
                groups: _mm256_cvtepi8_epi16(g),
            };
        }
        // The 6-bit scales and mins of bytes 4..16 (words a, b, c): groups
        // 0..4 are the low 6 bits of a (scales) and b (mins); groups 4..8
        // take their low 4 bits from c's nibbles and the top 2 from a's /
        // b's top bits.
        let word = |at: usize| (w.add(at) as *const u32).read_unaligned();
        let (a, bm, c) = (word(4), word(8), word(12));
        let top2 = |v: u32| ((v >> 6) & 0x0303_0303) << 4;
        let scales = u64::from(a & 0x3F3F_3F3F) | (u64::from((c & 0x0F0F_0F0F) | top2(a)) << 32);
        let mins =
            u64::from(bm & 0x3F3F_3F3F) | (u64::from(((c >> 4) & 0x0F0F_0F0F) | top2(bm)) << 32);
        let gsum = _mm256_loadu_si256(act.gsum.as_ptr().add(8 * b) as *const __m256i);
        let prod = _mm256_mullo_epi32(_mm256_cvtepu8_epi32(_mm_cvtsi64_si128(mins as i64)), gsum);
        let isum = _mm512_reduce_add_epi32(_mm512_zextsi256_si512(prod));
        let (d, dmin) = (f16c_at(bytes, 0), f16c_at(bytes, 2));
        Block {
            scale: d * dx,
            offset: -(dmin * dx) * isum as f32,
            groups: _mm256_zextsi128_si256(_mm_cvtepu8_epi16(_mm_cvtsi64_si128(scales as i64))),
        }
    }

    /// Per chunk `c`, the word indices that spread the pair's group scales
    /// (block 0's words from 0, block 1's from 16) over the chunk's i16
    /// pairs: one scale per block half (Q4_K / Q5_K), or one per 16
    /// weights (Q6_K: groups `2c`, `2c + 1`).
    fn spreads<const F: u8>() -> [__m512i; 8] {
        std::array::from_fn(|c| {
            let words: [i16; 32] = std::array::from_fn(|i| {
                let (block, at) = (i / 16, i % 16);
                let group = if F == Q6K { 2 * c + at / 8 } else { c };
                (16 * block + group) as i16
            });
            // SAFETY: 64 bytes either way.
            unsafe { std::mem::transmute::<[i16; 32], __m512i>(words) }
        })
    }

    /// Chunk `C` of the pair into `lanes`: the byte-pair sums times the
    /// chunk's group scales.
    #[inline(always)]
    unsafe fn step<const F: u8, const C: usize>(
        lanes: __m512i,
        w0: *const u8,
        w1: *const u8,
        x: *const [i8; 64],
        spreads: &[__m512i; 8],
        groups: __m512i,
    ) -> __m512i {
        let u = chunk::<F>(w0, w1, C);
        let pairs = _mm512_maddubs_epi16(u, _mm512_loadu_si512(x.add(C) as *const _));
        let sc = _mm512_permutexvar_epi16(spreads[C], groups);
        _mm512_dpwssd_epi32(lanes, pairs, sc)
    }

    /// `R` consecutive weight rows (`rb` bytes each, the first at `w`)
    /// against the prepared activations.
    #[inline(always)]
    unsafe fn tile<const F: u8, const R: usize>(
        w: *const u8,
        rb: usize,
        act: &ActRow,
        prep: &[[i8; 64]],
        spreads: &[__m512i; 8],
        nb: usize,
    ) -> [f32; R] {
        let bb = block_bytes(F);
        let mut acc = [_mm512_setzero_ps(); R];
        let mut offsets = [0f32; R];
        for p in 0..nb.div_ceil(2) {
            let (b0, b1) = (2 * p, (2 * p + 1).min(nb - 1));
            let mask: __mmask16 = if 2 * p + 1 < nb { 0xFFFF } else { 0x00FF };
            // The tile's rows are contiguous: prefetch its bytes in the order
            // it consumes them, PREFETCH_BYTES ahead.
            let fetch = w.wrapping_add(PREFETCH_BYTES + p * 2 * bb * R);
            for line in (0..2 * bb * R).step_by(64) {
                _mm_prefetch::<_MM_HINT_T0>(fetch.wrapping_add(line) as *const i8);
            }
            for r in 0..R {
                let row = w.add(r * rb);
                let (w0, w1) = (row.add(b0 * bb), row.add(b1 * bb));
                let (t0, t1) = (block::<F>(w0, b0, act), block::<F>(w1, b1, act));
                let groups = _mm512_inserti64x4::<1>(_mm512_castsi256_si512(t0.groups), t1.groups);
                let x = prep.as_ptr().add(8 * p);
                let mut lanes = _mm512_setzero_si512();
                // Chunk by chunk, each a constant (its shifts and byte
                // offsets fold).
                lanes = step::<F, 0>(lanes, w0, w1, x, spreads, groups);
                lanes = step::<F, 1>(lanes, w0, w1, x, spreads, groups);
                lanes = step::<F, 2>(lanes, w0, w1, x, spreads, groups);
                lanes = step::<F, 3>(lanes, w0, w1, x, spreads, groups);
                lanes = step::<F, 4>(lanes, w0, w1, x, spreads, groups);
                lanes = step::<F, 5>(lanes, w0, w1, x, spreads, groups);
                lanes = step::<F, 6>(lanes, w0, w1, x, spreads, groups);
                lanes = step::<F, 7>(lanes, w0, w1, x, spreads, groups);
                let sc = pair_scales(_mm_setr_ps(t0.scale, t1.scale, 0.0, 0.0));
                acc[r] = _mm512_mask3_fmadd_ps(_mm512_cvtepi32_ps(lanes), sc, acc[r], mask);
                offsets[r] += t0.offset;
                if mask == 0xFFFF {
                    offsets[r] += t1.offset;
                }
            }
        }
        // A loop, not `array::from_fn`: its closure would not take this
        // function's target features, and the intrinsics would be calls.
        let mut out = [0f32; R];
        for r in 0..R {
            out[r] = row_value(acc[r], offsets[r]);
        }
        out
    }

    /// See [`super::rows`] (format code `F`).
    #[inline(always)]
    pub(super) unsafe fn rows<const F: u8>(
        w: &[u8],
        row_bytes: usize,
        (lo, hi): (usize, usize),
        act: &ActRow,
        out: &mut OutCols,
    ) {
        let nb = act.q.len() / 256;
        assert!(
            nb > 0 && row_bytes == nb * block_bytes(F) && w.len() >= hi * row_bytes,
            "weights hold rows {lo}..{hi} of {nb} blocks"
        );
        let groups = if F == Q6K { 16 } else { 8 };
        assert!(act.d.len() >= nb && act.gsum.len() >= groups * nb);
        let prep = prepare(act, nb);
        let spreads = spreads::<F>();
        let mut r = lo;
        while r + 2 <= hi {
            let ys = tile::<F, 2>(
                w.as_ptr().add(r * row_bytes),
                row_bytes,
                act,
                &prep,
                &spreads,
                nb,
            );
            out.set(0, r - lo, ys[0]);
            out.set(0, r - lo + 1, ys[1]);
            r += 2;
        }
        if r < hi {
            let [y] = tile::<F, 1>(
                w.as_ptr().add(r * row_bytes),
                row_bytes,
                act,
                &prep,
                &spreads,
                nb,
            );
            out.set(0, r - lo, y);
        }
    }
}
