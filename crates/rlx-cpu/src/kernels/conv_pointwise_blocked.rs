//! 1x1 stride-1 unpadded conv (f32, AVX-512) where its image or its output
//! is in the NCHWc blocked layout `[N][C/16][H][W][16]` (`nchwc_layout.rs`
//! plans which), as MLAS's NCHWc pointwise kernel runs MobileNet's expand /
//! project convs: `out[ob][p][16] = bias + sum_ic W[ob*16.., ic] * x[ic, p]`.
//!
//! The weight is packed once (by the executor) as `[O/16][C][16]`: for each
//! input channel the 16 outputs of a block are one vector. A register tile
//! of up to 4 output blocks x 6 pixels is started from the bias and, per
//! input channel in ascending order, takes one FMA per accumulator with the
//! input value broadcast from the image as it lies: a blocked image is
//! read at `[ic/16][p][ic%16]`, an NCHW one at `[ic][p]`, so neither is
//! packed per call. A blocked output is stored as it is; an NCHW output
//! goes through a per-thread `[pixels][16]` slab transposed 16 x 16 in
//! registers into the planes. A max-then-min chain (ReLU6,
//! [`super::conv_epilogue::RowChain::clamp`]) is clamped in the tile's
//! registers as the last channel run stores them. Any other row-chain
//! epilogue (residual) runs on the blocked rows while they are in cache
//! ([`super::conv_epilogue::RowChain::apply_blocked`]), for an NCHW
//! output on its plane rows after the transpose (an NCHW residual is then
//! read as rows). A last partial output block (24 / 40 outputs, NCHW
//! output only) is computed from zero-padded weights and bias, and only
//! its live planes are stored.
//!
//! Each output is the sum of the NCHW 1x1 kernel ([`super::conv_pointwise`]):
//! the bias, then one FMA per input channel in order.
//!
//! Threads split the images, or (fewer images than threads) each image's
//! pixels where it outweighs the weight (MobileNetV2's 14 x 14 maps and
//! up; either output layout), else its output blocks (whole planes).

// The kernels exist on x86-64 only; elsewhere the entry points are never
// reached (callers check `available()`), so their plumbing is unused there.
#![cfg_attr(
    not(target_arch = "x86_64"),
    allow(dead_code, unused, unreachable_code)
)]

use super::conv2d::Conv2d;
use super::conv_epilogue::ConvEpilogue;
use super::conv_nchwc::{BlockedIo, BLOCK};
use super::KernelResult;
use crate::team;

/// Output blocks of the widest register tile.
const FB: usize = 4;

/// Pixels of a register tile.
const NP: usize = 6;

/// Pixels of one chunk of the output slab (a multiple of 16 and of `NP`).
const CHUNK: usize = 96;

/// Input channels of one run over a chunk's tiles (a multiple of 16): the
/// widest tile's weights of a run, 4 x 128 x 16 floats, are 32 KiB (L1).
const IC_RUN: usize = 128;

impl Conv2d {
    /// True when [`Self::pointwise_blocked`] can run this conv on this CPU
    /// (any input channel count; outputs off whole 16-channel blocks when
    /// the last block's pad lanes are at most a third of those computed,
    /// e.g. 24 or 40 outputs, not 8 or 20; a blocked side needs whole
    /// blocks).
    pub(crate) fn pointwise_blocked_shape(&self) -> bool {
        let lanes = self.o.next_multiple_of(BLOCK);
        self.is_pointwise()
            && self.groups == 1
            && self.o > 0
            && 3 * self.o >= 2 * lanes
            && super::conv_depthwise_small::avx512()
    }

    /// True when `len` floats are this conv's weight as [`pack`] lays it
    /// out and the layouts `io` fit its channel counts.
    pub(super) fn takes_pointwise_blocked(&self, len: usize, io: BlockedIo) -> bool {
        self.pointwise_blocked_shape()
            && len == self.o.next_multiple_of(BLOCK) * self.c
            && (!io.input || self.c.is_multiple_of(BLOCK))
            && (!io.output || self.o.is_multiple_of(BLOCK))
    }

