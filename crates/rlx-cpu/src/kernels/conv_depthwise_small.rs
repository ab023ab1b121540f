//! Depthwise 3x3 conv (stride 1 or 2, multiplier 1) on small planes, with
//! 16 channels in the vector lanes (AVX-512), as MLAS's NCHWc kernels run
//! MobileNet. On a 14 x 14 or 7 x 7 plane the per-plane kernel
//! ([`super::conv_depthwise3x3`]) is bound by its edge columns and per-row
//! setup (3-7 ns an output against 0.7 on 112 x 112); here each group of
//! 16 channels of an image is transposed 16 x 16 in registers into a
//! zero-padded `[rows][cols][16]` tile (the padding written once per
//! call), every output is nine 16-lane FMAs with no edge case, and the
//! `[pixels][16]` result is transposed back into the NCHW planes. The
//! tile and the result buffer are kept per thread across calls
//! (`winograd::with_scratch`), the tile zeroed at the start of each call.
//!
//! Each output is the per-plane kernel's FMA chain (the bias, then the
//! taps in row-major kernel order) with the taps in the padding added as
//! `w * 0`: the same value, except that an infinite weight over the
//! padding gives NaN here (as numpy / ONNX Runtime's padded conv does)
//! and a `-0` accumulator can become `+0`. The ReLU6 clamp is applied in
//! registers before the store, any other row chain on the 16 planes
//! while they are in cache.
//!
//! A blocked image (the layout plan's `[N][C/16][H][W][16]`) is already
//! `[pixels][16]`: its taps are read in place, no tile
//! ([`super::conv_depthwise_in_place`]: the edge columns load zeros for
//! the padding taps, the same chain).
//!
//! Larger planes (MobileNetV2's 56 x 56 and 112 x 112) run here only with
//! a blocked side: one (image, band of output rows, group) job at a time
//! (band-major); an NCHW image's tile then holds the band's input rows
//! (halo included), so it stays in L2. The NCHW-only convs on those planes
//! stay on the per-plane kernel.

// The vector kernels are x86-only (AVX2 / AVX-512); elsewhere the op
// never routes here, and the plans and buffers they read go unused.
#![cfg_attr(not(target_arch = "x86_64"), allow(dead_code, unused))]

use super::conv2d::Conv2d;
use super::conv_epilogue::ConvEpilogue;
use super::conv_nchwc::BlockedIo;
use super::winograd::with_scratch;
use super::KernelResult;
use crate::team;
use std::cell::Cell;
use std::ops::Range;

/// Lanes of a vector: channels per group.
pub(super) const LANES: usize = 16;

/// Largest input plane (pixels) this kernel takes: up to 28 x 28 (its
/// tile stays in L2; measured cut, see BENCHMARKS.md).
const MAX_PLANE: usize = 28 * 28;

/// Output pixels computed together (independent FMA chains in flight).
pub(super) const UNROLL: usize = 4;

/// Floats of a band's tile on planes over [`MAX_PLANE`] (128 KiB: L2;
/// 17 input rows of a 112-wide plane: MobileNetV2's 112 / 56 depthwise
/// convs ran 10-20 % faster at 1 thread than with 64 KiB, whose 8-row
/// bands re-copy more halo rows, and no slower at 2; 256 KiB was slower;
/// measured when a blocked image was copied too: it now only sizes the
/// jobs of one).
const BAND_FLOATS: usize = 32 * 1024;

thread_local! {
    /// The calling thread's zero-padded tile, kept for the next call:
    /// fresh ones (up to 128 KiB a part) cost page faults on every call
    /// (MobileNetV2's 96-channel stride-2 conv swung 0.14-0.26 ms).
    static TILE: Cell<Vec<f64>> = const { Cell::new(Vec::new()) };
    /// The calling thread's `[pixels][16]` results, kept likewise.
    static PIXELS: Cell<Vec<f64>> = const { Cell::new(Vec::new()) };
}

/// The zero-padded tile one channel group is copied into.
#[derive(Clone, Copy)]
struct Tile {
    /// Rows and columns, padding included.
    rows: usize,
    cols: usize,
}

impl Conv2d {
    /// True when [`Self::depthwise_small`] computes this conv on this CPU.
    pub(super) fn depthwise_small_wins(&self) -> bool {
        self.depthwise_lanes_fit() && self.h * self.w <= MAX_PLANE
    }

    /// A 3x3 depthwise conv of multiplier 1 on AVX-512: this kernel's
    /// shapes, any plane size.
    fn depthwise_lanes_fit(&self) -> bool {
        self.is_depthwise3x3() && self.o == self.c && avx512()
    }

