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

use crate::team;

/// Rows of the left operand packed at a time: their packed copy stays in
/// L2 while every panel of the thread's columns runs over it.
const ROW_CHUNK_BYTES: usize = 256 * 1024;

/// Rows of the products a weight is packed for: a taller product runs at
/// least as fast on the library GEMM, which packs the weight per call but
/// amortises that over its rows (measured: MiniLM-L6 batch 8 x 128 rows).
pub const PACKED_MAX_ROWS: usize = 256;

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

/// The SIMD flavour the tiles are compiled for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Isa {
    #[cfg(target_arch = "x86_64")]
    Avx512,
    #[cfg(target_arch = "x86_64")]
    Avx2,
}

fn isa() -> Option<Isa> {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            return Some(Isa::Avx512);
        }
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
        {
            return Some(Isa::Avx2);
        }
    }
    None
}

/// Panel width of packed weights on this CPU, or `None` where products
/// stay with the library GEMM (no FMA SIMD tile here).
pub fn panel_width() -> Option<usize> {
    isa().map(|i| tile_shape(i).1)
}

/// The tallest register tile of any flavour.
const MAX_MR: usize = 8;

/// (rows, columns) of the register tile.
fn tile_shape(isa: Isa) -> (usize, usize) {
    match isa {
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512 => (8, 32),
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2 => (6, 16),
    }
}

/// Width of panel `j` of an `n`-column matrix cut every `nr` columns.
fn panel_cols(j: usize, n: usize, nr: usize) -> usize {
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
/// (which must be [`panel_width`]); columns split over the thread team
/// when the product is big enough.
pub fn matmul(a: &[f32], m: usize, k: usize, b: &[f32], n: usize, nr: usize, c: &mut [f32]) {
    assert!(a.len() == m * k && b.len() == k * n && c.len() == m * n);
    let isa = isa().expect("packed GEMM needs an FMA SIMD tile");
    assert_eq!(nr, tile_shape(isa).1, "panel width of another CPU");
    if m == 0 || n == 0 {
        return;
    }
    if k == 0 {
        c.fill(0.0);
        return;
    }
    let parts = if m * n * k >= super::gemm::GEMM_GRAIN {
        team::threads()
    } else {
        1
    };
    matmul_in_parts(isa, a, m, k, b, n, nr, c, parts);
}

/// [`matmul`] with its panels split into `parts` runs over the team.
#[allow(clippy::too_many_arguments)]
fn matmul_in_parts(
    isa: Isa,
    a: &[f32],
    m: usize,
    k: usize,
    b: &[f32],
    n: usize,
    nr: usize,
    c: &mut [f32],
    parts: usize,
) {
    let panels = n.div_ceil(nr);
    let out = team::Disjoint::new(c);
    let ranges = team::split(panels, parts.min(panels), 1);
    team::parallel_for(ranges.len(), |p| {
        // SAFETY: each part writes only the columns of its own panels.
        let c = unsafe { out.range(0..m * n) };
        panels_product(isa, a, m, k, b, n, nr, ranges[p].clone(), c);
    });
}

/// Columns of panels `panels` of `c`: chunk of rows by chunk of rows, and
/// within a chunk block of depth by block of depth (a tile's slices of `a`
/// and of a panel then stay in L1); a later block adds to what the earlier
/// ones stored, so each element is still one chain over `k` in order.
#[allow(clippy::too_many_arguments)]
fn panels_product(
    isa: Isa,
    a: &[f32],
    m: usize,
    k: usize,
    b: &[f32],
    n: usize,
    nr: usize,
    panels: std::ops::Range<usize>,
    c: &mut [f32],
) {
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
            pack_rows(
                &a[r0 * k..(r0 + rows) * k],
                rows,
                k,
                k0..k0 + depth,
                mr,
                &mut a_packed,
            );
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
                        accumulate: k0 > 0,
                    };
                    // SAFETY: the tile was compiled for `isa`, detected above.
                    unsafe { run_tile(isa, &tile, &mut c[row * n + j * nr..], n) };
                }
            }
        }
        r0 += rows;
    }
    A_SCRATCH.set(a_packed);
}

