//! `c = a · b` for a handful of rows of `a` (at most [`MAX_ROWS`]): the
//! attention products of a decode step (one token's query heads of a kv
//! group against the KV cache: `q · K^T`, then `p · V`).
//!
//! A general GEMM packs panels and blocks for many rows; with three rows
//! that setup costs about as much as the arithmetic. Here each element of
//! `b` is loaded once and used for every row of `a` (whose rows stay in L1).
//! Two layouts of `b` have AVX2 + FMA kernels:
//! - columns contiguous (`q · K^T` with K `[n, k]` row-major): two columns
//!   at a time, each a dot product with every row of `a`;
//! - rows contiguous (`p · V` with V `[k, n]` row-major): 16 columns of `c`
//!   held in registers per row while every row of `b` is added in, scaled.
//!
//! Other layouts, and CPUs without AVX2 + FMA, run the scalar loop.

use super::gemm::Strided;

/// Rows of `a` this kernel takes; a product with more runs the GEMM.
pub(crate) const MAX_ROWS: usize = 4;

/// `c = a · b` (`c` dense row-major `a.rows x b.cols`) for `a.rows` in
/// `1..=MAX_ROWS`, on the calling thread (`_threads` keeps the signature
/// of the GEMMs it stands in for: these products are too small to split).
///
/// # Panics
/// On operands whose shapes disagree or reach past their buffers.
pub(crate) fn product(a: Strided<f32>, b: Strided<f32>, c: &mut [f32], _threads: usize) {
    let (m, k, n) = (a.rows, a.cols, b.cols);
    assert!(
        (1..=MAX_ROWS).contains(&m) && b.rows == k && c.len() == m * n,
        "small-row product shapes"
    );
    if n == 0 {
        return;
    }
    if k == 0 {
        c.fill(0.0);
        return;
    }
    assert!(reach(&a) <= a.data.len(), "small-row product reads past a");
    assert!(reach(&b) <= b.data.len(), "small-row product reads past b");
    // Rows of `a` as dense slices (copied only when `a` is strided along k).
    let dense: Vec<f32>;
    let rows: [&[f32]; MAX_ROWS] = if a.col_stride == 1 {
        std::array::from_fn(|i| {
            let i = i.min(m - 1);
            &a.data[a.offset + i * a.row_stride..][..k]
        })
    } else {
        dense = (0..m * k)
            .map(|e| a.data[a.offset + (e / k) * a.row_stride + (e % k) * a.col_stride])
            .collect();
        std::array::from_fn(|i| &dense[i.min(m - 1) * k..][..k])
    };
    let rows = &rows[..m];
    #[cfg(target_arch = "x86_64")]
    if avx2_fma() && (b.row_stride == 1 || b.col_stride == 1) {
        // SAFETY: the CPU has AVX2 + FMA; `reach` bounded every read of b,
        // the rows are k long and c is m x n.
        unsafe {
            if b.row_stride == 1 {
                x86::dot_columns(rows, &b, c)
            } else {
                x86::axpy_rows(rows, &b, c)
            }
        }
        return;
    }
    scalar(rows, &b, c);
}

/// One past the largest element offset `s` reads.
fn reach(s: &Strided<f32>) -> usize {
    s.offset + (s.rows - 1) * s.row_stride + (s.cols - 1) * s.col_stride + 1
}

#[cfg(target_arch = "x86_64")]
fn avx2_fma() -> bool {
    std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
}