    /// True when this kernel can run the conv with a blocked image and / or
    /// output (whole 16-channel groups; larger planes by row bands).
    pub(super) fn depthwise_blocked_fits(&self) -> bool {
        self.depthwise_lanes_fit() && (self.h * self.w <= MAX_PLANE || self.c.is_multiple_of(LANES))
    }

    /// Output rows per band: all of them on a small plane, else as many as
    /// keep the band's tile within [`BAND_FLOATS`] (at least one).
    fn band_rows(&self) -> usize {
        if self.h * self.w <= MAX_PLANE {
            return self.oh.max(1);
        }
        let row = self.small_tile_cols() * LANES;
        let in_rows = (BAND_FLOATS / row).max(3);
        ((in_rows - 3) / self.s.0 + 1).min(self.oh.max(1))
    }

    /// Tile columns: every input column and every tap read.
    fn small_tile_cols(&self) -> usize {
        let reach = (self.ow.max(1) - 1) * self.s.0 + 3;
        reach.max(self.p.1 + self.w)
    }

    /// The zero-padded input tile of a band of `band` output rows: every
    /// input pixel and every tap read (one band: the whole plane).
    fn small_tile(&self) -> Tile {
        let band = self.band_rows();
        let rows = (band - 1) * self.s.0 + 3;
        Tile {
            rows: if band >= self.oh {
                rows.max(self.p.0 + self.h)
            } else {
                rows
            },
            cols: self.small_tile_cols(),
        }
    }

    /// Floats of a part's buffers for [`Self::group`]: the zero-padded
    /// tile (with a blocked image: one zero row, which stands for the
    /// padding rows of the image read in place) and, for an NCHW output, a
    /// band's `[pixels][16]` results.
    fn scratch_lens(&self, io: BlockedIo, band: usize) -> (usize, usize) {
        let tile = self.small_tile();
        let xt = match io.input {
            true => self.w * LANES,
            false => tile.rows * tile.cols * LANES,
        };
        let yt = match io.output {
            true => 0,
            false => (band * self.ow).next_multiple_of(LANES) * LANES,
        };
        (xt, yt)
    }

    /// True when [`Self::depthwise_small`] can read / write the blocked
    /// layouts of `io` (whole 16-channel groups; a row-chain epilogue
    /// for a blocked output).
    /// (An NCHW output is owned a whole group at a time, so any epilogue
    /// runs on it, on a plane of any size.)
    pub(super) fn depthwise_small_takes(&self, io: BlockedIo, epi: Option<&ConvEpilogue>) -> bool {
        self.depthwise_blocked_fits()
            && ((!io.input && !io.output) || self.c.is_multiple_of(LANES))
            && (!io.output || epi.is_none_or(|e| e.rows().is_some()))
    }

    /// `y = depthwise(x, wt) + bias`, then `epi`, `x` / `y` in the layouts
    /// of `io` (a blocked image is read in place, a
    /// blocked output is the tile's `[pixels][16]` result as it is); the
    /// parts of the team take (image, 16-channel group, band) jobs.
    pub(super) fn depthwise_small(
        &self,
        x: &[f32],
        wt: &[f32],
        bias: Option<&[f32]>,
        y: &mut [f32],
        epi: Option<&ConvEpilogue>,
        io: BlockedIo,
    ) -> KernelResult {
        let pout = self.oh * self.ow;
        if pout == 0 || self.c == 0 || self.batch == 0 {
            return Ok(());
        }
        if !self.depthwise_small_takes(io, epi) {
            return Err(fail!(
                "conv: the small-plane depthwise kernel does not take this conv ({io:?}; it needs AVX-512)"
            ));
        }
        let groups = self.c.div_ceil(LANES);
        let band = self.band_rows();
        // A blocked output splits by bands too (each band a run of its
        // block); NCHW planes are owned whole, their bands run in turn.
        // Jobs go band-major (every group of a band, then the next band):
        // at batch 1 a part takes a range of rows, the rows its producer's
        // part wrote when that split by pixels (the 1x1 kernels).
        let bands = if io.output { self.oh.div_ceil(band) } else { 1 };
        let jobs = self.batch * groups * bands;
        let parts = team::split(jobs, team::threads(), 1);
        let shared = team::Disjoint::new(y);
        let (xt_len, yt_len) = self.scratch_lens(io, band);
        team::try_parallel_for(parts.len(), |part| {
            with_scratch(&TILE, xt_len, |xt: &mut [f32]| {
                // The tile's padding columns (a blocked image's zero row) are
                // written nowhere else. The pixel buffer's stale pixels past
                // a band are loaded but never stored.
                xt.fill(0.0);
                with_scratch(&PIXELS, yt_len, |yt: &mut [f32]| {
                    self.jobs(x, wt, bias, &shared, (xt, yt), parts[part].clone(), epi, io)
                })
            })
        })
    }