/// One register tile's work: `rows x cols` of `c` (+)= `a @ b` over
/// `depth` steps.
struct Tile<'a> {
    depth: usize,
    /// `[depth][MR]`: the tile's rows of the left operand.
    a: &'a [f32],
    /// `[depth][NR]`: the panel block.
    b: &'a [f32],
    /// The next panel block to prefetch while this one is read.
    ahead: Option<&'a [f32]>,
    rows: usize,
    cols: usize,
    /// Add to `c` (a later depth block) instead of overwriting it.
    accumulate: bool,
}

/// Copies columns `cols` of `rows` rows of `a` (`[rows, k]`) into `out`
/// as tiles of `mr` rows, each k-major (`[depth][mr]`), the missing rows
/// of the last tile zero.
fn pack_rows(
    a: &[f32],
    rows: usize,
    k: usize,
    cols: std::ops::Range<usize>,
    mr: usize,
    out: &mut [f32],
) {
    let depth = cols.len();
    for t in 0..rows.div_ceil(mr) {
        let tile = &mut out[t * mr * depth..(t + 1) * mr * depth];
        let live = mr.min(rows - t * mr);
        let mut srcs: [&[f32]; MAX_MR] = [&[]; MAX_MR];
        for (i, src) in srcs.iter_mut().enumerate().take(live) {
            let r = (t * mr + i) * k;
            *src = &a[r + cols.start..r + cols.end];
        }
        // Full tiles of the usual heights copy through a fixed-size array
        // (no per-element checks); others go value by value, zero-padded.
        match (live == mr, mr) {
            (true, 6) => interleave::<6>(&srcs, tile),
            (true, 8) => interleave::<8>(&srcs, tile),
            _ => {
                for (p, group) in tile.chunks_exact_mut(mr).enumerate() {
                    for (d, src) in group.iter_mut().zip(&srcs[..live]) {
                        *d = src[p];
                    }
                    group[live..].fill(0.0);
                }
            }
        }
    }
}

/// Interleaves the first `MR` rows of `srcs` (`depth` values each) into
/// `out` (`[depth][MR]`).
fn interleave<const MR: usize>(srcs: &[&[f32]; MAX_MR], out: &mut [f32]) {
    let depth = srcs[0].len();
    let rows: [&[f32]; MR] = std::array::from_fn(|i| &srcs[i][..depth]);
    for (p, group) in out[..depth * MR].chunks_exact_mut(MR).enumerate() {
        for (d, r) in group.iter_mut().zip(&rows) {
            *d = r[p];
        }
    }
}

