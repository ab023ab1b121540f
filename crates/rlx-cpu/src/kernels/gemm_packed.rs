//! f32 GEMM against a weight matrix packed once, when its param is set.
//!
//! A library GEMM packs its right-hand matrix into column panels on every
//! call; for a weight that is read many times that is a pass over the whole
//! matrix (from DRAM, for a model larger than the cache) per product. Here
//! a `[K, N]` weight is stored as panels of `nr` columns, each `K` rows of
//! its columns contiguous (the last panel narrower when `nr` does not
//! divide `N`), so the packed matrix has exactly the bytes of the plain one
//! and a product streams it front to back.
//!
//! Every output element is one fused multiply-add chain over `k = 0..K` in
//! order, whatever the tile, panel, thread split or SIMD width, so a
//! product is bit-identical however its weight is stacked or its rows are
//! blocked (the fusion passes rely on that).

// The kernels exist on x86-64 only; elsewhere the entry points are never
// reached (callers check `available()`), so their plumbing is unused there.
#![cfg_attr(
    not(target_arch = "x86_64"),
    allow(dead_code, unused, unreachable_code)
)]

use super::gemm::Strided;
use super::gemm_tile::{isa, pack_a, run_tile, tile_shape, Isa, Tile};
use crate::team;

/// Rows of the left operand packed at a time: their packed copy stays in
/// L2 while every panel of the thread's columns runs over it.
const ROW_CHUNK_BYTES: usize = 256 * 1024;

/// Rows below which products keep the plain weight: a tile of fewer than
/// four rows has too few independent FMA chains to hide their latency,
/// and a single row is a GEMV (its own kernel streams eight weight rows
/// at once).
pub(crate) const PACKED_MIN_ROWS: usize = 4;

/// Depth (`k`) of a block, for very deep products only: a tile's rows of
/// `a` and its panel block then stay within L2. Measured on the MiniLM
/// shapes (k 384 / 1536), blocks of 256 (L1-sized) slowed 16-row products
/// by ~20% (each panel is then streamed in several visits) and sped up
/// none.
const DEPTH_BLOCK: usize = 2048;

thread_local! {
    /// [`panels_product`]'s packed rows of `a`, reused by the next call on
    /// this thread.
    static A_SCRATCH: std::cell::Cell<Vec<f32>> = const { std::cell::Cell::new(Vec::new()) };
}

/// Panel width of packed weights on this CPU, or `None` where products
/// stay with the library GEMM (no FMA SIMD tile here).
pub fn panel_width() -> Option<usize> {
    isa().map(|i| tile_shape(i).1)
}

/// Width of panel `j` of an `n`-column matrix cut every `nr` columns.
pub(super) fn panel_cols(j: usize, n: usize, nr: usize) -> usize {
    nr.min(n - j * nr)
}

/// For each row of each panel of a `[k, n]` matrix cut every `nr`
/// columns: where its values lie in the plain matrix and in the packed one.
fn panel_rows(
    k: usize,
    n: usize,
    nr: usize,
) -> impl Iterator<Item = (std::ops::Range<usize>, std::ops::Range<usize>)> {
    (0..n.div_ceil(nr)).flat_map(move |j| {
        let w = panel_cols(j, n, nr);
        (0..k).map(move |p| {
            let plain = p * n + j * nr;
            let packed = j * nr * k + p * w;
            (plain..plain + w, packed..packed + w)
        })
    })
}

/// Packs row-major `b` (one or more `[k, n]` matrices, one after the
/// other) into `out` (same length) as panels of `nr` columns per matrix.
pub fn pack(b: &[f32], k: usize, n: usize, nr: usize, out: &mut [f32]) {
    assert!(nr > 0 && k * n > 0 && b.len() == out.len() && b.len().is_multiple_of(k * n));
    for (b, out) in b.chunks_exact(k * n).zip(out.chunks_exact_mut(k * n)) {
        for (plain, packed) in panel_rows(k, n, nr) {
            out[packed].copy_from_slice(&b[plain]);
        }
    }
}

