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
//! Threads split the images, or, with fewer images than threads, the
//! output channels (each part packs its own image panels): every part owns
//! whole channel planes of the output.

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
        let (mr, _) = tile_shape(isa);
        let (c, o, pixels) = (self.c, self.o, self.oh * self.ow);
        if pixels == 0 || o == 0 || self.batch == 0 {
            return Ok(());
        }
        let mut wp = vec![0f32; o.div_ceil(mr) * mr * c];
        pack_a(Strided::row_major(wt, 0, o, c), 0..o, 0..c, mr, &mut wp);
        let threads = team::threads();
        // Parts: images, or (few images) tiles of output channels.
        let chunks = if self.batch >= threads {
            1
        } else {
            threads.div_ceil(self.batch).min(o.div_ceil(mr))
        };
        let ch_ranges = team::split(o, chunks, mr);
        let jobs = self.batch * ch_ranges.len();
        let parts = team::split(jobs, threads.min(jobs), 1);
        let shared = team::Disjoint::new(y);
        let plane = pixels;
        let run = |part: usize| -> KernelResult {
            let mut panels = Vec::new();
            for job in parts[part].clone() {
                let (n, ch) = (
                    job / ch_ranges.len(),
                    ch_ranges[job % ch_ranges.len()].clone(),
                );
                let y0 = (n * o + ch.start) * plane;
                // SAFETY: each job owns its channels' planes of one image.
                let yj = unsafe { shared.range(y0..y0 + ch.len() * plane) };
                let xn = &x[n * c * plane..][..c * plane];
                let job = Job {
                    isa,
                    c,
                    pixels,
                    wp: &wp,
                    bias,
                };
                job.run(xn, yj, n, ch.clone(), epi, &mut panels);
                if let Some(epi) = epi.filter(|e| e.rows().is_none()) {
                    epi.apply(yj, n, ch)?;
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
    /// Output channels `ch` of image `n` into `y` (their planes), from
    /// the image's planes `x`; the row-chain epilogue on each tile.
    fn run(
        &self,
        x: &[f32],
        y: &mut [f32],
        n: usize,
        ch: Range<usize>,
        epi: Option<&ConvEpilogue>,
        panels: &mut Vec<f32>,
    ) {
        let (mr, nr) = tile_shape(self.isa);
        let (c, pixels) = (self.c, self.pixels);
        let block = (BLOCK_FLOATS / c.max(1) / nr).max(1) * nr;
        let chain = epi.and_then(|e| e.rows());
        for p0 in (0..pixels).step_by(block) {
            let px = p0..(p0 + block).min(pixels);
            let count = px.len().div_ceil(nr);
            panels.resize(count * c * nr, 0.0);
            pack_panels(x, pixels, c, px.clone(), nr, panels);
            for t0 in (ch.start..ch.end).step_by(mr) {
                let rows = mr.min(ch.end - t0);
                let a = &self.wp[t0 / mr * mr * c..][..mr * c];
                let yt = &mut y[(t0 - ch.start) * pixels..];
                for r in 0..rows {
                    let b = self.bias.map_or(0.0, |b| b[t0 + r]);
                    yt[r * pixels + px.start..][..px.len()].fill(b);
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
                    unsafe { run_tile(self.isa, &tile, &mut yt[q..], pixels) };
                }
                if let Some(chain) = chain {
                    chain.apply(&mut yt[px.start..], pixels, n, t0..t0 + rows, px.clone());
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
    use super::Conv2d;
    use crate::kernels::conv::tests::run_as;
    use crate::kernels::conv::{conv, fused_conv};
    use crate::kernels::conv_epilogue::tests::{check_fused_conv_fixture, dims, epilogue, seq};
    use crate::kernels::gemm_tile::isa;
    use crate::kernels::region;
    use crate::kernels::ViewMut;
    use rlx_ir::op::Window;
    use rlx_ir::DType;
    use serde_json::Value;

    const FIXTURE: &str = include_str!("../../tests/fixtures/conv_pointwise/cases.json");

    /// Every case of tools/gen_fused_conv_fixtures.py's POINTWISE_CASES
    /// (numpy float64 loops) through the fused conv at 1, 2 and 3 threads:
    /// partial register tiles in both directions, two pixel blocks per
    /// image, batch 2 / 3, epilogues on each tile and per image.
    #[test]
    fn pointwise_convs_match_numpy() {
        if isa().is_none() {
            return;
        }
        check_fused_conv_fixture(FIXTURE, 6, &fused_conv);
    }

    /// Each fixture case is one this kernel takes, and the fused conv
    /// gives the bits of the conv followed by the region epilogue (what
    /// the unfused graph runs) at 1 and 2 threads.
    #[test]
    fn fused_pointwise_is_bit_exact_to_conv_then_epilogue() {
        if isa().is_none() {
            return;
        }
        let fixture: Value = serde_json::from_str(FIXTURE).expect("fixture JSON");
        for case in fixture["cases"].as_array().expect("cases") {
            let name = case["name"].as_str().expect("name");
            let (xd, wd, yd) = (dims(&case["x"]), dims(&case["w"]), dims(&case["y_dims"]));
            let g2 = Conv2d {
                batch: xd[0],
                c: xd[1],
                o: wd[0],
                groups: 1,
                h: xd[2],
                w: xd[3],
                oh: yd[2],
                ow: yd[3],
                kh: 1,
                kw: 1,
                s: (1, 1),
                d: (1, 1),
                p: (0, 0),
            };
            assert!(g2.pointwise_nchw_wins(), "{name} is not taken");
            let window = Window {
                kernel: vec![],
                stride: vec![1, 1],
                padding: vec![(0, 0), (0, 0)],
                dilation: vec![1, 1],
            };
            let x = seq(xd.iter().product(), 7, 23, 8.0);
            let w = seq(wd.iter().product(), 5, 17, 16.0);
            let b: Vec<f32> = (0..wd[0]).map(|i| ((i % 7) as f32 - 3.0) / 8.0).collect();
            let bd = [wd[0]];
            let res = dims(&case["res_dims"]);
            let (steps, extras) =
                epilogue(case["epilogue"].as_str().expect("epilogue"), wd[0], 4, &res);
            let mut ins: Vec<(&[usize], &[f32])> = vec![(&xd, &x), (&wd, &w), (&bd, &b)];
            ins.extend(extras.iter().map(|(d, v)| (d.as_slice(), v.as_slice())));
            for threads in [1, 2] {
                crate::threads::with_limit(Some(threads), || {
                    let fused = run_as(
                        DType::F32,
                        |i, o| fused_conv(&window, 1, true, &steps, i, o),
                        &ins,
                        &yd,
                        f32::NAN,
                    )
                    .expect("fused conv");
                    let mut plain = run_as(
                        DType::F32,
                        |i, o| conv(&window, 1, i, o),
                        &ins[..3],
                        &yd,
                        f32::NAN,
                    )
                    .expect("conv");
                    let views: Vec<_> = ins[3..]
                        .iter()
                        .map(|&(d, v)| crate::kernels::View {
                            dims: d,
                            dtype: DType::F32,
                            // SAFETY: f32 has no padding.
                            bytes: unsafe {
                                std::slice::from_raw_parts(v.as_ptr() as *const u8, v.len() * 4)
                            },
                        })
                        .collect();
                    let bytes = unsafe {
                        // SAFETY: as above, and any bit pattern is an f32.
                        std::slice::from_raw_parts_mut(
                            plain.as_mut_ptr() as *mut u8,
                            plain.len() * 4,
                        )
                    };
                    region::epilogue(
                        &steps,
                        &views,
                        &mut ViewMut {
                            dims: &yd,
                            dtype: DType::F32,
                            bytes,
                        },
                    )
                    .expect("epilogue");
                    let same = fused
                        .iter()
                        .zip(&plain)
                        .all(|(a, b)| a.to_bits() == b.to_bits());
                    assert!(
                        same,
                        "{name} at {threads} threads: fused and unfused bits differ"
                    );
                });
            }
        }
    }
}