    /// `y = conv(x, wp) + bias`, then `epi`; `wp` packed by [`pack`], `x`
    /// / `y` in the layouts of `io` (see the module doc).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn pointwise_blocked(
        &self,
        x: &[f32],
        wp: &[f32],
        bias: Option<&[f32]>,
        y: &mut [f32],
        epi: Option<&ConvEpilogue>,
        io: BlockedIo,
    ) -> KernelResult {
        if !self.takes_pointwise_blocked(wp.len(), io) {
            return Err(fail!(
                "conv: a blocked 1x1 weight of {} floats for {} x {} ({io:?})",
                wp.len(),
                self.o,
                self.c
            ));
        }
        let chain = epi.and_then(|e| e.rows());
        if io.output && epi.is_some() && chain.is_none() {
            return Err(fail!(
                "conv: a blocked 1x1 output needs a row-chain epilogue"
            ));
        }
        let (c, o, pixels) = (self.c, self.o, self.oh * self.ow);
        if pixels == 0 || self.batch == 0 {
            return Ok(());
        }
        let blocks = o.div_ceil(BLOCK);
        // A last block of fewer than 16 outputs (NCHW output only: a
        // project to 24 channels) computes its pad lanes from zero weights
        // and a zero bias and never stores them.
        let padded_bias = bias.filter(|_| !o.is_multiple_of(BLOCK)).map(|b| {
            let mut v = b[..o].to_vec();
            v.resize(blocks * BLOCK, 0.0);
            v
        });
        let bias = padded_bias.as_deref().or(bias);
        let threads = team::threads();
        let chunks = if self.batch >= threads {
            1
        } else {
            threads.div_ceil(self.batch)
        };
        // Fewer images than threads: split the larger operand, as the NCHW
        // 1x1 kernel does (`conv_pointwise::Split`): an image bigger than
        // the weight by pixels (every part runs the full-width tiles over
        // its pixels, re-reading the weight), else by whole blocks, not
        // whole tiles (32 / 64 output channels still split over two
        // threads; their parts run narrower tiles, re-reading the image).
        // Either output layout splits by pixels: each part then reads the
        // rows of the image its producer's part wrote (the same split).
        let per_chunk = epi.is_none() || chain.is_some();
        // A max-then-min chain (ReLU6) is clamped in the tile's registers
        // as it is stored: two passes over each stored chunk fewer (they
        // took ~4 % of MobileNetV2 b1, in AVX2 row loops).
        let clamp = chain.and_then(|c| c.clamp());
        let rest = chain.filter(|_| clamp.is_none());
        let by_pixels = chunks > 1 && per_chunk && pixels > o && pixels >= chunks * BLOCK;
        let ranges = if by_pixels {
            team::split(pixels, chunks, BLOCK)
        } else {
            team::split(blocks, chunks.min(blocks), 1)
        };
        let jobs = self.batch * ranges.len();
        let parts = team::split(jobs, threads.min(jobs), 1);
        let shared = team::Disjoint::new(y);
        team::try_parallel_for(parts.len(), |part| {
            let mut slab = if io.output && !by_pixels {
                Vec::new()
            } else {
                vec![0f32; FB * CHUNK * BLOCK]
            };
            // NCHW output split by pixels: a block's 16 planes of a chunk.
            let mut planes = if by_pixels && !io.output {
                vec![0f32; BLOCK * CHUNK]
            } else {
                Vec::new()
            };
            for job in parts[part].clone() {
                let (n, range) = (job / ranges.len(), ranges[job % ranges.len()].clone());
                let xn = &x[n * c * pixels..][..c * pixels];
                if by_pixels {
                    // Pixels `range` of every block: each chunk computed into
                    // the slab, then each block's run of pixels (contiguous,
                    // disjoint from the other parts') copied into place, or
                    // (NCHW) transposed and each plane's run copied.
                    for q0 in range.clone().step_by(CHUNK) {
                        let px = q0..(q0 + CHUNK).min(range.end);
                        for ob in (0..blocks).step_by(FB) {
                            let fb = FB.min(blocks - ob);
                            let w = &wp[ob * c * BLOCK..][..fb * c * BLOCK];
                            let b = bias.map(|b| &b[ob * BLOCK..][..fb * BLOCK]);
                            // SAFETY: AVX-512F (`takes_pointwise_blocked`); the
                            // slices hold every tap and output (checked inside).
                            let dst = (&mut slab[..], CHUNK * BLOCK, 0);
                            unsafe { self.chunk(xn, io.input, w, b, px.clone(), dst, fb, clamp) };
                            for f in 0..fb {
                                let rows = &mut slab[f * CHUNK * BLOCK..][..px.len() * BLOCK];
                                let c0 = (ob + f) * BLOCK;
                                if !io.output {
                                    let live = (o - c0).min(BLOCK);
                                    // SAFETY: AVX-512F, as above.
                                    unsafe { scatter(rows, CHUNK, 0..px.len(), &mut planes, live) };
                                    if let Some(chain) = rest {
                                        // On the NCHW rows: an NCHW residual
                                        // read as rows, not gathered per lane.
                                        let ch = c0..c0 + live;
                                        chain.apply(&mut planes, CHUNK, n, ch, px.clone());
                                    }
                                    for (i, run) in planes.chunks(CHUNK).take(live).enumerate() {
                                        let at = (n * o + (ob + f) * BLOCK + i) * pixels + px.start;
                                        // SAFETY: pixels `px` of one plane of
                                        // one image: no other part touches them.
                                        let dst = unsafe { shared.range(at..at + px.len()) };
                                        dst.copy_from_slice(&run[..px.len()]);
                                    }
                                    continue;
                                }
                                if let Some(chain) = rest {
                                    chain.apply_blocked(rows, n, c0, px.clone());
                                }
                                let at = (n * o + c0) * pixels + px.start * BLOCK;
                                // SAFETY: pixels `px` of one block of one
                                // image: no other part touches them.
                                unsafe { shared.range(at..at + rows.len()) }.copy_from_slice(rows);
                            }
                        }
                    }
                    continue;
                }
                let obs = range;
                let span = 0..pixels;
                let chans = obs.start * BLOCK..o.min(obs.end * BLOCK);
                let y0 = (n * o + chans.start) * pixels;
                // SAFETY: each job owns its blocks (planes) of one image.
                let yj = unsafe { shared.range(y0..y0 + chans.len() * pixels) };
                for q0 in span.clone().step_by(CHUNK) {
                    let px = q0..(q0 + CHUNK).min(span.end);
                    for ob in obs.clone().step_by(FB) {
                        let fb = FB.min(obs.end - ob);
                        let w = &wp[ob * c * BLOCK..][..fb * c * BLOCK];
                        let b = bias.map(|b| &b[ob * BLOCK..][..fb * BLOCK]);
                        let blocks = (ob - obs.start)..(ob - obs.start + fb);
                        let row_chain = rest;
                        let chain = |rows: &mut [f32], f: usize| {
                            if let Some(chain) = rest {
                                chain.apply_blocked(rows, n, (ob + f) * BLOCK, px.clone());
                            }
                        };
                        if io.output {
                            let out = &mut yj[blocks.start * BLOCK * pixels..];
                            // SAFETY: AVX-512F (`takes_pointwise_blocked`);
                            // the slices hold every tap and output (checked
                            // inside).
                            let dst = (&mut out[..], pixels * BLOCK, q0);
                            unsafe { self.chunk(xn, io.input, w, b, px.clone(), dst, fb, clamp) };
                            for f in 0..fb {
                                chain(&mut out[(f * pixels + q0) * BLOCK..][..px.len() * BLOCK], f);
                            }
                        } else {
                            // SAFETY: as above.
                            let dst = (&mut slab[..], CHUNK * BLOCK, 0);
                            unsafe { self.chunk(xn, io.input, w, b, px.clone(), dst, fb, clamp) };
                            for (f, blk) in blocks.enumerate() {
                                let rows = &mut slab[f * CHUNK * BLOCK..][..px.len() * BLOCK];
                                let planes = &mut yj[blk * BLOCK * pixels..];
                                let live = (chans.len() - blk * BLOCK).min(BLOCK);
                                // SAFETY: AVX-512F, as above.
                                unsafe { scatter(rows, pixels, px.clone(), planes, live) };
                                // The chain on the NCHW rows (an NCHW
                                // residual read as rows, not per lane).
                                if let Some(chain) = row_chain {
                                    let ch = (ob + f) * BLOCK..(ob + f) * BLOCK + live;
                                    let rows = &mut planes[px.start..];
                                    chain.apply(rows, pixels, n, ch, px.clone());
                                }
                            }
                        }
                    }
                }
                if let Some(epi) = epi.filter(|_| chain.is_none()) {
                    epi.apply(yj, n, chans)?;
                }
            }
            Ok(())
        })
    }

    /// Pixels `px` of output blocks `0..fb` of `w` into `out` (block `f`
    /// at `f * ostride`, pixel `p` at `(p - px.start + at) * 16`), each sum
    /// clamped to `clamp`'s `[lo, hi]` as it is stored (the last channel run).
    ///
    /// # Safety
    /// AVX-512F and FMA present.
    #[allow(clippy::too_many_arguments)]
    unsafe fn chunk(
        &self,
        xn: &[f32],
        blocked: bool,
        w: &[f32],
        bias: Option<&[f32]>,
        px: std::ops::Range<usize>,
        (out, ostride, at): (&mut [f32], usize, usize),
        fb: usize,
        clamp: Option<(f32, f32)>,
    ) {
        let (c, pixels) = (self.c, self.oh * self.ow);
        assert!(xn.len() >= c * pixels && w.len() >= fb * c * BLOCK);
        assert!(out.len() >= (fb - 1) * ostride + (at + px.len()) * BLOCK);
        assert!(bias.is_none_or(|b| b.len() >= fb * BLOCK));
        // Input channels in runs of `IC_RUN`: the tiles' weights of a run
        // (<= 32 KiB) stay in L1 while every pixel tile passes over them;
        // a later run resumes each tile from its stored partial sums (the
        // same FMA chain: bias, then the channels in order).
        for k0 in (0..c).step_by(IC_RUN) {
            let kc = IC_RUN.min(c - k0);
            for p in px.clone().step_by(NP) {
                let np = NP.min(px.end - p);
                let (xp, groups, gstride, gl, cstride) = if blocked {
                    (
                        k0 * pixels + p * BLOCK,
                        kc / BLOCK,
                        pixels * BLOCK,
                        BLOCK,
                        1,
                    )
                } else {
                    (k0 * pixels + p, 1, 0, kc, pixels)
                };
                let args = TileArgs {
                    // SAFETY: pixel `p` of channel `k0` (the asserts above).
                    x: unsafe { xn.as_ptr().add(xp) },
                    groups,
                    gstride,
                    gl,
                    cstride,
                    // SAFETY: channel `k0` of block 0 (asserted).
                    w: unsafe { w.as_ptr().add(k0 * BLOCK) },
                    wstride: c * BLOCK,
                    bias: bias.map(|b| b.as_ptr()),
                    resume: k0 > 0,
                    clamp: clamp.filter(|_| k0 + kc == c),
                    // SAFETY: inside `out` (asserted).
                    out: unsafe { out.as_mut_ptr().add((p - px.start + at) * BLOCK) },
                    ostride,
                };
                // SAFETY: the caller's ISA; every tap of the tile is in `xn`,
                // every store in `out`.
                unsafe { dispatch(fb, np, blocked, &args) };
            }
        }
    }
}

