//! ConvTranspose with a 2x2 window at stride 2 and no padding (U-Net's
//! up-convs), f32 on AVX-512: every output is written once, straight from
//! the image — no `col` matrix, no col2im pass. Each input pixel `(y, x)`
//! of channel `c` feeds the four outputs `(2y + ky, 2x + kx)`, so a tile
//! of 16 input pixels x 4 output channels keeps 16 accumulators (channel,
//! ky, kx), each summing its channel's products in input-channel order;
//! the kx = 0 / 1 pairs are interleaved in registers into two output rows
//! of 32 and stored as `bias + sum` (the general path's bits for the bias,
//! its GEMM's order aside). Work splits over the team by (image, input
//! row): each writes two whole output rows of every channel.
//!
//! Blocked output (`Up2::blocked`, planned by `nchwc_layout.rs` so U-Net's
//! skip concats stay in the NCHWc layout `[N][O/16][2H][2W][16]`): each
//! (image, input row) computes its two output rows of every channel into
//! a per-thread scratch `[O][2][2W]` as the NCHW path does (same sums, so
//! the same bits), then scatters them into its blocked rows
//! `[o/16][2y + ky][..][16]`, which no other input row touches.

use super::conv_nchwc::BLOCK;
use crate::team;

/// Output elements from which the rows split over the team.
const PARALLEL_GRAIN: usize = 1 << 15;

/// Output channels per register tile.
const OB: usize = 4;

/// Shape of one call: `x [n, c, h, w]`, weight `[c, o, 2, 2]`, `y [n, o,
/// 2h, 2w]`.
#[derive(Clone, Copy)]
pub(super) struct Up2 {
    pub(super) n: usize,
    pub(super) c: usize,
    pub(super) o: usize,
    pub(super) h: usize,
    pub(super) w: usize,
    /// Writes `y` in the NCHWc layout `[n][o/16][2h][2w][16]` (`o` a
    /// multiple of 16) instead of NCHW.
    pub(super) blocked: bool,
}

/// True when this kernel runs on this CPU.
pub(super) fn available() -> bool {
    super::conv_depthwise_small::avx512()
}

/// Runs the up-conv: `x`, `wt` and `y` hold exactly the shapes of `g`,
/// `bias` (if any) `o` values. Call only when [`available`].
pub(super) fn run(g: Up2, x: &[f32], wt: &[f32], bias: Option<&[f32]>, y: &mut [f32]) {
    assert!(available(), "conv_transpose_up2 without AVX-512");
    assert_eq!(x.len(), g.n * g.c * g.h * g.w, "up2 image");
    assert_eq!(wt.len(), g.c * g.o * 4, "up2 weight");
    assert_eq!(y.len(), g.n * g.o * 4 * g.h * g.w, "up2 output");
    assert!(bias.is_none_or(|b| b.len() == g.o), "up2 bias");
    assert!(
        !g.blocked || g.o.is_multiple_of(BLOCK),
        "up2 blocked output"
    );
    let rows = g.n * g.h;
    let parts = if y.len() >= PARALLEL_GRAIN && rows > 1 {
        team::threads()
    } else {
        1
    };
    let ranges = team::split(rows, parts, 1);
    let out = team::Disjoint::new(y);
    let (wo, plane_out) = (2 * g.w, 4 * g.h * g.w);
    team::parallel_for(ranges.len(), |part| {
        // Blocked: this part's two output rows of every channel, NCHW.
        let mut scratch = vec![0f32; if g.blocked { g.o * 2 * wo } else { 0 }];
        for row in ranges[part].clone() {
            let (n, yi) = (row / g.h, row % g.h);
            if g.blocked {
                let tmp = team::Disjoint::new(&mut scratch);
                let at = |o: usize, ky: usize| (o * 2 + ky) * wo;
                // SAFETY: AVX-512F checked above; the scratch is this part's own.
                #[cfg(target_arch = "x86_64")]
                unsafe {
                    input_row(g, n, yi, x, wt, bias, &tmp, &at)
                };
                // SAFETY: AVX-512F checked above; rows 2 * yi + ky of image
                // n, this (image, row)'s own.
                #[cfg(target_arch = "x86_64")]
                unsafe {
                    scatter_blocked(g, n, yi, &scratch, &out)
                };
            } else {
                let at = |o: usize, ky: usize| (n * g.o + o) * plane_out + (2 * yi + ky) * wo;
                // SAFETY: AVX-512F checked above; each (image, input row)
                // writes only its own two output rows of each channel.
                #[cfg(target_arch = "x86_64")]
                unsafe {
                    input_row(g, n, yi, x, wt, bias, &out, &at)
                };
            }
        }
    });
}

