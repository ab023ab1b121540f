//! 1x1 stride-1 unpadded conv (f32) straight on NCHW, the expand /
//! project convs of MobileNet: `y[o, p] = bias[o] + sum_c w[o, c] x[c, p]`
//! is a GEMM with the weight on the left (`[O, C]`) and the image on the
//! right (`[C, pixels]`), whose output rows are the NCHW output's channel
//! planes, so nothing is transposed or copied back.
//!
//! Per call the weight is packed once into the register tile's row
//! layout ([`super::gemm_tile::pack_a`]); the image is packed a block of
//! pixels at a time into `[C][NR]` panels (about [`BLOCK_FLOATS`], kept in
//! L2 while every tile of output channels reads it). Each tile starts
//! from the bias (written into its rows of the output just before) and
//! adds the products in channel order. The epilogue then runs on the
//! tile's block while it is in L1 when it is a row chain
//! ([`super::conv_epilogue::RowChain`]), else on each image's channels
//! once they are done.
//!
//! Threads split the images, or, with fewer images than threads, either
//! the output channels (each part packs its own image panels and owns
//! whole planes) or, for a project on a big map, the pixels (each part
//! packs its pixels once, runs every channel over them into a block of its
//! own and copies each channel's run into place): [`Split`].

use super::conv2d::Conv2d;
use super::conv_epilogue::ConvEpilogue;
use super::gemm::Strided;
use super::gemm_tile::{isa, pack_a, run_tile, tile_shape, Isa, Tile};
use super::KernelResult;
use crate::team;
use std::ops::Range;

/// Floats of one block of packed image panels (`C x pixels`): 192 KiB,
/// inside L2 next to a tile's output rows.
const BLOCK_FLOATS: usize = 48 * 1024;

/// Output pixels per image from which this kernel is taken over the
/// library GEMM (below, the per-call weight packing is not amortised; the
/// executor's packed-weight path takes those convs when it packs them).
const MIN_PIXELS: usize = 16;

impl Conv2d {
    /// True when [`Self::pointwise_nchw`] computes this conv on this CPU.
    pub(super) fn pointwise_nchw_wins(&self) -> bool {
        self.is_pointwise()
            && self.groups == 1
            && self.oh * self.ow >= MIN_PIXELS
            && isa().is_some()
    }

    /// `y = conv(x, wt) + bias`, then `epi` (see the module doc); `wt` is
    /// the plain `[O, C, 1, 1]` weight.
    pub(super) fn pointwise_nchw(
        &self,
        x: &[f32],
        wt: &[f32],
        bias: Option<&[f32]>,
        y: &mut [f32],
        epi: Option<&ConvEpilogue>,
    ) -> KernelResult {
        let Some(isa) = isa() else {
            return Err(fail!("conv: the 1x1 NCHW kernel needs AVX2 + FMA"));
        };
        self.pointwise_packed(x, &pack(wt, self.o, self.c, isa), bias, y, epi)
    }

    /// True when `len` floats are this conv's weight as [`pack`] lays it
    /// out on this CPU.
    pub(super) fn takes_pointwise_weights(&self, len: usize) -> bool {
        let mr = isa().map_or(0, |i| tile_shape(i).0);
        self.pointwise_nchw_wins() && len == self.o.div_ceil(mr) * mr * self.c
    }