/// One register tile's pointers and strides (floats).
struct TileArgs {
    /// The tile's first pixel of input channel 0.
    x: *const f32,
    /// Input channels as `groups` runs of `gl`, run `g` at `g * gstride`,
    /// channel `l` of a run at `l * cstride`.
    groups: usize,
    gstride: usize,
    gl: usize,
    cstride: usize,
    /// Output block 0's weights (`[C][16]`), block `f` at `f * wstride`.
    w: *const f32,
    wstride: usize,
    /// The tile's 16 x `fb` biases.
    bias: Option<*const f32>,
    /// Start from the partial sums stored at `out` instead of the bias.
    resume: bool,
    /// `nan_min(nan_max(sum, lo), hi)` on each stored sum (the chain's
    /// ReLU6 bits), or the sums as they are.
    clamp: Option<(f32, f32)>,
    /// Output block 0's first pixel, block `f` at `f * ostride`.
    out: *mut f32,
    ostride: usize,
}

/// Runs the `fb` x `np` tile on a blocked (pixel stride 16) or NCHW
/// (pixel stride 1) image.
///
/// # Safety
/// As [`tile`].
unsafe fn dispatch(fb: usize, np: usize, blocked: bool, a: &TileArgs) {
    macro_rules! by_np {
        ($fb:literal, $ps:literal) => {
            // SAFETY: the caller's.
            unsafe {
                match np {
                    1 => tile::<$fb, 1, $ps>(a),
                    2 => tile::<$fb, 2, $ps>(a),
                    3 => tile::<$fb, 3, $ps>(a),
                    4 => tile::<$fb, 4, $ps>(a),
                    5 => tile::<$fb, 5, $ps>(a),
                    _ => tile::<$fb, 6, $ps>(a),
                }
            }
        };
    }
    match (fb, blocked) {
        (1, true) => by_np!(1, 16),
        (2, true) => by_np!(2, 16),
        (3, true) => by_np!(3, 16),
        (_, true) => by_np!(4, 16),
        (1, false) => by_np!(1, 1),
        (2, false) => by_np!(2, 1),
        (3, false) => by_np!(3, 1),
        (_, false) => by_np!(4, 1),
    }
}