/// # Safety
/// The CPU must have the features of `isa`.
unsafe fn run_tile(isa: Isa, tile: &Tile, c: &mut [f32], ldc: usize) {
    match isa {
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512 => tile_avx512(tile, c, ldc),
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2 => tile_avx2(tile, c, ldc),
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,fma")]
unsafe fn tile_avx512(t: &Tile, c: &mut [f32], ldc: usize) {
    match t.rows {
        1 => tile::<1, 8, 32>(t, c, ldc),
        2 => tile::<2, 8, 32>(t, c, ldc),
        3 => tile::<3, 8, 32>(t, c, ldc),
        4 => tile::<4, 8, 32>(t, c, ldc),
        5 => tile::<5, 8, 32>(t, c, ldc),
        6 => tile::<6, 8, 32>(t, c, ldc),
        7 => tile::<7, 8, 32>(t, c, ldc),
        _ => tile::<8, 8, 32>(t, c, ldc),
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn tile_avx2(t: &Tile, c: &mut [f32], ldc: usize) {
    match t.rows {
        1 => tile::<1, 6, 16>(t, c, ldc),
        2 => tile::<2, 6, 16>(t, c, ldc),
        3 => tile::<3, 6, 16>(t, c, ldc),
        4 => tile::<4, 6, 16>(t, c, ldc),
        5 => tile::<5, 6, 16>(t, c, ldc),
        _ => tile::<6, 6, 16>(t, c, ldc),
    }
}

/// One register tile of `R` rows (`R <= MR`, the packed tile height) by
/// `NR` columns: the accumulators live in registers across the whole
/// depth loop (fixed-size arrays the compiler keeps in vector registers),
/// then the tile's columns are stored.
#[inline(always)]
fn tile<const R: usize, const MR: usize, const NR: usize>(t: &Tile, c: &mut [f32], ldc: usize) {
    let mut acc = [[0f32; NR]; R];
    if t.accumulate {
        for (i, row) in acc.iter_mut().enumerate() {
            row[..t.cols].copy_from_slice(&c[i * ldc..i * ldc + t.cols]);
        }
    }
    let steps = t.a[..t.depth * MR]
        .chunks_exact(MR)
        .zip(t.b[..t.depth * NR].chunks_exact(NR));
    match t.ahead {
        Some(next) => {
            for (p, (ap, bp)) in steps.enumerate() {
                // One cache line of the next panel per 16 floats of this one.
                for line in (0..NR).step_by(16) {
                    prefetch(next.as_ptr().wrapping_add(p * NR + line));
                }
                tile_step::<R, MR, NR>(&mut acc, ap, bp);
            }
        }
        None => {
            for (ap, bp) in steps {
                tile_step::<R, MR, NR>(&mut acc, ap, bp);
            }
        }
    }
    for (i, row) in acc.iter().enumerate() {
        c[i * ldc..i * ldc + t.cols].copy_from_slice(&row[..t.cols]);
    }
}

/// One `k` step of a tile: `acc[i][j] += a[i] * b[j]`, fused.
#[inline(always)]
fn tile_step<const R: usize, const MR: usize, const NR: usize>(
    acc: &mut [[f32; NR]; R],
    a: &[f32],
    b: &[f32],
) {
    let a: &[f32; MR] = a.try_into().expect("MR values");
    let b: &[f32; NR] = b.try_into().expect("NR values");
    for i in 0..R {
        for j in 0..NR {
            acc[i][j] = a[i].mul_add(b[j], acc[i][j]);
        }
    }
}

/// Asks for the cache line at `p` into L2 (never dereferenced; a prefetch
/// does not fault, so `p` may lie past the panel). Into L2, not L1: a
/// panel (24-98 KiB on MiniLM) fetched a panel ahead into L1 evicted
/// itself before use (the loads of B were 37% of the tile's samples), and
/// MiniLM b1 s16 went 7.1 -> 5.7 ms at 1 thread with the L2 hint.
#[inline(always)]
fn prefetch(p: *const f32) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: prefetching reads no memory architecturally and cannot fault.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T1 }>(p as *const i8)
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(n: usize, seed: u64) -> Vec<f32> {
        let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        (0..n)
            .map(|_| {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                (s % 2001) as f32 / 1000.0 - 1.0
            })
            .collect()
    }

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
            matmul(&a, m, k, &p, n, nr, &mut c);
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
    fn any_split_of_the_panels_gives_the_same_bits() {
        let Some(nr) = panel_width() else { return };
        let (m, k, n) = (70, 300, 200);
        let (a, b) = (values(m * k, 4), values(k * n, 5));
        let mut p = vec![0.0; k * n];
        pack(&b, k, n, nr, &mut p);
        let isa = isa().expect("checked by panel_width");
        let mut base = vec![0.0; m * n];
        matmul_in_parts(isa, &a, m, k, &p, n, nr, &mut base, 1);
        for parts in [2, 3, 5] {
            let mut c = vec![0.0; m * n];
            matmul_in_parts(isa, &a, m, k, &p, n, nr, &mut c, parts);
            assert_eq!(c, base, "{parts} parts");
        }
    }
}