    /// [`Self::pointwise_nchw`] on the weight already packed by [`pack`]
    /// (by the executor, once, for a constant weight).
    pub(super) fn pointwise_packed(
        &self,
        x: &[f32],
        wp: &[f32],
        bias: Option<&[f32]>,
        y: &mut [f32],
        epi: Option<&ConvEpilogue>,
    ) -> KernelResult {
        let Some(isa) = isa() else {
            return Err(fail!("conv: the 1x1 NCHW kernel needs AVX2 + FMA"));
        };
        let (mr, _) = tile_shape(isa);
        let (c, o, pixels) = (self.c, self.o, self.oh * self.ow);
        if pixels == 0 || o == 0 || self.batch == 0 {
            return Ok(());
        }
        if wp.len() != o.div_ceil(mr) * mr * c {
            return Err(fail!(
                "conv: a packed 1x1 weight of {} floats for {o} x {c}",
                wp.len()
            ));
        }
        let threads = team::threads();
        let split = Split::choose(self.batch, threads, (c, o), mr, pixels, nr_of(isa), epi);
        let jobs = self.batch * split.ranges.len();
        let parts = team::split(jobs, threads.min(jobs), 1);
        let shared = team::Disjoint::new(y);
        let plane = pixels;
        let job = Job {
            isa,
            c,
            pixels,
            wp,
            bias,
        };
        let run = |part: usize| -> KernelResult {
            let (mut panels, mut local) = (Vec::new(), Vec::new());
            for j in parts[part].clone() {
                let (n, range) = (
                    j / split.ranges.len(),
                    split.ranges[j % split.ranges.len()].clone(),
                );
                let xn = &x[n * c * plane..][..c * plane];
                if split.by_pixels {
                    // The pixels of every plane: computed into a local
                    // `[o][span]` block, then each channel's run copied
                    // into its own (disjoint) piece of the output.
                    local.resize(o * range.len(), 0.0);
                    job.run(
                        xn,
                        (&mut local, range.len(), range.start),
                        n,
                        (0..o, range.clone()),
                        epi,
                        &mut panels,
                    );
                    for (ci, row) in local.chunks_exact(range.len()).enumerate() {
                        let at = (n * o + ci) * plane + range.start;
                        // SAFETY: pixels `range` of one plane of one image:
                        // no other part touches them.
                        unsafe { shared.range(at..at + range.len()) }.copy_from_slice(row);
                    }
                    continue;
                }
                let y0 = (n * o + range.start) * plane;
                // SAFETY: a job owns its channels' planes of one image.
                let yj = unsafe { shared.range(y0..y0 + range.len() * plane) };
                job.run(
                    xn,
                    (yj, plane, 0),
                    n,
                    (range.clone(), 0..pixels),
                    epi,
                    &mut panels,
                );
                if let Some(epi) = epi.filter(|e| e.rows().is_none()) {
                    epi.apply(yj, n, range)?;
                }
            }
            Ok(())
        };
        if parts.len() > 1 {
            team::try_parallel_for(parts.len(), run)
        } else {
            run(0)
        }
    }
}

/// The register tile's pixel count on `isa`.
fn nr_of(isa: Isa) -> usize {
    tile_shape(isa).1
}

/// How the parts of a call divide an image's work: whole images when
/// there are enough; else each image's output channels (whole register
/// tiles) or, for a project (at least as many input channels as outputs)
/// on more pixels than outputs with the epilogue per tile, its pixel
/// ranges with every channel. A channel part packs the whole image, so a
/// project on a big map repeats its largest operand's packing per part
/// (MobileNetV2's 144 -> 24 at 56 x 56: 0.32 ms at 2 threads by channels,
/// 0.18 by pixels); an expand's packing is small next to its output,
/// and its 2-thread run was ~10 % slower by pixels (24 -> 144 at 56 x 56,
/// whole planes per part stream better), so it stays by channels.
struct Split {
    by_pixels: bool,
    /// Channel or pixel ranges, one job each per image.
    ranges: Vec<Range<usize>>,
}

impl Split {
    fn choose(
        batch: usize,
        threads: usize,
        (c, o): (usize, usize),
        mr: usize,
        pixels: usize,
        nr: usize,
        epi: Option<&ConvEpilogue>,
    ) -> Split {
        let chunks = if batch >= threads {
            1
        } else {
            threads.div_ceil(batch)
        };
        let per_tile = epi.is_none_or(|e| e.rows().is_some());
        if chunks > 1 && per_tile && pixels > o && c >= o && pixels >= chunks * nr {
            return Split {
                by_pixels: true,
                ranges: team::split(pixels, chunks, nr),
            };
        }
        Split {
            by_pixels: false,
            ranges: team::split(o, chunks.min(o.div_ceil(mr)), mr),
        }
    }
}

/// The `[O, C]` weight `wt` packed as the register tiles' left operand
/// (`[O/mr][C][mr]`, rows past `o` zero).
fn pack(wt: &[f32], o: usize, c: usize, isa: Isa) -> Vec<f32> {
    let (mr, _) = tile_shape(isa);
    let mut wp = vec![0f32; o.div_ceil(mr) * mr * c];
    pack_a(Strided::row_major(wt, 0, o, c), 0..o, 0..c, mr, &mut wp);
    wp
}

