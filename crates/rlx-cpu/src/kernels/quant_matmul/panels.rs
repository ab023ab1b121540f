//! Prefill GEMM for the 32-weight formats (Q4_0, Q4_1, Q5_0, Q8_0) on
//! 512-bit AVX-512 VNNI: the same numbers as `planes`, bit for bit, with
//! far fewer instructions per product.
//!
//! `planes` dots one weight block at a time on 256-bit vectors and pays
//! each block's scalar terms (`d_w * d_x`, the offset) per activation row;
//! unpacking a block is shared by a tile of 4 rows only. Here, per call:
//! - each weight row is unpacked once into unsigned (Q8_0: signed) bytes
//!   in a 64-byte aligned buffer, with its block scales in f32, and then
//!   serves every activation row of the call (prefill chunks: 8-32);
//! - the activation quants are copied once into 64-byte aligned rows, and
//!   each row's block scale pairs (`[d_b; 8] ++ [d_b+1; 8]`) built once (Q8_0:
//!   biased to unsigned, `x + 128`, so `vpdpbusd` takes the signed weight;
//!   the bias comes back exactly through a weight-side integer
//!   correction, `-128 * sum w` per lane, the accumulator's start);
//! - a 512-bit step takes two blocks at once: the low 256 bits are the even
//!   block, the high ones the odd block, exactly `planes`' two sets of eight
//!   f32 lane accumulators (even blocks into one, odd into the other), so
//!   one `vpdpbusd`, one convert, one multiply (`d_w * d_x` for both blocks
//!   as a vector product) and one FMA serve 64 weights of one row pair;
//!   a trailing odd block is a pair with a zero high half (zero products
//!   and zero scales leave those accumulators unchanged);
//! - [`ROWS`] weight rows share each activation load, in tiles of [`TOKENS`]
//!   activation rows;
//! - the offset terms (`-8` / `-16 * d_w * d_x * sum x`, Q4_1's `m * s`)
//!   are summed in block order for 16 activation rows at once (one lane per
//!   row), the same products and additions as `planes`' scalar sum.
//!
//! Memory: nothing is kept between calls (the unpacked rows live in a
//! per-call scratch), so the weights stay stored once, in GGUF bytes;
//! decode's GEMV and products of up to `gemv512::MAX_ROWS` activation rows
//! (where unpacking a row would not pay) read them in place (`gemv512`, the
//! same two-block steps).

use rlx_ir::quant::QuantScheme;

use super::out_cols::OutCols;
use super::planes::ActRow;

/// Whether [`rows`] runs weights of `scheme`.
pub(crate) fn runs(scheme: QuantScheme) -> bool {
    use QuantScheme::*;
    matches!(scheme, GgufQ4_0 | GgufQ4_1 | GgufQ5_0 | GgufQ8_0)
}

/// Activation rows from which the panel GEMM runs instead of `planes`'
/// tiles: below it (decode's single row), unpacking a weight row would be
/// paid for too few rows. (For the formats of `gemv512`, its in-place tiles
/// take everything up to `gemv512::MAX_ROWS`; this bound is the K-quants'.)
pub(crate) const MIN_ROWS: usize = 4;

/// Weight rows per tile (each activation chunk load feeds them all).
pub(crate) const ROWS: usize = 2;

