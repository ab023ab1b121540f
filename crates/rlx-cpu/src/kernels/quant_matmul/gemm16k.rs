//! Prefill's GEMM for the K-quants (Q4_K, Q5_K, Q6_K) on 512-bit AVX-512
//! VNNI, with sixteen weight rows across a vector's lanes (`gemm16`'s
//! layout for 256-weight blocks).
//!
//! Lane `r` of a step holds four weights of row `r`, the token's four
//! activation bytes are broadcast, and a 32-weight chunk's eight
//! `vpdpbusd` finish sixteen whole chunk dots in integers. As ggml sums a
//! block, the chunk dots are then scaled by their integer group scales
//! (`vpmulld`; Q6_K: two groups of 16 a chunk, each started from `-32 *
//! sum x`) and added in integers; one convert, scale product and FMA a
//! block and token finish it, and Q4_K / Q5_K's mins (`sum min * sum x`
//! over the block's eight groups, as `vpdpwssd` over i16 pairs) one more.
//!
//! - Per call, each panel of 16 rows is unpacked once: every chunk's 32
//!   unsigned quants (`chunk_quants`) per row, then `gemm16`'s
//!   8 x 8 dword transpose puts row `r` in lane `r`; the group scales,
//!   mins and block scales as vectors of the 16 rows.
//! - The activations are read in place (the quantizer's Q8_K quants, block
//!   scales and group sums).
//!
//! Numbers: each output is ggml's per-block formula `sum_b d_x (d_w
//! sum_g sc_g dot_g - dmin_w sum_g m_g sum_g x)` in f32 in block order,
//! the same for any thread split or tile, but not `planes`' lane-wise bits
//! (decode's GEMV keeps those): the two differ by f32 rounding.

use rlx_ir::quant::QuantScheme;

use super::act_quant::Act;
use super::out_cols::OutCols;

/// Activation rows from which a product runs here rather than in
/// `planes`' tiles (decode's single row: `gemv512k`).
pub(crate) const MIN_ROWS: usize = 4;

/// Whether [`rows`] runs weights of `scheme`.
pub(crate) fn runs(scheme: QuantScheme) -> bool {
    use QuantScheme::*;
    matches!(scheme, GgufQ4K | GgufQ5K | GgufQ6K)
}

/// The activation side of a call: the quantizer's Q8_K output read in
/// place, and Q4_K / Q5_K's group sums as i16 pairs.
pub(crate) struct Prepared<'a> {
    m: usize,
    k: usize,
    q: &'a [i8],
    d: &'a [f32],
    gsum: &'a [i32],
    /// Per token and block: four words of two group sums (Q4_K / Q5_K).
    pairs: Vec<i32>,
}

/// The activation side of `m` rows of `k` values quantized as `act` (Q8_K:
/// scales per 256, group sums per 32 for Q4_K / Q5_K, per 16 for Q6_K).
pub(crate) fn prepare(scheme: QuantScheme, act: &Act, m: usize, k: usize) -> Prepared<'_> {
    let nb = k / 256;
    let groups = if scheme == QuantScheme::GgufQ6K {
        16
    } else {
        8
    };
    assert!(
        act.q.len() >= m * k && act.d.len() >= m * nb && act.gsum.len() >= m * nb * groups,
        "Q8_K activations of {m} rows of {k}"
    );
    let pairs = if scheme == QuantScheme::GgufQ6K {
        Vec::new()
    } else {
        act.gsum[..m * nb * 8]
            .chunks_exact(2)
            .map(|g| pair(g[0], g[1]))
            .collect()
    };
    Prepared {
        m,
        k,
        q: &act.q[..m * k],
        d: &act.d[..m * nb],
        gsum: &act.gsum[..m * nb * groups],
        pairs,
    }
}