    /// The (image, band, group) jobs `jobs` of one part of
    /// [`Self::depthwise_small`] (`shared` its output), through the part's
    /// buffers `xt` / `yt`.
    #[allow(clippy::too_many_arguments)]
    fn jobs(
        &self,
        x: &[f32],
        wt: &[f32],
        bias: Option<&[f32]>,
        shared: &team::Disjoint<f32>,
        (xt, yt): (&mut [f32], &mut [f32]),
        jobs: Range<usize>,
        epi: Option<&ConvEpilogue>,
        io: BlockedIo,
    ) -> KernelResult {
        let (pin, pout) = (self.h * self.w, self.oh * self.ow);
        let groups = self.c.div_ceil(LANES);
        let band = self.band_rows();
        let bands = if io.output { self.oh.div_ceil(band) } else { 1 };
        let chain = epi.and_then(|e| e.rows());
        let clamp = chain.and_then(|c| c.clamp());
        {
            for job in jobs {
                let (n, b, g) = (job / (groups * bands), job / groups % bands, job % groups);
                let ch = g * LANES..self.c.min((g + 1) * LANES);
                let rows = match io.output {
                    true => b * band..self.oh.min((b + 1) * band),
                    false => 0..self.oh,
                };
                let px = rows.start * self.ow..rows.end * self.ow;
                let plane0 = n * self.c + ch.start;
                // SAFETY: each job owns its channels' planes of one image,
                // or (blocked output) its band of their block.
                let yg = unsafe {
                    match io.output {
                        true => {
                            let at = plane0 * pout + px.start * LANES;
                            shared.range(at..at + px.len() * LANES)
                        }
                        false => shared.range(plane0 * pout..(plane0 + ch.len()) * pout),
                    }
                };
                let xg = &x[plane0 * pin..];
                for sub in rows.clone().step_by(band) {
                    let oys = sub..rows.end.min(sub + band);
                    let at = match io.output {
                        true => (oys.start - rows.start) * self.ow * LANES,
                        false => oys.start * self.ow,
                    };
                    let bufs = (&mut xt[..], &mut yt[..]);
                    let ys = &mut yg[at..];
                    // SAFETY: AVX-512F checked above.
                    unsafe { self.group(xg, wt, bias, ch.clone(), clamp, bufs, ys, io, oys) };
                }
                if let Some(chain) = chain.filter(|_| clamp.is_none() && io.output) {
                    chain.apply_blocked(yg, n, ch.start, px);
                    continue;
                }
                if let Some(chain) = chain.filter(|_| clamp.is_none()) {
                    chain.apply(yg, pout, n, ch.clone(), 0..pout);
                } else if let Some(epi) = epi.filter(|_| chain.is_none()) {
                    // NCHW: `yg` is the group's whole planes.
                    epi.apply(yg, n, ch)?;
                }
            }
        }
        Ok(())
    }

    /// Output rows `oys` of channels `ch` of one image, through the tile `xt`
    /// (the band's input rows, zero rows where they fall in the padding) and
    /// the pixel buffer `yt`: `xg` from its first plane, or (blocked image)
    /// its block, `[pixels][16]`, read in place with no tile
    /// ([`super::conv_depthwise_in_place`]; `xt` is then a zero row); `yg`
    /// the band of its planes (from the band's first pixel of the first
    /// plane), or (blocked output) of its block, written by the taps
    /// directly.
    ///
    /// # Safety
    /// AVX-512F present; `ch` a whole group of 16 channels when `io` has a
    /// blocked side.
    #[cfg(target_arch = "x86_64")]
    #[allow(clippy::too_many_arguments)]
    unsafe fn group(
        &self,
        xg: &[f32],
        wt: &[f32],
        bias: Option<&[f32]>,
        ch: Range<usize>,
        clamp: Option<(f32, f32)>,
        (xt, yt): (&mut [f32], &mut [f32]),
        yg: &mut [f32],
        io: BlockedIo,
        oys: Range<usize>,
    ) {
        let (wv, bv) = lanes(wt, bias, ch.clone());
        let tile = self.small_tile();
        if !io.input {
            // SAFETY: the caller's.
            unsafe { self.fill_tile(xg, ch.len(), tile, xt, oys.start) };
        }
        let xt = &*xt;
        let taps = |dst: &mut [f32]| {
            // SAFETY: the caller's; `dst` holds the band's `[pixels][16]`;
            // with a blocked image `xt` is a zero row (`scratch`).
            unsafe {
                match io.input {
                    true => self.taps_in_place(xg, xt, &wv, &bv, clamp, dst, oys.clone()),
                    false => self.taps(xt, tile, &wv, &bv, clamp, dst, oys.clone()),
                }
            }
        };
        if io.output {
            taps(yg);
        } else {
            taps(yt);
            // SAFETY: the caller's.
            unsafe { scatter(yt, self.oh * self.ow, oys.len() * self.ow, ch.len(), yg) };
        }
    }

