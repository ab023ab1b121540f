//! Prefill's GEMM for the 32-weight formats (Q4_0, Q4_1, Q5_0, Q8_0) on
//! 512-bit AVX-512 VNNI, with sixteen weight rows across a vector's lanes.
//!
//! A tile whose vector holds one output's lanes (a block pair of one row,
//! as decode's GEMV has it) pays a convert, a scale product and an FMA for
//! every `vpdpbusd`: three of every four FMA-pipe operations are float
//! work, and the integer dots run at a quarter of their rate. Here lane
//! `r` of a vector holds four weights of row `r` of a 16-row panel and a
//! token's four activation bytes are broadcast (`vpdpbusd`'s memory
//! operand), so a block's eight steps finish sixteen whole block dots,
//! exact in integers; one convert, one scale product and one FMA a block
//! and token then finish them in f32: 8 + 3 operations for 512
//! multiply-adds of a token.
//!
//! - Per call, each panel's 16 rows are unpacked once into that layout,
//!   in a per-part scratch of ~10-30 KiB that stays in L1 / L2 while the
//!   call's tokens pass: each row's block as 32 unsigned bytes (Q8_0's
//!   signed weights biased by +128, the 4-bit formats' nibbles spread,
//!   Q5_0's fifth bits by one masked move), then an 8 x 8 dword transpose
//!   in each 256-bit half puts row `r` in lane `r`; the block scales (and
//!   Q4_1's mins) are widened sixteen at a time. (`vpgatherdd` over the
//!   rows instead took ~3x the time: at 8 tokens the products then cost
//!   ~3x `gemv512`'s in-place tiles, with the transpose ~1.2x.)
//! - A block's offset is integer too: its dot starts from `-o * sum x`
//!   (`o` = 128 for Q8_0's bias, 8 for Q4_0, 16 for Q5_0), so `d_w d_x
//!   sum (q - o) x` is one FMA; Q4_1's `m * s` is a second.
//! - Tiles of 8 / 4 / 2 / 1 tokens; a tile's sixteen outputs a token are
//!   one store into the token's output row.
//!
//! Numbers: each output is ggml's per-block formula `sum_b d_w d_x dot_b
//! (+ m_b s_b)` accumulated in block order in f32, the same for any thread
//! split or tile, but not `planes`' lane-wise bits (decode's GEMV and the
//! short pieces keep those): the two differ by f32 rounding of the sums.

use rlx_ir::quant::QuantScheme;

use super::out_cols::OutCols;
use super::planes::ActRow;

/// Whether [`rows`] runs weights of `scheme`.
pub(crate) fn runs(scheme: QuantScheme) -> bool {
    use QuantScheme::*;
    matches!(scheme, GgufQ4_0 | GgufQ4_1 | GgufQ5_0 | GgufQ8_0)
}

/// Weight rows of a panel: one per 32-bit lane of a 512-bit vector. A
/// part's row range should be a multiple of it (the last part's tail is
/// a masked panel).
pub(crate) const ROWS: usize = 16;

/// The activation side of a call, made once for every part: the tokens'
/// quants as they lie (read in place, four bytes a broadcast), and per
/// (token, block) the integer start of the block's dot, the block scale
/// and Q4_1's `s`.
pub(crate) struct Prepared<'a> {
    m: usize,
    k: usize,
    q: &'a [i8],
    init: Vec<i32>,
    dx: Vec<f32>,
    s: Vec<f32>,
}