/// Activation rows per tile.
pub(crate) const TOKENS: usize = 8;

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
    use super::super::planes::x86::{f16c_at, fifth_bits_mask, nibbles16};
    use super::{ActRow, OutCols, ROWS, TOKENS};
    use rlx_ir::quant::QuantScheme;
    use std::arch::x86_64::*;

    /// Activation rows whose offsets are summed at once (one f32 lane each).
    const OFF_TOKENS: usize = 16;

    /// The activation side of a call: aligned (Q8_0: biased) quants, block
    /// scales padded to whole pairs, and the offsets' per-block factors
    /// transposed to one lane per activation row.
    pub(in crate::kernels::quant_matmul) struct Acts {
        /// Activation rows and depth.
        m: usize,
        k: usize,
        /// 64-byte chunks, pair-major (`p * rows + i`): a tile's rows lie
        /// at constant offsets from one pointer.
        q: Vec<__m512i>,
        /// Block scale pairs, pair-major as `q` (`d_b` in the low half,
        /// `d_b+1` in the high one; a padding block: 0), built once per call.
        d: Vec<__m512>,
        /// Per offset tile of [`OFF_TOKENS`] rows and block: `d_x` per row.
        dt: Vec<[f32; OFF_TOKENS]>,
        /// Per offset tile and block: `-off * sum x` (Q4_0 / Q5_0) or `s`
        /// (Q4_1).
        gt: Vec<[f32; OFF_TOKENS]>,
        pairs: usize,
    }

    /// One weight row unpacked: `pairs` 64-byte chunks, block scales as
    /// vectors (`d_b` in the low half, `d_b+1` in the high one), Q8_0's
    /// lane corrections and Q4_1's `m` per block.
    struct Row {
        q: Vec<__m512i>,
        d: Vec<__m512>,
        corr: Vec<__m512i>,
        dw: Vec<f32>,
        m: Vec<f32>,
    }

    #[inline(always)]
    pub(super) unsafe fn prepare_acts(scheme: QuantScheme, acts: &[ActRow]) -> Acts {
        let k = acts.first().map_or(0, |a| a.q.len());
        let nb = k / 32;
        let pairs = nb.div_ceil(2);
        let (m, tiles) = (acts.len(), acts.len().div_ceil(OFF_TOKENS));
        let mut a = Acts {
            m,
            k,
            q: vec![_mm512_setzero_si512(); m * pairs],
            d: vec![_mm512_setzero_ps(); m * pairs],
            dt: vec![[0.0; OFF_TOKENS]; tiles * nb],
            gt: vec![[0.0; OFF_TOKENS]; tiles * nb],
            pairs,
        };
        let bias = _mm512_set1_epi8(-128);
        let mut d = vec![0f32; 2 * pairs];
        let mut q = vec![_mm512_setzero_si512(); pairs];
        for (i, row) in acts.iter().enumerate() {
            std::ptr::copy_nonoverlapping(
                row.q.as_ptr() as *const u8,
                q.as_mut_ptr() as *mut u8,
                k,
            );
            d[..nb].copy_from_slice(&row.d[..nb]);
            for (p, &qp) in q.iter().enumerate() {
                a.q[p * m + i] = if scheme == QuantScheme::GgufQ8_0 {
                    _mm512_xor_si512(qp, bias)
                } else {
                    qp
                };
                a.d[p * m + i] = pair_scale(d.as_ptr().add(2 * p));
            }
            let (tile, t) = (i / OFF_TOKENS, i % OFF_TOKENS);
            for b in 0..nb {
                a.dt[tile * nb + b][t] = row.d[b];
                a.gt[tile * nb + b][t] = match scheme {
                    QuantScheme::GgufQ4_0 => (-8 * row.gsum[b]) as f32,
                    QuantScheme::GgufQ5_0 => (-16 * row.gsum[b]) as f32,
                    QuantScheme::GgufQ4_1 => row.s[b],
                    _ => 0.0,
                };
            }
        }
        a
    }

    /// Asks for the `len` bytes at `p` (the next tile's weight rows, read
    /// once by its unpacking while this tile computes; without it perf puts
    /// ~15 % of the GEMM's samples on those first loads). Prefetches never
    /// fault: past the weights is harmless.
    #[inline(always)]
    pub(in crate::kernels::quant_matmul) unsafe fn prefetch_bytes(p: *const u8, len: usize) {
        for at in (0..len).step_by(64) {
            _mm_prefetch::<_MM_HINT_T0>(p.wrapping_add(at) as *const i8);
        }
    }

    /// `[v[0]; 8] ++ [v[1]; 8]` from two f32 at `p`.
    #[inline(always)]
    pub(in crate::kernels::quant_matmul) unsafe fn pair_scale(p: *const f32) -> __m512 {
        let two = _mm_castsi128_ps(_mm_loadl_epi64(p as *const __m128i));
        let idx = _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1);
        _mm512_permutexvar_ps(idx, _mm512_castps128_ps512(two))
    }

    /// Unpacks weight row `w` (`nb` blocks) into `r`.
    #[inline(always)]
    unsafe fn unpack_row(scheme: QuantScheme, w: &[u8], nb: usize, pairs: usize, r: &mut Row) {
        use QuantScheme::*;
        let bb = scheme.gguf_block_bytes();
        assert!(w.len() >= nb * bb);
        r.q.clear();
        r.q.resize(pairs, _mm512_setzero_si512());
        r.dw.clear();
        r.dw.resize(2 * pairs, 0.0);
        r.m.clear();
        r.m.resize(nb, 0.0);
        let dst = r.q.as_mut_ptr() as *mut __m256i;
        for b in 0..nb {
            let wp = w.as_ptr().add(b * bb);
            let u = match scheme {
                GgufQ4_0 => nibbles16(wp.add(2)),
                GgufQ4_1 => nibbles16(wp.add(4)),
                GgufQ5_0 => {
                    let qh = u32::from_le_bytes([*wp.add(2), *wp.add(3), *wp.add(4), *wp.add(5)]);
                    _mm256_or_si256(nibbles16(wp.add(6)), fifth_bits_mask(qh))
                }
                // Q8_0: the signed quants as stored.
                _ => _mm256_loadu_si256(wp.add(2) as *const __m256i),
            };
            _mm256_store_si256(dst.add(b), u);
            r.dw[b] = f16c_at(w, b * bb);
            if scheme == GgufQ4_1 {
                r.m[b] = f16c_at(w, b * bb + 2);
            }
        }
        r.d.clear();
        r.corr.clear();
        for p in 0..pairs {
            r.d.push(pair_scale(r.dw.as_ptr().add(2 * p)));
            if scheme == GgufQ8_0 {
                // -128 * (sum of the lane's four weights): the activations'
                // bias taken back out, in integers.
                let s = _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_set1_epi8(-128), r.q[p]);
                r.corr.push(_mm512_sub_epi32(_mm512_setzero_si512(), s));
            }
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
        let (m, nb) = (a.m, a.k / 32);
        if m == 0 {
            return;
        }
        let mut rs: [Row; ROWS] = std::array::from_fn(|_| Row {
            q: Vec::new(),
            d: Vec::new(),
            corr: Vec::new(),
            dw: Vec::new(),
            m: Vec::new(),
        });
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
            for t16 in (0..m).step_by(OFF_TOKENS) {
                let tile = t16 / OFF_TOKENS;
                let mut off = [[0f32; OFF_TOKENS]; ROWS];
                for (o, row) in off.iter_mut().zip(&rs).take(nw) {
                    *o = offsets(scheme, a, row, tile, nb);
                }
                let end = (t16 + OFF_TOKENS).min(m);
                let mut t0 = t16;
                while t0 < end {
                    let sums = match (nw, end - t0) {
                        (2, n) if n >= TOKENS => tile_dots::<2, TOKENS>(scheme, a, &rs, t0),
                        (1, n) if n >= TOKENS => tile_dots::<1, TOKENS>(scheme, a, &rs, t0),
                        (2, 4..) => tile_dots::<2, 4>(scheme, a, &rs, t0),
                        (1, 4..) => tile_dots::<1, 4>(scheme, a, &rs, t0),
                        (2, _) => tile_dots::<2, 1>(scheme, a, &rs, t0),
                        _ => tile_dots::<1, 1>(scheme, a, &rs, t0),
                    };
                    for (j, (v, o)) in sums.v.iter().zip(&off).enumerate().take(nw) {
                        for t in 0..sums.rows {
                            out.set(t0 + t, r - lo + j, v[t] + o[t0 + t - t16]);
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
        v: [[f32; TOKENS]; ROWS],
        rows: usize,
    }

    /// The sum of the sixteen lanes as `planes` reduces its two sets:
    /// `l = even + odd`, then `((l0 + l4) + (l2 + l6)) + ((l1 + l5) + (l3 +
    /// l7))`.
    #[inline(always)]
    pub(in crate::kernels::quant_matmul) unsafe fn reduce(acc: __m512) -> f32 {
        let l = _mm256_add_ps(
            _mm512_castps512_ps256(acc),
            _mm256_castpd_ps(_mm512_extractf64x4_pd::<1>(_mm512_castps_pd(acc))),
        );
        let s = _mm_add_ps(_mm256_castps256_ps128(l), _mm256_extractf128_ps::<1>(l));
        let u = _mm_add_ps(s, _mm_movehl_ps(s, s));
        _mm_cvtss_f32(_mm_add_ss(u, _mm_shuffle_ps::<1>(u, u)))
    }

    /// `W` weight rows against activation rows `t0..t0 + T`, lane sums
    /// reduced (offsets not added).
    // Index loops over the register tile: iterators here have cost spills.
    #[allow(clippy::needless_range_loop)]
    #[inline(always)]
    unsafe fn tile_dots<const W: usize, const T: usize>(
        scheme: QuantScheme,
        a: &Acts,
        rs: &[Row; ROWS],
        t0: usize,
    ) -> TileSums {
        let q8 = scheme == QuantScheme::GgufQ8_0;
        let (pairs, m) = (a.pairs, a.q.len() / a.pairs.max(1));
        let mut acc = [[_mm512_setzero_ps(); T]; W];
        for p in 0..pairs {
            let (xs, ds) = (a.q.as_ptr().add(p * m + t0), a.d.as_ptr().add(p * m + t0));
            let mut wv = [_mm512_setzero_si512(); W];
            let mut dw = [_mm512_setzero_ps(); W];
            let mut init = [_mm512_setzero_si512(); W];
            for j in 0..W {
                wv[j] = *rs[j].q.get_unchecked(p);
                dw[j] = *rs[j].d.get_unchecked(p);
                if q8 {
                    init[j] = *rs[j].corr.get_unchecked(p);
                }
            }
            for t in 0..T {
                let x = _mm512_load_si512(xs.add(t) as *const _);
                let dx = *ds.add(t);
                for j in 0..W {
                    // Q8_0: biased activations unsigned, weights signed;
                    // the others: weights unsigned, activations signed.
                    let l = if q8 {
                        _mm512_dpbusd_epi32(init[j], x, wv[j])
                    } else {
                        _mm512_dpbusd_epi32(init[j], wv[j], x)
                    };
                    acc[j][t] =
                        _mm512_fmadd_ps(_mm512_cvtepi32_ps(l), _mm512_mul_ps(dw[j], dx), acc[j][t]);
                }
            }
        }
        let mut s = TileSums {
            v: [[0.0; TOKENS]; ROWS],
            rows: T,
        };
        for (v, accs) in s.v.iter_mut().zip(&acc) {
            for (o, &a) in v.iter_mut().zip(accs) {
                *o = reduce(a);
            }
        }
        s
    }

    /// The offset sums of one weight row for the [`OFF_TOKENS`] activation
    /// rows of `tile`, in block order (`planes`' `offsets += scale * g`).
    #[inline(always)]
    unsafe fn offsets(
        scheme: QuantScheme,
        a: &Acts,
        row: &Row,
        tile: usize,
        nb: usize,
    ) -> [f32; OFF_TOKENS] {
        let mut off = _mm512_setzero_ps();
        match scheme {
            QuantScheme::GgufQ4_0 | QuantScheme::GgufQ5_0 => {
                for b in 0..nb {
                    let dx = _mm512_loadu_ps(a.dt[tile * nb + b].as_ptr());
                    let g = _mm512_loadu_ps(a.gt[tile * nb + b].as_ptr());
                    let scale = _mm512_mul_ps(_mm512_set1_ps(row.dw[b]), dx);
                    off = _mm512_add_ps(off, _mm512_mul_ps(scale, g));
                }
            }
            QuantScheme::GgufQ4_1 => {
                for b in 0..nb {
                    let s = _mm512_loadu_ps(a.gt[tile * nb + b].as_ptr());
                    off = _mm512_add_ps(off, _mm512_mul_ps(_mm512_set1_ps(row.m[b]), s));
                }
            }
            _ => {}
        }
        let mut v = [0f32; OFF_TOKENS];
        _mm512_storeu_ps(v.as_mut_ptr(), off);
        v
    }
}