/// Moves input row `yi` of image `n`'s output rows from `rows` (`[o][2][2w]`)
/// into the blocked output rows `[n][o/16][2 yi + ky][2w][16]`: 16 pixels
/// of a block's 16 channel rows at a time through the 16 x 16 register
/// transpose, the last `2w % 16` pixels lane by lane. U-Net b1's three
/// up-convs, 1 thread: NCHW 0.16-0.19 ms each; blocked with a scalar
/// scatter 0.19-0.33; with this one 0.18-0.29 (the 16-channel one at
/// 128 x 128 still ~0.1 ms over its NCHW form: storing the tile's
/// registers into the blocked rows directly is next).
///
/// # Safety
/// AVX-512F; no other part writes this (image, row)'s output rows.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn scatter_blocked(g: Up2, n: usize, yi: usize, rows: &[f32], out: &team::Disjoint<f32>) {
    use std::arch::x86_64::*;
    let wo = 2 * g.w;
    let whole = wo - wo % BLOCK;
    let block_plane = 4 * g.h * g.w * BLOCK;
    for ob in 0..g.o / BLOCK {
        for ky in 0..2 {
            let at = (n * (g.o / BLOCK) + ob) * block_plane + (2 * yi + ky) * wo * BLOCK;
            // SAFETY: this (image, row)'s own blocked row (the caller's contract).
            let dst = unsafe { out.range(at..at + wo * BLOCK) };
            let src = |l: usize| &rows[((ob * BLOCK + l) * 2 + ky) * wo..][..wo];
            for x0 in (0..whole).step_by(BLOCK) {
                // SAFETY: 16 floats of each channel row from `x0 + 16 <= wo`.
                let r: [__m512; BLOCK] =
                    std::array::from_fn(|l| unsafe { _mm512_loadu_ps(src(l)[x0..].as_ptr()) });
                let v = super::transpose16::transpose16(&r);
                for (j, v) in v.iter().enumerate() {
                    // SAFETY: pixel `x0 + j < wo` of the row: 16 floats.
                    unsafe { _mm512_storeu_ps(dst[(x0 + j) * BLOCK..].as_mut_ptr(), *v) };
                }
            }
            for l in 0..BLOCK {
                for (xo, &v) in src(l).iter().enumerate().skip(whole) {
                    dst[xo * BLOCK + l] = v;
                }
            }
        }
    }
}

