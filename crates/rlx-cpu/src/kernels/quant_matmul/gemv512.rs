//! Decode's GEMV for the 32-weight formats (Q4_0, Q4_1, Q5_0, Q8_0) on
//! 512-bit AVX-512 VNNI, straight from the GGUF block bytes: the same
//! numbers as `planes`, bit for bit, in about half the instructions.
//!
//! With one activation row, `planes`' 256-bit loop ran at ~2 ns a block
//! whatever the format (SmolLM2-135M's Q4_1 projections and its Q8_0 LM
//! head alike), so decode was bound by instructions, not by weight reads.
//! Here each step takes two blocks of one weight row:
//! - the low 256 bits are the even block and the high ones the odd block,
//!   exactly `planes`' two sets of eight f32 lane accumulators (lane `l` of
//!   a block: its weights `4l..4l + 4`), so one `vpdpbusd`, one convert and
//!   one FMA serve 64 weights; a trailing odd block fills the low half only;
//! - the two blocks' scales come from one `vcvtph2ps` each, and their
//!   `d_w * d_x` (and offsets: Q4_1's `m * s`, Q4_0 / Q5_0's `d_w * d_x *
//!   (-8 | -16) * sum x`) are one 4-wide product against factors built once
//!   per call; the offsets are then added to one f32 sum in block order,
//!   as `planes` adds them;
//! - nibbles are spread by one broadcast, one masked broadcast, one
//!   variable shift and one mask; Q5_0's fifth bits by one masked move;
//!   Q8_0's signed weights meet activations biased to unsigned (`x + 128`,
//!   once per call), and the bias leaves through `128 * sum w` per lane,
//!   exactly;
//! - the tile's bytes (its rows are contiguous) are prefetched 192
//!   blocks ahead, in the order the tile reads them.
//!
//! The per-call preparation (the biased copy, the scale factors) is a few
//! hundred bytes per thread and activation row; the weights stay as stored.
//!
//! Products of 2 to [`MAX_ROWS`] activation rows (prefill's short pieces)
//! take the same steps in tiles of 2 weight rows x 4 / 2 / 1 activation
//! rows (`tile_tokens`): each block pair is loaded, spread and its scales
//! converted once for the tile, and each value is still the GEMV's bits.
//! At 8 rows `gemm16` (16 weight rows unpacked into its lanes' layout per
//! call) spends more on unpacking than on the products: ~1.2x these tiles'
//! time (the panels it replaced, ~2x).

use rlx_ir::quant::QuantScheme;

use super::out_cols::OutCols;
use super::planes::ActRow;

/// Whether [`rows`] runs weights of `scheme`.
pub(crate) fn runs(scheme: QuantScheme) -> bool {
    use QuantScheme::*;
    matches!(scheme, GgufQ4_0 | GgufQ4_1 | GgufQ5_0 | GgufQ8_0)
}

/// Activation rows up to which [`rows`] runs a product (prefill's short
/// pieces): each weight block pair is spread once for a tile of up to 4
/// rows, where `gemm16` would unpack the weight rows for too few tokens
/// (at 8 rows it took ~1.2x these tiles' time; at 128, ~0.4x).
pub(crate) const MAX_ROWS: usize = 32;

/// Output columns `lo..hi` of weights `w` (`row_bytes` a row) against the
/// activation rows `acts` (at most [`MAX_ROWS`]), into `out`'s `(i, j - lo)`.
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
    acts: &[ActRow],
    out: &mut OutCols,
) {
    use QuantScheme::*;
    match scheme {
        GgufQ4_0 => x86::rows::<{ x86::Q4_0 }>(w, row_bytes, (lo, hi), acts, out),
        GgufQ4_1 => x86::rows::<{ x86::Q4_1 }>(w, row_bytes, (lo, hi), acts, out),
        GgufQ5_0 => x86::rows::<{ x86::Q5_0 }>(w, row_bytes, (lo, hi), acts, out),
        GgufQ8_0 => x86::rows::<{ x86::Q8_0 }>(w, row_bytes, (lo, hi), acts, out),
        _ => unreachable!("`runs` holds for {scheme:?}"),
    }
}

