//! Dense / grouped 2-D conv (f32) against a weight packed once, on the
//! packed-panel GEMM of [`super::gemm_packed`].
//!
//! The conv is computed transposed: `out^T[p, co] = col^T[p, :] @ W^T[:, co]`,
//! so the weight is the right-hand operand, stored (per group) as `W^T`
//! (`[k, og]`, `k = cg * kh * kw`) in panels of `nr` output channels. That
//! is a permutation of the plain `[o, cg, kh, kw]` bytes, so the packed
//! copy replaces the plain one (the executor's `packed_weights` packs
//! it when a param is set or the executable is built). The left operand is
//! read column-wise by the tile packer: a 1x1 stride-1 unpadded conv reads
//! the NCHW input in place (no im2col), others an im2col tile of output rows.
//! Each tile's `[pixels, og]` product is added into the NCHW output (which
//! holds the bias) while it is in cache; the epilogue then runs per image.

use super::conv2d::Conv2d;
use super::conv_epilogue::ConvEpilogue;
use super::gemm::Strided;
use super::gemm_packed::{panel_cols, panels_product, Weights};
use super::gemm_tile::{isa, tile_shape};
use super::KernelResult;
use crate::team;
use rlx_ir::op::Window;

/// Target size of one tile's column matrix (as `conv_im2col`).
const COL_TILE_BYTES: usize = 128 * 1024;

/// The packed layout of a conv weight `[groups * og, k]` (k = cg * kh * kw).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ConvWeightLayout {
    /// Conv groups.
    pub groups: usize,
    /// Output channels per group.
    pub og: usize,
    /// Taps per output channel (`cg * kh * kw`).
    pub k: usize,
}

impl ConvWeightLayout {
    /// Each panel's start and width: the `w` output channels of a panel
    /// are one contiguous block of the weight, `[w, k]` in the plain
    /// layout and `[k, w]` in the packed one.
    fn panels(&self, nr: usize) -> impl Iterator<Item = (usize, usize)> {
        let (og, k) = (self.og, self.k);
        (0..self.groups).flat_map(move |g| {
            (0..og.div_ceil(nr)).map(move |j| (g * og * k + j * nr * k, panel_cols(j, og, nr)))
        })
    }

    /// Packs the plain weight `w` in place into panels of `nr`.
    pub(crate) fn pack_in_place(&self, w: &mut [f32], nr: usize) {
        self.transpose_panels(w, nr, true);
    }

    /// The inverse of [`Self::pack_in_place`].
    pub(crate) fn unpack_in_place(&self, w: &mut [f32], nr: usize) {
        self.transpose_panels(w, nr, false);
    }

    fn transpose_panels(&self, w: &mut [f32], nr: usize, pack: bool) {
        assert_eq!(
            w.len(),
            self.groups * self.og * self.k,
            "conv weight length"
        );
        let mut scratch = Vec::new();
        for (at, width) in self.panels(nr) {
            let block = &mut w[at..at + width * self.k];
            scratch.clear();
            scratch.extend_from_slice(block);
            if pack {
                transpose(&scratch, width, self.k, block);
            } else {
                transpose(&scratch, self.k, width, block);
            }
        }
    }

    /// Packs the plain weight `w` into `out` (same length).
    #[cfg(test)]
    pub(crate) fn pack(&self, w: &[f32], nr: usize, out: &mut [f32]) {
        out.copy_from_slice(w);
        self.pack_in_place(out, nr);
    }
}

/// `out[c][r] = src[r][c]` for `src` `[rows, cols]`, in 16 x 16 blocks
/// (both sides' lines stay in cache while a block is moved).
fn transpose(src: &[f32], rows: usize, cols: usize, out: &mut [f32]) {
    const B: usize = 16;
    for r0 in (0..rows).step_by(B) {
        for c0 in (0..cols).step_by(B) {
            for r in r0..(r0 + B).min(rows) {
                for c in c0..(c0 + B).min(cols) {
                    out[c * rows + r] = src[r * cols + c];
                }
            }
        }
    }
}

/// The 2-D geometry of a conv from static dims (`x`, `w`, `out`), without
/// checking them (the run checks them): `None` unless all are rank 4.
pub(super) fn geometry(
    win: &Window,
    groups: usize,
    x: &[usize],
    w: &[usize],
    out: &[usize],
) -> Option<Conv2d> {
    let ([batch, c, h, wd], [o, _, kh, kw], [_, _, oh, ow]) = (
        <[usize; 4]>::try_from(x).ok()?,
        <[usize; 4]>::try_from(w).ok()?,
        <[usize; 4]>::try_from(out).ok()?,
    );
    let two = |v: &[usize]| (v.len() == 2).then(|| (v[0], v[1]));
    let pads = (win.padding.len() == 2).then(|| (win.padding[0].0, win.padding[1].0))?;
    Some(Conv2d {
        batch,
        c,
        o,
        groups,
        h,
        w: wd,
        oh,
        ow,
        kh,
        kw,
        s: two(&win.stride)?,
        d: two(&win.dilation)?,
        p: pads,
    })
}

