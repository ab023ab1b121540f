//! Prefill GEMM for the K-quants (Q4_K, Q5_K, Q6_K) on 512-bit AVX-512
//! VNNI: `planes`' numbers, bit for bit, with the unpacking paid once per
//! call and two 256-weight blocks per 512-bit step.
//!
//! `planes` unpacks each 32-weight chunk of a block for a tile of 4
//! activation rows and scales every chunk's lanes with `vpmulld`. Here,
//! per call:
//! - each weight row is unpacked once into unsigned bytes, two blocks side
//!   by side: the 64 bytes of step `(p, c)` are chunk `c` of block `2p`
//!   (low half) and chunk `c` of block `2p + 1` (high half), with the
//!   chunks' group scales as i16 in the same places;
//! - the activation quants are copied once into that layout (a missing
//!   odd block: zeros);
//! - a step is `vpmaddubsw` (pairs of `u8 x i8` products, at most `2 * 63 *
//!   127`, no saturation) and `vpdpwssd` with the i16 group scales: each
//!   i32 lane gains `scale * (its four products)`, `planes`' lane value.
//!   After the eight chunks the low half holds block `2p`'s eight lanes
//!   and the high half block `2p + 1`'s, so one convert, one multiply
//!   (`d_w * d_x` of both blocks) and one FMA add them to `planes`' even /
//!   odd accumulator sets;
//! - the offset terms (the mins' `-dmin * d_x * sum min * sum x`, Q6_K's
//!   `-32 * d_w * d_x * sum scale * sum x`) are formed for 8 activation
//!   rows at once (one lane per row; the integer sums as `vpdpwssd` over
//!   i16 pairs of group sums, which fit: at most `32 * 127`), added in
//!   block order as `planes`' scalar sum.
//!
//! Memory: nothing is kept between calls (as in `gemm16`).

use rlx_ir::quant::QuantScheme;

use super::out_cols::OutCols;
use super::planes::ActRow;

/// Whether [`rows`] runs weights of `scheme`.
pub(crate) fn runs(scheme: QuantScheme) -> bool {
    use QuantScheme::*;
    matches!(scheme, GgufQ4K | GgufQ5K | GgufQ6K)
}

/// Activation rows from which the panel GEMM runs instead of `planes`'
/// tiles: below it (decode's single row), unpacking a weight row would be
/// paid for too few rows.
pub(crate) const MIN_ROWS: usize = 4;

/// The activation side of a call, laid out for the tiles once and shared
/// by every part of the call's weight rows ([`prepare`]).
#[cfg(target_arch = "x86_64")]
pub(crate) struct Prepared(x86::Acts);

/// Lays out the activation rows `acts` (all of one call) for [`rows`].
///
/// # Safety
/// As [`rows`].
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512vl,avx512bw,avx512vnni")]
pub(crate) unsafe fn prepare(scheme: QuantScheme, acts: &[ActRow]) -> Prepared {
    Prepared(x86::prepare_acts(scheme, acts))
}

/// Output rows `lo..hi` of weights `w` (`row_bytes` a row) against every
/// activation row of `a`, into `out`'s `(i, j - lo)`.
///
/// # Safety
/// The CPU runs AVX-512 F / BW / VL / VNNI, AVX2, FMA and F16C
/// (`QuantIsa::Avx512Vnni`), `runs(scheme)` holds and `a` was prepared
/// for `scheme`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512vl,avx512bw,avx512vnni")]
pub(crate) unsafe fn rows(
    scheme: QuantScheme,
    w: &[u8],
    row_bytes: usize,
    (lo, hi): (usize, usize),
    a: &Prepared,
    out: &mut OutCols,
) {
    x86::rows(scheme, w, row_bytes, (lo, hi), &a.0, out)
}

#[cfg(target_arch = "x86_64")]
pub(super) mod x86 {
    use super::super::planes::x86::f16c_at;
    use super::super::planes::{block_weights, BlockWeights};
    use super::{ActRow, OutCols};
    use rlx_ir::quant::QuantScheme;
    use std::arch::x86_64::*;