    #[cfg(not(target_arch = "x86_64"))]
    #[allow(clippy::too_many_arguments)]
    unsafe fn group(
        &self,
        _: &[f32],
        _: &[f32],
        _: Option<&[f32]>,
        _: Range<usize>,
        _: Option<(f32, f32)>,
        _: (&mut [f32], &mut [f32]),
        _: &mut [f32],
        _: BlockedIo,
        _: Range<usize>,
    ) {
        unreachable!("the small-plane depthwise kernel is routed on AVX-512 only")
    }

    /// The tile of the band from output row `oy0`: its rows in the padding
    /// zeroed, the `chans` planes of `xg` transposed into the rest.
    ///
    /// # Safety
    /// AVX-512F present.
    #[cfg(target_arch = "x86_64")]
    unsafe fn fill_tile(&self, xg: &[f32], chans: usize, tile: Tile, xt: &mut [f32], oy0: usize) {
        // Tile row `r` holds padded row `r0 + r` (input row `r0 + r - p`).
        let r0 = oy0 * self.s.0;
        let first = r0.saturating_sub(self.p.0).min(self.h);
        let last = (r0 + tile.rows).saturating_sub(self.p.0).min(self.h);
        let row_floats = tile.cols * LANES;
        for r in 0..tile.rows {
            let iy = (r0 + r).wrapping_sub(self.p.0);
            if !(first..last).contains(&iy) {
                xt[r * row_floats..][..row_floats].fill(0.0);
            }
        }
        // SAFETY: the caller's.
        unsafe { self.gather(xg, chans, tile, xt, first..last, r0) };
    }

    /// The whole conv through [`Self::group`] on one thread, `clamp` its
    /// only epilogue (for the tests).
    ///
    /// # Safety
    /// AVX-512F present.
    #[cfg(test)]
    unsafe fn small_direct(
        &self,
        x: &[f32],
        wt: &[f32],
        bias: &[f32],
        clamp: Option<(f32, f32)>,
        y: &mut [f32],
    ) {
        let (pin, pout, tile) = (self.h * self.w, self.oh * self.ow, self.small_tile());
        let mut xt = vec![0f32; tile.rows * tile.cols * LANES];
        let mut yt = vec![0f32; pout.next_multiple_of(LANES) * LANES];
        for n in 0..self.batch {
            for c0 in (0..self.c).step_by(LANES) {
                let ch = c0..self.c.min(c0 + LANES);
                let plane0 = n * self.c + c0;
                let yg = &mut y[plane0 * pout..][..ch.len() * pout];
                let bufs = (&mut xt[..], &mut yt[..]);
                let xg = &x[plane0 * pin..];
                // SAFETY: the caller's.
                unsafe {
                    self.group(
                        xg,
                        wt,
                        Some(bias),
                        ch,
                        clamp,
                        bufs,
                        yg,
                        BlockedIo::default(),
                        0..self.oh,
                    )
                };
            }
        }
    }

    /// Copies input rows `iys` of the `chans` planes `xg` into the tile's
    /// interior (input row `iy` in tile row `iy + p - r0`), channel `i` in
    /// lane `i` (lanes past `chans` zero; the padding columns are left as
    /// they are: zero).
    ///
    /// # Safety
    /// AVX-512F present; `xt` holds `tile`, which holds those rows.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f")]
    unsafe fn gather(
        &self,
        xg: &[f32],
        chans: usize,
        tile: Tile,
        xt: &mut [f32],
        iys: Range<usize>,
        r0: usize,
    ) {
        use std::arch::x86_64::*;
        let pin = self.h * self.w;
        assert!(xg.len() >= (chans.max(1) - 1) * pin + iys.end * self.w);
        assert!(xt.len() >= tile.rows * tile.cols * LANES);
        assert!(iys.is_empty() || iys.end + self.p.0 - r0 <= tile.rows);
        let end = iys.end * self.w;
        for j0 in (iys.start * self.w..end).step_by(LANES) {
            let live = (end - j0).min(LANES);
            let mask = ((1u32 << live) - 1) as __mmask16;
            let r: [__m512; LANES] = std::array::from_fn(|i| {
                if i < chans {
                    // SAFETY: `live` pixels of plane `i` from `j0` are in `xg`.
                    unsafe { _mm512_maskz_loadu_ps(mask, xg.as_ptr().add(i * pin + j0)) }
                } else {
                    _mm512_setzero_ps()
                }
            });
            let v = super::transpose16::transpose16(&r);
            for (k, &px) in v.iter().enumerate().take(live) {
                let p = j0 + k;
                let (iy, ix) = (p / self.w + self.p.0 - r0, p % self.w + self.p.1);
                // SAFETY: (iy, ix) is inside the tile (`small_tile`).
                unsafe { _mm512_storeu_ps(xt.as_mut_ptr().add((iy * tile.cols + ix) * LANES), px) };
            }
        }
    }

