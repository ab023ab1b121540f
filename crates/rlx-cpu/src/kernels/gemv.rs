//! f32 vector-times-matrix (`y = x · B`, the M = 1 matmul).
//!
//! A GEMV reads each element of B once, so it is bound by memory bandwidth:
//! the kernels keep B streaming in long sequential runs and touch `y` / `x`
//! from L1. Two layouts have their own kernel:
//! - rows of B contiguous (`x @ W` with W `k x n` row-major): eight rows at a
//!   time are scaled and added into `y` (eight sequential streams);
//! - columns of B contiguous (`x @ W.T`, W `n x k` row-major: a Gemm
//!   head): eight dot products at a time share each load of `x` on
//!   AVX-512 (eight weight streams keep a DRAM-bound head near bandwidth),
//!   four on AVX2, the lines of the columns two groups ahead prefetched
//!   into L2 (each column is a short run the hardware streams do not
//!   catch in time).
//!
//! Any other layout runs the scalar strided loop. Large products split the
//! columns over threads. AVX-512 / AVX2 + FMA kernels are picked at run
//! time (`is_x86_feature_detected!`); the scalar ones are the fallback.

use super::gemm::Strided;
use crate::team;

/// Elements of B below which a GEMV stays on the calling thread (1 MiB of
/// f32: tens of microseconds of streaming, comparable to a pool wake-up).
pub(crate) const GEMV_GRAIN: usize = 1 << 18;

/// `y = x · b` for `x` of length `b.rows` and `y` of length `b.cols`.
pub(crate) fn vec_mat(x: &[f32], b: Strided<f32>, y: &mut [f32], threads: usize) {
    let (k, n) = (b.rows, b.cols);
    assert!(x.len() == k && y.len() == n, "gemv operand shapes");
    if n == 0 {
        return;
    }
    if k == 0 {
        y.fill(0.0);
        return;
    }
    let threads = if k * n >= GEMV_GRAIN { threads } else { 1 };
    if threads <= 1 {
        columns(x, &b, 0, y);
        return;
    }
    // Blocks of whole cache lines, one per thread.
    let blocks = team::split(n, threads, 16);
    let y = team::Disjoint::new(y);
    team::parallel_for(blocks.len(), |p| {
        let r = blocks[p].clone();
        // SAFETY: the blocks are disjoint.
        columns(x, &b, r.start, unsafe { y.range(r) })
    });
}

/// Columns `j0 .. j0 + y.len()` of `x · b` into `y`.
fn columns(x: &[f32], b: &Strided<f32>, j0: usize, y: &mut [f32]) {
    let end = b.offset + (b.rows - 1) * b.row_stride + (j0 + y.len() - 1) * b.col_stride + 1;
    assert!(end <= b.data.len(), "gemv reads past B");
    let base = b.offset + j0 * b.col_stride;
    if b.col_stride == 1 {
        #[cfg(target_arch = "x86_64")]
        if avx2_fma() {
            // SAFETY: the CPU has AVX2 + FMA; bounds were checked above.
            unsafe { x86::rows_axpy(x, b.data, base, b.row_stride, y) };
            return;
        }
        rows_axpy_scalar(x, b.data, base, b.row_stride, y);
    } else if b.row_stride == 1 {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx512f") {
            // SAFETY: the CPU has AVX-512F; bounds were checked above.
            unsafe { x86::cols_dot_avx512(x, b.data, base, b.col_stride, y) };
            return;
        }
        #[cfg(target_arch = "x86_64")]
        if avx2_fma() {
            // SAFETY: as above.
            unsafe { x86::cols_dot(x, b.data, base, b.col_stride, y) };
            return;
        }
        cols_dot_scalar(x, b.data, base, b.col_stride, y);
    } else {
        for (j, yj) in y.iter_mut().enumerate() {
            let col = base + j * b.col_stride;
            *yj = x
                .iter()
                .enumerate()
                .map(|(p, &xp)| xp * b.data[col + p * b.row_stride])
                .sum();
        }
    }
}

#[cfg(target_arch = "x86_64")]
fn avx2_fma() -> bool {
    std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
}

/// `y[j] = sum_p x[p] * b[base + p * rs + j]`.
fn rows_axpy_scalar(x: &[f32], b: &[f32], base: usize, rs: usize, y: &mut [f32]) {
    let n = y.len();
    y.fill(0.0);
    for (p, &xp) in x.iter().enumerate() {
        let row = &b[base + p * rs..base + p * rs + n];
        for (yj, &bj) in y.iter_mut().zip(row) {
            *yj += xp * bj;
        }
    }
}

