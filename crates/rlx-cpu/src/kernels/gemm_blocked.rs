//! f32 GEMM of two strided operands: each thread packs its columns of
//! the right-hand matrix into the panels of [`super::gemm_packed`] (the
//! layout of a weight packed once) and runs that kernel's tiles over
//! them, so a product reads its operands in place however they are
//! strided and its bits do not depend on the thread split or on whether
//! its weight was packed once: each output element is one fused
//! multiply-add chain over `k` in order.
//!
//! Packing costs a pass over `b` per call (per thread for a split by
//! rows), which a product amortises over its rows, and each tile stores
//! its part of `c` once per product, which a deep product amortises over
//! its depth: `prefers` says where this beats the library GEMM.

// The kernels exist on x86-64 only; elsewhere the entry points are never
// reached (callers check `available()`), so their plumbing is unused there.
#![cfg_attr(
    not(target_arch = "x86_64"),
    allow(dead_code, unused, unreachable_code)
)]

use super::gemm::{Strided, GEMM_GRAIN};
use super::gemm_packed::{panel_cols, panels_product, Weights};
use super::gemm_tile::{isa, tile_shape, Isa};
use crate::team;

/// Rows and depth from which [`gemm`] beat faer on this crate's
/// `packed_gemm` example (AVX2 Zen 4, 2 threads: the 1024- and 2048-cubes
/// by 5-15%; 512-cubes, products of depth 384 or of 128 rows level or up
/// to 15% slower).
const MIN_ROWS: usize = 256;
const MIN_DEPTH: usize = 1024;

/// True when [`gemm`] is available and expected to beat the library GEMM
/// on an `m x k` by `k x n` product.
pub(crate) fn prefers(m: usize, k: usize, _n: usize) -> bool {
    m >= MIN_ROWS && k >= MIN_DEPTH && available()
}

thread_local! {
    /// The packed panels of `b`, kept between calls on this thread (a
    /// fresh buffer per call costs an mmap, page faults and zeroing).
    static PANELS: std::cell::Cell<Vec<f32>> = const { std::cell::Cell::new(Vec::new()) };
}

/// Largest panel buffer kept for the next call (floats, 16 MiB): a bigger
/// one is freed after its product, whose arithmetic dwarfs a fresh
/// allocation, rather than held by the thread for the process's life.
const KEPT_PANELS: usize = 1 << 22;

/// True when this CPU has a register tile for [`gemm`].
pub fn available() -> bool {
    isa().is_some()
}

/// `c = a · b` (or `c += a · b` when `accumulate`): `a` is `m x k`, `b`
/// is `k x n`, `c` dense row-major `m x n`. Large products split into
/// blocks of columns (or, for an output taller than wide, of rows) over
/// `threads` threads.
///
/// Panics unless [`available`].
pub fn gemm(a: Strided<f32>, b: Strided<f32>, c: &mut [f32], accumulate: bool, threads: usize) {
    let isa = isa().expect("blocked GEMM needs an FMA SIMD tile");
    let (m, k, n) = (a.rows, a.cols, b.cols);
    assert!(b.rows == k && c.len() == m * n, "gemm operand shapes");
    a.check();
    b.check();
    if m * n == 0 {
        return;
    }
    if k == 0 {
        if !accumulate {
            c.fill(0.0);
        }
        return;
    }
    let parts = if m * n * k >= GEMM_GRAIN { threads } else { 1 };
    gemm_in_parts(isa, a, b, c, accumulate, parts);
}

/// [`gemm`] split into at most `parts` blocks of whole tiles. A split by
/// columns packs `a`'s rows in every part, one by rows `b` in every part:
/// the smaller repeat wins.
fn gemm_in_parts(
    isa: Isa,
    a: Strided<f32>,
    b: Strided<f32>,
    c: &mut [f32],
    accumulate: bool,
    parts: usize,
) {
    let (m, n) = (a.rows, b.cols);
    let (mr, nr) = tile_shape(isa);
    let by_rows = m > n;
    let blocks = if by_rows {
        team::split(m, parts.min(m.div_ceil(mr)), mr)
    } else {
        team::split(n, parts.min(n.div_ceil(nr)), nr)
    };
    let out = team::Disjoint::new(c);
    team::parallel_for(blocks.len(), |p| {
        let r = blocks[p].clone();
        // SAFETY: each block writes only its own rows or columns of `c`.
        let c = unsafe { out.range(0..m * n) };
        let (a, b, at) = if by_rows {
            let a = Strided {
                offset: a.offset + r.start * a.row_stride,
                rows: r.len(),
                ..a
            };
            (a, b, r.start * n)
        } else {
            let b = Strided {
                offset: b.offset + r.start * b.col_stride,
                cols: r.len(),
                ..b
            };
            (a, b, r.start)
        };
        let mut panels = PANELS.take();
        panels.resize(b.rows * b.cols, 0.0);
        pack_b(b, nr, &mut panels);
        let count = b.cols.div_ceil(nr);
        let weights = Weights::one(&panels, b.cols, nr);
        panels_product(isa, a, &weights, 0..count, &mut c[at..], n, accumulate);
        if panels.capacity() <= KEPT_PANELS {
            PANELS.set(panels);
        }
    });
}