/// `F` output blocks x `P` pixels (input pixel stride `PS`): the bias,
/// then one FMA per input channel in order, stored as `[F][P][16]`.
///
/// # Safety
/// AVX-512F and FMA present; every pointer of `a` covers what it reads.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,fma")]
#[allow(clippy::needless_range_loop)] // `u` also places the broadcast
unsafe fn tile<const F: usize, const P: usize, const PS: usize>(a: &TileArgs) {
    use std::arch::x86_64::*;
    // SAFETY (all loads / stores): the caller's bounds.
    let mut acc: [[__m512; P]; F] = std::array::from_fn(|f| match a.bias {
        _ if a.resume => std::array::from_fn(|u| unsafe {
            _mm512_loadu_ps(a.out.add(f * a.ostride + u * BLOCK))
        }),
        Some(b) => [unsafe { _mm512_loadu_ps(b.add(f * BLOCK)) }; P],
        None => [_mm512_setzero_ps(); P],
    });
    let mut w = a.w;
    for g in 0..a.groups {
        let xg = unsafe { a.x.add(g * a.gstride) };
        for l in 0..a.gl {
            let xl = unsafe { xg.add(l * a.cstride) };
            let wv: [__m512; F] =
                std::array::from_fn(|f| unsafe { _mm512_loadu_ps(w.add(f * a.wstride)) });
            for u in 0..P {
                let xv = _mm512_set1_ps(unsafe { *xl.add(u * PS) });
                for f in 0..F {
                    acc[f][u] = _mm512_fmadd_ps(wv[f], xv, acc[f][u]);
                }
            }
            w = unsafe { w.add(BLOCK) };
        }
    }
    let clamp = a
        .clamp
        .map(|(lo, hi)| (_mm512_set1_ps(lo), _mm512_set1_ps(hi)));
    for (f, row) in acc.iter().enumerate() {
        for (u, &v) in row.iter().enumerate() {
            let v = match clamp {
                Some((lo, hi)) => unsafe { super::conv_depthwise3x3::clamp16(v, lo, hi) },
                None => v,
            };
            unsafe { _mm512_storeu_ps(a.out.add(f * a.ostride + u * BLOCK), v) };
        }
    }
}