/// Any layout of `b`: `c[i, j] = sum_p rows[i][p] * b[p, j]`.
fn scalar(rows: &[&[f32]], b: &Strided<f32>, c: &mut [f32]) {
    let n = b.cols;
    for (i, row) in rows.iter().enumerate() {
        for j in 0..n {
            let col = b.offset + j * b.col_stride;
            c[i * n + j] = row
                .iter()
                .enumerate()
                .map(|(p, &x)| x * b.data[col + p * b.row_stride])
                .sum();
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::{Strided, MAX_ROWS};
    use std::arch::x86_64::*;

    /// Sum of the eight lanes.
    #[target_feature(enable = "avx2,fma")]
    unsafe fn hsum(v: __m256) -> f32 {
        let s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
        let s = _mm_add_ps(s, _mm_movehl_ps(s, s));
        let s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
        _mm_cvtss_f32(s)
    }

    /// `c[i, j] = rows[i] · (column j of b)` with b's columns contiguous
    /// (`b.row_stride == 1`): two columns at a time share each load of a
    /// row of `a`.
    ///
    /// # Safety
    /// AVX2 + FMA; b's columns `0..n`, each `k` long, inside `b.data`;
    /// `rows` hold `m <= MAX_ROWS` slices of `k`; `c` is `m x n`.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn dot_columns(rows: &[&[f32]], b: &Strided<f32>, c: &mut [f32]) {
        let (m, k, n) = (rows.len(), b.rows, b.cols);
        let k8 = k / 8 * 8;
        let bp = b.data.as_ptr().add(b.offset);
        let ap: [*const f32; MAX_ROWS] = std::array::from_fn(|i| rows[i.min(m - 1)].as_ptr());
        let mut j = 0;
        while j < n {
            let pair = 2.min(n - j);
            let col: [*const f32; 2] =
                std::array::from_fn(|t| bp.add((j + t.min(pair - 1)) * b.col_stride));
            let mut acc = [[_mm256_setzero_ps(); 2]; MAX_ROWS];
            let mut p = 0;
            while p < k8 {
                let b0 = _mm256_loadu_ps(col[0].add(p));
                let b1 = _mm256_loadu_ps(col[1].add(p));
                for i in 0..m {
                    let x = _mm256_loadu_ps(ap[i].add(p));
                    acc[i][0] = _mm256_fmadd_ps(x, b0, acc[i][0]);
                    acc[i][1] = _mm256_fmadd_ps(x, b1, acc[i][1]);
                }
                p += 8;
            }
            for i in 0..m {
                for t in 0..pair {
                    let mut s = hsum(acc[i][t]);
                    for q in k8..k {
                        s += *ap[i].add(q) * *col[t].add(q);
                    }
                    c[i * n + j + t] = s;
                }
            }
            j += pair;
        }
    }

    /// Columns of `c` held in registers per block.
    const BLOCK: usize = 16;

    /// `c[i, :] = sum_p rows[i][p] * (row p of b)` with b's rows
    /// contiguous (`b.col_stride == 1`): blocks of 16 columns of every row
    /// of `c` stay in registers while b's rows stream through.
    ///
    /// # Safety
    /// As [`dot_columns`], with b's rows `0..k`, each `n` long.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn axpy_rows(rows: &[&[f32]], b: &Strided<f32>, c: &mut [f32]) {
        let (m, k, n) = (rows.len(), b.rows, b.cols);
        let bp = b.data.as_ptr().add(b.offset);
        let rs = b.row_stride;
        let ap: [*const f32; MAX_ROWS] = std::array::from_fn(|i| rows[i.min(m - 1)].as_ptr());
        let cp = c.as_mut_ptr();
        let mut j = 0;
        while j + BLOCK <= n {
            let mut acc = [[_mm256_setzero_ps(); 2]; MAX_ROWS];
            for p in 0..k {
                let row = bp.add(p * rs + j);
                let b0 = _mm256_loadu_ps(row);
                let b1 = _mm256_loadu_ps(row.add(8));
                for i in 0..m {
                    let x = _mm256_broadcast_ss(&*ap[i].add(p));
                    acc[i][0] = _mm256_fmadd_ps(x, b0, acc[i][0]);
                    acc[i][1] = _mm256_fmadd_ps(x, b1, acc[i][1]);
                }
            }
            for (i, [lo, hi]) in acc.iter().take(m).enumerate() {
                _mm256_storeu_ps(cp.add(i * n + j), *lo);
                _mm256_storeu_ps(cp.add(i * n + j + 8), *hi);
            }
            j += BLOCK;
        }
        // The last columns (fewer than a block), one at a time.
        for jj in j..n {
            for (i, &a) in ap.iter().take(m).enumerate() {
                let mut s = 0f32;
                for p in 0..k {
                    s += *a.add(p) * *bp.add(p * rs + jj);
                }
                *cp.add(i * n + jj) = s;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `tools/gen_small_rows_fixture.py`: numpy float64 products of float32
    /// operands in the attention layouts of a decode step.
    const FIXTURE: &str = include_str!("../../tests/fixtures/small_rows.json");

    fn floats(v: &serde_json::Value) -> Vec<f32> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap() as f32)
            .collect()
    }

    fn dims(v: &serde_json::Value) -> Vec<usize> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_u64().unwrap() as usize)
            .collect()
    }

    /// Every case: rows of q (or p) against keys stored `[n, k]` (scores,
    /// columns of b contiguous) and values stored `[k, n]` (rows
    /// contiguous), and a strided lhs, against numpy.
    #[test]
    fn products_match_numpy() {
        let fx: serde_json::Value = serde_json::from_str(FIXTURE).unwrap();
        let cases = fx["cases"].as_array().unwrap();
        assert!(cases.len() >= 8, "fixture has its cases");
        for case in cases {
            let [m, k, n] = dims(&case["mkn"])[..] else {
                panic!("mkn")
            };
            let a = floats(&case["a"]);
            let keys = floats(&case["keys"]);
            let values = floats(&case["values"]);
            let scores = floats(&case["scores"]);
            let out = floats(&case["out"]);
            let a_view = Strided::row_major(&a, 0, m, k);
            // Scores: a [m, k] · keys^T, keys [n, k] row-major.
            let kt = Strided {
                data: &keys,
                offset: 0,
                rows: k,
                cols: n,
                row_stride: 1,
                col_stride: k,
            };
            let mut c = vec![f32::NAN; m * n];
            product(a_view, kt, &mut c, 1);
            close(&c, &scores, &format!("scores {m}x{k}x{n}"));
            // Values: a [m, k] · values [k, n] row-major.
            let mut c = vec![f32::NAN; m * n];
            product(a_view, Strided::row_major(&values, 0, k, n), &mut c, 1);
            close(&c, &out, &format!("p·v {m}x{k}x{n}"));
            // a read transposed (col_stride != 1): the dense copy path.
            let at: Vec<f32> = (0..k * m).map(|e| a[(e % m) * k + e / m]).collect();
            let a_t = Strided {
                data: &at,
                offset: 0,
                rows: m,
                cols: k,
                row_stride: 1,
                col_stride: m,
            };
            let mut c = vec![f32::NAN; m * n];
            product(a_t, Strided::row_major(&values, 0, k, n), &mut c, 1);
            close(&c, &out, &format!("strided a {m}x{k}x{n}"));
            // b with neither stride 1: the scalar loop.
            let wide: Vec<f32> = values.iter().flat_map(|&v| [v, -7.0]).collect();
            let b_wide = Strided {
                data: &wide,
                offset: 0,
                rows: k,
                cols: n,
                row_stride: 2 * n,
                col_stride: 2,
            };
            let mut c = vec![f32::NAN; m * n];
            product(a_view, b_wide, &mut c, 1);
            close(&c, &out, &format!("scalar {m}x{k}x{n}"));
        }
    }

    fn close(got: &[f32], want: &[f32], what: &str) {
        assert_eq!(got.len(), want.len(), "{what}");
        for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
            let tol = 1e-5 * (1.0 + w.abs());
            assert!((g - w).abs() <= tol, "{what} [{i}]: {g} vs numpy {w}");
        }
    }

    #[test]
    fn empty_depth_gives_zeros() {
        let a = [1.0f32; 3];
        let b: [f32; 0] = [];
        let mut c = [f32::NAN; 6];
        product(
            Strided::row_major(&a, 0, 3, 0),
            Strided::row_major(&b, 0, 0, 2),
            &mut c,
            1,
        );
        assert_eq!(c, [0.0; 6]);
    }

    #[test]
    #[should_panic(expected = "small-row product shapes")]
    fn too_many_rows_are_refused() {
        let a = [1.0f32; 10];
        let mut c = [0f32; 5];
        product(
            Strided::row_major(&a, 0, 5, 2),
            Strided::row_major(&a, 0, 2, 1),
            &mut c,
            1,
        );
    }
}