/// The packed weight of a constant-weight 1x1 conv this kernel runs, for
/// the executor to prepare once (`None` where the packed-weight GEMM
/// takes the conv instead: few pixels, [`super::conv_packed`]).
pub(crate) fn prepared_weights(
    win: &rlx_ir::op::Window,
    groups: usize,
    (x, w, out): (&[usize], &[usize], &[usize]),
    wt: &[f32],
) -> Option<Vec<f32>> {
    let g2 = super::conv_packed::geometry(win, groups, x, w, out)?;
    let packed = super::conv_packed::packed_layout(win, groups, x, w, out).is_some();
    let valid = wt.len() == g2.o * g2.c && w.iter().product::<usize>() == wt.len();
    let isa = isa().filter(|_| valid && !packed && g2.pointwise_nchw_wins())?;
    Some(pack(wt, g2.o, g2.c, isa))
}

/// The shared inputs of one part's work.
struct Job<'a> {
    isa: Isa,
    /// Input channels.
    c: usize,
    /// Pixels per plane.
    pixels: usize,
    /// The weight packed in tiles of `mr` rows (`[O/mr][C][mr]`).
    wp: &'a [f32],
    bias: Option<&'a [f32]>,
}

impl Job<'_> {
    /// Pixels `span` of output channels `ch` of image `n` into `y` (row
    /// `i` is channel `ch.start + i`, `ld` floats apart; pixel `p` at
    /// `p - base`), from the image's planes `x`; the row-chain epilogue on
    /// each tile.
    fn run(
        &self,
        x: &[f32],
        (y, ld, base): (&mut [f32], usize, usize),
        n: usize,
        (ch, span): (Range<usize>, Range<usize>),
        epi: Option<&ConvEpilogue>,
        panels: &mut Vec<f32>,
    ) {
        let (mr, nr) = tile_shape(self.isa);
        let (c, pixels) = (self.c, self.pixels);
        let block = (BLOCK_FLOATS / c.max(1) / nr).max(1) * nr;
        let chain = epi.and_then(|e| e.rows());
        for p0 in span.clone().step_by(block) {
            let px = p0..(p0 + block).min(span.end);
            let count = px.len().div_ceil(nr);
            panels.resize(count * c * nr, 0.0);
            pack_panels(x, pixels, c, px.clone(), nr, panels);
            for t0 in (ch.start..ch.end).step_by(mr) {
                let rows = mr.min(ch.end - t0);
                let a = &self.wp[t0 / mr * mr * c..][..mr * c];
                let yt = &mut y[(t0 - ch.start) * ld..];
                for r in 0..rows {
                    let b = self.bias.map_or(0.0, |b| b[t0 + r]);
                    yt[r * ld + px.start - base..][..px.len()].fill(b);
                }
                for j in 0..count {
                    let q = px.start + j * nr;
                    let tile = Tile {
                        depth: c,
                        a,
                        b: &panels[j * c * nr..][..c * nr],
                        ahead: None,
                        rows,
                        cols: nr.min(px.end - q),
                        accumulate: true,
                    };
                    // SAFETY: `isa` was detected on this CPU.
                    unsafe { run_tile(self.isa, &tile, &mut yt[q - base..], ld) };
                }
                if let Some(chain) = chain {
                    chain.apply(&mut yt[px.start - base..], ld, n, t0..t0 + rows, px.clone());
                }
            }
        }
    }
}