/// `y[j] = sum_p x[p] * b[base + j * cs + p]`.
fn cols_dot_scalar(x: &[f32], b: &[f32], base: usize, cs: usize, y: &mut [f32]) {
    let k = x.len();
    for (j, yj) in y.iter_mut().enumerate() {
        let col = &b[base + j * cs..base + j * cs + k];
        *yj = x.iter().zip(col).map(|(&a, &c)| a * c).sum();
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    /// Rows of B taken eight at a time.
    const ROWS: usize = 8;

    /// AVX2 form of `rows_axpy_scalar`.
    ///
    /// # Safety
    /// AVX2 + FMA must be present; rows `0..x.len()` of B, each `y.len()`
    /// long at `base + p * rs`, must lie inside `b`.
    #[target_feature(enable = "avx2,fma")]
    pub(crate) unsafe fn rows_axpy(x: &[f32], b: &[f32], base: usize, rs: usize, y: &mut [f32]) {
        let (k, n) = (x.len(), y.len());
        let n8 = n / 8 * 8;
        let bp = b.as_ptr().add(base);
        let yp = y.as_mut_ptr();
        y.fill(0.0);
        let mut p = 0;
        while p < k {
            let rows = ROWS.min(k - p);
            let mut xs = [0f32; ROWS];
            xs[..rows].copy_from_slice(&x[p..p + rows]);
            let r: [*const f32; ROWS] = std::array::from_fn(|i| bp.add((p + i.min(rows - 1)) * rs));
            if rows == ROWS {
                let xv: [__m256; ROWS] = std::array::from_fn(|i| _mm256_set1_ps(xs[i]));
                let mut j = 0;
                while j < n8 {
                    let mut acc = _mm256_loadu_ps(yp.add(j));
                    for i in 0..ROWS {
                        acc = _mm256_fmadd_ps(xv[i], _mm256_loadu_ps(r[i].add(j)), acc);
                    }
                    _mm256_storeu_ps(yp.add(j), acc);
                    j += 8;
                }
                for j in n8..n {
                    let mut acc = *yp.add(j);
                    for i in 0..ROWS {
                        acc += xs[i] * *r[i].add(j);
                    }
                    *yp.add(j) = acc;
                }
            } else {
                for i in 0..rows {
                    let xv = _mm256_set1_ps(xs[i]);
                    let mut j = 0;
                    while j < n8 {
                        let acc = _mm256_loadu_ps(yp.add(j));
                        let acc = _mm256_fmadd_ps(xv, _mm256_loadu_ps(r[i].add(j)), acc);
                        _mm256_storeu_ps(yp.add(j), acc);
                        j += 8;
                    }
                    for j in n8..n {
                        *yp.add(j) += xs[i] * *r[i].add(j);
                    }
                }
            }
            p += rows;
        }
    }

    /// Passes (groups of four columns, eight with AVX-512) ahead whose
    /// lines [`cols_dot`] / [`cols_dot_avx512`] prefetch:
    /// a group reads four short runs at once (2 KiB each on ResNet-18's
    /// 512-long classifier columns), too short for the hardware streams
    /// to ramp up on. ResNet-18's 1000 x 512 classifier (2 MiB of weight,
    /// from memory each run) went 0.192-0.199 -> 0.117-0.143 ms (ORT's
    /// Gemm 0.119; 1 thread; the four-column form, cnn41).
    const AHEAD_GROUPS: usize = 2;

    /// Sum of the eight lanes.
    #[target_feature(enable = "avx2,fma")]
    unsafe fn hsum(v: __m256) -> f32 {
        let s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
        let s = _mm_add_ps(s, _mm_movehl_ps(s, s));
        let s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
        _mm_cvtss_f32(s)
    }

    /// AVX2 form of `cols_dot_scalar`: four columns share each load of `x`.
    ///
    /// # Safety
    /// AVX2 + FMA must be present; columns `0..y.len()`, each `x.len()` long
    /// at `base + j * cs`, must lie inside `b`.
    #[target_feature(enable = "avx2,fma")]
    pub(crate) unsafe fn cols_dot(x: &[f32], b: &[f32], base: usize, cs: usize, y: &mut [f32]) {
        let (k, n) = (x.len(), y.len());
        let k16 = k / 16 * 16;
        let xp = x.as_ptr();
        let bp = b.as_ptr().add(base);
        let mut j = 0;
        while j < n {
            let cols = 4.min(n - j);
            let c: [*const f32; 4] = std::array::from_fn(|i| bp.add((j + i.min(cols - 1)) * cs));
            let mut lo = [_mm256_setzero_ps(); 4];
            let mut hi = [_mm256_setzero_ps(); 4];
            let mut p = 0;
            while p < k16 {
                let x0 = _mm256_loadu_ps(xp.add(p));
                let x1 = _mm256_loadu_ps(xp.add(p + 8));
                // Into L2 (read two groups later: far ahead of L1 on long
                // columns); past B it is a harmless hint.
                for &ci in &c {
                    crate::kernels::gemm_tile::prefetch(ci.wrapping_add(AHEAD_GROUPS * 4 * cs + p));
                }
                for i in 0..4 {
                    lo[i] = _mm256_fmadd_ps(x0, _mm256_loadu_ps(c[i].add(p)), lo[i]);
                    hi[i] = _mm256_fmadd_ps(x1, _mm256_loadu_ps(c[i].add(p + 8)), hi[i]);
                }
                p += 16;
            }
            for i in 0..cols {
                let mut s = hsum(_mm256_add_ps(lo[i], hi[i]));
                for (q, &xq) in x.iter().enumerate().skip(k16) {
                    s += xq * *c[i].add(q);
                }
                y[j + i] = s;
            }
            j += cols;
        }
    }

    /// Columns of B a pass of [`cols_dot_avx512`] reads.
    const COLS_512: usize = 8;

    /// AVX-512 form of `cols_dot_scalar`: eight columns (eight sequential
    /// weight streams) share each load of `x`, 16 lanes a step, the last
    /// step masked. A Gemm head reading its `[n, k]` weight from DRAM
    /// (MobileNetV2's 1280 -> 1000, 5 MB) is bound by how many streams the
    /// prefetchers follow: eight took ~0.20 ms per product against ~0.26
    /// for [`cols_dot`]'s four (Zen 4, cache flushed between runs). The
    /// columns [`AHEAD_GROUPS`] passes ahead are prefetched into L2 as in
    /// [`cols_dot`]: per op, 1 thread, ResNet-18's classifier 0.134-0.145
    /// -> 0.113-0.116 ms (ORT 0.119), MobileNetV2's head 0.265-0.269 ->
    /// 0.220-0.222 ms (ORT 0.24).
    ///
    /// # Safety
    /// AVX-512F must be present; columns `0..y.len()`, each `x.len()` long
    /// at `base + j * cs`, must lie inside `b`.
    #[target_feature(enable = "avx512f")]
    pub(crate) unsafe fn cols_dot_avx512(
        x: &[f32],
        b: &[f32],
        base: usize,
        cs: usize,
        y: &mut [f32],
    ) {
        let (k, n) = (x.len(), y.len());
        let xp = x.as_ptr();
        let bp = b.as_ptr().add(base);
        let tail = ((1u32 << (k % 16)) - 1) as __mmask16;
        let k16 = k - k % 16;
        let mut j = 0;
        while j < n {
            let cols = COLS_512.min(n - j);
            // A short last pass re-reads its last column in the spare lanes.
            let c: [*const f32; COLS_512] =
                std::array::from_fn(|i| bp.add((j + i.min(cols - 1)) * cs));
            let mut acc = [_mm512_setzero_ps(); COLS_512];
            let mut p = 0;
            while p < k16 {
                let xv = _mm512_loadu_ps(xp.add(p));
                for i in 0..COLS_512 {
                    crate::kernels::gemm_tile::prefetch(
                        c[i].wrapping_add(AHEAD_GROUPS * COLS_512 * cs + p),
                    );
                    acc[i] = _mm512_fmadd_ps(xv, _mm512_loadu_ps(c[i].add(p)), acc[i]);
                }
                p += 16;
            }
            if tail != 0 {
                let xv = _mm512_maskz_loadu_ps(tail, xp.add(k16));
                for i in 0..COLS_512 {
                    let w = _mm512_maskz_loadu_ps(tail, c[i].add(k16));
                    acc[i] = _mm512_fmadd_ps(xv, w, acc[i]);
                }
            }
            for i in 0..cols {
                y[j + i] = _mm512_reduce_add_ps(acc[i]);
            }
            j += cols;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn naive(x: &[f32], b: &Strided<f32>) -> Vec<f64> {
        (0..b.cols)
            .map(|j| {
                (0..b.rows)
                    .map(|p| {
                        x[p] as f64 * b.data[b.offset + p * b.row_stride + j * b.col_stride] as f64
                    })
                    .sum()
            })
            .collect()
    }

    fn data(len: usize, seed: u32) -> Vec<f32> {
        (0..len)
            .map(|i| (((i as u32).wrapping_mul(2654435761) ^ seed) % 1000) as f32 / 500.0 - 1.0)
            .collect()
    }

    /// Every layout and thread count against an f64 triple loop, with odd
    /// sizes that exercise the vector tails.
    #[test]
    fn gemv_matches_f64_reference() {
        for &(k, n) in &[(1, 1), (7, 13), (33, 65), (300, 1031), (517, 700)] {
            let x = data(k, 1);
            let buf = data(k * n + 5, 2);
            let layouts = [
                Strided::row_major(&buf, 3, k, n),
                Strided {
                    data: &buf,
                    offset: 2,
                    rows: k,
                    cols: n,
                    row_stride: 1,
                    col_stride: k,
                },
                Strided {
                    data: &buf,
                    offset: 0,
                    rows: k.div_ceil(2),
                    cols: n.div_ceil(2),
                    row_stride: 2 * n,
                    col_stride: 2,
                },
            ];
            for b in layouts {
                let xb = &x[..b.rows];
                let want = naive(xb, &b);
                for threads in [1, 2, 3] {
                    let mut y = vec![f32::NAN; b.cols];
                    vec_mat(xb, b, &mut y, threads);
                    for (j, (&got, &w)) in y.iter().zip(&want).enumerate() {
                        let tol = 1e-5 * (b.rows as f64).sqrt() * (1.0 + w.abs());
                        assert!(
                            (got as f64 - w).abs() <= tol,
                            "k={k} n={n} layout {:?} threads {threads} col {j}: {got} vs {w}",
                            (b.row_stride, b.col_stride)
                        );
                    }
                }
            }
        }
    }
}