/// Lays out the activation rows `acts` (all of one call, Q8_0 / Q8_1
/// quantized in blocks of 32, their group sums per block; `q` their quants
/// end to end) for [`rows`] on weights of `scheme`.
pub(crate) fn prepare<'a>(scheme: QuantScheme, q: &'a [i8], acts: &[ActRow]) -> Prepared<'a> {
    use QuantScheme::*;
    let k = acts.first().map_or(0, |a| a.q.len());
    let (m, nb) = (acts.len(), k / 32);
    assert!(q.len() >= m * k, "the rows' quants lie end to end");
    let offset = match scheme {
        GgufQ8_0 => 128,
        GgufQ4_0 => 8,
        GgufQ5_0 => 16,
        _ => 0,
    };
    let mut p = Prepared {
        m,
        k,
        q: &q[..m * k],
        init: Vec::with_capacity(m * nb),
        dx: Vec::with_capacity(m * nb),
        s: Vec::with_capacity(m * nb),
    };
    for a in acts {
        assert!(
            a.q.len() == k && a.gsum.len() == nb,
            "blocks of 32, sums per block"
        );
        for b in 0..nb {
            p.init.push(-offset * a.gsum[b]);
            p.dx.push(a.d[b]);
            p.s.push(if scheme == GgufQ4_1 { a.s[b] } else { 0.0 });
        }
    }
    p
}

/// Output columns `lo..hi` of weights `w` (`row_bytes` a row) against every
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
    use QuantScheme::*;
    match scheme {
        GgufQ4_0 => x86::rows::<{ x86::Q4_0 }>(w, row_bytes, (lo, hi), a, out),
        GgufQ4_1 => x86::rows::<{ x86::Q4_1 }>(w, row_bytes, (lo, hi), a, out),
        GgufQ5_0 => x86::rows::<{ x86::Q5_0 }>(w, row_bytes, (lo, hi), a, out),
        GgufQ8_0 => x86::rows::<{ x86::Q8_0 }>(w, row_bytes, (lo, hi), a, out),
        _ => unreachable!("`runs` holds for {scheme:?}"),
    }
}

#[cfg(target_arch = "x86_64")]
pub(super) mod x86 {
    use super::{OutCols, Prepared, ROWS};
    use std::arch::x86_64::*;

    pub(super) const Q4_0: u8 = 0;
    pub(super) const Q4_1: u8 = 1;
    pub(super) const Q5_0: u8 = 2;
    pub(super) const Q8_0: u8 = 3;

    const fn block_bytes(f: u8) -> usize {
        match f {
            Q4_0 => 18,
            Q4_1 => 20,
            Q5_0 => 22,
            _ => 34,
        }
    }

    /// Where a block's quant bytes start.
    const fn quants_at(f: u8) -> usize {
        match f {
            Q4_1 => 4,
            Q5_0 => 6,
            _ => 2,
        }
    }

    /// Tokens of the widest tile.
    const TOKENS: usize = 8;

    /// Sixteen weight rows in the lanes' layout.
    struct Panel {
        /// Block `b`'s step `g` at `8 b + g`: lane `r` holds row `r`'s
        /// weights `4 g..4 g + 4` of the block as unsigned bytes.
        q: Vec<__m512i>,
        /// Per block: the rows' scales.
        d: Vec<__m512>,
        /// Per block: the rows' mins (Q4_1).
        mins: Vec<__m512>,
    }

    /// `out[g]`'s lane `r` = dword `g` of row `r`, from `z[i]` = row `i`'s
    /// eight dwords then row `i + 8`'s: an 8 x 8 dword transpose in each
    /// 256-bit half.
    #[inline(always)]
    pub(in crate::kernels::quant_matmul) unsafe fn transpose(
        z: &[__m512i; 8],
        out: &mut [__m512i; 8],
    ) {
        let t0 = _mm512_unpacklo_epi32(z[0], z[1]);
        let t1 = _mm512_unpackhi_epi32(z[0], z[1]);
        let t2 = _mm512_unpacklo_epi32(z[2], z[3]);
        let t3 = _mm512_unpackhi_epi32(z[2], z[3]);
        let t4 = _mm512_unpacklo_epi32(z[4], z[5]);
        let t5 = _mm512_unpackhi_epi32(z[4], z[5]);
        let t6 = _mm512_unpacklo_epi32(z[6], z[7]);
        let t7 = _mm512_unpackhi_epi32(z[6], z[7]);
        // 128-bit lanes: rows 0-3 (u0-u3) / 4-7 (u4-u7) of dwords g | g + 4,
        // then rows 8-11 / 12-15 of the same.
        let u = [
            _mm512_unpacklo_epi64(t0, t2),
            _mm512_unpackhi_epi64(t0, t2),
            _mm512_unpacklo_epi64(t1, t3),
            _mm512_unpackhi_epi64(t1, t3),
            _mm512_unpacklo_epi64(t4, t6),
            _mm512_unpackhi_epi64(t4, t6),
            _mm512_unpacklo_epi64(t5, t7),
            _mm512_unpackhi_epi64(t5, t7),
        ];
        let first = _mm512_setr_epi64(0, 1, 8, 9, 4, 5, 12, 13);
        let second = _mm512_setr_epi64(2, 3, 10, 11, 6, 7, 14, 15);
        for g in 0..4 {
            out[g] = _mm512_permutex2var_epi64(u[g], first, u[g + 4]);
            out[g + 4] = _mm512_permutex2var_epi64(u[g], second, u[g + 4]);
        }
    }