    /// Output rows `oys` of the group into `yt` (`[pixels][16]` from the
    /// band's first pixel; the tile holds the band from padded row
    /// `oys.start * s`): the bias, then the nine taps in row-major kernel
    /// order, then `clamp`.
    ///
    /// # Safety
    /// AVX-512F present; `xt` holds `tile`, `yt` the band's output pixels.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f,fma")]
    #[allow(clippy::too_many_arguments)]
    unsafe fn taps(
        &self,
        xt: &[f32],
        tile: Tile,
        wv: &[f32; 9 * LANES],
        bv: &[f32; LANES],
        clamp: Option<(f32, f32)>,
        yt: &mut [f32],
        oys: Range<usize>,
    ) {
        use std::arch::x86_64::*;
        let (s, ow) = (self.s.0, self.ow);
        assert!(xt.len() >= tile.rows * tile.cols * LANES && yt.len() >= oys.len() * ow * LANES);
        assert!(oys.is_empty() || (oys.len() - 1) * s + 3 <= tile.rows);
        // SAFETY (all loads / stores below): the taps of outputs
        // (oy, ox) < (oh, ow) lie inside the tile (`small_tile`).
        let w: [__m512; 9] = std::array::from_fn(|t| unsafe { _mm512_loadu_ps(&wv[t * LANES]) });
        let b = unsafe { _mm512_loadu_ps(bv.as_ptr()) };
        let (lo, hi) = clamp.map_or((b, b), |(l, h)| (_mm512_set1_ps(l), _mm512_set1_ps(h)));
        let clamp = clamp.map(|_| (lo, hi));
        let step = s * LANES;
        for band_oy in 0..oys.len() {
            let rows: [*const f32; 3] = std::array::from_fn(|ky| unsafe {
                xt.as_ptr().add((band_oy * s + ky) * tile.cols * LANES)
            });
            let out = unsafe { yt.as_mut_ptr().add(band_oy * ow * LANES) };
            let mut ox = 0;
            while ox + UNROLL <= ow {
                unsafe { outputs::<UNROLL>(&rows, ox, step, &w, b, clamp, out) };
                ox += UNROLL;
            }
            for ox in ox..ow {
                unsafe { outputs::<1>(&rows, ox, step, &w, b, clamp, out) };
            }
        }
    }
}

/// The taps (`[9][16]`) and biases of channels `ch`, channel `i` of the
/// group in lane `i` (lanes past `ch` zero).
fn lanes(wt: &[f32], bias: Option<&[f32]>, ch: Range<usize>) -> ([f32; 9 * LANES], [f32; LANES]) {
    let (mut wv, mut bv) = ([0f32; 9 * LANES], [0f32; LANES]);
    for (i, c) in ch.enumerate() {
        for t in 0..9 {
            wv[t * LANES + i] = wt[c * 9 + t];
        }
        bv[i] = bias.map_or(0.0, |b| b[c]);
    }
    (wv, bv)
}

/// Outputs `ox..ox + N` of one row (`rows`: the tile rows of its three
/// kernel rows, `step` floats per output column) into `out`: `N`
/// independent FMA chains in flight.
///
/// # Safety
/// AVX-512F and FMA present; the taps and outputs are in their buffers.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,fma")]
#[inline]
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn outputs<const N: usize>(
    rows: &[*const f32; 3],
    ox: usize,
    step: usize,
    w: &[std::arch::x86_64::__m512; 9],
    b: std::arch::x86_64::__m512,
    clamp: Option<(std::arch::x86_64::__m512, std::arch::x86_64::__m512)>,
    out: *mut f32,
) {
    use super::conv_depthwise3x3::clamp16;
    use std::arch::x86_64::*;
    let mut acc = [b; N];
    for (ky, &row) in rows.iter().enumerate() {
        for kx in 0..3 {
            // SAFETY: the caller's bounds.
            let at = unsafe { row.add(ox * step + kx * LANES) };
            for (u, a) in acc.iter_mut().enumerate() {
                let v = unsafe { _mm512_loadu_ps(at.add(u * step)) };
                *a = _mm512_fmadd_ps(w[3 * ky + kx], v, *a);
            }
        }
    }
    for (u, a) in acc.into_iter().enumerate() {
        let a = match clamp {
            Some((lo, hi)) => unsafe { clamp16(a, lo, hi) },
            None => a,
        };
        unsafe { _mm512_storeu_ps(out.add((ox + u) * LANES), a) };
    }
}