/// Two i16 in one i32: `lo` in the low half (what `vpdpwssd` pairs).
fn pair(lo: i32, hi: i32) -> i32 {
    i32::from(lo as i16 as u16) | (i32::from(hi as i16) << 16)
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
        GgufQ4K => x86::rows::<{ x86::Q4K }>(w, row_bytes, (lo, hi), a, out),
        GgufQ5K => x86::rows::<{ x86::Q5K }>(w, row_bytes, (lo, hi), a, out),
        GgufQ6K => x86::rows::<{ x86::Q6K }>(w, row_bytes, (lo, hi), a, out),
        _ => unreachable!("`runs` holds for {scheme:?}"),
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::super::gemm16::x86::{drive, transpose, Lanes};
    use super::super::gemm16::ROWS;
    use super::super::planes::x86::f16c_at;
    use super::super::planes::{block_weights, BlockWeights};
    use super::{pair, OutCols, Prepared};
    use rlx_ir::quant::QuantScheme;
    use std::arch::x86_64::*;

    pub(super) const Q4K: u8 = 0;
    pub(super) const Q5K: u8 = 1;
    pub(super) const Q6K: u8 = 2;

    const fn scheme(f: u8) -> QuantScheme {
        match f {
            Q4K => QuantScheme::GgufQ4K,
            Q5K => QuantScheme::GgufQ5K,
            _ => QuantScheme::GgufQ6K,
        }
    }

    /// Integer group scales a block: Q6_K's 16 groups of 16, else 8 of 32.
    const fn groups(f: u8) -> usize {
        if f == Q6K {
            16
        } else {
            8
        }
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

    /// Sixteen weight rows in the lanes' layout.
    struct Panel {
        /// Block `b`'s chunk `c` step `g` at `64 b + 8 c + g`: lane `r`
        /// holds row `r`'s weights `32 c + 4 g..+ 4` as unsigned bytes.
        q: Vec<__m512i>,
        /// Per block and group: the rows' integer scales.
        sc: Vec<__m512i>,
        /// Per block and pair of groups: the rows' mins as i16 pairs
        /// (Q4_K / Q5_K).
        mins: Vec<__m512i>,
        /// Per block: the rows' `d` and `dmin`.
        d: Vec<__m512>,
        dmin: Vec<__m512>,
    }

    /// The sixteen lanes `f(r)` as a vector.
    #[inline(always)]
    unsafe fn lanes_i32(v: &[i32; ROWS]) -> __m512i {
        _mm512_loadu_si512(v.as_ptr() as *const _)
    }

    /// Unpacks rows `r0..r0 + live` (`live <= ROWS`) of `w` into `p` (the
    /// missing rows of a tail panel as zeros).
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
        let s = scheme(F);
        let bb = s.gguf_block_bytes();
        assert!(live <= ROWS && nb * bb <= row_bytes && w.len() >= (r0 + live) * row_bytes);
        let zeros = [0u8; 256];
        assert!(bb <= zeros.len());
        let mut rows = [zeros.as_ptr(); ROWS];
        let mut step = [0; ROWS];
        for r in 0..live {
            rows[r] = w.as_ptr().add((r0 + r) * row_bytes);
            step[r] = bb;
        }
        p.q.clear();
        p.sc.clear();
        p.mins.clear();
        p.d.clear();
        p.dmin.clear();
        let mut z = [_mm512_setzero_si512(); 8];
        let mut out = [_mm512_setzero_si512(); 8];
        let mut facts = [BlockWeights {
            d: 0.0,
            m: 0.0,
            scales: [0; 8],
            groups: [0; 16],
        }; ROWS];
        for b in 0..nb {
            let blk: [*const u8; ROWS] = std::array::from_fn(|r| rows[r].wrapping_add(b * step[r]));
            for r in 0..ROWS {
                let bytes = std::slice::from_raw_parts(blk[r], bb);
                facts[r] = block_weights(s, bytes, |b, at| f16c_at(b, at));
            }
            for c in 0..8 {
                for i in 0..8 {
                    let lo = chunk_quants(s, blk[i], c);
                    let hi = chunk_quants(s, blk[i + 8], c);
                    z[i] = _mm512_inserti64x4::<1>(_mm512_castsi256_si512(lo), hi);
                }
                transpose(&z, &mut out);
                p.q.extend_from_slice(&out);
            }
            let mut v = [0i32; ROWS];
            for g in 0..groups(F) {
                for r in 0..ROWS {
                    v[r] = if F == Q6K {
                        facts[r].groups[g]
                    } else {
                        facts[r].scales[g]
                    };
                }
                p.sc.push(lanes_i32(&v));
            }
            if F != Q6K {
                for j in 0..4 {
                    for r in 0..ROWS {
                        v[r] = pair(facts[r].groups[2 * j], facts[r].groups[2 * j + 1]);
                    }
                    p.mins.push(lanes_i32(&v));
                }
            }
            let (mut d, mut dmin) = ([0f32; ROWS], [0f32; ROWS]);
            for r in 0..ROWS {
                (d[r], dmin[r]) = (facts[r].d, facts[r].m);
            }
            p.d.push(_mm512_loadu_ps(d.as_ptr()));
            p.dmin.push(_mm512_loadu_ps(dmin.as_ptr()));
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
        let (k, ng) = (a.k, groups(F));
        assert!(t0 + T <= a.m && a.q.len() >= a.m * k && a.d.len() >= a.m * nb);
        assert!(a.gsum.len() >= a.m * nb * ng && (F == Q6K || a.pairs.len() >= a.m * nb * 4));
        assert!(p.q.len() >= 64 * nb && p.sc.len() >= ng * nb && p.d.len() >= nb);
        assert!(F == Q6K || p.mins.len() >= 4 * nb);
        let xq = a.q.as_ptr().add(t0 * k);
        let mut acc = [_mm512_setzero_ps(); T];
        for b in 0..nb {
            let mut isum = [_mm512_setzero_si512(); T];
            for c in 0..8 {
                // Q6_K: the chunk's two groups of 16 (four steps each).
                let halves = if F == Q6K { 2 } else { 1 };
                for h in 0..halves {
                    let mut dots = [_mm512_setzero_si512(); T];
                    if F == Q6K {
                        for t in 0..T {
                            let s = *a
                                .gsum
                                .get_unchecked((t0 + t) * nb * 16 + b * 16 + 2 * c + h);
                            dots[t] = _mm512_set1_epi32(-32 * s);
                        }
                    }
                    let steps = 8 / halves;
                    for g in h * steps..(h + 1) * steps {
                        let wv = *p.q.get_unchecked(64 * b + 8 * c + g);
                        for t in 0..T {
                            let at = xq.add(t * k + 256 * b + 32 * c + 4 * g) as *const i32;
                            let xv = _mm512_set1_epi32(at.read_unaligned());
                            dots[t] = _mm512_dpbusd_epi32(dots[t], wv, xv);
                        }
                    }
                    let sc = *p.sc.get_unchecked(ng * b + halves * c + h);
                    for t in 0..T {
                        isum[t] = _mm512_add_epi32(isum[t], _mm512_mullo_epi32(sc, dots[t]));
                    }
                }
            }
            let d = *p.d.get_unchecked(b);
            for t in 0..T {
                let dx = _mm512_set1_ps(*a.d.get_unchecked((t0 + t) * nb + b));
                acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[t]), _mm512_mul_ps(d, dx), acc[t]);
                if F != Q6K {
                    let mut msum = _mm512_setzero_si512();
                    for j in 0..4 {
                        let g = _mm512_set1_epi32(
                            *a.pairs.get_unchecked((t0 + t) * nb * 4 + 4 * b + j),
                        );
                        msum = _mm512_dpwssd_epi32(msum, *p.mins.get_unchecked(4 * b + j), g);
                    }
                    let dmin = _mm512_mul_ps(*p.dmin.get_unchecked(b), dx);
                    acc[t] = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(msum), dmin, acc[t]);
                }
            }
        }
        acc
    }

    /// A panel of the K-quants with the call's activations.
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
        let nb = a.k / 256;
        let panel = Panel {
            q: Vec::with_capacity(64 * nb),
            sc: Vec::with_capacity(groups(F) * nb),
            mins: Vec::with_capacity(4 * nb),
            d: Vec::with_capacity(nb),
            dmin: Vec::with_capacity(nb),
        };
        let mut job = Job::<F> { panel, a, nb };
        drive(&mut job, w, row_bytes, (lo, hi), a.m, out);
    }
}