/// Output pixels per image up to which the packed path is taken. Measured
/// per layer (ResNet-18, MobileNetV2, 1 thread, 2-vCPU AVX2 EPYC): at 7x7
/// outputs (3x3 512 -> 512, 1x1 160 -> 960 and 960 -> 160) it beats the
/// library GEMM, whose per-call packing of the weight is then not
/// amortised; at 14x14 and above it was even or slower (1x1 576 -> 96 at
/// 14x14: 2.2 vs 0.6 ms), the transposed product's copy back into NCHW
/// costing about what the library's packing does.
pub(super) const PACKED_MAX_PIXELS: usize = 64;

/// The packed layout of a conv weight `w` `[o, cg, kh, kw]` of `g2`.
fn layout(g2: &Conv2d, w: &[usize]) -> Option<ConvWeightLayout> {
    let groups = g2.groups;
    if groups == 0 || !g2.o.is_multiple_of(groups) || !g2.c.is_multiple_of(groups) || w.len() != 4 {
        return None;
    }
    Some(ConvWeightLayout {
        groups,
        og: g2.o / groups,
        k: w[1] * g2.kh * g2.kw,
    })
}

/// The packed layout of the weight of a conv with these static dims, when
/// the executable runs it on the packed path (a dense or grouped 2-D conv
/// that Winograd does not take, with few output pixels); `None`: its
/// weight stays plain.
pub(crate) fn packed_layout(
    win: &Window,
    groups: usize,
    x: &[usize],
    w: &[usize],
    out: &[usize],
) -> Option<ConvWeightLayout> {
    let g2 = geometry(win, groups, x, w, out)?;
    g2.packed_weight_wins().then(|| layout(&g2, w)).flatten()
}

impl Conv2d {
    /// True when [`Self::packed_gemm`] can run this conv (any 2-D conv
    /// but a depthwise one).
    pub(crate) fn takes_packed_weight(&self) -> bool {
        !self.is_depthwise()
    }

    /// True when the packed path is chosen for this conv: not a shape
    /// Winograd takes, at most [`PACKED_MAX_PIXELS`] output pixels.
    pub(super) fn packed_weight_wins(&self) -> bool {
        let (cg, og) = (self.c / self.groups.max(1), self.o / self.groups.max(1));
        let winograd = super::conv::winograd_enabled() && self.winograd_wins(cg, og);
        self.takes_packed_weight()
            && !winograd
            && !self.nchwc_wins()
            && self.oh * self.ow <= PACKED_MAX_PIXELS
    }