/// The `count` `[pixels][16]` outputs `yt` transposed into the first
/// `chans` of the 16 planes of `yg` (`pout` pixels from one plane to the
/// next; `yg` starts at the run's first pixel of the first plane).
///
/// # Safety
/// AVX-512F present.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn scatter(yt: &[f32], pout: usize, count: usize, chans: usize, yg: &mut [f32]) {
    use std::arch::x86_64::*;
    assert!(yt.len() >= count.next_multiple_of(LANES) * LANES);
    assert!(chans == 0 || yg.len() >= (chans - 1) * pout + count);
    for j0 in (0..count).step_by(LANES) {
        let live = (count - j0).min(LANES);
        let mask = ((1u32 << live) - 1) as __mmask16;
        // SAFETY: `yt` holds 16 pixels from `j0` (padded to a multiple of 16).
        let r: [__m512; LANES] =
            std::array::from_fn(|k| unsafe { _mm512_loadu_ps(yt.as_ptr().add((j0 + k) * LANES)) });
        let v = super::transpose16::transpose16(&r);
        for (i, &c) in v.iter().enumerate().take(chans) {
            // SAFETY: `live` pixels of plane `i` from `j0` are in `yg`.
            unsafe { _mm512_mask_storeu_ps(yg.as_mut_ptr().add(i * pout + j0), mask, c) };
        }
    }
}

/// True when a depthwise conv of these dims (f32) can run this kernel with
/// a blocked image / output (for the executor's plan; a plane over 28 x 28
/// runs it only with a blocked side).
pub(crate) fn runs(
    win: &rlx_ir::op::Window,
    groups: usize,
    (x, w, out): (&[usize], &[usize], &[usize]),
) -> bool {
    super::conv_packed::geometry(win, groups, x, w, out)
        .is_some_and(|g2| g2.depthwise_blocked_fits())
}

/// True when the CPU has AVX-512F.
pub(super) fn avx512() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx512f")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Fills this thread's kept buffers with NaN (for the tests: a stale
/// value read shows).
#[cfg(test)]
fn poison_scratch() {
    // An f32 NaN in both halves of each f64.
    let nan = f64::from_bits(0x7fc0_0000_7fc0_0000);
    TILE.set(vec![nan; BAND_FLOATS]);
    PIXELS.set(vec![nan; BAND_FLOATS]);
}

#[cfg(test)]
mod tests {
    use super::{avx512, Conv2d};
    use crate::kernels::conv_epilogue::tests::{case_window, dims, seq};
    use crate::kernels::conv_nchwc::BlockedIo;
    use crate::kernels::conv_packed::geometry;
    use rlx_ir::op::Window;
    use serde_json::Value;

    const FIXTURE: &str = include_str!("../../tests/fixtures/conv_depthwise/cases.json");

    /// `channels` x `hw` x `hw` depthwise 3x3 with padding 1 at `stride`.
    fn mobilenet(channels: usize, hw: usize, stride: usize) -> Conv2d {
        let window = Window {
            kernel: vec![],
            stride: vec![stride; 2],
            padding: vec![(1, 1); 2],
            dilation: vec![1, 1],
        };
        let o = (hw - 1) / stride + 1;
        let (x, w, y) = (
            [1, channels, hw, hw],
            [channels, 1, 3, 3],
            [1, channels, o, o],
        );
        geometry(&window, channels, &x, &w, &y).expect("2-D")
    }