/// The inverse of [`pack`].
pub(crate) fn unpack(packed: &[f32], k: usize, n: usize, nr: usize, out: &mut [f32]) {
    assert!(nr > 0 && k * n > 0 && packed.len() == out.len() && packed.len().is_multiple_of(k * n));
    for (packed, out) in packed.chunks_exact(k * n).zip(out.chunks_exact_mut(k * n)) {
        for (plain, at) in panel_rows(k, n, nr) {
            out[plain].copy_from_slice(&packed[at]);
        }
    }
}

/// `c[m, n] = a[m, k] @ b`, `b` packed by [`pack`] with panel width `nr`
/// (which must be [`panel_width`]); split over up to `threads` threads of
/// the team when the product is big enough: into blocks of panels, or for
/// an output taller than wide into blocks of rows (each thread then packs
/// only its own rows of `a`).
#[allow(clippy::too_many_arguments)]
pub fn matmul(
    a: &[f32],
    m: usize,
    k: usize,
    b: &[f32],
    n: usize,
    nr: usize,
    c: &mut [f32],
    threads: usize,
) {
    matmul_stacked(a, m, k, b, 1, n, nr, c, threads);
}

/// `c[g] = a @ b[g]` for `count` packed `[k, n]` matrices `b[g]` (one
/// after the other, as [`pack`] packs a stack) sharing the left operand
/// `a[m, k]`, into `count` `[m, n]` outputs (the stacked q / k / v
/// projections). A split by panels runs over the panels of all matrices at
/// once: one team entry, and `a` packed once per thread rather than once
/// per matrix (the three 128 x 384 x 384 products of MiniLM's q / k / v
/// scaled 1.67x on 2 threads one at a time).
#[allow(clippy::too_many_arguments)]
pub fn matmul_stacked(
    a: &[f32],
    m: usize,
    k: usize,
    b: &[f32],
    count: usize,
    n: usize,
    nr: usize,
    c: &mut [f32],
    threads: usize,
) {
    assert!(a.len() == m * k && b.len() == count * k * n && c.len() == count * m * n);
    let isa = isa().expect("packed GEMM needs an FMA SIMD tile");
    let (mr, width) = tile_shape(isa);
    assert_eq!(nr, width, "panel width of another CPU");
    if m == 0 || n == 0 || count == 0 {
        return;
    }
    if k == 0 {
        c.fill(0.0);
        return;
    }
    let parts = if count * m * n * k >= super::gemm::GEMM_GRAIN {
        threads
    } else {
        1
    };
    let a = Strided::row_major(a, 0, m, k);
    if super::gemm::splits_by_rows(m, n) {
        // Tall outputs: each matrix's rows split over the team.
        let panels = n.div_ceil(nr);
        let ranges = team::split(m, parts.min(m.div_ceil(mr)), mr);
        for (bg, cg) in b.chunks_exact(k * n).zip(c.chunks_exact_mut(m * n)) {
            let out = team::Disjoint::new(cg);
            team::parallel_for(ranges.len(), |p| {
                let r = ranges[p].clone();
                // SAFETY: each part writes only its own rows.
                let cg = unsafe { out.range(r.start * n..r.end * n) };
                let rows = Strided {
                    offset: r.start * k,
                    rows: r.len(),
                    ..a
                };
                let weights = Weights::one(bg, n, nr);
                panels_product(isa, rows, &weights, 0..panels, cg, n, false);
            });
        }
        return;
    }
    let weights = Weights {
        b,
        k,
        n,
        nr,
        c_stride: m * n,
    };
    let total = count * n.div_ceil(nr);
    let ranges = team::split(total, parts.min(total), 1);
    let out = team::Disjoint::new(c);
    team::parallel_for(ranges.len(), |p| {
        // SAFETY: each part writes only its own panels' columns.
        let c = unsafe { out.range(0..count * m * n) };
        panels_product(isa, a, &weights, ranges[p].clone(), c, n, false);
    });
}

/// Packed weights as [`panels_product`] reads them: one or more `[k, n]`
/// matrices packed in panels of `nr` columns, one after the other; panel
/// `J` is panel `J % ppm` of matrix `J / ppm` (`ppm` panels per matrix),
/// whose output lies `c_stride` values after the previous matrix's.
pub(super) struct Weights<'a> {
    pub(crate) b: &'a [f32],
    pub(crate) k: usize,
    pub(crate) n: usize,
    pub(crate) nr: usize,
    pub(crate) c_stride: usize,
}

