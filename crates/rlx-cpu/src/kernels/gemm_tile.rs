//! The register tiles of the f32 GEMMs ([`super::gemm_packed`] over
//! weights packed once, [`super::gemm_blocked`] over operands packed per
//! call): `rows x NR` of the output kept in vector registers across the
//! depth loop, one fused multiply-add chain per element in `k` order.

use super::gemm::Strided;
use std::ops::Range;

/// The SIMD flavour the tiles are compiled for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Isa {
    #[cfg(target_arch = "x86_64")]
    Avx512,
    #[cfg(target_arch = "x86_64")]
    Avx2,
}

pub(super) fn isa() -> Option<Isa> {
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

/// The tallest register tile of any flavour.
const MAX_MR: usize = 8;

/// (rows, columns) of the register tile.
pub(super) fn tile_shape(isa: Isa) -> (usize, usize) {
    match isa {
        #[cfg(target_arch = "x86_64")]
        Isa::Avx512 => (8, 32),
        #[cfg(target_arch = "x86_64")]
        Isa::Avx2 => (6, 16),
    }
}

/// One register tile's work: `rows x cols` of `c` (+)= `a @ b` over
/// `depth` steps.
pub(super) struct Tile<'a> {
    /// Steps of `k`.
    pub depth: usize,
    /// `[depth][MR]`: the tile's rows of the left operand.
    pub a: &'a [f32],
    /// `[depth][NR]`: the panel block.
    pub b: &'a [f32],
    /// The next panel block to prefetch while this one is read.
    pub ahead: Option<&'a [f32]>,
    /// Live rows of the tile (at most its height).
    pub rows: usize,
    /// Live columns of the panel (at most its width).
    pub cols: usize,
    /// Add to `c` (a later depth block) instead of overwriting it.
    pub accumulate: bool,
}

/// Copies rows `rows` x columns `cols` of `a` into `out` as tiles of `mr`
/// rows, each k-major (`[depth][mr]`), the missing rows of the last tile
/// zero. Reads rows in place when they are contiguous (the usual case),
/// runs of a column when columns are (a transposed operand).
pub(super) fn pack_a(
    a: Strided<f32>,
    rows: Range<usize>,
    cols: Range<usize>,
    mr: usize,
    out: &mut [f32],
) {
    let depth = cols.len();
    let at = |i: usize, p: usize| a.offset + i * a.row_stride + p * a.col_stride;
    for (t, tile) in out[..rows.len().div_ceil(mr) * mr * depth]
        .chunks_exact_mut(mr * depth)
        .enumerate()
    {
        let first = rows.start + t * mr;
        let live = mr.min(rows.end - first);
        if a.col_stride == 1 {
            let mut srcs: [&[f32]; MAX_MR] = [&[]; MAX_MR];
            for (i, src) in srcs.iter_mut().enumerate().take(live) {
                let r = at(first + i, cols.start);
                *src = &a.data[r..r + depth];
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
        } else if a.row_stride == 1 {
            for (p, group) in tile.chunks_exact_mut(mr).enumerate() {
                let r = at(first, cols.start + p);
                group[..live].copy_from_slice(&a.data[r..r + live]);
                group[live..].fill(0.0);
            }
        } else {
            for (p, group) in tile.chunks_exact_mut(mr).enumerate() {
                for (i, d) in group.iter_mut().enumerate() {
                    *d = if i < live {
                        a.data[at(first + i, cols.start + p)]
                    } else {
                        0.0
                    };
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
pub(super) unsafe fn run_tile(isa: Isa, tile: &Tile, c: &mut [f32], ldc: usize) {
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
    // A full-width tile moves its rows of `c` as fixed-size arrays (vector
    // moves); a slice copy of run-time length is a memmove call per row,
    // which cost 5% of a 1024-cube product's samples.
    let full = t.cols == NR;
    let mut acc = [[0f32; NR]; R];
    if t.accumulate {
        for (i, row) in acc.iter_mut().enumerate() {
            if full {
                *row = c[i * ldc..i * ldc + NR].try_into().expect("NR values");
            } else {
                row[..t.cols].copy_from_slice(&c[i * ldc..i * ldc + t.cols]);
            }
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
        if full {
            let dst: &mut [f32; NR] = (&mut c[i * ldc..i * ldc + NR]).try_into().expect("NR");
            *dst = *row;
        } else {
            c[i * ldc..i * ldc + t.cols].copy_from_slice(&row[..t.cols]);
        }
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

/// Deterministic values in [-1, 1] for the GEMM tests (xorshift).
#[cfg(test)]
pub(super) fn test_values(n: usize, seed: u64) -> Vec<f32> {
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
