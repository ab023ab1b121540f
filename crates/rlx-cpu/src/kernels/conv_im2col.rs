//! Dense / grouped 2-D conv as im2col + GEMM in tiles of output rows: each
//! tile's column matrix (`[C/groups * kh * kw, rows * ow]`, about
//! [`COL_TILE_BYTES`]) is built, multiplied and stored while it is in
//! cache, instead of one column matrix of the whole image (tens of MB for
//! a 3x3 conv over a large image, written once and read back by the GEMM
//! from memory). Tiles run in parallel over the team, each GEMM on one
//! thread; the epilogue then runs on each image's group of channels.

use super::conv2d::Conv2d;
use super::conv_epilogue::ConvEpilogue;
use super::gemm::{GemmFloat, Strided};
use super::KernelResult;
use crate::team;

/// Target size of one tile's column matrix.
const COL_TILE_BYTES: usize = 128 * 1024;

impl Conv2d {
    /// `y += conv(x, wt)` (y holds the bias), then `epi`.
    pub(super) fn im2col_gemm<T: GemmFloat>(
        &self,
        x: &[T],
        wt: &[T],
        y: &mut [T],
        epi: Option<&ConvEpilogue>,
    ) -> KernelResult {
        let (cg, og) = (self.c / self.groups, self.o / self.groups);
        let k = cg * self.kh * self.kw;
        let (pin, pout) = (self.h * self.w, self.oh * self.ow);
        if pout == 0 || og == 0 {
            return Ok(());
        }
        // Columns per tile: a column matrix of about COL_TILE_BYTES, but at
        // least 256 and twice the output channels (every tile reads the
        // whole weight: fewer columns would read it more than the columns).
        let want = (COL_TILE_BYTES / (k * std::mem::size_of::<T>()).max(1))
            .max(256)
            .max(2 * og);
        let rows = want.div_ceil(self.ow).clamp(1, self.oh);
        let tiles = self.oh.div_ceil(rows);
        let jobs = self.batch * self.groups * tiles;
        let threads = team::threads();
        // Fewer jobs than threads: one job at a time, each GEMM threaded.
        let (parts, gemm_threads) = if jobs >= threads {
            (team::split(jobs, threads, 1), 1)
        } else {
            (team::split(jobs, 1, 1), threads)
        };
        let shared = team::Disjoint::new(y);
        team::parallel_for(parts.len(), |part| {
            let mut col = vec![T::ZERO; k * rows * self.ow];
            let mut tmp = vec![T::ZERO; if tiles > 1 { og * rows * self.ow } else { 0 }];
            for job in parts[part].clone() {
                let (image, t) = (job / tiles, job % tiles);
                let (n, gi) = (image / self.groups, image % self.groups);
                let oys = t * rows..((t + 1) * rows).min(self.oh);
                let (p0, cols) = (oys.start * self.ow, oys.len() * self.ow);
                let xg = &x[(n * self.c + gi * cg) * pin..][..cg * pin];
                let col = &mut col[..k * cols];
                self.im2col_rows(xg, cg, oys, col);
                let a = Strided::row_major(&wt[gi * og * k..][..og * k], 0, og, k);
                let b = Strided::row_major(col, 0, k, cols);
                let y0 = (n * self.o + gi * og) * pout + p0;
                if cols == pout {
                    // The whole image: its rows are contiguous in y.
                    // SAFETY: each job owns its image's group of channels.
                    let yb = unsafe { shared.range(y0..y0 + og * pout) };
                    T::gemm_add(a, b, yb, gemm_threads);
                    continue;
                }
                let tmp = &mut tmp[..og * cols];
                for (o, trow) in tmp.chunks_exact_mut(cols).enumerate() {
                    // SAFETY: each job owns its columns of its channels' rows.
                    let yrow = unsafe { shared.range(y0 + o * pout..y0 + o * pout + cols) };
                    trow.copy_from_slice(yrow);
                }
                T::gemm_add(a, b, tmp, gemm_threads);
                for (o, trow) in tmp.chunks_exact(cols).enumerate() {
                    // SAFETY: as above.
                    let yrow = unsafe { shared.range(y0 + o * pout..y0 + o * pout + cols) };
                    yrow.copy_from_slice(trow);
                }
            }
        });
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