#[cfg(not(target_arch = "x86_64"))]
unsafe fn tile<const F: usize, const P: usize, const PS: usize>(_: &TileArgs) {
    unreachable!("the blocked 1x1 kernel is routed on AVX-512 only")
}

/// The `[px][16]` rows transposed into pixels `px` of the first `live`
/// (<= 16) planes of `planes` (`pixels` each).
///
/// # Safety
/// AVX-512F present.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn scatter(
    rows: &[f32],
    pixels: usize,
    px: std::ops::Range<usize>,
    planes: &mut [f32],
    live_planes: usize,
) {
    use std::arch::x86_64::*;
    assert!(live_planes <= BLOCK && rows.len() >= px.len() * BLOCK);
    assert!(planes.len() >= (live_planes.max(1) - 1) * pixels + px.end);
    for j0 in (0..px.len()).step_by(BLOCK) {
        let live = (px.len() - j0).min(BLOCK);
        let mask = ((1u32 << live) - 1) as __mmask16;
        // SAFETY: `live` rows from `j0` are in `rows` (the rest zero).
        let r: [__m512; BLOCK] = std::array::from_fn(|k| {
            if k < live {
                unsafe { _mm512_loadu_ps(rows.as_ptr().add((j0 + k) * BLOCK)) }
            } else {
                _mm512_setzero_ps()
            }
        });
        let v = super::transpose16::transpose16(&r);
        for (i, &ch) in v.iter().enumerate().take(live_planes) {
            // SAFETY: `live` pixels of plane `i` from `px.start + j0`.
            let at = unsafe { planes.as_mut_ptr().add(i * pixels + px.start + j0) };
            unsafe { _mm512_mask_storeu_ps(at, mask, ch) };
        }
    }
}