    /// Unpacks rows `r0..r0 + live` (`live <= ROWS`) of `w` into `p`
    /// (the missing rows of a tail panel as zeros).
    // Index loops over rows and registers, as in `tile`.
    #[allow(clippy::needless_range_loop)]
    #[inline(always)]
    unsafe fn unpack<const F: u8>(
        w: &[u8],
        row_bytes: usize,
        r0: usize,
        live: usize,
        nb: usize,
        p: &mut Panel,
    ) {
        let bb = block_bytes(F);
        assert!(live <= ROWS && nb * bb <= row_bytes && w.len() >= (r0 + live) * row_bytes);
        // Row `r`'s block `b` at `rows[r] + b * step[r]`; a missing row
        // reads the zeros, whatever the block.
        let zeros = [0u8; 64];
        let mut rows = [zeros.as_ptr(); ROWS];
        let mut step = [0; ROWS];
        for r in 0..live {
            rows[r] = w.as_ptr().add((r0 + r) * row_bytes);
            step[r] = bb;
        }
        let blk = |r: usize, b: usize| rows[r].wrapping_add(b * step[r]);
        let nibble = _mm512_set1_epi8(0x0F);
        let bias = _mm512_set1_epi8(-128);
        let (first, second) = (
            _mm512_setr_epi64(0, 1, 8, 9, 2, 3, 10, 11),
            _mm512_setr_epi64(4, 5, 12, 13, 6, 7, 14, 15),
        );
        p.q.clear();
        p.d.clear();
        p.mins.clear();
        let mut z = [_mm512_setzero_si512(); 8];
        let mut out = [_mm512_setzero_si512(); 8];
        let mut halves = [[0u16; ROWS]; 2];
        for b in 0..nb {
            if F == Q8_0 {
                for i in 0..8 {
                    let lo = _mm256_loadu_si256(blk(i, b).add(2) as *const __m256i);
                    let hi = _mm256_loadu_si256(blk(i + 8, b).add(2) as *const __m256i);
                    let v = _mm512_inserti64x4::<1>(_mm512_castsi256_si512(lo), hi);
                    z[i] = _mm512_xor_si512(v, bias);
                }
            } else {
                let at = quants_at(F);
                for i in (0..8).step_by(2) {
                    // Rows i, i + 8, i + 1, i + 9; byte j of a row's quants
                    // holds weight j (low nibble) and j + 16 (high).
                    let v = _mm512_castsi128_si512(_mm_loadu_si128(
                        blk(i, b).add(at) as *const __m128i
                    ));
                    let v = _mm512_inserti32x4::<1>(
                        v,
                        _mm_loadu_si128(blk(i + 8, b).add(at) as *const __m128i),
                    );
                    let v = _mm512_inserti32x4::<2>(
                        v,
                        _mm_loadu_si128(blk(i + 1, b).add(at) as *const __m128i),
                    );
                    let v = _mm512_inserti32x4::<3>(
                        v,
                        _mm_loadu_si128(blk(i + 9, b).add(at) as *const __m128i),
                    );
                    let low = _mm512_and_si512(v, nibble);
                    let high = _mm512_and_si512(_mm512_srli_epi16::<4>(v), nibble);
                    z[i] = _mm512_permutex2var_epi64(low, first, high);
                    z[i + 1] = _mm512_permutex2var_epi64(low, second, high);
                    if F == Q5_0 {
                        // Weight j's fifth bit is bit j of the block's `qh`.
                        let qh =
                            |r: usize| u64::from((blk(r, b).add(2) as *const u32).read_unaligned());
                        let tens = _mm512_set1_epi8(0x10);
                        z[i] = _mm512_or_si512(
                            z[i],
                            _mm512_maskz_mov_epi8(qh(i) | qh(i + 8) << 32, tens),
                        );
                        z[i + 1] = _mm512_or_si512(
                            z[i + 1],
                            _mm512_maskz_mov_epi8(qh(i + 1) | qh(i + 9) << 32, tens),
                        );
                    }
                }
            }
            transpose(&z, &mut out);
            p.q.extend_from_slice(&out);
            for r in 0..ROWS {
                halves[0][r] = (blk(r, b) as *const u16).read_unaligned();
                halves[1][r] = (blk(r, b).add(2) as *const u16).read_unaligned();
            }
            p.d.push(_mm512_cvtph_ps(_mm256_loadu_si256(
                halves[0].as_ptr() as *const __m256i
            )));
            if F == Q4_1 {
                p.mins.push(_mm512_cvtph_ps(_mm256_loadu_si256(
                    halves[1].as_ptr() as *const __m256i
                )));
            }
        }
    }