/// Every output of input row `yi` of image `n`: its two output rows in
/// each channel, output row `ky` of channel `o` starting at `row_at(o, ky)`
/// in `out` (NCHW rows of `2w`).
///
/// # Safety
/// AVX-512F; no other part writes those rows.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[allow(clippy::too_many_arguments)]
unsafe fn input_row(
    g: Up2,
    n: usize,
    yi: usize,
    x: &[f32],
    wt: &[f32],
    bias: Option<&[f32]>,
    out: &team::Disjoint<f32>,
    row_at: &dyn Fn(usize, usize) -> usize,
) {
    let xrow = &x[(n * g.c * g.h + yi) * g.w..];
    for x0 in (0..g.w).step_by(16) {
        let len = (g.w - x0).min(16);
        let mut o0 = 0;
        while o0 < g.o {
            let ob = (g.o - o0).min(OB);
            // The output rows (channel o0 + j, ky) at column 2 * x0.
            let dst = |j: usize, ky: usize| {
                let at = row_at(o0 + j, ky) + 2 * x0;
                // SAFETY: this (image, row)'s own output row (the caller's contract).
                unsafe { out.range(at..at + 2 * len) }
            };
            let b = |j: usize| bias.map_or(0.0, |b| b[o0 + j]);
            if ob == OB {
                // SAFETY: AVX-512F (this function's feature).
                unsafe { tile::<OB>(g, &xrow[x0..], len, &wt[o0 * 4..], &b, &dst) };
            } else {
                for j in 0..ob {
                    let (b1, d1) = (|_: usize| b(j), |_: usize, ky: usize| dst(j, ky));
                    // SAFETY: as above.
                    unsafe { tile::<1>(g, &xrow[x0..], len, &wt[(o0 + j) * 4..], &b1, &d1) };
                }
            }
            o0 += ob;
        }
    }
}

/// `B` output channels x `len` (<= 16) input pixels from `x` (row-start
/// of channel 0; channel `c` at `c * h * w`), weight taps from `wt`
/// (channel `c`'s at `c * o * 4`), bias `b(j)`, rows `dst(j, ky)`.
///
/// # Safety
/// AVX-512F.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
unsafe fn tile<'a, const B: usize>(
    g: Up2,
    x: &[f32],
    len: usize,
    wt: &[f32],
    b: &impl Fn(usize) -> f32,
    dst: &impl Fn(usize, usize) -> &'a mut [f32],
) {
    use std::arch::x86_64::*;
    let plane = g.h * g.w;
    assert!(
        len >= 1 && (g.c - 1) * plane + len <= x.len(),
        "up2 tile image"
    );
    assert!((g.c - 1) * g.o * 4 + 4 * B <= wt.len(), "up2 tile weight");
    let mask: __mmask16 = ((1u32 << len) - 1) as __mmask16;
    let mut acc = [[_mm512_setzero_ps(); 4]; B];
    let (xp, wp) = (x.as_ptr(), wt.as_ptr());
    for c in 0..g.c {
        // SAFETY: in bounds by the asserts above (masked lanes not read).
        let v = unsafe { _mm512_maskz_loadu_ps(mask, xp.add(c * plane)) };
        let wc = unsafe { wp.add(c * g.o * 4) };
        for (j, a) in acc.iter_mut().enumerate() {
            for (t, a) in a.iter_mut().enumerate() {
                // SAFETY: as above.
                let w = _mm512_set1_ps(unsafe { *wc.add(j * 4 + t) });
                *a = _mm512_fmadd_ps(w, v, *a);
            }
        }
    }
    // Lane pairs (kx = 0, kx = 1) of pixels 0..8 / 8..16.
    let lo = _mm512_set_epi32(23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
    let hi = _mm512_set_epi32(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8);
    let m_lo = ((1u32 << (2 * len).min(16)) - 1) as __mmask16;
    let m_hi = ((1u32 << (2 * len).saturating_sub(16)) - 1) as __mmask16;
    for (j, a) in acc.iter().enumerate() {
        let bj = _mm512_set1_ps(b(j));
        for ky in 0..2 {
            let (a0, a1) = (a[2 * ky], a[2 * ky + 1]);
            let row = dst(j, ky);
            let p = row.as_mut_ptr();
            // SAFETY: `row` holds 2 * len floats; masked lanes not written.
            unsafe {
                let v = _mm512_add_ps(bj, _mm512_permutex2var_ps(a0, lo, a1));
                _mm512_mask_storeu_ps(p, m_lo, v);
                if m_hi != 0 {
                    let v = _mm512_add_ps(bj, _mm512_permutex2var_ps(a0, hi, a1));
                    _mm512_mask_storeu_ps(p.add(16), m_hi, v);
                }
            }
        }
    }
}