#[cfg(not(target_arch = "x86_64"))]
unsafe fn scatter(_: &[f32], _: usize, _: std::ops::Range<usize>, _: &mut [f32], _: usize) {
    unreachable!("the blocked 1x1 kernel is routed on AVX-512 only")
}

/// The `[O, C]` weight `wt` as `[O/16][C][16]` (a last partial block's
/// lanes past `O` zero).
pub(crate) fn pack(wt: &[f32], o: usize, c: usize) -> Vec<f32> {
    let mut wp = vec![0f32; o.next_multiple_of(BLOCK) * c];
    for ob in 0..o.div_ceil(BLOCK) {
        for ic in 0..c {
            for l in 0..BLOCK.min(o - ob * BLOCK) {
                wp[(ob * c + ic) * BLOCK + l] = wt[(ob * BLOCK + l) * c + ic];
            }
        }
    }
    wp
}

/// The conv's geometry when this kernel can run it with a weight of
/// `w_len` floats.
fn fits(
    win: &rlx_ir::op::Window,
    groups: usize,
    (x, w, out): (&[usize], &[usize], &[usize]),
    w_len: usize,
) -> Option<Conv2d> {
    let g2 = super::conv_packed::geometry(win, groups, x, w, out)?;
    let valid = w_len == g2.o * g2.c && w.iter().product::<usize>() == w_len;
    (valid && g2.pointwise_blocked_shape()).then_some(g2)
}

/// True when this kernel can run the 1x1 conv (`w_len`: the weight's
/// floats): the layout plan asks this before anything is packed.
pub(crate) fn runs(
    win: &rlx_ir::op::Window,
    groups: usize,
    dims: (&[usize], &[usize], &[usize]),
    w_len: usize,
) -> bool {
    fits(win, groups, dims, w_len).is_some()
}

