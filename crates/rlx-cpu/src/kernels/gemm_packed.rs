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
pub const PACKED_MIN_ROWS: usize = 4;

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
pub fn unpack(packed: &[f32], k: usize, n: usize, nr: usize, out: &mut [f32]) {
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
    assert!(a.len() == m * k && b.len() == k * n && c.len() == m * n);
    let isa = isa().expect("packed GEMM needs an FMA SIMD tile");
    let (mr, width) = tile_shape(isa);
    assert_eq!(nr, width, "panel width of another CPU");
    if m == 0 || n == 0 {
        return;
    }
    if k == 0 {
        c.fill(0.0);
        return;
    }
    let parts = if m * n * k >= super::gemm::GEMM_GRAIN {
        threads
    } else {
        1
    };
    let panels = n.div_ceil(nr);
    let by_rows = super::gemm::splits_by_rows(m, n);
    let ranges = if by_rows {
        team::split(m, parts.min(m.div_ceil(mr)), mr)
    } else {
        team::split(panels, parts.min(panels), 1)
    };
    let out = team::Disjoint::new(c);
    team::parallel_for(ranges.len(), |p| {
        let r = ranges[p].clone();
        // SAFETY: each part writes only its own rows or panels' columns.
        let c = unsafe { out.range(0..m * n) };
        let a = Strided::row_major(a, 0, m, k);
        if by_rows {
            let rows = Strided {
                offset: r.start * k,
                rows: r.len(),
                ..a
            };
            panels_product(
                isa,
                rows,
                b,
                n,
                nr,
                0..panels,
                &mut c[r.start * n..],
                n,
                false,
            );
        } else {
            panels_product(isa, a, b, n, nr, r, c, n, false);
        }
    });
}

/// Columns of panels `panels` of `c` (row stride `ldc`; `+=` when
/// `add`): chunk of rows by chunk of rows, and within a chunk block of
/// depth by block of depth (a tile's slices of `a` and of a panel then
/// stay in L2); a later block adds to what the earlier ones stored, so
/// each element is still one chain over `k` in order.
#[allow(clippy::too_many_arguments)]
pub(super) fn panels_product(
    isa: Isa,
    a: Strided<f32>,
    b: &[f32],
    n: usize,
    nr: usize,
    panels: std::ops::Range<usize>,
    c: &mut [f32],
    ldc: usize,
    add: bool,
) {
    let (m, k) = (a.rows, a.cols);
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
            for j in panels.clone() {
                let w = panel_cols(j, n, nr);
                let full = &b[j * nr * k..j * nr * k + k * w];
                let panel = if w < nr {
                    // The narrow last panel, padded with zero columns.
                    narrow.resize(depth * nr, 0.0);
                    let rows_of = full[k0 * w..(k0 + depth) * w].chunks_exact(w);
                    for (dst, src) in narrow.chunks_exact_mut(nr).zip(rows_of) {
                        dst[..w].copy_from_slice(src);
                    }
                    &narrow[..]
                } else {
                    &full[k0 * nr..(k0 + depth) * nr]
                };
                // The first tile over a panel streams it from memory; it
                // also prefetches the next panel's block, so that stream
                // overlaps the arithmetic instead of stalling the next
                // panel's first tile.
                let next = (j + 1 < panels.end).then(|| {
                    let w = panel_cols(j + 1, n, nr);
                    let start = (j + 1) * nr * k + k0 * w;
                    &b[start..start + depth * w]
                });
                for t in 0..tiles {
                    let row = r0 + t * mr;
                    let tile = Tile {
                        depth,
                        a: &a_packed[t * mr * depth..(t + 1) * mr * depth],
                        b: panel,
                        ahead: if t == 0 { next } else { None },
                        rows: mr.min(m - row),
                        cols: w,
                        accumulate: add || k0 > 0,
                    };
                    // SAFETY: the tile was compiled for `isa`, detected above.
                    unsafe { run_tile(isa, &tile, &mut c[row * ldc + j * nr..], ldc) };
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
