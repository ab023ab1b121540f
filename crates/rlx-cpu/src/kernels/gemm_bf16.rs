//! bf16 GEMM on AVX-512 BF16 (`vdpbf16ps`), accumulating in f32.
//!
//! `vdpbf16ps` multiplies 16 pairs of bf16 lanes and adds each pair's two
//! products into an f32 lane: 32 multiply-adds per instruction, twice the
//! f32 FMA rate, and no widening pass over the operands. Both operands are
//! packed into pairs along k (zero-padded to an even k): A as blocks of
//! [`MR`] rows, each k-pair of a row one 32-bit word broadcast to every lane;
//! B as panels of [`NR`] columns, each k-pair of a column one 32-bit lane.
//! The micro-kernel keeps an `MR x NR` block of C in 16 registers across
//! the whole k loop. Column panels split over the thread team.
//!
//! Without AVX-512 BF16 [`gemm`] reports it and the caller widens to f32.

// The kernels exist on x86-64 only; elsewhere the entry points are never
// reached (callers check `available()`), so their plumbing is unused there.
#![cfg_attr(
    not(target_arch = "x86_64"),
    allow(dead_code, unused, unreachable_code)
)]

use super::gemm::{Strided, GEMM_GRAIN};
use crate::team;

/// Rows of C per micro-kernel block.
const MR: usize = 8;
/// Columns of C per micro-kernel block (two 16-lane registers).
const NR: usize = 32;

/// True when this CPU runs the `vdpbf16ps` kernel.
pub(crate) fn available() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx512f")
            && std::arch::is_x86_feature_detected!("avx512bf16")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Two bf16 values (bit patterns) as one pair word, `lo` in the low half.
fn pair(lo: u16, hi: u16) -> u32 {
    lo as u32 | (hi as u32) << 16
}