/// The packed weight of a constant-weight 1x1 conv this kernel [`runs`]
/// (for the executor to prepare once when the layout plan gives the conv
/// a blocked side).
pub(crate) fn prepared_weights(
    win: &rlx_ir::op::Window,
    groups: usize,
    dims: (&[usize], &[usize], &[usize]),
    wt: &[f32],
) -> Option<Vec<f32>> {
    fits(win, groups, dims, wt.len()).map(|g2| pack(wt, g2.o, g2.c))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::kernels::conv::{conv_geom, conv_prepared, Prepared};
    use crate::kernels::conv_epilogue::tests::check_fused_conv_fixture;
    use crate::kernels::{View, ViewMut};
    use rlx_ir::op::{ChainStep, Window};
    use rlx_ir::Op;

    const FIXTURE: &str = include_str!("../../tests/fixtures/conv_pointwise/blocked_cases.json");
    const CASES: usize = 15;

    /// `x` (`[n][c][pixels]`) as `[n][c/16][pixels][16]`.
    pub(crate) fn to_blocked(x: &[f32], c: usize, pixels: usize) -> Vec<f32> {
        let mut out = vec![0f32; x.len()];
        for (i, &v) in x.iter().enumerate() {
            let (n, ch, p) = (i / (c * pixels), i / pixels % c, i % pixels);
            out[(n * c + ch / BLOCK * BLOCK) * pixels + p * BLOCK + ch % BLOCK] = v;
        }
        out
    }

    /// The inverse of [`to_blocked`].
    pub(crate) fn from_blocked(y: &[f32], c: usize, pixels: usize) -> Vec<f32> {
        let mut out = vec![0f32; y.len()];
        for (i, o) in out.iter_mut().enumerate() {
            let (n, ch, p) = (i / (c * pixels), i / pixels % c, i % pixels);
            *o = y[(n * c + ch / BLOCK * BLOCK) * pixels + p * BLOCK + ch % BLOCK];
        }
        out
    }

    /// Runs `f` on `x` / `y` with `io`'s sides reordered into the blocked
    /// layout around it (`c` / `o` channels, `pin` / `pout` pixels).
    pub(crate) fn with_blocked(
        io: BlockedIo,
        (c, pin, x): (usize, usize, &[f32]),
        (o, pout, y): (usize, usize, &mut [f32]),
        f: impl FnOnce(&[f32], &mut [f32]) -> KernelResult,
    ) -> KernelResult {
        let xb = if io.input {
            to_blocked(x, c, pin)
        } else {
            x.to_vec()
        };
        let mut yb = vec![f32::NAN; y.len()];
        f(&xb, &mut yb)?;
        y.copy_from_slice(&if io.output {
            from_blocked(&yb, o, pout)
        } else {
            yb
        });
        Ok(())
    }

    /// A fused conv through this kernel with the sides of `io` that the
    /// case allows blocked (whole input blocks; a row-chain epilogue).
    fn forced(
        io: BlockedIo,
        window: &Window,
        groups: usize,
        bias: bool,
        steps: &[ChainStep],
        ins: &[View],
        out: &mut ViewMut,
    ) -> KernelResult {
        let (conv_ins, extras) = ins.split_at(rlx_ir::ops::fused_conv::conv_arity(bias));
        let g = conv_geom(window, None, groups, conv_ins, out)?;
        let g2 = g.two_d.clone().expect("2-D");
        let epi = ConvEpilogue::new(steps, extras, out.dims, out.dtype).expect("broadcasts");
        let io = BlockedIo {
            input: io.input && g2.c.is_multiple_of(BLOCK),
            output: io.output && epi.rows().is_some() && g2.o.is_multiple_of(BLOCK),
        };
        let wp = pack(conv_ins[1].slice(), g2.o, g2.c);
        let bias = conv_ins.get(2).map(|b| b.slice::<f32>());
        let (pin, pout) = (g2.h * g2.w, g2.oh * g2.ow);
        let xs = (g2.c, pin, conv_ins[0].slice::<f32>());
        with_blocked(io, xs, (g2.o, pout, out.slice()), |x, y| {
            g2.pointwise_blocked(x, &wp, bias, y, Some(&epi), io)
        })
    }

    /// tools/gen_fused_conv_fixtures.py's POINTWISE_BLOCKED_CASES (numpy
    /// float64 loops) through this kernel at 1 to 3 threads with each
    /// side NCHW or blocked: 1-4 block tiles, pixel tails of the 6-pixel
    /// tile and the 96-pixel chunk, batch 2 / 3, row-chain (ReLU6,
    /// residual, per-channel scale) and whole-plane (SiLU) epilogues; batch
    /// 1 split by 16-pixel-aligned ranges at 2 / 3 threads; 24 / 40 / 56
    /// outputs (a last partial block: NCHW output only, its pad lanes
    /// never stored); 200 / 288 input channels (runs of 128 resumed from
    /// stored partial sums); ReLU6 and a clip to [-0.5, 1] on 144 input
    /// channels, clamped in registers by the last run only.
    #[test]
    fn blocked_pointwise_matches_numpy() {
        if !super::super::conv_depthwise_small::avx512() {
            return;
        }
        for (input, output) in [(false, false), (true, false), (false, true), (true, true)] {
            let io = BlockedIo { input, output };
            let kernel = move |w: &Window, g, b, s: &[ChainStep], i: &[View], o: &mut ViewMut| {
                forced(io, w, g, b, s, i, o)
            };
            check_fused_conv_fixture(FIXTURE, CASES, &kernel);
        }
    }

    /// Through `conv_prepared` with the executor's packed weight; a
    /// weight of the wrong size and a blocked input off a whole block are
    /// errors.
    #[test]
    fn prepared_and_errors() {
        if !super::super::conv_depthwise_small::avx512() {
            return;
        }
        let window = Window {
            kernel: vec![],
            stride: vec![1, 1],
            padding: vec![(0, 0); 2],
            dilation: vec![1, 1],
        };
        let prepared = |window: &Window,
                        groups,
                        bias,
                        steps: &[ChainStep],
                        ins: &[View],
                        out: &mut ViewMut| {
            let dims = (ins[0].dims, ins[1].dims, out.dims);
            let wp = prepared_weights(window, groups, dims, ins[1].slice::<f32>());
            let wp = wp.expect("every case takes the blocked 1x1 kernel");
            let op = Op::FusedConv {
                window: window.clone(),
                groups,
                bias,
                epilogue: steps.to_vec(),
            };
            conv_prepared(
                &op,
                Prepared::PointwiseBlocked(&wp, BlockedIo::default()),
                ins,
                out,
            )
        };
        check_fused_conv_fixture(FIXTURE, CASES, &prepared);
        let geom = |c: usize| {
            let (x, w, y) = ([1, c, 4, 4], [32, c, 1, 1], [1, 32, 4, 4]);
            super::super::conv_packed::geometry(&window, 1, &x, &w, &y).expect("2-D")
        };
        let (x, mut y) = (vec![0f32; 24 * 16], vec![0f32; 32 * 16]);
        let g = geom(24);
        let wp = pack(&vec![0f32; 32 * 24], 32, 24);
        let err = g
            .pointwise_blocked(&x, &wp[1..], None, &mut y, None, BlockedIo::default())
            .unwrap_err();
        assert!(err.to_string().contains("blocked 1x1 weight"), "{err}");
        let input = BlockedIo {
            input: true,
            output: false,
        };
        assert!(g
            .pointwise_blocked(&x, &wp, None, &mut y, None, input)
            .is_err());
        assert!(g
            .pointwise_blocked(&x, &wp, None, &mut y, None, BlockedIo::default())
            .is_ok());
    }
}