pub(super) mod x86 {
    use super::super::planes::reduce_lanes;
    use super::{ActRow, OutCols};
    use std::arch::x86_64::*;

    // Format codes (const generics take no enums).
    pub(super) const Q4_0: u8 = 0;
    pub(super) const Q4_1: u8 = 1;
    pub(super) const Q5_0: u8 = 2;
    pub(super) const Q8_0: u8 = 3;

    /// Block bytes of format `F`.
    const fn block_bytes(f: u8) -> usize {
        match f {
            Q4_0 => 18,
            Q4_1 => 20,
            Q5_0 => 22,
            _ => 34,
        }
    }

    /// Where format `F`'s quant bytes start in a block.
    const fn quants_at(f: u8) -> usize {
        match f {
            Q4_0 | Q8_0 => 2,
            Q4_1 => 4,
            _ => 6,
        }
    }

    /// Whether format `F` has an offset term per block.
    const fn has_offsets(f: u8) -> bool {
        f != Q8_0
    }

    /// Weight rows dotted at once (their chains interleave).
    const ROWS: usize = 2;

    /// How far ahead the weights are prefetched, in blocks (3.5-6.5 KB;
    /// SmolLM2 Q4_1 decode medians ~4 % above `planes`' 96).
    const PREFETCH_BLOCKS: usize = 192;

    /// The activation side of one call, per block pair `p` (blocks `2p`,
    /// `2p + 1`; a missing odd block: zeros).
    struct Prep {
        /// The pair's 64 quants (Q8_0: biased, `x + 128` as unsigned).
        q: Vec<__m512i>,
        /// `[dx_2p, dx_2p+1, a, b]`: Q4_1 `a, b` = its `s`; Q4_0 / Q5_0
        /// `dx` again; Q8_0 zeros.
        f: Vec<__m128>,
        /// Q4_0 / Q5_0: `[1, 1, g_2p, g_2p+1]` with `g = (-off * sum x) as
        /// f32` (the offset is `d_w * d_x * g`).
        g: Vec<__m128>,
    }

    #[inline(always)]
    unsafe fn prepare<const F: u8>(act: &ActRow, k: usize) -> Prep {
        let nb = k / 32;
        let pairs = nb.div_ceil(2);
        let mut p = Prep {
            q: vec![_mm512_setzero_si512(); pairs],
            f: vec![_mm_setzero_ps(); pairs],
            g: vec![_mm_setzero_ps(); pairs],
        };
        std::ptr::copy_nonoverlapping(act.q.as_ptr() as *const u8, p.q.as_mut_ptr() as *mut u8, k);
        if F == Q8_0 {
            let bias = _mm512_set1_epi8(-128);
            for q in &mut p.q {
                *q = _mm512_xor_si512(*q, bias);
            }
            // (The padding half of an odd last pair is biased too; its
            // products are masked off.)
        }
        let off = if F == Q5_0 { -16 } else { -8 };
        for (i, (f, g)) in p.f.iter_mut().zip(&mut p.g).enumerate() {
            let (b0, b1) = (2 * i, 2 * i + 1);
            let at = |v: &[f32], b: usize| if b < nb { v[b] } else { 0.0 };
            let (d0, d1) = (at(act.d, b0), at(act.d, b1));
            *f = match F {
                Q4_1 => _mm_setr_ps(d0, d1, at(act.s, b0), at(act.s, b1)),
                Q8_0 => _mm_setr_ps(d0, d1, 0.0, 0.0),
                _ => _mm_setr_ps(d0, d1, d0, d1),
            };
            if F == Q4_0 || F == Q5_0 {
                let gs = |b: usize| {
                    if b < nb {
                        (off * act.gsum[b]) as f32
                    } else {
                        0.0
                    }
                };
                *g = _mm_setr_ps(1.0, 1.0, gs(b0), gs(b1));
            }
        }
        p
    }

