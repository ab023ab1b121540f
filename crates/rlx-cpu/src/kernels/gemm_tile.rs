//! The register tiles of the f32 GEMMs ([`super::gemm_packed`] over
//! weights packed once, [`super::gemm_blocked`] over operands packed per
//! call): `rows x NR` of the output kept in vector registers across the
//! depth loop, one fused multiply-add chain per element in `k` order.

// The kernels exist on x86-64 only; elsewhere the entry points are never
// reached (callers check `available()`), so their plumbing is unused there.
#![cfg_attr(
    not(target_arch = "x86_64"),
    allow(dead_code, unused, unreachable_code)
)]

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

/// The widest tile flavour this CPU runs, detected once;
/// `RLX_CPU_GEMM_ISA=avx2` keeps an AVX-512 machine on the AVX2 tiles (for
/// A/B runs and for reproducing an AVX2-only machine's figures).
pub(super) fn isa() -> Option<Isa> {
    static ISA: std::sync::OnceLock<Option<Isa>> = std::sync::OnceLock::new();
    *ISA.get_or_init(|| {
        #[cfg(target_arch = "x86_64")]
        {
            let cap_avx2 = rlx_ir::env::vars::CPU_GEMM_ISA
                .get()
                .ok()
                .flatten()
                .is_some_and(|v| v == "avx2");
            if std::arch::is_x86_feature_detected!("avx512f") && !cap_avx2 {
                return Some(Isa::Avx512);
            }
            if std::arch::is_x86_feature_detected!("avx2")
                && std::arch::is_x86_feature_detected!("fma")
            {
                return Some(Isa::Avx2);
            }
        }
        None
    })
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
    pub(crate) depth: usize,
    /// `[depth][MR]`: the tile's rows of the left operand.
    pub(crate) a: &'a [f32],
    /// `[depth][NR]`: the panel block.
    pub(crate) b: &'a [f32],
    /// The next panel block to prefetch while this one is read.
    pub(crate) ahead: Option<&'a [f32]>,
    /// Live rows of the tile (at most its height).
    pub(crate) rows: usize,
    /// Live columns of the panel (at most its width).
    pub(crate) cols: usize,
    /// Add to `c` (a later depth block) instead of overwriting it.
    pub(crate) accumulate: bool,
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

/// Dispatches a tile to the kernel instance of its live row count.
macro_rules! by_rows {
    ($kernel:ident, $t:expr, $c:expr, $ldc:expr, [$($r:literal),*], $full:literal) => {
        match $t.rows {
            $($r => $kernel::<$r>($t, $c, $ldc),)*
            _ => $kernel::<$full>($t, $c, $ldc),
        }
    };
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,fma")]
unsafe fn tile_avx512(t: &Tile, c: &mut [f32], ldc: usize) {
    by_rows!(tile_avx512_rows, t, c, ldc, [1, 2, 3, 4, 5, 6, 7], 8)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn tile_avx2(t: &Tile, c: &mut [f32], ldc: usize) {
    by_rows!(tile_avx2_rows, t, c, ldc, [1, 2, 3, 4, 5], 6)
}

/// One register tile of `R` rows (`R <=` the packed tile height `mr`) by
/// two vectors of columns, written with explicit intrinsics: the
/// accumulators stay in vector registers across the whole depth loop, and
/// each `k` step is one broadcast of `a` per row and one fused
/// multiply-add per accumulator. (Generic array code left to the
/// autovectoriser was compiled, for the 8 x 32 AVX-512 tile, into gathers
/// and scatters of accumulators spilled to the stack: 4 GFLOP/s.)
macro_rules! simd_tile {
    ($name:ident, $features:literal, $vec:ty, $lanes:literal, $mr:literal,
     $load:ident, $store:ident, $fma:ident, $splat:ident, $zero:ident) => {
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = $features)]
        unsafe fn $name<const R: usize>(t: &Tile, c: &mut [f32], ldc: usize) {
            use std::arch::x86_64::*;
            const NR: usize = 2 * $lanes;
            assert!(R <= $mr && t.cols <= NR && t.cols > 0);
            assert!(t.a.len() >= t.depth * $mr && t.b.len() >= t.depth * NR);
            assert!(c.len() >= (R - 1) * ldc + t.cols);
            let full = t.cols == NR;
            // A partial tile's rows go through this staging row.
            let mut staged = [0f32; NR];
            let mut acc: [[$vec; 2]; R] = [[$zero(); 2]; R];
            if t.accumulate {
                for (i, row) in acc.iter_mut().enumerate() {
                    let src = if full {
                        c.as_ptr().add(i * ldc)
                    } else {
                        staged[..t.cols].copy_from_slice(&c[i * ldc..i * ldc + t.cols]);
                        staged.as_ptr()
                    };
                    *row = [$load(src), $load(src.add($lanes))];
                }
            }
            let (mut a, mut b) = (t.a.as_ptr(), t.b.as_ptr());
            macro_rules! step {
                () => {
                    let b0 = $load(b);
                    let b1 = $load(b.add($lanes));
                    for (i, row) in acc.iter_mut().enumerate() {
                        let ai = $splat(*a.add(i));
                        row[0] = $fma(ai, b0, row[0]);
                        row[1] = $fma(ai, b1, row[1]);
                    }
                    a = a.add($mr);
                    b = b.add(NR);
                };
            }
            match t.ahead {
                Some(next) => {
                    for p in 0..t.depth {
                        // One cache line of the next panel per 16 floats of this one.
                        for line in (0..NR).step_by(16) {
                            prefetch(next.as_ptr().wrapping_add(p * NR + line));
                        }
                        step!();
                    }
                }
                None => {
                    for _ in 0..t.depth {
                        step!();
                    }
                }
            }
            for (i, row) in acc.iter().enumerate() {
                if full {
                    let dst = c.as_mut_ptr().add(i * ldc);
                    $store(dst, row[0]);
                    $store(dst.add($lanes), row[1]);
                } else {
                    $store(staged.as_mut_ptr(), row[0]);
                    $store(staged.as_mut_ptr().add($lanes), row[1]);
                    c[i * ldc..i * ldc + t.cols].copy_from_slice(&staged[..t.cols]);
                }
            }
        }
    };
}

simd_tile!(
    tile_avx512_rows,
    "avx512f,fma",
    __m512,
    16,
    8,
    _mm512_loadu_ps,
    _mm512_storeu_ps,
    _mm512_fmadd_ps,
    _mm512_set1_ps,
    _mm512_setzero_ps
);
simd_tile!(
    tile_avx2_rows,
    "avx2,fma",
    __m256,
    8,
    6,
    _mm256_loadu_ps,
    _mm256_storeu_ps,
    _mm256_fmadd_ps,
    _mm256_set1_ps,
    _mm256_setzero_ps
);

/// Asks for the cache line at `p` into L2 (never dereferenced; a prefetch
/// does not fault, so `p` may lie past the panel). Into L2, not L1: a
/// panel (24-98 KiB on MiniLM) fetched a panel ahead into L1 evicted
/// itself before use (the loads of B were 37% of the tile's samples), and
/// MiniLM b1 s16 went 7.1 -> 5.7 ms at 1 thread with the L2 hint.
#[inline(always)]
pub(crate) fn prefetch(p: *const f32) {
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

#[cfg(all(test, target_arch = "x86_64"))]
mod tests {
    use super::*;

    /// Every tile flavour this CPU can run (an AVX-512 machine runs both).
    fn flavours() -> Vec<Isa> {
        let mut out = Vec::new();
        if std::arch::is_x86_feature_detected!("avx512f") {
            out.push(Isa::Avx512);
        }
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
        {
            out.push(Isa::Avx2);
        }
        out
    }

    #[test]
    fn each_tile_is_one_fma_chain_per_element_for_every_row_and_column_count() {
        let ldc = 70;
        for isa in flavours() {
            let (mr, nr) = tile_shape(isa);
            for depth in [1, 5, 33] {
                let a = test_values(depth * mr, 1);
                let b = test_values(depth * nr, 2);
                let next = test_values(depth * nr, 3);
                for rows in 1..=mr {
                    for cols in [1, nr / 2 + 3, nr - 1, nr] {
                        for accumulate in [false, true] {
                            let start = test_values(mr * ldc, 4);
                            let mut c = start.clone();
                            let tile = Tile {
                                depth,
                                a: &a,
                                b: &b,
                                ahead: (depth > 1).then_some(&next[..]),
                                rows,
                                cols,
                                accumulate,
                            };
                            // SAFETY: `flavours` lists only features this CPU has.
                            unsafe { run_tile(isa, &tile, &mut c, ldc) };
                            for (at, got) in c.iter().enumerate() {
                                let (i, j) = (at / ldc, at % ldc);
                                let want = if i < rows && j < cols {
                                    let init = if accumulate { start[at] } else { 0.0 };
                                    (0..depth)
                                        .fold(init, |s, p| a[p * mr + i].mul_add(b[p * nr + j], s))
                                } else {
                                    start[at]
                                };
                                assert_eq!(
                                    got.to_bits(),
                                    want.to_bits(),
                                    "{isa:?} depth {depth} {rows}x{cols} acc {accumulate} [{i},{j}]"
                                );
                            }
                        }
                    }
                }
            }
        }
    }
}