impl<'a> Weights<'a> {
    /// One packed `[b.len() / n, n]` matrix.
    pub(crate) fn one(b: &'a [f32], n: usize, nr: usize) -> Weights<'a> {
        Weights {
            b,
            k: b.len() / n.max(1),
            n,
            nr,
            c_stride: 0,
        }
    }

    /// Matrix index, panel index within it, and that panel's width.
    fn locate(&self, panel: usize) -> (usize, usize, usize) {
        let per_matrix = self.n.div_ceil(self.nr);
        let (g, j) = (panel / per_matrix, panel % per_matrix);
        (g, j, panel_cols(j, self.n, self.nr))
    }

    /// Values `depth` rows from row `k0` of panel `panel` (`[depth][w]`).
    fn block(&self, panel: usize, k0: usize, depth: usize) -> &'a [f32] {
        let (g, j, w) = self.locate(panel);
        let start = g * self.k * self.n + j * self.nr * self.k + k0 * w;
        &self.b[start..start + depth * w]
    }
}

/// Columns of panels `panels` of `weights` into `c` (row stride `ldc`;
/// `+=` when `add`): chunk of rows by chunk of rows, and within a chunk
/// block of depth by block of depth (a tile's slices of `a` and of a panel
/// then stay in L2); a later block adds to what the earlier ones stored, so
/// each element is still one chain over `k` in order.
pub(super) fn panels_product(
    isa: Isa,
    a: Strided<f32>,
    weights: &Weights,
    panels: std::ops::Range<usize>,
    c: &mut [f32],
    ldc: usize,
    add: bool,
) {
    let (m, k) = (a.rows, a.cols);
    assert_eq!(k, weights.k, "depth of a and of the weights");
    let nr = weights.nr;
    let mr = tile_shape(isa).0;
    let kc = DEPTH_BLOCK.min(k);
    let chunk_rows = (ROW_CHUNK_BYTES / (4 * kc)).max(1).div_ceil(mr) * mr;
    // The packed rows live in a per-thread buffer kept between calls: a
    // fresh one (100-300 KiB) cost an mmap, page faults and zeroing per call.
    let mut a_packed = A_SCRATCH.take();
    a_packed.resize(chunk_rows.min(m.next_multiple_of(mr)) * kc, 0.0);
    let mut narrow = Vec::new();
    let mut r0 = 0;
    while r0 < m {
        let rows = chunk_rows.min(m - r0);
        let tiles = rows.div_ceil(mr);
        for k0 in (0..k).step_by(kc) {
            let depth = kc.min(k - k0);
            pack_a(a, r0..r0 + rows, k0..k0 + depth, mr, &mut a_packed);
            for panel in panels.clone() {
                let (g, j, w) = weights.locate(panel);
                let block = weights.block(panel, k0, depth);
                let b = if w < nr {
                    // The narrow last panel, padded with zero columns.
                    narrow.resize(depth * nr, 0.0);
                    for (dst, src) in narrow.chunks_exact_mut(nr).zip(block.chunks_exact(w)) {
                        dst[..w].copy_from_slice(src);
                    }
                    &narrow[..]
                } else {
                    block
                };
                // The first tile over a panel streams it from memory; it
                // also prefetches the next panel's block (of this matrix or
                // the next), so that stream overlaps the arithmetic instead
                // of stalling the next panel's first tile.
                let next = (panel + 1 < panels.end).then(|| weights.block(panel + 1, k0, depth));
                let c = &mut c[g * weights.c_stride + j * nr..];
                for t in 0..tiles {
                    let row = r0 + t * mr;
                    let tile = Tile {
                        depth,
                        a: &a_packed[t * mr * depth..(t + 1) * mr * depth],
                        b,
                        ahead: if t == 0 { next } else { None },
                        rows: mr.min(m - row),
                        cols: w,
                        accumulate: add || k0 > 0,
                    };
                    // SAFETY: the tile was compiled for `isa`, detected above.
                    unsafe { run_tile(isa, &tile, &mut c[row * ldc..], ldc) };
                }
            }
        }
        r0 += rows;
    }
    A_SCRATCH.set(a_packed);
}

#[cfg(test)]
mod tests {
    use super::super::gemm_tile::test_values as values;
    use super::*;

