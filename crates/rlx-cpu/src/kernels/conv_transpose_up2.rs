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
//! skip concats stay in the NCHWc layout `[N][O/16][2H][2W][16]`): the
//! lanes hold output channels instead. The weight is packed per call
//! `[O/16][C][ky][kx][16]` (a vector is one tap of 16 channels, in a
//! per-thread buffer kept across calls); a tile of [`PIX`] input pixels
//! x one channel block keeps 4 x `PIX` accumulators, each input pixel
//! broadcast against the block's 4 tap vectors, so an accumulator is one
//! blocked output pixel, stored as `bias + sum` straight into the rows
//! `[o/16][2y + ky][2x + kx][16]` of its (image, input row), which no
//! other input row touches. Every sum runs over the input channels in
//! the same order from zero as the NCHW tile's, so the two layouts hold
//! the same bits.

// The vector kernels are x86-only (AVX2 / AVX-512); elsewhere the op
// never routes here, and the plans and buffers they read go unused.
#![cfg_attr(not(target_arch = "x86_64"), allow(dead_code, unused))]

use super::conv_nchwc::BLOCK;
use super::winograd::with_scratch;
use crate::team;
use std::cell::Cell;

/// Output elements from which the rows split over the team.
const PARALLEL_GRAIN: usize = 1 << 15;

/// Output channels per register tile (NCHW output).
const OB: usize = 4;

/// Input pixels per register tile (blocked output): 16 accumulators.
/// U-Net b1's three up-convs, 1 thread: NCHW 0.16-0.19 ms each; blocked
/// through an NCHW scratch and the 16 x 16 register transpose 0.18-0.29;
/// these tiles 0.16-0.17 (6 pixels, 24 accumulators: no faster).
const PIX: usize = 4;

thread_local! {
    /// The calling thread's packed weight of the blocked path, reused by
    /// the next call.
    static PACKED: Cell<Vec<f64>> = const { Cell::new(Vec::new()) };
}

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
    if g.blocked {
        // The weight with 16 output channels per vector, for this call.
        return with_scratch(&PACKED, g.c * g.o * 4, |packed: &mut [f32]| {
            pack_blocked(g, wt, packed);
            let packed = &*packed;
            team::parallel_for(ranges.len(), |part| {
                for row in ranges[part].clone() {
                    // SAFETY: AVX-512F checked above; rows 2 * yi + ky of
                    // image n, this (image, row)'s own.
                    #[cfg(target_arch = "x86_64")]
                    unsafe {
                        input_row_blocked(g, row / g.h, row % g.h, x, packed, bias, &out)
                    };
                }
            });
        });
    }
    team::parallel_for(ranges.len(), |part| {
        for row in ranges[part].clone() {
            let (n, yi) = (row / g.h, row % g.h);
            let at = |o: usize, ky: usize| (n * g.o + o) * plane_out + (2 * yi + ky) * wo;
            // SAFETY: AVX-512F checked above; each (image, input row)
            // writes only its own two output rows of each channel.
            #[cfg(target_arch = "x86_64")]
            unsafe {
                input_row(g, n, yi, x, wt, bias, &out, &at)
            };
        }
    });
}

/// `wt [c][o][2][2]` as `packed [o/16][c][ky][kx][16]`: a vector holds
/// one tap of 16 output channels.
fn pack_blocked(g: Up2, wt: &[f32], packed: &mut [f32]) {
    for (i, dst) in packed.chunks_exact_mut(4 * BLOCK).enumerate() {
        let (ob, c) = (i / g.c, i % g.c);
        for (t, dst) in dst.chunks_exact_mut(BLOCK).enumerate() {
            for (l, d) in dst.iter_mut().enumerate() {
                *d = wt[(c * g.o + ob * BLOCK + l) * 4 + t];
            }
        }
    }
}