    /// `y += conv(x, wp)` with `wp` packed by [`ConvWeightLayout::pack`]
    /// in panels of `nr` (this CPU's [`super::gemm_packed::panel_width`]);
    /// `y` holds the bias on entry; then `epi`.
    pub(super) fn packed_gemm(
        &self,
        x: &[f32],
        wp: &[f32],
        nr: usize,
        y: &mut [f32],
        epi: Option<&ConvEpilogue>,
    ) -> KernelResult {
        let Some(isa) = isa().filter(|&i| tile_shape(i).1 == nr) else {
            return Err(fail!(
                "conv: weight packed in panels of {nr}, which this CPU's GEMM does not read"
            ));
        };
        let (cg, og) = (self.c / self.groups, self.o / self.groups);
        let k = cg * self.kh * self.kw;
        let (pin, pout) = (self.h * self.w, self.oh * self.ow);
        if pout == 0 || og == 0 {
            return Ok(());
        }
        let pointwise = self.is_pointwise();
        // Output rows per tile: a column matrix of about COL_TILE_BYTES, at
        // least 256 columns and twice the output channels (each tile
        // streams the whole weight); a 1x1 conv has no column matrix, its
        // tile's `[pixels, og]` product is kept about that size instead.
        let want = if pointwise {
            (COL_TILE_BYTES / (4 * og)).clamp(128, 1024)
        } else {
            (COL_TILE_BYTES / (4 * k).max(1)).max(256).max(2 * og)
        };
        let rows = want.div_ceil(self.ow).clamp(1, self.oh);
        let tiles = self.oh.div_ceil(rows);
        let jobs = self.batch * self.groups * tiles;
        let threads = team::threads();
        let panels = og.div_ceil(nr);
        // Fewer jobs than threads: one job at a time, its panels split.
        let (parts, panel_parts) = if jobs >= threads {
            (team::split(jobs, threads, 1), 1)
        } else {
            (team::split(jobs, 1, 1), threads.min(panels))
        };
        let shared = team::Disjoint::new(y);
        let job = |job: usize, col: &mut Vec<f32>, tmp: &mut Vec<f32>| {
            let (image, t) = (job / tiles, job % tiles);
            let (n, gi) = (image / self.groups, image % self.groups);
            let oys = t * rows..((t + 1) * rows).min(self.oh);
            let (p0, cols) = (oys.start * self.ow, oys.len() * self.ow);
            let xg = &x[(n * self.c + gi * cg) * pin..][..cg * pin];
            // The left operand `[cols, k]`, read column by column.
            let a = if pointwise {
                Strided {
                    data: xg,
                    offset: p0,
                    rows: cols,
                    cols: k,
                    row_stride: 1,
                    col_stride: pin,
                }
            } else {
                col.resize(k * cols, 0.0);
                self.im2col_rows(xg, cg, oys, col);
                Strided {
                    data: &col[..],
                    offset: 0,
                    rows: cols,
                    cols: k,
                    row_stride: 1,
                    col_stride: cols,
                }
            };
            let weights = Weights::one(&wp[gi * og * k..][..og * k], og, nr);
            tmp.resize(cols * og, 0.0);
            let ranges = team::split(panels, panel_parts, 1);
            let out = team::Disjoint::new(&mut tmp[..]);
            let product = |part: usize| {
                // SAFETY: each part writes only its own panels' columns.
                let c = unsafe { out.range(0..cols * og) };
                panels_product(isa, a, &weights, ranges[part].clone(), c, og, false);
            };
            if ranges.len() > 1 {
                team::parallel_for(ranges.len(), product);
            } else {
                product(0);
            }
            // Added back into NCHW a panel of channels at a time: one read
            // stream of `tmp` and 16 sequential write streams (channel by
            // channel, the strided reads missed the cache for large `og`).
            let y0 = (n * self.o + gi * og) * pout + p0;
            for c0 in (0..og).step_by(16) {
                let c1 = (c0 + 16).min(og);
                let mut rows: Vec<&mut [f32]> = (c0..c1)
                    .map(|c| {
                        let at = y0 + c * pout;
                        // SAFETY: each job owns its columns of its channels' rows.
                        unsafe { shared.range(at..at + cols) }
                    })
                    .collect();
                for (i, t) in tmp.chunks_exact(og).enumerate() {
                    for (row, &v) in rows.iter_mut().zip(&t[c0..c1]) {
                        row[i] += v;
                    }
                }
            }
        };
        if parts.len() > 1 {
            team::parallel_for(parts.len(), |part| {
                let (mut col, mut tmp) = (Vec::new(), Vec::new());
                for j in parts[part].clone() {
                    job(j, &mut col, &mut tmp);
                }
            });
        } else {
            let (mut col, mut tmp) = (Vec::new(), Vec::new());
            for j in parts.into_iter().flatten() {
                job(j, &mut col, &mut tmp);
            }
        }
        let Some(epi) = epi else { return Ok(()) };
        let images = self.batch * self.groups;
        let parts = team::split(images, team::threads(), 1);
        team::try_parallel_for(parts.len(), |part| {
            for image in parts[part].clone() {
                let (n, gi) = (image / self.groups, image % self.groups);
                let y0 = (n * self.o + gi * og) * pout;
                // SAFETY: each image's group of channels belongs to one part.
                let yb = unsafe { shared.range(y0..y0 + og * pout) };
                epi.apply(yb, n, gi * og..(gi + 1) * og)?;
            }
            Ok(())
        })
    }
}

/// The panel width and packed copy of weight `w` when the packed path
/// takes this conv (static dims `x`, `w`, `out`); for tests to run the
/// fixtures through it.
/// The panel width and packed copy of weight `w` when the packed kernel
/// can run this conv (static dims `x`, `w`, `out`), whatever the size; for
/// tests to run the fixtures through it.
#[cfg(test)]
pub(crate) fn packed_copy(
    win: &Window,
    groups: usize,
    dims: [&[usize]; 3],
    w: &[f32],
) -> Option<(usize, Vec<f32>)> {
    let nr = super::gemm_packed::panel_width()?;
    let g2 = geometry(win, groups, dims[0], dims[1], dims[2])?;
    let layout = g2
        .takes_packed_weight()
        .then(|| layout(&g2, dims[1]))
        .flatten()?;
    let mut packed = vec![0.0; w.len()];
    layout.pack(w, nr, &mut packed);
    Some((nr, packed))
}

#[cfg(test)]
mod tests {
    use super::ConvWeightLayout;

    #[test]
    fn pack_then_unpack_is_the_identity_and_moves_values() {
        for (groups, og, k, nr) in [(1, 20, 9, 16), (2, 5, 4, 16), (3, 33, 7, 8), (1, 16, 1, 16)] {
            let l = ConvWeightLayout { groups, og, k };
            let w: Vec<f32> = (0..groups * og * k).map(|i| i as f32).collect();
            let mut p = vec![0.0; w.len()];
            l.pack(&w, nr, &mut p);
            // Group 0, panel 0, tap 1 starts with output channel 0's tap 1.
            if k > 1 {
                assert_eq!(p[nr.min(og)], w[1], "{l:?}");
            }
            let mut back = p.clone();
            l.unpack_in_place(&mut back, nr);
            assert_eq!(back, w, "{l:?}");
        }
    }
}