    /// The f16 pair at `p` as `[f32(p[0..2]), f32(p[2..4]), 0, 0]`.
    #[inline(always)]
    unsafe fn f16_pair(p: *const u8) -> __m128 {
        _mm_cvtph_ps(_mm_cvtsi32_si128((p as *const i32).read_unaligned()))
    }

    /// `[scale_0, scale_1, offset_0, offset_1]` of the blocks at `w0`, `w1`
    /// (the same products as `planes::block_terms`).
    #[inline(always)]
    unsafe fn terms<const F: u8>(w0: *const u8, w1: *const u8, f: __m128, g: __m128) -> __m128 {
        terms_of::<F>(weight_halves(w0, w1), f, g)
    }

    /// `[d_0, d_1, second f16 of block 0, of block 1]` (Q4_1's `m`) of the
    /// blocks at `w0`, `w1`.
    #[inline(always)]
    unsafe fn weight_halves(w0: *const u8, w1: *const u8) -> __m128 {
        _mm_unpacklo_ps(f16_pair(w0), f16_pair(w1))
    }

    /// [`terms`] from the weights' [`weight_halves`] `dm`.
    #[inline(always)]
    unsafe fn terms_of<const F: u8>(dm: __m128, f: __m128, g: __m128) -> __m128 {
        match F {
            Q4_1 | Q8_0 => _mm_mul_ps(dm, f),
            _ => _mm_mul_ps(_mm_mul_ps(_mm_movelh_ps(dm, dm), f), g),
        }
    }

    /// The two blocks' weights as bytes, `vpdpbusd`'s unsigned operand
    /// (Q8_0: its signed one): 16-byte lanes hold block 0's weights 0..16
    /// and 16..32, then block 1's.
    #[inline(always)]
    unsafe fn weights<const F: u8>(w0: *const u8, w1: *const u8) -> __m512i {
        let at = quants_at(F);
        if F == Q8_0 {
            let lo = _mm512_castsi256_si512(_mm256_loadu_si256(w0.add(at) as *const __m256i));
            return _mm512_inserti64x4::<1>(lo, _mm256_loadu_si256(w1.add(at) as *const __m256i));
        }
        let q0 = _mm_loadu_si128(w0.add(at) as *const __m128i);
        let q1 = _mm_loadu_si128(w1.add(at) as *const __m128i);
        let v = _mm512_mask_broadcast_i32x4(_mm512_broadcast_i32x4(q0), 0xFF00, q1);
        // Low nibbles in lanes 0 / 2, high nibbles in lanes 1 / 3.
        let v = _mm512_srlv_epi64(v, _mm512_setr_epi64(0, 0, 4, 4, 0, 0, 4, 4));
        let v = _mm512_and_si512(v, _mm512_set1_epi8(0x0F));
        if F == Q5_0 {
            let h0 = (w0.add(2) as *const u32).read_unaligned();
            let h1 = (w1.add(2) as *const u32).read_unaligned();
            let bits = u64::from(h0) | (u64::from(h1) << 32);
            return _mm512_or_si512(v, _mm512_maskz_mov_epi8(bits, _mm512_set1_epi8(0x10)));
        }
        v
    }

    /// The sixteen i32 lanes (four products each) of weights `v` and
    /// prepared activations `x`.
    #[inline(always)]
    unsafe fn lanes<const F: u8>(v: __m512i, x: __m512i) -> __m512i {
        let zero = _mm512_setzero_si512();
        if F == Q8_0 {
            // (x + 128) * w summed, less 128 * sum w (vpdpbusd takes the
            // unsigned bytes first).
            let p = _mm512_dpbusd_epi32(zero, x, v);
            let bias = _mm512_dpbusd_epi32(zero, _mm512_set1_epi8(-128), v);
            return _mm512_sub_epi32(p, bias);
        }
        _mm512_dpbusd_epi32(zero, v, x)
    }