    /// MobileNetV2's depthwise convs on 28 x 28 planes and below take this
    /// kernel (on AVX-512), the 56 x 56 and 112 x 112 ones the per-plane
    /// kernel; so does every small-plane fixture case (whose numpy check
    /// is `conv_depthwise3x3`'s `depthwise_convs_match_numpy`).
    #[test]
    fn takes_mobilenetv2_small_planes() {
        if !avx512() {
            return;
        }
        let small = [(192, 28, 1), (192, 28, 2), (384, 14, 1), (576, 14, 1)];
        for (c, hw, s) in small.into_iter().chain([(576, 14, 2), (960, 7, 1)]) {
            assert!(
                mobilenet(c, hw, s).depthwise_small_wins(),
                "{c}x{hw}x{hw} s{s}"
            );
        }
        // Large planes: NCHW on the per-plane kernel, blocked here by bands.
        let blocked = BlockedIo {
            input: true,
            output: true,
        };
        for (c, hw, s) in [(32, 112, 1), (96, 112, 2), (144, 56, 1), (144, 56, 2)] {
            let g2 = mobilenet(c, hw, s);
            assert!(!g2.depthwise_small_wins(), "{c}x{hw}x{hw} s{s}");
            assert!(
                g2.depthwise_small_takes(blocked, None),
                "{c}x{hw}x{hw} s{s}"
            );
            assert!(g2.band_rows() < g2.oh, "{c}x{hw}x{hw} s{s}: one band");
        }
        assert!(!mobilenet(24, 56, 1).depthwise_blocked_fits());
        let fixture: Value = serde_json::from_str(FIXTURE).expect("fixture JSON");
        let cases = fixture["cases"].as_array().expect("cases");
        let small: Vec<_> = cases
            .iter()
            .filter(|c| {
                c["name"]
                    .as_str()
                    .is_some_and(|n| n.starts_with("dw_small"))
            })
            .collect();
        assert_eq!(small.len(), 6);
        for case in small {
            let g2 = geometry(
                &case_window(case),
                case["groups"].as_u64().expect("groups") as usize,
                &dims(&case["x"]),
                &dims(&case["w"]),
                &dims(&case["y_dims"]),
            );
            assert!(g2.expect("2-D").depthwise_small_wins(), "{}", case["name"]);
        }
    }

    /// The fixture's small-plane cases of whole 16-channel groups (numpy
    /// float64) with the image and / or the output blocked, at 1 to 3
    /// threads: stride 1 and 2, batch 2, ReLU6 in registers and a
    /// residual row chain on the blocked rows; planes over 28 x 28 in
    /// bands of output rows; and every small-plane case NCHW. Each run
    /// first fills the calling thread's kept buffers with NaN (every part
    /// at 1 thread), so a value left from an earlier call (a padding
    /// column, the zero row) would show.
    #[test]
    fn layouts_match_numpy() {
        use crate::kernels::conv::{conv_geom, fused_conv};
        use crate::kernels::conv_epilogue::tests::check_fused_conv_fixture;
        use crate::kernels::conv_epilogue::ConvEpilogue;
        use crate::kernels::conv_pointwise_blocked::tests::with_blocked;
        use crate::kernels::{KernelResult, View, ViewMut};
        use rlx_ir::op::ChainStep;
        if !avx512() {
            return;
        }
        static TAKEN: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let layouts = [(false, false), (true, false), (false, true), (true, true)];
        for (input, output) in layouts {
            let io = BlockedIo { input, output };
            let kernel = move |w: &Window,
                               groups: usize,
                               bias: bool,
                               steps: &[ChainStep],
                               ins: &[View],
                               out: &mut ViewMut|
                  -> KernelResult {
                let (conv_ins, extras) = ins.split_at(rlx_ir::ops::fused_conv::conv_arity(bias));
                let g2 = conv_geom(w, None, groups, conv_ins, out)?
                    .two_d
                    .expect("2-D");
                let epi = ConvEpilogue::new(steps, extras, out.dims, out.dtype);
                if !g2.depthwise_small_takes(io, epi.as_ref()) {
                    return fused_conv(w, groups, bias, steps, ins, out);
                }
                TAKEN.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let b = conv_ins.get(2).map(|b| b.slice::<f32>());
                let (pin, pout) = (g2.h * g2.w, g2.oh * g2.ow);
                let xs = (g2.c, pin, conv_ins[0].slice::<f32>());
                let wt = conv_ins[1].slice::<f32>();
                super::poison_scratch();
                with_blocked(io, xs, (g2.o, pout, out.slice()), |x, y| {
                    g2.depthwise_small(x, wt, b, y, epi.as_ref(), io)
                })
            };
            check_fused_conv_fixture(FIXTURE, 25, &kernel);
        }
        // dwb_c32 / dwb_c48 / dw_small_c16, the three banded planes and
        // the three in-place padding cases at 1-3 threads, 3 blocked layouts; the
        // banded SiLU plane read blocked.
        assert!(TAKEN.load(std::sync::atomic::Ordering::Relaxed) >= 9 * 3 * 3 + 3);
    }