/// Packs pixels `px` of the `c` planes of `x` (`pixels` each) into
/// `[count][c][nr]` panels, the last one's missing pixels zero.
fn pack_panels(x: &[f32], pixels: usize, c: usize, px: Range<usize>, nr: usize, out: &mut [f32]) {
    for (j, panel) in out.chunks_exact_mut(c * nr).enumerate() {
        let q = px.start + j * nr;
        let live = nr.min(px.end - q);
        for (ci, dst) in panel.chunks_exact_mut(nr).enumerate() {
            dst[..live].copy_from_slice(&x[ci * pixels + q..][..live]);
            dst[live..].fill(0.0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::prepared_weights;
    use super::Conv2d;
    use crate::kernels::conv::fused_conv;
    use crate::kernels::conv::{conv_prepared, Prepared};
    use crate::kernels::conv_epilogue::tests::{check_fused_bits, check_fused_conv_fixture};
    use crate::kernels::conv_packed::geometry;
    use crate::kernels::gemm_tile::isa;
    use crate::kernels::{View, ViewMut};
    use rlx_ir::op::{ChainStep, Window};
    use rlx_ir::Op;
    use std::sync::atomic::{AtomicUsize, Ordering};

    const FIXTURE: &str = include_str!("../../tests/fixtures/conv_pointwise/cases.json");

    /// Every case of tools/gen_fused_conv_fixtures.py's POINTWISE_CASES
    /// (numpy float64 loops) through the fused conv at 1, 2 and 3 threads:
    /// partial register tiles in both directions, two pixel blocks per
    /// image, batch 2 / 3, epilogues on each tile and per image; batch 1
    /// split by pixel ranges (ranges across pixel blocks) at 2 / 3 threads.
    #[test]
    fn pointwise_convs_match_numpy() {
        if isa().is_none() {
            return;
        }
        check_fused_conv_fixture(FIXTURE, 8, &fused_conv);
    }

    /// Each fixture case is one this kernel takes, and the fused conv
    /// gives the bits of the conv followed by the region epilogue (what
    /// the unfused graph runs) at 1 and 2 threads.
    #[test]
    fn fused_pointwise_is_bit_exact_to_conv_then_epilogue() {
        if isa().is_none() {
            return;
        }
        check_fused_bits(FIXTURE, Conv2d::pointwise_nchw_wins);
    }

    /// The weight packed once (`Prepared::Pointwise`, as the executor
    /// prepares a constant one) gives numpy's outputs on every fixture
    /// case at 1-3 threads; MobileNetV2's 1x1 convs on 14x14 maps and up
    /// get one, those on 7x7 maps are the packed-weight GEMM's; a packed
    /// weight of the wrong size is an error.
    #[test]
    fn prepared_weights_match_numpy() {
        if isa().is_none() {
            return;
        }
        let window = Window {
            kernel: vec![],
            stride: vec![1, 1],
            padding: vec![(0, 0); 2],
            dilation: vec![1, 1],
        };
        let dims = |c: usize, o: usize, hw: usize| ([1, c, hw, hw], [o, c, 1, 1], [1, o, hw, hw]);
        let prepared_for = |c: usize, o: usize, hw: usize| {
            let (x, w, y) = dims(c, o, hw);
            prepared_weights(&window, 1, (&x, &w, &y), &vec![0.5; o * c])
        };
        for (c, o, hw) in [(96, 576, 14), (576, 96, 14), (32, 192, 28), (16, 96, 112)] {
            assert!(prepared_for(c, o, hw).is_some(), "{c} -> {o} at {hw}x{hw}");
        }
        for (c, o) in [(160, 960), (960, 160), (320, 1280)] {
            assert!(prepared_for(c, o, 7).is_none(), "{c} -> {o} at 7x7");
        }
        static TAKEN: AtomicUsize = AtomicUsize::new(0);
        let prepared = |window: &Window,
                        groups,
                        bias,
                        steps: &[ChainStep],
                        ins: &[View],
                        out: &mut ViewMut| {
            let dims = (ins[0].dims, ins[1].dims, out.dims);
            let wp = prepared_weights(window, groups, dims, ins[1].slice::<f32>());
            let Some(wp) = wp else {
                return fused_conv(window, groups, bias, steps, ins, out);
            };
            TAKEN.fetch_add(1, Ordering::Relaxed);
            let op = Op::FusedConv {
                window: window.clone(),
                groups,
                bias,
                epilogue: steps.to_vec(),
            };
            conv_prepared(&op, Prepared::Pointwise(&wp), ins, out)
        };
        check_fused_conv_fixture(FIXTURE, 8, &prepared);
        assert!(
            TAKEN.load(Ordering::Relaxed) > 0,
            "no case took a prepared weight"
        );
        let (x, w, y) = dims(96, 576, 14);
        let g2 = geometry(&window, 1, &x, &w, &y).expect("2-D");
        let (xs, mut ys) = (vec![0f32; 96 * 196], vec![0f32; 576 * 196]);
        let err = g2
            .pointwise_packed(&xs, &[0.0; 7], None, &mut ys, None)
            .unwrap_err();
        assert!(err.to_string().contains("packed 1x1 weight"), "{err}");
    }
}