    /// Blocks `w0`, `w1` (pair `p`) into the lanes of `acc` that `mask`
    /// keeps; returns their terms.
    #[inline(always)]
    unsafe fn step<const F: u8>(
        w0: *const u8,
        w1: *const u8,
        prep: &Prep,
        p: usize,
        acc: &mut __m512,
        mask: __mmask16,
    ) -> __m128 {
        let t = terms::<F>(w0, w1, *prep.f.get_unchecked(p), *prep.g.get_unchecked(p));
        let l = lanes::<F>(weights::<F>(w0, w1), *prep.q.get_unchecked(p));
        *acc = _mm512_mask3_fmadd_ps(_mm512_cvtepi32_ps(l), pair_scales(t), *acc, mask);
        t
    }

    /// `R` consecutive weight rows (`rb` bytes each, the first at `w`)
    /// against the prepared row: the rows' chains (the FMA lanes, the
    /// offset sums) interleave, each row's operations in its own order.
    #[inline(always)]
    unsafe fn tile<const F: u8, const R: usize>(
        w: *const u8,
        rb: usize,
        prep: &Prep,
        nb: usize,
    ) -> [f32; R] {
        let bb = block_bytes(F);
        let mut acc = [_mm512_setzero_ps(); R];
        let mut offsets = [0f32; R];
        // The tile's bytes are contiguous: prefetch them in the order the
        // tile consumes them, PREFETCH_BLOCKS blocks' bytes ahead.
        let ahead = w.wrapping_add(PREFETCH_BLOCKS * bb);
        for p in 0..nb / 2 {
            let fetch = ahead.wrapping_add(p * 2 * bb * R);
            for line in (0..2 * bb * R).step_by(64) {
                _mm_prefetch::<_MM_HINT_T0>(fetch.wrapping_add(line) as *const i8);
            }
            for r in 0..R {
                let w0 = w.add(r * rb + 2 * p * bb);
                let t = step::<F>(w0, w0.add(bb), prep, p, &mut acc[r], 0xFFFF);
                if has_offsets(F) {
                    let o = _mm_movehl_ps(t, t);
                    offsets[r] += _mm_cvtss_f32(o);
                    offsets[r] += _mm_cvtss_f32(_mm_movehdup_ps(o));
                }
            }
        }
        if nb % 2 == 1 {
            // The last block alone, in the even (low) half; its pair's odd
            // half reads the same block again and is masked off.
            for r in 0..R {
                let w0 = w.add(r * rb + (nb - 1) * bb);
                let t = step::<F>(w0, w0, prep, nb / 2, &mut acc[r], 0x00FF);
                if has_offsets(F) {
                    offsets[r] += _mm_cvtss_f32(_mm_movehl_ps(t, t));
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

    /// `R` weight rows against `T` prepared activation rows (`preps[..T]`):
    /// each weight block pair is loaded and spread once for all `T`, and
    /// every (weight row, activation row) pair runs [`tile`]'s operations
    /// for that row in the same order, so its value is the GEMV's, bit for
    /// bit. Returns `[weight row][activation row]`.
    // Index loops over the register tile: iterators here have cost spills.
    #[allow(clippy::needless_range_loop)]
    #[inline(always)]
    unsafe fn tile_tokens<const F: u8, const R: usize, const T: usize>(
        w: *const u8,
        rb: usize,
        preps: &[Prep],
        nb: usize,
    ) -> [[f32; T]; R] {
        assert!(preps.len() >= T);
        let bb = block_bytes(F);
        let mut acc = [[_mm512_setzero_ps(); T]; R];
        let mut offsets = [[0f32; T]; R];
        let ahead = w.wrapping_add(PREFETCH_BLOCKS * bb);
        for p in 0..nb / 2 {
            let fetch = ahead.wrapping_add(p * 2 * bb * R);
            for line in (0..2 * bb * R).step_by(64) {
                _mm_prefetch::<_MM_HINT_T0>(fetch.wrapping_add(line) as *const i8);
            }
            tokens_pair::<F, R, T>(w, rb, preps, p, false, &mut acc, &mut offsets);
        }
        if nb % 2 == 1 {
            tokens_pair::<F, R, T>(w, rb, preps, nb / 2, true, &mut acc, &mut offsets);
        }
        let mut out = [[0f32; T]; R];
        for r in 0..R {
            for t in 0..T {
                out[r][t] = row_value(acc[r][t], offsets[r][t]);
            }
        }
        out
    }

    /// [`tile_tokens`]' step: block pair `p` of its rows (`last`: the
    /// trailing odd block alone, in the low half) into `acc` / `offsets`.
    // A function, not a closure: a closure would not take the caller's
    // target features, and the intrinsics would be calls.
    #[allow(clippy::needless_range_loop, clippy::too_many_arguments)]
    #[inline(always)]
    unsafe fn tokens_pair<const F: u8, const R: usize, const T: usize>(
        w: *const u8,
        rb: usize,
        preps: &[Prep],
        p: usize,
        last: bool,
        acc: &mut [[__m512; T]; R],
        offsets: &mut [[f32; T]; R],
    ) {
        let bb = block_bytes(F);
        let zero = _mm512_setzero_si512();
        let mask: __mmask16 = if last { 0x00FF } else { 0xFFFF };
        for r in 0..R {
            let w0 = w.add(r * rb + 2 * p * bb);
            let w1 = if last { w0 } else { w0.add(bb) };
            let v = weights::<F>(w0, w1);
            // Q8_0: `128 * sum w` per lane, the activations' bias.
            let bias = if F == Q8_0 {
                _mm512_dpbusd_epi32(zero, _mm512_set1_epi8(-128), v)
            } else {
                zero
            };
            let dm = weight_halves(w0, w1);
            for t in 0..T {
                let prep = preps.get_unchecked(t);
                let tt = terms_of::<F>(dm, *prep.f.get_unchecked(p), *prep.g.get_unchecked(p));
                let x = *prep.q.get_unchecked(p);
                let l = if F == Q8_0 {
                    _mm512_sub_epi32(_mm512_dpbusd_epi32(zero, x, v), bias)
                } else {
                    _mm512_dpbusd_epi32(zero, v, x)
                };
                acc[r][t] =
                    _mm512_mask3_fmadd_ps(_mm512_cvtepi32_ps(l), pair_scales(tt), acc[r][t], mask);
                if has_offsets(F) {
                    let o = _mm_movehl_ps(tt, tt);
                    offsets[r][t] += _mm_cvtss_f32(o);
                    if !last {
                        offsets[r][t] += _mm_cvtss_f32(_mm_movehdup_ps(o));
                    }
                }
            }
        }
    }

    /// `[s_0 x 8, s_1 x 8]` from `t = [s_0, s_1, ..]`: a block pair's
    /// scales over its even / odd lanes.
    #[inline(always)]
    pub(in crate::kernels::quant_matmul) unsafe fn pair_scales(t: __m128) -> __m512 {
        let spread = _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1);
        _mm512_permutexvar_ps(spread, _mm512_castps128_ps512(t))
    }

    /// A row's value from its accumulators (even blocks low, odd blocks
    /// high) and offset sum, in `planes`' order: even + odd lane-wise, the
    /// lanes reduced, the offsets last.
    #[inline(always)]
    pub(in crate::kernels::quant_matmul) unsafe fn row_value(acc: __m512, offsets: f32) -> f32 {
        // (AVX-512 F's 64-bit extract: the 32-bit one is DQ's.)
        let odd = _mm256_castpd_ps(_mm512_extractf64x4_pd::<1>(_mm512_castps_pd(acc)));
        let even_odd = _mm256_add_ps(_mm512_castps512_ps256(acc), odd);
        let mut l = [0f32; 8];
        _mm256_storeu_ps(l.as_mut_ptr(), even_odd);
        reduce_lanes(&l) + offsets
    }

    /// See [`super::rows`] (format code `F`).
    #[inline(always)]
    pub(super) unsafe fn rows<const F: u8>(
        w: &[u8],
        row_bytes: usize,
        (lo, hi): (usize, usize),
        acts: &[ActRow],
        out: &mut OutCols,
    ) {
        let k = acts.first().map_or(0, |a| a.q.len());
        let nb = k / 32;
        assert!(
            row_bytes == nb * block_bytes(F) && w.len() >= hi * row_bytes,
            "weights hold rows {lo}..{hi} of {nb} blocks"
        );
        for act in acts {
            assert!(act.q.len() == k && act.d.len() >= nb && (F != Q4_1 || act.s.len() >= nb));
            assert!(F == Q4_1 || F == Q8_0 || act.gsum.len() >= nb);
        }
        if let [act] = acts {
            // Decode: one activation row (no list of preparations per call).
            let prep = &prepare::<F>(act, k);
            let mut r = lo;
            while r + ROWS <= hi {
                let ys = tile::<F, ROWS>(w.as_ptr().add(r * row_bytes), row_bytes, prep, nb);
                for (i, y) in ys.into_iter().enumerate() {
                    out.set(0, r - lo + i, y);
                }
                r += ROWS;
            }
            for r in r..hi {
                let [y] = tile::<F, 1>(w.as_ptr().add(r * row_bytes), row_bytes, prep, nb);
                out.set(0, r - lo, y);
            }
            return;
        }
        let preps: Vec<Prep> = acts.iter().map(|a| prepare::<F>(a, k)).collect();
        // Weight rows outside (their bytes stay in L1 for every group of
        // activation rows), activation rows in groups of 4, 2 and 1 inside.
        let mut r = lo;
        while r < hi {
            let wr = w.as_ptr().add(r * row_bytes);
            let two = hi - r >= ROWS;
            let mut t0 = 0;
            while t0 < preps.len() {
                let ps = &preps[t0..];
                let n = match ps.len() {
                    4.. => 4,
                    2 | 3 => 2,
                    _ => 1,
                };
                match (two, n) {
                    (true, 4) => put(
                        out,
                        r - lo,
                        t0,
                        tile_tokens::<F, 2, 4>(wr, row_bytes, ps, nb),
                    ),
                    (true, 2) => put(
                        out,
                        r - lo,
                        t0,
                        tile_tokens::<F, 2, 2>(wr, row_bytes, ps, nb),
                    ),
                    (true, _) => put(
                        out,
                        r - lo,
                        t0,
                        tile_tokens::<F, 2, 1>(wr, row_bytes, ps, nb),
                    ),
                    (false, 4) => put(
                        out,
                        r - lo,
                        t0,
                        tile_tokens::<F, 1, 4>(wr, row_bytes, ps, nb),
                    ),
                    (false, 2) => put(
                        out,
                        r - lo,
                        t0,
                        tile_tokens::<F, 1, 2>(wr, row_bytes, ps, nb),
                    ),
                    (false, _) => put(
                        out,
                        r - lo,
                        t0,
                        tile_tokens::<F, 1, 1>(wr, row_bytes, ps, nb),
                    ),
                }
                t0 += n;
            }
            r += if two { ROWS } else { 1 };
        }
    }

    /// A tile's values `ys[weight row][activation row]` into `out` at
    /// column `j` and row `t0`.
    #[inline(always)]
    fn put<const R: usize, const T: usize>(
        out: &mut OutCols,
        j: usize,
        t0: usize,
        ys: [[f32; T]; R],
    ) {
        for (i, y) in ys.iter().enumerate() {
            for (t, &v) in y.iter().enumerate() {
                out.set(t0 + t, j + i, v);
            }
        }
    }
}