/// `c = a · b`: `a` is `m x k`, `b` is `k x n` (bf16 bit patterns, read in
/// place through their strides), `c` dense row-major `m x n` f32. Returns
/// false, leaving `c` untouched, when the CPU lacks AVX-512 BF16.
pub(crate) fn gemm(a: Strided<u16>, b: Strided<u16>, c: &mut [f32], threads: usize) -> bool {
    let (m, k, n) = (a.rows, a.cols, b.cols);
    assert!(b.rows == k && c.len() == m * n, "bf16 gemm operand shapes");
    if !available() {
        return false;
    }
    if m * n == 0 {
        return true;
    }
    let kp = k.div_ceil(2);
    let at = |i: usize, p: usize| a.data[a.offset + i * a.row_stride + p * a.col_stride];
    let bt = |p: usize, j: usize| b.data[b.offset + p * b.row_stride + j * b.col_stride];
    // A: [row block][k pair][MR rows]; rows past m and the odd k's partner are 0.
    let blocks = m.div_ceil(MR);
    let mut ap = vec![0u32; blocks * kp * MR];
    for i in 0..m {
        let (blk, r) = (i / MR, i % MR);
        for p in 0..kp {
            let hi = if 2 * p + 1 < k { at(i, 2 * p + 1) } else { 0 };
            ap[(blk * kp + p) * MR + r] = pair(at(i, 2 * p), hi);
        }
    }
    // B: [column panel][k pair][NR columns].
    let panels = n.div_ceil(NR);
    let mut bp = vec![0u32; panels * kp * NR];
    for p in 0..kp {
        for j in 0..n {
            let hi = if 2 * p + 1 < k { bt(2 * p + 1, j) } else { 0 };
            bp[((j / NR) * kp + p) * NR + j % NR] = pair(bt(2 * p, j), hi);
        }
    }
    let parts = if m * n * k >= GEMM_GRAIN {
        threads.min(panels)
    } else {
        1
    };
    let ranges = team::split(panels, parts, 1);
    let c = team::Disjoint::new(c);
    team::parallel_for(ranges.len(), |part| {
        for q in ranges[part].clone() {
            let cols = NR.min(n - q * NR);
            let panel = &bp[q * kp * NR..(q + 1) * kp * NR];
            for blk in 0..blocks {
                let rows = MR.min(m - blk * MR);
                let a_blk = &ap[blk * kp * MR..(blk + 1) * kp * MR];
                let mut tile = [0f32; MR * NR];
                #[cfg(target_arch = "x86_64")]
                // SAFETY: `available()` checked AVX-512F + BF16; the slices
                // hold kp pairs of MR rows / NR columns.
                unsafe {
                    x86::block(a_blk, panel, kp, &mut tile)
                };
                for r in 0..rows {
                    let at = (blk * MR + r) * n + q * NR;
                    // SAFETY: this part owns columns q*NR .. q*NR + cols of
                    // every row (panels are split disjointly).
                    let dst = unsafe { c.range(at..at + cols) };
                    dst.copy_from_slice(&tile[r * NR..r * NR + cols]);
                }
            }
        }
    });
    true
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::{MR, NR};
    use std::arch::x86_64::*;

    /// The 32 bf16 lanes of an integer vector (a bit-for-bit view).
    #[inline(always)]
    fn bh(v: __m512i) -> __m512bh {
        // SAFETY: both are 64-byte plain vectors; every bit pattern is valid.
        unsafe { std::mem::transmute::<__m512i, __m512bh>(v) }
    }

    /// `tile = a_blk · panel` for one `MR x NR` block over `kp` k-pairs.
    #[target_feature(enable = "avx512f,avx512bf16")]
    pub(crate) unsafe fn block(a_blk: &[u32], panel: &[u32], kp: usize, tile: &mut [f32; MR * NR]) {
        assert!(a_blk.len() >= kp * MR && panel.len() >= kp * NR);
        let mut acc = [[_mm512_setzero_ps(); 2]; MR];
        for p in 0..kp {
            // SAFETY: p < kp, so both 16-lane loads lie inside `panel`.
            let (b0, b1) = unsafe {
                let bptr = panel.as_ptr().add(p * NR) as *const __m512i;
                (
                    bh(_mm512_loadu_si512(bptr)),
                    bh(_mm512_loadu_si512(bptr.add(1))),
                )
            };
            let arow = &a_blk[p * MR..(p + 1) * MR];
            for (r, acc) in acc.iter_mut().enumerate() {
                let a = bh(_mm512_set1_epi32(arow[r] as i32));
                acc[0] = _mm512_dpbf16_ps(acc[0], a, b0);
                acc[1] = _mm512_dpbf16_ps(acc[1], a, b1);
            }
        }
        for (r, acc) in acc.iter().enumerate() {
            // SAFETY: row r's 32 floats lie inside `tile`.
            unsafe {
                let dst = tile.as_mut_ptr().add(r * NR);
                _mm512_storeu_ps(dst, acc[0]);
                _mm512_storeu_ps(dst.add(16), acc[1]);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use half::bf16;

    fn values(len: usize, seed: u32) -> Vec<u16> {
        (0..len as u32)
            .map(|i| {
                let z = (i + 1).wrapping_mul(seed.wrapping_mul(0x9E37_79B9) | 1);
                bf16::from_f32(((z >> 9) % 2001) as f32 / 1000.0 - 1.0).to_bits()
            })
            .collect()
    }

    #[test]
    fn matches_f64_on_odd_shapes_and_strides() {
        if !available() {
            eprintln!("skipped: no AVX-512 BF16 on this CPU");
            return;
        }
        let f = |v: u16| bf16::from_bits(v).to_f64();
        for &(m, k, n, transposed_b) in &[
            (1, 1, 1, false),
            (9, 7, 33, false),
            (17, 384, 70, true),
            (130, 65, 257, false),
        ] {
            let a = values(m * k, 3);
            let b = values(k * n, 5);
            let bv = if transposed_b {
                // b stored n x k, read as its transpose.
                Strided {
                    data: &b,
                    offset: 0,
                    rows: k,
                    cols: n,
                    row_stride: 1,
                    col_stride: k,
                }
            } else {
                Strided::row_major(&b, 0, k, n)
            };
            let mut c = vec![f32::NAN; m * n];
            assert!(gemm(Strided::row_major(&a, 0, m, k), bv, &mut c, 2));
            for i in 0..m {
                for j in 0..n {
                    let (mut want, mut mag) = (0.0, 0.0);
                    for p in 0..k {
                        let bpj = if transposed_b {
                            b[j * k + p]
                        } else {
                            b[p * n + j]
                        };
                        let t = f(a[i * k + p]) * f(bpj);
                        want += t;
                        mag += t.abs();
                    }
                    let got = c[i * n + j] as f64;
                    assert!(
                        (got - want).abs() <= 1e-5 * mag + 1e-6,
                        "m{m} k{k} n{n} ({i},{j}): {got} vs {want}"
                    );
                }
            }
        }
    }
}