/// Packs `b` into `out` as [`super::gemm_packed::pack`] does (panels of
/// `nr` columns, the last one narrower), reading rows in place when they
/// are contiguous and runs of a column when columns are (a transposed
/// operand).
fn pack_b(b: Strided<f32>, nr: usize, out: &mut [f32]) {
    let (k, n) = (b.rows, b.cols);
    let at = |p: usize, j: usize| b.offset + p * b.row_stride + j * b.col_stride;
    for j in 0..n.div_ceil(nr) {
        let (first, w) = (j * nr, panel_cols(j, n, nr));
        let panel = &mut out[first * k..first * k + w * k];
        if b.col_stride == 1 {
            for (p, row) in panel.chunks_exact_mut(w).enumerate() {
                let r = at(p, first);
                copy_row(row, &b.data[r..r + w]);
            }
        } else if b.row_stride == 1 {
            for jj in 0..w {
                let col = &b.data[at(0, first + jj)..][..k];
                for (row, &v) in panel.chunks_exact_mut(w).zip(col) {
                    row[jj] = v;
                }
            }
        } else {
            for (p, row) in panel.chunks_exact_mut(w).enumerate() {
                for (jj, d) in row.iter_mut().enumerate() {
                    *d = b.data[at(p, first + jj)];
                }
            }
        }
    }
}

/// `dst = src` for one row of a panel: full-width rows as fixed-size
/// arrays (vector moves; a slice copy of run-time length is a memmove
/// call per row, ~10% of a 512-cube product).
fn copy_row(dst: &mut [f32], src: &[f32]) {
    fn fixed<const W: usize>(dst: &mut [f32], src: &[f32]) {
        let dst: &mut [f32; W] = dst.try_into().expect("W values");
        *dst = src.try_into().expect("W values");
    }
    match dst.len() {
        16 => fixed::<16>(dst, src),
        32 => fixed::<32>(dst, src),
        _ => dst.copy_from_slice(src),
    }
}

#[cfg(test)]
mod tests {
    use super::super::gemm_tile::test_values as values;
    use super::*;

    /// A view of `data` as `rows x cols`, stored row-major or (`transposed`)
    /// column-major, or with a gap between rows (`padded`).
    fn view(data: &[f32], rows: usize, cols: usize, layout: &str) -> Strided<'static, f32> {
        let stored: Vec<f32> = match layout {
            "row" => data.to_vec(),
            "col" => (0..cols)
                .flat_map(|j| (0..rows).map(move |i| data[i * cols + j]))
                .collect(),
            // Every other element of rows twice as long (neither stride 1).
            _ => (0..rows)
                .flat_map(|i| {
                    (0..2 * cols).map(move |q| {
                        if q % 2 == 0 {
                            data[i * cols + q / 2]
                        } else {
                            f32::NAN
                        }
                    })
                })
                .collect(),
        };
        let (row_stride, col_stride) = match layout {
            "row" => (cols, 1),
            "col" => (1, rows),
            _ => (2 * cols, 2),
        };
        Strided {
            data: Box::leak(stored.into_boxed_slice()),
            offset: 0,
            rows,
            cols,
            row_stride,
            col_stride,
        }
    }

    #[test]
    fn products_match_f64_and_one_fma_chain_per_element() {
        if !available() {
            return;
        }
        for (m, k, n) in [
            (1, 1, 1),
            (7, 5, 3),
            (2, 300, 17),
            (250, 520, 40),
            (13, 2100, 260),
            (300, 40, 70),
        ] {
            let (a, b) = (values(m * k, 2), values(k * n, 3));
            for (la, lb) in [
                ("row", "row"),
                ("col", "row"),
                ("row", "col"),
                ("gap", "gap"),
            ] {
                let av = view(&a, m, k, la);
                let bv = view(&b, k, n, lb);
                let init = values(m * n, 4);
                for add in [false, true] {
                    let mut c = if add {
                        init.clone()
                    } else {
                        vec![f32::NAN; m * n]
                    };
                    gemm(av, bv, &mut c, add, 2);
                    for i in 0..m {
                        for j in 0..n {
                            let start = if add { init[i * n + j] } else { 0.0 };
                            let want: f64 = start as f64
                                + (0..k)
                                    .map(|q| a[i * k + q] as f64 * b[q * n + j] as f64)
                                    .sum::<f64>();
                            let got = c[i * n + j];
                            assert!(
                                (got as f64 - want).abs()
                                    <= 1e-5 * (k as f64).sqrt() * (1.0 + want.abs()),
                                "{m}x{k}x{n} {la}/{lb} add={add} [{i},{j}]: {got} vs {want}"
                            );
                            let chain =
                                (0..k).fold(start, |s, q| a[i * k + q].mul_add(b[q * n + j], s));
                            assert_eq!(
                                got.to_bits(),
                                chain.to_bits(),
                                "{m}x{k}x{n} {la}/{lb} [{i},{j}]"
                            );
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn any_split_gives_the_same_bits() {
        let Some(isa) = isa() else { return };
        let (m, k, n) = (300, 600, 200);
        let (a, b) = (values(m * k, 5), values(k * n, 6));
        let (av, bv) = (
            Strided::row_major(&a, 0, m, k),
            Strided::row_major(&b, 0, k, n),
        );
        let mut base = vec![0.0; m * n];
        gemm_in_parts(isa, av, bv, &mut base, false, 1);
        for parts in [2, 3, 7] {
            let mut c = vec![0.0; m * n];
            gemm_in_parts(isa, av, bv, &mut c, false, parts);
            assert_eq!(c, base, "{parts} parts");
        }
    }
}