    /// Asks for the `len` bytes at `p` (the next tile's weight rows, read
    /// once by its unpacking while this tile computes; without it perf puts
    /// ~15 % of the GEMM's samples on those first loads). Prefetches never
    /// fault: past the weights is harmless.
    #[inline(always)]
    unsafe fn prefetch_bytes(p: *const u8, len: usize) {
        for at in (0..len).step_by(64) {
            _mm_prefetch::<_MM_HINT_T0>(p.wrapping_add(at) as *const i8);
        }
    }

    /// `[v[0]; 8] ++ [v[1]; 8]` from two f32 at `p`.
    #[inline(always)]
    unsafe fn pair_scale(p: *const f32) -> __m512 {
        let two = _mm_castsi128_ps(_mm_loadl_epi64(p as *const __m128i));
        let idx = _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1);
        _mm512_permutexvar_ps(idx, _mm512_castps128_ps512(two))
    }

    /// The sum of the sixteen lanes as `planes` reduces its two sets:
    /// `l = even + odd`, then `((l0 + l4) + (l2 + l6)) + ((l1 + l5) + (l3 +
    /// l7))`.
    #[inline(always)]
    unsafe fn reduce(acc: __m512) -> f32 {
        let l = _mm256_add_ps(
            _mm512_castps512_ps256(acc),
            _mm256_castpd_ps(_mm512_extractf64x4_pd::<1>(_mm512_castps_pd(acc))),
        );
        let s = _mm_add_ps(_mm256_castps256_ps128(l), _mm256_extractf128_ps::<1>(l));
        let u = _mm_add_ps(s, _mm_movehl_ps(s, s));
        _mm_cvtss_f32(_mm_add_ss(u, _mm_shuffle_ps::<1>(u, u)))
    }

    /// Weight rows per tile.
    const ROWS: usize = 2;
    /// Activation rows per tile of the dot loop (its accumulators and the
    /// weight / scale vectors of [`ROWS`] rows fill the 32 registers).
    const TILE: usize = 4;
    /// Activation rows the offsets are formed for at once (8 f32 lanes).
    const TOKENS: usize = 8;
    /// 32-weight chunks per block.
    const CHUNKS: usize = 8;

    /// Group sums (activations) or mins / scales (weights) per block that
    /// the offsets pair, as i16 pairs: Q6_K's 16 groups of 16, the others'
    /// 8 of 32.
    fn group_pairs(scheme: QuantScheme) -> usize {
        if scheme == QuantScheme::GgufQ6K {
            8
        } else {
            4
        }
    }

    /// Two i16 in one i32: `lo` in the low half (what `vpdpwssd` pairs).
    #[inline(always)]
    fn i16_pair(lo: i32, hi: i32) -> i32 {
        i32::from(lo as i16 as u16) | (i32::from(hi as i16) << 16)
    }

    /// The activation side of a call.
    pub(in crate::kernels::quant_matmul) struct Acts {
        /// Activation rows and depth.
        m: usize,
        k: usize,
        /// `pairs * CHUNKS` steps of 64 bytes (see the module docs) per row,
        /// step-major (`step * rows + i`): a tile's rows lie at constant
        /// offsets from one pointer.
        q: Vec<__m512i>,
        /// Block scale pairs (`[d_2p; 8] ++ [d_2p+1; 8]`, a missing block:
        /// 0), pair-major as `q`.
        d: Vec<__m512>,
        /// Per tile of [`TOKENS`] rows and block: `d_x` per row.
        dt: Vec<[f32; TOKENS]>,
        /// Per tile, block and group pair: the two group sums per row.
        gt: Vec<[i32; TOKENS]>,
        pairs: usize,
    }

    /// One weight row unpacked.
    struct Row {
        /// `pairs * CHUNKS` steps of 64 unsigned quants.
        q: Vec<__m512i>,
        /// The steps' i16 group scales, one per byte pair.
        sc: Vec<__m512i>,
        /// Per pair: `d` of the two blocks (low / high half).
        d: Vec<__m512>,
        /// Per block: `d` and the mins' `dmin` (Q4_K / Q5_K).
        dw: Vec<f32>,
        m: Vec<f32>,
        /// Per block and group pair: the mins (Q4_K / Q5_K) or the scales
        /// (Q6_K) the offset multiplies, as i16 pairs.
        g: Vec<i32>,
    }

    impl Row {
        fn new() -> Row {
            Row {
                q: Vec::new(),
                sc: Vec::new(),
                d: Vec::new(),
                dw: Vec::new(),
                m: Vec::new(),
                g: Vec::new(),
            }
        }
    }

    #[inline(always)]
    pub(super) unsafe fn prepare_acts(scheme: QuantScheme, acts: &[ActRow]) -> Acts {
        let k = acts.first().map_or(0, |a| a.q.len());
        let nb = k / 256;
        let pairs = nb.div_ceil(2);
        let gp = group_pairs(scheme);
        let (m, tiles) = (acts.len(), acts.len().div_ceil(TOKENS));
        let mut a = Acts {
            m,
            k,
            q: vec![_mm512_setzero_si512(); m * pairs * CHUNKS],
            d: vec![_mm512_setzero_ps(); m * pairs],
            dt: vec![[0.0; TOKENS]; tiles * nb],
            gt: vec![[0; TOKENS]; tiles * nb * gp],
            pairs,
        };
        let mut d = vec![0f32; 2 * pairs];
        for (i, row) in acts.iter().enumerate() {
            let base = a.q.as_mut_ptr() as *mut __m256i;
            for b in 0..nb {
                let (p, half) = (b / 2, b % 2);
                for c in 0..CHUNKS {
                    let src = row.q.as_ptr().add(b * 256 + 32 * c) as *const __m256i;
                    let dst = base.add(2 * ((p * CHUNKS + c) * m + i) + half);
                    _mm256_store_si256(dst, _mm256_loadu_si256(src));
                }
            }
            d[..nb].copy_from_slice(&row.d[..nb]);
            for p in 0..pairs {
                a.d[p * m + i] = pair_scale(d.as_ptr().add(2 * p));
            }
            let (tile, t) = (i / TOKENS, i % TOKENS);
            let per = 2 * gp;
            for b in 0..nb {
                a.dt[tile * nb + b][t] = row.d[b];
                for j in 0..gp {
                    let s = &row.gsum[b * per + 2 * j..];
                    a.gt[(tile * nb + b) * gp + j][t] = i16_pair(s[0], s[1]);
                }
            }
        }
        a
    }

    /// 32 bytes at `p`.
    #[inline(always)]
    unsafe fn load(p: *const u8) -> __m256i {
        _mm256_loadu_si256(p as *const __m256i)
    }

    /// The low nibbles of `q`, or its high ones.
    #[inline(always)]
    unsafe fn nibbles(q: __m256i, high: bool) -> __m256i {
        let q = if high { _mm256_srli_epi16::<4>(q) } else { q };
        _mm256_and_si256(q, _mm256_set1_epi8(0x0F))
    }

    /// Chunk `c` of the K-quant block at `wp` as 32 unsigned quants (the
    /// bytes `planes` feeds `vpdpbusd`). Helpers, not closures: a closure
    /// does not inherit the caller's target features.
    #[inline(always)]
    unsafe fn chunk_quants(scheme: QuantScheme, wp: *const u8, c: usize) -> __m256i {
        match scheme {
            // The low nibbles of even chunks, the high ones of odd ones.
            QuantScheme::GgufQ4K => nibbles(load(wp.add(16 + 32 * (c / 2))), c % 2 == 1),
            QuantScheme::GgufQ5K => {
                let q = nibbles(load(wp.add(48 + 32 * (c / 2))), c % 2 == 1);
                let hi = _mm256_test_epi8_mask(load(wp.add(16)), _mm256_set1_epi8(1 << c));
                _mm256_or_si256(q, _mm256_maskz_mov_epi8(hi, _mm256_set1_epi8(16)))
            }
            // Q6_K: chunk c of half n = c / 4: low nibbles of ql0 / ql1,
            // then their high nibbles; two bits of qh each, in turn.
            _ => {
                let (n, j) = (c / 4, c % 4);
                let lo = nibbles(load(wp.add(64 * n + 32 * (j % 2))), j >= 2);
                let qh = load(wp.add(128 + 32 * n));
                let qh = match j {
                    0 => qh,
                    1 => _mm256_srli_epi16::<2>(qh),
                    2 => _mm256_srli_epi16::<4>(qh),
                    _ => _mm256_srli_epi16::<6>(qh),
                };
                let hi = _mm256_slli_epi16::<4>(_mm256_and_si256(qh, _mm256_set1_epi8(3)));
                _mm256_or_si256(lo, hi)
            }
        }
    }

    /// Chunk `c`'s group scales as 16 i16 (one per byte pair): Q6_K's two
    /// groups of 16, the others' one group of 32.
    #[inline(always)]
    unsafe fn chunk_scales(scheme: QuantScheme, bw: &BlockWeights, c: usize) -> __m256i {
        if scheme == QuantScheme::GgufQ6K {
            let (s0, s1) = (bw.groups[2 * c] as i16, bw.groups[2 * c + 1] as i16);
            _mm256_set_m128i(_mm_set1_epi16(s1), _mm_set1_epi16(s0))
        } else {
            _mm256_set1_epi16(bw.scales[c] as i16)
        }
    }

    /// Unpacks weight row `w` (`nb` blocks) into `r`.
    #[inline(always)]
    unsafe fn unpack_row(scheme: QuantScheme, w: &[u8], nb: usize, pairs: usize, r: &mut Row) {
        let bb = scheme.gguf_block_bytes();
        assert!(w.len() >= nb * bb);
        let gp = group_pairs(scheme);
        for v in [&mut r.q, &mut r.sc] {
            v.clear();
            v.resize(pairs * CHUNKS, _mm512_setzero_si512());
        }
        r.dw.clear();
        r.dw.resize(2 * pairs, 0.0);
        r.m.clear();
        r.m.resize(nb, 0.0);
        r.g.clear();
        r.g.resize(nb * gp, 0);
        let (q, sc) = (
            r.q.as_mut_ptr() as *mut __m256i,
            r.sc.as_mut_ptr() as *mut __m256i,
        );
        for b in 0..nb {
            let bytes = &w[b * bb..(b + 1) * bb];
            let bw = block_weights(scheme, bytes, |b, at| f16c_at(b, at));
            let (p, half) = (b / 2, b % 2);
            for c in 0..CHUNKS {
                let at = 2 * (p * CHUNKS + c) + half;
                _mm256_store_si256(q.add(at), chunk_quants(scheme, bytes.as_ptr(), c));
                _mm256_store_si256(sc.add(at), chunk_scales(scheme, &bw, c));
            }
            (r.dw[b], r.m[b]) = (bw.d, bw.m);
            for j in 0..gp {
                r.g[b * gp + j] = i16_pair(bw.groups[2 * j], bw.groups[2 * j + 1]);
            }
        }
        r.d.clear();
        for p in 0..pairs {
            r.d.push(pair_scale(r.dw.as_ptr().add(2 * p)));
        }
    }

    #[inline(always)]
    pub(super) unsafe fn rows(
        scheme: QuantScheme,
        w: &[u8],
        row_bytes: usize,
        (lo, hi): (usize, usize),
        a: &Acts,
        out: &mut OutCols,
    ) {
        let (m, nb) = (a.m, a.k / 256);
        if m == 0 {
            return;
        }
        let mut rs: [Row; ROWS] = std::array::from_fn(|_| Row::new());
        let mut r = lo;
        while r < hi {
            let nw = (hi - r).min(ROWS);
            for (j, row) in rs.iter_mut().enumerate().take(nw) {
                let wr = &w[(r + j) * row_bytes..(r + j + 1) * row_bytes];
                unpack_row(scheme, wr, nb, a.pairs, row);
            }
            prefetch_bytes(
                w.as_ptr().wrapping_add((r + nw) * row_bytes),
                ROWS * row_bytes,
            );
            for t8 in (0..m).step_by(TOKENS) {
                let tile = t8 / TOKENS;
                let mut off = [[0f32; TOKENS]; ROWS];
                for (o, row) in off.iter_mut().zip(&rs).take(nw) {
                    *o = offsets(scheme, a, row, tile, nb);
                }
                let end = (t8 + TOKENS).min(m);
                let mut t0 = t8;
                while t0 < end {
                    let sums = match (nw, end - t0) {
                        (2, n) if n >= TILE => tile_dots::<2, TILE>(a, &rs, t0),
                        (1, n) if n >= TILE => tile_dots::<1, TILE>(a, &rs, t0),
                        (2, _) => tile_dots::<2, 1>(a, &rs, t0),
                        _ => tile_dots::<1, 1>(a, &rs, t0),
                    };
                    for (j, (v, o)) in sums.v.iter().zip(&off).enumerate().take(nw) {
                        for t in 0..sums.rows {
                            out.set(t0 + t, r - lo + j, v[t] + o[t0 + t - t8]);
                        }
                    }
                    t0 += sums.rows;
                }
            }
            r += nw;
        }
    }

    /// Reduced lane sums of a tile: `v[weight row][activation row]`.
    struct TileSums {
        v: [[f32; TILE]; ROWS],
        rows: usize,
    }

    /// `W` weight rows against activation rows `t0..t0 + T`, lane sums
    /// reduced (offsets not added).
    // Index loops over the register tile: iterators here have cost spills.
    #[allow(clippy::needless_range_loop)]
    #[inline(always)]
    unsafe fn tile_dots<const W: usize, const T: usize>(
        a: &Acts,
        rs: &[Row; ROWS],
        t0: usize,
    ) -> TileSums {
        let (pairs, m) = (a.pairs, a.d.len() / a.pairs.max(1));
        let mut acc = [[_mm512_setzero_ps(); T]; W];
        for p in 0..pairs {
            let mut lanes = [[_mm512_setzero_si512(); T]; W];
            for c in 0..CHUNKS {
                let at = p * CHUNKS + c;
                let mut wv = [_mm512_setzero_si512(); W];
                let mut sc = [_mm512_setzero_si512(); W];
                for j in 0..W {
                    wv[j] = *rs[j].q.get_unchecked(at);
                    sc[j] = *rs[j].sc.get_unchecked(at);
                }
                let xs = a.q.as_ptr().add(at * m + t0);
                for t in 0..T {
                    let x = *xs.add(t);
                    for j in 0..W {
                        let pr = _mm512_maddubs_epi16(wv[j], x);
                        lanes[j][t] = _mm512_dpwssd_epi32(lanes[j][t], pr, sc[j]);
                    }
                }
            }
            let ds = a.d.as_ptr().add(p * m + t0);
            for t in 0..T {
                let dx = *ds.add(t);
                for j in 0..W {
                    let scale = _mm512_mul_ps(*rs[j].d.get_unchecked(p), dx);
                    acc[j][t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(lanes[j][t]), scale, acc[j][t]);
                }
            }
        }
        let mut s = TileSums {
            v: [[0.0; TILE]; ROWS],
            rows: T,
        };
        for (v, accs) in s.v.iter_mut().zip(&acc) {
            for (o, &a) in v.iter_mut().zip(accs) {
                *o = reduce(a);
            }
        }
        s
    }

    /// The offset sums of one weight row for the [`TOKENS`] activation rows
    /// of `tile`, in block order (`planes`' `offsets += offset`).
    #[inline(always)]
    unsafe fn offsets(
        scheme: QuantScheme,
        a: &Acts,
        row: &Row,
        tile: usize,
        nb: usize,
    ) -> [f32; TOKENS] {
        let gp = group_pairs(scheme);
        let mut off = _mm256_setzero_ps();
        for b in 0..nb {
            let dx = _mm256_loadu_ps(a.dt[tile * nb + b].as_ptr());
            let mut isum = _mm256_setzero_si256();
            for j in 0..gp {
                let g =
                    _mm256_loadu_si256(a.gt[(tile * nb + b) * gp + j].as_ptr() as *const __m256i);
                isum = _mm256_dpwssd_epi32(isum, _mm256_set1_epi32(row.g[b * gp + j]), g);
            }
            let term = if scheme == QuantScheme::GgufQ6K {
                // scale * (-32 * isum), scale = d_w * d_x.
                let scale = _mm256_mul_ps(_mm256_set1_ps(row.dw[b]), dx);
                let i = _mm256_mullo_epi32(isum, _mm256_set1_epi32(-32));
                _mm256_mul_ps(scale, _mm256_cvtepi32_ps(i))
            } else {
                // -(dmin * d_x) * isum.
                let md = _mm256_mul_ps(_mm256_set1_ps(row.m[b]), dx);
                let neg = _mm256_xor_ps(md, _mm256_set1_ps(-0.0));
                _mm256_mul_ps(neg, _mm256_cvtepi32_ps(isum))
            };
            off = _mm256_add_ps(off, term);
        }
        let mut v = [0f32; TOKENS];
        _mm256_storeu_ps(v.as_mut_ptr(), off);
        v
    }
}