    /// Where both kernels take a fixture case, this one gives the
    /// per-plane kernel's bits (finite weights: a padding tap adds
    /// `w * 0`), with and without the clamp, a NaN input included.
    #[test]
    fn gives_the_plane_kernels_bits() {
        if !avx512() {
            return;
        }
        let fixture: Value = serde_json::from_str(FIXTURE).expect("fixture JSON");
        let mut checked = 0;
        for case in fixture["cases"].as_array().expect("cases") {
            let (xd, wd, yd) = (dims(&case["x"]), dims(&case["w"]), dims(&case["y_dims"]));
            let groups = case["groups"].as_u64().expect("groups") as usize;
            let g2 = geometry(&case_window(case), groups, &xd, &wd, &yd).expect("2-D");
            if !g2.depthwise_small_wins() {
                continue;
            }
            checked += 1;
            let mut x = seq(xd.iter().product(), 7, 23, 8.0);
            let mid = x.len() / 2;
            x[mid] = f32::NAN;
            let w = seq(wd.iter().product(), 5, 17, 16.0);
            let b: Vec<f32> = (0..wd[0]).map(|i| ((i % 7) as f32 - 3.0) / 8.0).collect();
            let (pin, pout) = (xd[2] * xd[3], yd[2] * yd[3]);
            for clamp in [None, Some((0.0, 6.0))] {
                let mut plane = vec![f32::NAN; yd.iter().product()];
                for (i, yp) in plane.chunks_exact_mut(pout).enumerate() {
                    let c = i % g2.c;
                    let xp = &x[i * pin..][..pin];
                    g2.depthwise3x3_plane(xp, &w[c * 9..][..9], b[c], yp, clamp);
                }
                let mut small = vec![f32::NAN; plane.len()];
                // SAFETY: AVX-512F checked above.
                unsafe { g2.small_direct(&x, &w, &b, clamp, &mut small) };
                let same = small
                    .iter()
                    .zip(&plane)
                    .all(|(a, b)| a.to_bits() == b.to_bits());
                assert!(same, "{} (clamp {clamp:?})", case["name"]);
            }
        }
        assert!(checked >= 8, "only {checked} cases taken");
    }

    /// A blocked image read in place (NCHW and blocked outputs), and an
    /// NCHW image through the band's tile (blocked output), give the
    /// per-plane kernel's bits (`conv_depthwise3x3`, itself checked against
    /// numpy) on wide planes cut into several bands of output rows (bands
    /// starting inside the image and in the padding), padding 2 on one
    /// side, a NaN input, at 1-3 threads.
    #[test]
    fn banded_planes_give_the_plane_kernels_bits() {
        use crate::kernels::conv_pointwise_blocked::tests::with_blocked;
        if !avx512() {
            return;
        }
        let shapes = [
            (16, 13, 301, 2, [(1, 1), (1, 1)]),
            (32, 9, 300, 1, [(2, 0), (0, 2)]),
            (16, 12, 290, 2, [(0, 2), (2, 1)]),
        ];
        for (c, h, w, s, pads) in shapes {
            let window = Window {
                kernel: vec![],
                stride: vec![s; 2],
                padding: pads.to_vec(),
                dilation: vec![1, 1],
            };
            let out = |n: usize, (a, b): (usize, usize)| (n + a + b - 3) / s + 1;
            let (oh, ow) = (out(h, pads[0]), out(w, pads[1]));
            let g2 =
                geometry(&window, c, &[1, c, h, w], &[c, 1, 3, 3], &[1, c, oh, ow]).expect("2-D");
            assert!(g2.band_rows() * 2 < oh, "{c}x{h}x{w}: too few bands");
            let (pin, pout) = (h * w, oh * ow);
            let mut x = seq(c * pin, 7, 23, 8.0);
            x[pin + w + 1] = f32::NAN;
            let wt = seq(c * 9, 5, 17, 16.0);
            let b: Vec<f32> = (0..c).map(|i| ((i % 7) as f32 - 3.0) / 8.0).collect();
            let mut want = vec![f32::NAN; c * pout];
            for (i, yp) in want.chunks_exact_mut(pout).enumerate() {
                let xp = &x[i * pin..][..pin];
                g2.depthwise3x3_plane(xp, &wt[i * 9..][..9], b[i], yp, None);
            }
            for (input, output) in [(true, false), (true, true), (false, true)] {
                let io = BlockedIo { input, output };
                for threads in 1..=3 {
                    let mut got = vec![f32::NAN; want.len()];
                    crate::threads::with_limit(Some(threads), || {
                        with_blocked(io, (c, pin, &x), (c, pout, &mut got), |xb, yb| {
                            g2.depthwise_small(xb, &wt, Some(&b), yb, None, io)
                        })
                    })
                    .expect("runs");
                    let same = got
                        .iter()
                        .zip(&want)
                        .all(|(a, b)| a.to_bits() == b.to_bits());
                    assert!(
                        same,
                        "{c}x{h}x{w} s{s} {pads:?} {io:?} at {threads} threads"
                    );
                }
            }
        }
    }
}