    #[test]
    fn pack_then_unpack_is_the_identity() {
        for (k, n, nr) in [(3, 5, 2), (4, 16, 16), (7, 33, 16), (1, 1, 32)] {
            for stack in [1, 3] {
                let b = values(stack * k * n, 1);
                let mut p = vec![0.0; b.len()];
                pack(&b, k, n, nr, &mut p);
                if stack == 1 && n > nr {
                    assert_ne!(p, b, "{k}x{n} by {nr} moves values");
                }
                let mut back = vec![0.0; b.len()];
                unpack(&p, k, n, nr, &mut back);
                assert_eq!(back, b, "{stack} x {k}x{n} by {nr}");
            }
        }
    }

    #[test]
    fn products_match_f64_and_one_fma_chain_per_element() {
        let Some(nr) = panel_width() else { return };
        for (m, k, n) in [
            (1, 1, 1),
            (5, 7, 3),
            (16, 384, 100),
            (37, 65, 70),
            (9, 700, 40),
            (5, 4200, 20),
            (130, 200, 96),
        ] {
            let (a, b) = (values(m * k, 2), values(k * n, 3));
            let mut p = vec![0.0; k * n];
            pack(&b, k, n, nr, &mut p);
            let mut c = vec![f32::NAN; m * n];
            matmul(&a, m, k, &p, n, nr, &mut c, 2);
            for i in 0..m {
                for j in 0..n {
                    let want: f64 = (0..k)
                        .map(|q| a[i * k + q] as f64 * b[q * n + j] as f64)
                        .sum();
                    let got = c[i * n + j];
                    assert!(
                        (got as f64 - want).abs() <= 1e-5 * (k as f64).sqrt() * (1.0 + want.abs()),
                        "{m}x{k}x{n} [{i},{j}]: {got} vs {want}"
                    );
                    // The same chain written out: bit-identical.
                    let chain = (0..k).fold(0f32, |s, q| a[i * k + q].mul_add(b[q * n + j], s));
                    assert_eq!(got.to_bits(), chain.to_bits(), "{m}x{k}x{n} [{i},{j}]");
                }
            }
        }
    }

    #[test]
    fn a_stack_of_weights_gives_each_matrix_s_own_product() {
        let Some(nr) = panel_width() else { return };
        // Wide (panels of all matrices split together, a thread's share
        // crossing matrices; 40 columns leaves a narrow last panel) and
        // tall (each matrix split by rows); each above the split grain.
        for (m, k, n) in [(20, 400, 48), (9, 1000, 40), (130, 120, 24)] {
            let count = 3;
            let (a, b) = (values(m * k, 6), values(count * k * n, 7));
            let mut p = vec![0.0; b.len()];
            pack(&b, k, n, nr, &mut p);
            for parts in [1, 2, 5] {
                let mut c = vec![f32::NAN; count * m * n];
                matmul_stacked(&a, m, k, &p, count, n, nr, &mut c, parts);
                for g in 0..count {
                    for (i, j) in (0..m).flat_map(|i| (0..n).map(move |j| (i, j))) {
                        let chain = (0..k).fold(0f32, |s, q| {
                            a[i * k + q].mul_add(b[g * k * n + q * n + j], s)
                        });
                        let got = c[g * m * n + i * n + j];
                        assert_eq!(got.to_bits(), chain.to_bits(), "{m}x{k}x{n} [{g}][{i},{j}]");
                    }
                }
            }
        }
    }

    #[test]
    fn any_split_of_the_panels_or_rows_gives_the_same_bits() {
        let Some(nr) = panel_width() else { return };
        // Wide (split by panels) and tall (split by rows).
        for (m, k, n) in [(70, 300, 200), (300, 100, 40)] {
            let (a, b) = (values(m * k, 4), values(k * n, 5));
            let mut p = vec![0.0; k * n];
            pack(&b, k, n, nr, &mut p);
            let mut base = vec![0.0; m * n];
            matmul(&a, m, k, &p, n, nr, &mut base, 1);
            for parts in [2, 3, 5] {
                let mut c = vec![0.0; m * n];
                matmul(&a, m, k, &p, n, nr, &mut c, parts);
                assert_eq!(c, base, "{m}x{k}x{n}, {parts} parts");
            }
        }
    }
}