/// Every output of input row `yi` of image `n` into the blocked output
/// rows `[n][o/16][2 yi + ky][2w][16]`, tiles of [`PIX`] input pixels x
/// one 16-channel block (the row's last `w % PIX` pixels a narrower tile).
///
/// # Safety
/// AVX-512F; no other part writes those rows.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn input_row_blocked(
    g: Up2,
    n: usize,
    yi: usize,
    x: &[f32],
    packed: &[f32],
    bias: Option<&[f32]>,
    out: &team::Disjoint<f32>,
) {
    let xrow = &x[(n * g.c * g.h + yi) * g.w..];
    let (blocks, wo) = (g.o / BLOCK, 2 * g.w);
    for ob in 0..blocks {
        let w = &packed[ob * g.c * 4 * BLOCK..][..g.c * 4 * BLOCK];
        let b = bias.map(|b| &b[ob * BLOCK..][..BLOCK]);
        let row_at = |ky: usize| ((n * blocks + ob) * 2 * g.h + 2 * yi + ky) * wo * BLOCK;
        let mut x0 = 0;
        while x0 < g.w {
            let len = (g.w - x0).min(PIX);
            let dst = |ky: usize| {
                let at = row_at(ky) + 2 * x0 * BLOCK;
                // SAFETY: this (image, row)'s own blocked row (the caller's contract).
                unsafe { out.range(at..at + 2 * len * BLOCK) }
            };
            let (xs, d) = (&xrow[x0..], [dst(0), dst(1)]);
            // SAFETY: AVX-512F (this function's feature).
            unsafe {
                match len {
                    PIX => tile_blocked::<PIX>(g, xs, w, b, d),
                    3 => tile_blocked::<3>(g, xs, w, b, d),
                    2 => tile_blocked::<2>(g, xs, w, b, d),
                    _ => tile_blocked::<1>(g, xs, w, b, d),
                }
            }
            x0 += len;
        }
    }
}

/// `P` input pixels from `x` (row-start of channel 0; channel `c` at
/// `c * h * w`) x 16 output channels, weight vectors `w [c][4][16]`,
/// bias `b` (16 or none), written to the blocked output rows `dst[ky]`
/// (`2P` pixels of 16 channels each). Each accumulator sums its products
/// in input-channel order from zero, as [`tile`] does, so the bits match
/// the NCHW path's.
///
/// # Safety
/// AVX-512F.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
unsafe fn tile_blocked<const P: usize>(
    g: Up2,
    x: &[f32],
    w: &[f32],
    b: Option<&[f32]>,
    dst: [&mut [f32]; 2],
) {
    use std::arch::x86_64::*;
    let plane = g.h * g.w;
    assert!((g.c - 1) * plane + P <= x.len(), "up2 blocked tile image");
    assert!(w.len() == g.c * 4 * BLOCK, "up2 blocked tile weight");
    assert!(
        dst.iter().all(|d| d.len() == 2 * P * BLOCK),
        "up2 blocked tile rows"
    );
    let mut acc = [[_mm512_setzero_ps(); 4]; P];
    let (xp, wp) = (x.as_ptr(), w.as_ptr());
    for c in 0..g.c {
        // SAFETY: in bounds by the asserts above.
        let wv: [__m512; 4] =
            std::array::from_fn(|t| unsafe { _mm512_loadu_ps(wp.add((c * 4 + t) * BLOCK)) });
        for (p, a) in acc.iter_mut().enumerate() {
            // SAFETY: as above.
            let v = _mm512_set1_ps(unsafe { *xp.add(c * plane + p) });
            for (a, &wt) in a.iter_mut().zip(&wv) {
                *a = _mm512_fmadd_ps(wt, v, *a);
            }
        }
    }
    // SAFETY: 16 bias values when present.
    let bv = b.map_or(_mm512_setzero_ps(), |b| unsafe {
        _mm512_loadu_ps(b.as_ptr())
    });
    for (ky, row) in dst.into_iter().enumerate() {
        let p = row.as_mut_ptr();
        for (px, a) in acc.iter().enumerate() {
            for kx in 0..2 {
                // SAFETY: output pixel 2 px + kx < 2P of the row.
                unsafe {
                    _mm512_storeu_ps(
                        p.add((2 * px + kx) * BLOCK),
                        _mm512_add_ps(bv, a[2 * ky + kx]),
                    )
                };
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