    /// The panel against tokens `t0..t0 + T`: per token, the sixteen rows'
    /// sums.
    // Index loops over the register tile: iterators here have cost spills.
    #[allow(clippy::needless_range_loop)]
    #[inline(always)]
    unsafe fn tile<const F: u8, const T: usize>(
        p: &Panel,
        a: &Prepared,
        t0: usize,
        nb: usize,
    ) -> [__m512; T] {
        assert!(t0 + T <= a.m && a.q.len() >= a.m * a.k && a.init.len() >= a.m * nb);
        assert!(p.q.len() >= 8 * nb && p.d.len() >= nb && (F != Q4_1 || p.mins.len() >= nb));
        let k = a.k;
        let xq = a.q.as_ptr().add(t0 * k);
        let meta = t0 * nb;
        let mut acc = [_mm512_setzero_ps(); T];
        for b in 0..nb {
            let mut dots = [_mm512_setzero_si512(); T];
            for t in 0..T {
                dots[t] = _mm512_set1_epi32(*a.init.get_unchecked(meta + t * nb + b));
            }
            for g in 0..8 {
                let wv = *p.q.get_unchecked(8 * b + g);
                for t in 0..T {
                    let at = xq.add(t * k + 32 * b + 4 * g) as *const i32;
                    let x = _mm512_set1_epi32(at.read_unaligned());
                    dots[t] = _mm512_dpbusd_epi32(dots[t], wv, x);
                }
            }
            let dw = *p.d.get_unchecked(b);
            for t in 0..T {
                let at = meta + t * nb + b;
                let scale = _mm512_mul_ps(dw, _mm512_set1_ps(*a.dx.get_unchecked(at)));
                acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dots[t]), scale, acc[t]);
                if F == Q4_1 {
                    let s = _mm512_set1_ps(*a.s.get_unchecked(at));
                    acc[t] = _mm512_fmadd_ps(*p.mins.get_unchecked(b), s, acc[t]);
                }
            }
        }
        acc
    }

    /// Stores a tile's sums: token `t0 + t`'s columns `j0..j0 + live`.
    #[inline(always)]
    unsafe fn put<const T: usize>(
        sums: &[__m512; T],
        out: &mut OutCols,
        t0: usize,
        j0: usize,
        live: usize,
    ) {
        let mask: __mmask16 = if live == ROWS {
            0xFFFF
        } else {
            (1u16 << live) - 1
        };
        for (t, &v) in sums.iter().enumerate() {
            let row = out.row_mut(t0 + t, j0, live);
            _mm512_mask_storeu_ps(row.as_mut_ptr(), mask, v);
        }
    }

    /// One format family's side of [`drive`]: a panel of up to [`ROWS`]
    /// weight rows unpacked into the lanes' layout, and its products with
    /// tiles of tokens.
    pub(in crate::kernels::quant_matmul) trait Lanes {
        /// Unpacks rows `r0..r0 + live` (`live <= ROWS`) of `w`.
        unsafe fn unpack(&mut self, w: &[u8], row_bytes: usize, r0: usize, live: usize);
        /// The unpacked panel against tokens `t0..t0 + T`: per token, the
        /// rows' sums.
        unsafe fn tile<const T: usize>(&self, t0: usize) -> [__m512; T];
    }

    /// Output columns `lo..hi` of weights `w` against the call's `m` tokens:
    /// panel after panel (the next one's bytes prefetched), each against
    /// tiles of 8 / 4 / 2 / 1 tokens.
    #[inline(always)]
    pub(in crate::kernels::quant_matmul) unsafe fn drive<L: Lanes>(
        lanes: &mut L,
        w: &[u8],
        row_bytes: usize,
        (lo, hi): (usize, usize),
        m: usize,
        out: &mut OutCols,
    ) {
        let mut r0 = lo;
        while r0 < hi && m > 0 {
            let live = (hi - r0).min(ROWS);
            lanes.unpack(w, row_bytes, r0, live);
            // The next panel's bytes, read by its unpacking while this one
            // computes.
            let next = w.as_ptr().wrapping_add((r0 + live) * row_bytes);
            for at in (0..(hi - r0 - live).min(ROWS) * row_bytes).step_by(64) {
                _mm_prefetch::<_MM_HINT_T0>(next.wrapping_add(at) as *const i8);
            }
            let j0 = r0 - lo;
            let mut t0 = 0;
            while t0 < m {
                match m - t0 {
                    TOKENS.. => {
                        put(&lanes.tile::<TOKENS>(t0), out, t0, j0, live);
                        t0 += TOKENS;
                    }
                    4.. => {
                        put(&lanes.tile::<4>(t0), out, t0, j0, live);
                        t0 += 4;
                    }
                    2.. => {
                        put(&lanes.tile::<2>(t0), out, t0, j0, live);
                        t0 += 2;
                    }
                    _ => {
                        put(&lanes.tile::<1>(t0), out, t0, j0, live);
                        t0 += 1;
                    }
                }
            }
            r0 += live;
        }
    }

    /// A panel of the 32-weight formats with the call's activations.
    struct Job<'p, 'a, const F: u8> {
        panel: Panel,
        a: &'p Prepared<'a>,
        nb: usize,
    }

    impl<const F: u8> Lanes for Job<'_, '_, F> {
        #[inline(always)]
        unsafe fn unpack(&mut self, w: &[u8], row_bytes: usize, r0: usize, live: usize) {
            unpack::<F>(w, row_bytes, r0, live, self.nb, &mut self.panel)
        }

        #[inline(always)]
        unsafe fn tile<const T: usize>(&self, t0: usize) -> [__m512; T] {
            tile::<F, T>(&self.panel, self.a, t0, self.nb)
        }
    }

    #[inline(always)]
    pub(super) unsafe fn rows<const F: u8>(
        w: &[u8],
        row_bytes: usize,
        (lo, hi): (usize, usize),
        a: &Prepared,
        out: &mut OutCols,
    ) {
        let nb = a.k / 32;
        let panel = Panel {
            q: Vec::with_capacity(8 * nb),
            d: Vec::with_capacity(nb),
            mins: Vec::with_capacity(nb),
        };
        let mut job = Job::<F> { panel, a, nb };
        drive(&mut job, w, row_bytes, (lo, hi), a.m, out);
    }
}
