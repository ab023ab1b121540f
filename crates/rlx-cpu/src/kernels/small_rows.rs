//! `c = a · b` for a handful of rows of `a` (at most [`MAX_ROWS`]): the
//! attention products of a decode step (one token's query heads of a kv
//! group against the KV cache: `q · K^T`, then `p · V`).
//!
//! A general GEMM packs panels and blocks for many rows; with three rows
//! that setup costs about as much as the arithmetic. Here each element of
//! `b` is loaded once and used for every row of `a` (whose rows stay in L1).
//!
//! Every element is one FMA chain in `k` order from `+0.0`
//! (`c = fma(a[p], b[p], c)` for `p = 0, 1, ..`), whatever the layout of
//! `b`, the column block or the thread split: a matmul read through a
//! transposed operand (the transposed-operands fusion) gives the bits of
//! the same matmul on the materialised transpose. Two layouts of `b` have
//! AVX2 + FMA kernels, both with columns of `c` across the vector lanes:
//! - rows contiguous (`p · V` with V `[k, n]` row-major): 16 columns of `c`
//!   held in registers per row while every row of `b` is added in, scaled;
//! - columns contiguous (`q · K^T` with K `[n, k]` row-major): 8 columns
//!   at a time, each 8 x 8 block of them transposed in registers so that a
//!   vector holds one depth of 8 columns.
//!
//! Other layouts run a scalar loop of the same chains (`mul_add`). Routed
//! only where the vector kernels run ([`available`]).
//!
//! `b` may also be f16 ([`Elem`]): an f16 KV cache read in place, each
//! element widened as it is loaded (`vcvtph2ps`), so the sums are those
//! of the same product on the cache cast to f32 first, bit for bit, at
//! half the bytes read.

use super::gemm::Strided;
use super::gemv::GEMV_GRAIN;
use crate::team;
use half::f16;

/// An element type of `b`: f32, or f16 widened exactly as it is read.
pub(crate) trait Elem: Copy + Sync {
    /// The value as f32 (exact).
    fn widen(self) -> f32;

    /// Eight consecutive elements at `p`, widened.
    ///
    /// # Safety
    /// AVX2 + F16C, and eight elements readable at `p`.
    #[cfg(target_arch = "x86_64")]
    unsafe fn load8(p: *const Self) -> std::arch::x86_64::__m256;
}

impl Elem for f32 {
    #[inline(always)]
    fn widen(self) -> f32 {
        self
    }

    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    unsafe fn load8(p: *const f32) -> std::arch::x86_64::__m256 {
        std::arch::x86_64::_mm256_loadu_ps(p)
    }
}

impl Elem for f16 {
    #[inline(always)]
    fn widen(self) -> f32 {
        self.to_f32()
    }

    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    unsafe fn load8(p: *const f16) -> std::arch::x86_64::__m256 {
        use std::arch::x86_64::*;
        _mm256_cvtph_ps(_mm_loadu_si128(p as *const __m128i))
    }
}

/// Rows of `a` this kernel takes; a product with more runs the GEMM.
pub(crate) const MAX_ROWS: usize = 4;

/// Column granularity of a threaded split (two cache lines of `c`).
const SPLIT: usize = 16;

/// Whether this CPU runs the vector kernels (AVX2 + FMA + F16C); elsewhere
/// the products stay with the GEMM.
pub(crate) fn available() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx2")
            && std::arch::is_x86_feature_detected!("fma")
            && std::arch::is_x86_feature_detected!("f16c")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// `c = a · b` (`c` dense row-major `a.rows x b.cols`) for `a.rows` in
/// `1..=MAX_ROWS`; a `b` of [`GEMV_GRAIN`] elements or more is split by
/// columns over `threads`.
///
/// # Panics
/// On operands whose shapes disagree or reach past their buffers.
pub(crate) fn product<B: Elem>(a: Strided<f32>, b: Strided<B>, c: &mut [f32], threads: usize) {
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
    let parts = if k * n >= GEMV_GRAIN { threads } else { 1 };
    let blocks = team::split(n, parts, SPLIT);
    let c = team::Disjoint::new(c);
    let run = |p: usize| {
        // SAFETY: `reach` bounded every read of b, the rows are k long, c
        // is m x n, and the parts write disjoint column blocks of it.
        unsafe { columns(rows, &b, blocks[p].clone(), c.as_ptr()) }
    };
    if blocks.len() > 1 {
        team::parallel_for(blocks.len(), run);
    } else {
        run(0);
    }
}

/// Columns `cols` of `c = rows · b` into `c` (row-major, `b.cols` wide).
///
/// # Safety
/// `b` lies inside its buffer, `rows` hold `1..=MAX_ROWS` slices of
/// `b.rows`, `c` points at `rows.len() x b.cols` elements of which no other
/// thread touches the columns `cols`.
unsafe fn columns<B: Elem>(
    rows: &[&[f32]],
    b: &Strided<B>,
    cols: std::ops::Range<usize>,
    c: *mut f32,
) {
    #[cfg(target_arch = "x86_64")]
    if available() && (b.row_stride == 1 || b.col_stride == 1) {
        // SAFETY: the CPU has AVX2 + FMA + F16C; the rest is the caller's
        // contract.
        unsafe {
            if b.col_stride == 1 {
                x86::axpy_rows(rows, b, cols, c)
            } else {
                x86::dot_columns(rows, b, cols, c)
            }
        }
        return;
    }
    // SAFETY: the caller's contract.
    unsafe { chains(rows, b, cols, c) }
}

/// One past the largest element offset `s` reads.
fn reach<T>(s: &Strided<T>) -> usize {
    s.offset + (s.rows - 1) * s.row_stride + (s.cols - 1) * s.col_stride + 1
}

/// Any layout of `b`, columns `cols`: `c[i, j]` as the FMA chain
/// `s = rows[i][p].mul_add(b[p, j], s)` from `s = 0`, the vector kernels'
/// order (also their tails).
///
/// # Safety
/// As [`columns`].
unsafe fn chains<B: Elem>(
    rows: &[&[f32]],
    b: &Strided<B>,
    cols: std::ops::Range<usize>,
    c: *mut f32,
) {
    let n = b.cols;
    for (i, row) in rows.iter().enumerate() {
        for j in cols.clone() {
            let col = b.offset + j * b.col_stride;
            let s = row.iter().enumerate().fold(0f32, |s, (p, &x)| {
                x.mul_add(b.data[col + p * b.row_stride].widen(), s)
            });
            // SAFETY: (i, j) is inside c and in this caller's columns.
            unsafe { *c.add(i * n + j) = s };
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::{Elem, Strided, MAX_ROWS};
    use std::arch::x86_64::*;
    use std::ops::Range;

    /// The rows' pointers (the last repeated up to [`MAX_ROWS`]).
    fn row_ptrs(rows: &[&[f32]]) -> [*const f32; MAX_ROWS] {
        std::array::from_fn(|i| rows[i.min(rows.len() - 1)].as_ptr())
    }

    /// Columns held in registers per block of [`axpy_rows`].
    const BLOCK: usize = 16;

    /// How far ahead `b` is prefetched: [`axpy_rows`] in rows of `b`,
    /// [`dot_columns`] in columns (four blocks of 8). A decode step's
    /// attention reads the KV cache from DRAM (the weights streamed through
    /// the caches since the last step). SmolLM2's `p · V` and `q · K^T`
    /// over 256 cached positions, ms a decode step, 1-2 threads: 0.70-0.87
    /// and 0.52-0.66 with the hardware prefetcher alone, 0.43-0.44 and
    /// 0.57-0.59 with these (the keys' gain only in the 2-thread runs).
    const AHEAD_ROWS: usize = 32;
    const AHEAD_COLS: usize = 32;

    /// Asks for the cache line at `p` (never faults, so `p` may lie past
    /// the operand).
    #[inline(always)]
    unsafe fn prefetch<T>(p: *const T) {
        _mm_prefetch::<_MM_HINT_T0>(p as *const i8);
    }

    /// Elements of `T` in a cache line.
    const fn per_line<T>() -> usize {
        64 / std::mem::size_of::<T>()
    }

    /// `c[i, cols] = sum_p rows[i][p] * b[p, cols]` with b's rows
    /// contiguous (`b.col_stride == 1`): blocks of 16 columns of every row
    /// of `c` stay in registers while b's rows stream through.
    ///
    /// # Safety
    /// AVX2 + FMA + F16C, and the contract of `super::columns`.
    #[target_feature(enable = "avx2,fma,f16c")]
    pub(super) unsafe fn axpy_rows<B: Elem>(
        rows: &[&[f32]],
        b: &Strided<B>,
        cols: Range<usize>,
        c: *mut f32,
    ) {
        let (m, k, n) = (rows.len(), b.rows, b.cols);
        let bp = b.data.as_ptr().add(b.offset);
        let rs = b.row_stride;
        let ap = row_ptrs(rows);
        let mut j = cols.start;
        while j + BLOCK <= cols.end {
            let mut acc = [[_mm256_setzero_ps(); 2]; MAX_ROWS];
            for p in 0..k {
                let row = bp.add(p * rs + j);
                if j == cols.start {
                    // The first block's pass asks for the part's whole row
                    // of b, AHEAD_ROWS ahead; the later passes find it.
                    let ahead = bp.wrapping_add((p + AHEAD_ROWS) * rs);
                    for at in (cols.start..cols.end).step_by(per_line::<B>()) {
                        prefetch(ahead.wrapping_add(at));
                    }
                }
                let b0 = B::load8(row);
                let b1 = B::load8(row.add(8));
                for i in 0..m {
                    let x = _mm256_broadcast_ss(&*ap[i].add(p));
                    acc[i][0] = _mm256_fmadd_ps(x, b0, acc[i][0]);
                    acc[i][1] = _mm256_fmadd_ps(x, b1, acc[i][1]);
                }
            }
            for (i, [lo, hi]) in acc.iter().take(m).enumerate() {
                _mm256_storeu_ps(c.add(i * n + j), *lo);
                _mm256_storeu_ps(c.add(i * n + j + 8), *hi);
            }
            j += BLOCK;
        }
        super::chains(rows, b, j..cols.end, c);
    }

    /// `c[i, cols] = rows[i] · (column j of b)` with b's columns contiguous
    /// (`b.row_stride == 1`): per block of 8 columns, each 8 x 8 block of
    /// them is transposed in registers, so that one vector holds one depth
    /// of the 8 columns and the sums run across lanes in `k` order.
    ///
    /// # Safety
    /// AVX2 + FMA + F16C, and the contract of `super::columns`.
    #[target_feature(enable = "avx2,fma,f16c")]
    pub(super) unsafe fn dot_columns<B: Elem>(
        rows: &[&[f32]],
        b: &Strided<B>,
        cols: Range<usize>,
        c: *mut f32,
    ) {
        let (m, k, n) = (rows.len(), b.rows, b.cols);
        let k8 = k / 8 * 8;
        let bp = b.data.as_ptr().add(b.offset);
        let ap = row_ptrs(rows);
        let mut j = cols.start;
        while j + 8 <= cols.end {
            let col: [*const B; 8] = std::array::from_fn(|t| bp.add((j + t) * b.col_stride));
            // The columns AHEAD_COLS ahead, every line of them (a key of
            // the KV cache is one column).
            for t in 0..8 {
                let ahead = bp.wrapping_add((j + AHEAD_COLS + t) * b.col_stride);
                for p in (0..k).step_by(per_line::<B>()) {
                    prefetch(ahead.wrapping_add(p));
                }
            }
            let mut acc = [_mm256_setzero_ps(); MAX_ROWS];
            let mut p = 0;
            while p < k8 {
                let depth = transpose8(std::array::from_fn(|t| B::load8(col[t].add(p))));
                for (q, v) in depth.iter().enumerate() {
                    for i in 0..m {
                        let x = _mm256_broadcast_ss(&*ap[i].add(p + q));
                        acc[i] = _mm256_fmadd_ps(x, *v, acc[i]);
                    }
                }
                p += 8;
            }
            for p in k8..k {
                let v = _mm256_setr_ps(
                    (*col[0].add(p)).widen(),
                    (*col[1].add(p)).widen(),
                    (*col[2].add(p)).widen(),
                    (*col[3].add(p)).widen(),
                    (*col[4].add(p)).widen(),
                    (*col[5].add(p)).widen(),
                    (*col[6].add(p)).widen(),
                    (*col[7].add(p)).widen(),
                );
                for i in 0..m {
                    acc[i] = _mm256_fmadd_ps(_mm256_broadcast_ss(&*ap[i].add(p)), v, acc[i]);
                }
            }
            for (i, v) in acc.iter().take(m).enumerate() {
                _mm256_storeu_ps(c.add(i * n + j), *v);
            }
            j += 8;
        }
        super::chains(rows, b, j..cols.end, c);
    }

    /// The 8 x 8 transpose: `r[t]` holds depths `0..8` of column `t`; the
    /// result's vector `q` holds depth `q` of columns `0..8`.
    #[target_feature(enable = "avx2,fma")]
    unsafe fn transpose8(r: [__m256; 8]) -> [__m256; 8] {
        let t0 = _mm256_unpacklo_ps(r[0], r[1]);
        let t1 = _mm256_unpackhi_ps(r[0], r[1]);
        let t2 = _mm256_unpacklo_ps(r[2], r[3]);
        let t3 = _mm256_unpackhi_ps(r[2], r[3]);
        let t4 = _mm256_unpacklo_ps(r[4], r[5]);
        let t5 = _mm256_unpackhi_ps(r[4], r[5]);
        let t6 = _mm256_unpacklo_ps(r[6], r[7]);
        let t7 = _mm256_unpackhi_ps(r[6], r[7]);
        // Per 128-bit half: depths 0 / 1 / 2 / 3 (low half) and 4 / 5 / 6 / 7
        // (high half) of columns 0..4 (from t0..t3) and 4..8 (t4..t7).
        let s0 = _mm256_shuffle_ps::<0x44>(t0, t2);
        let s1 = _mm256_shuffle_ps::<0xEE>(t0, t2);
        let s2 = _mm256_shuffle_ps::<0x44>(t1, t3);
        let s3 = _mm256_shuffle_ps::<0xEE>(t1, t3);
        let s4 = _mm256_shuffle_ps::<0x44>(t4, t6);
        let s5 = _mm256_shuffle_ps::<0xEE>(t4, t6);
        let s6 = _mm256_shuffle_ps::<0x44>(t5, t7);
        let s7 = _mm256_shuffle_ps::<0xEE>(t5, t7);
        [
            _mm256_permute2f128_ps::<0x20>(s0, s4),
            _mm256_permute2f128_ps::<0x20>(s1, s5),
            _mm256_permute2f128_ps::<0x20>(s2, s6),
            _mm256_permute2f128_ps::<0x20>(s3, s7),
            _mm256_permute2f128_ps::<0x31>(s0, s4),
            _mm256_permute2f128_ps::<0x31>(s1, s5),
            _mm256_permute2f128_ps::<0x31>(s2, s6),
            _mm256_permute2f128_ps::<0x31>(s3, s7),
        ]
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

    /// Pseudo-random floats in [-1, 1) with every mantissa bit in use, so
    /// that a different summation order shows in the last bits.
    fn noise(len: usize, seed: u32) -> Vec<f32> {
        (0..len as u32)
            .map(|i| {
                let h = (i ^ seed).wrapping_mul(0x9E37_79B9).rotate_left(13) ^ seed;
                h.wrapping_mul(0x85EB_CA6B) as f32 / 2f32.powi(31) - 1.0
            })
            .collect()
    }

    /// `b` stored row-major (`p · V`), column-major (`q · K^T`, also as the
    /// transposed-operands fusion reads a transpose) and with neither
    /// stride 1, at 1 to 3 threads: the same bits, and those of the FMA
    /// chain in `k` order from +0 written out here (the order the
    /// pass-equivalence test needs: a matmul on a materialised transpose
    /// and the dot_general reading it in place must agree bit for bit).
    #[test]
    fn every_layout_and_split_sums_in_k_order() {
        for &(m, k, n) in &[
            (2, 64, 40),
            (3, 64, 257),
            (4, 13, 35),
            (3, 200, 1400),
            (2, 9, 7),
        ] {
            let a = noise(m * k, 1);
            let vals = noise(k * n, 2);
            let want: Vec<f32> = (0..m * n)
                .map(|e| {
                    let (i, j) = (e / n, e % n);
                    (0..k).fold(0f32, |s, p| a[i * k + p].mul_add(vals[p * n + j], s))
                })
                .collect();
            let keys: Vec<f32> = (0..n * k).map(|e| vals[(e % k) * n + e / k]).collect();
            let wide: Vec<f32> = vals.iter().flat_map(|&v| [v, 0.5]).collect();
            let layouts = [
                Strided::row_major(&vals, 0, k, n),
                Strided {
                    data: &keys,
                    offset: 0,
                    rows: k,
                    cols: n,
                    row_stride: 1,
                    col_stride: k,
                },
                Strided {
                    data: &wide,
                    offset: 0,
                    rows: k,
                    cols: n,
                    row_stride: 2 * n,
                    col_stride: 2,
                },
            ];
            for b in layouts {
                for threads in [1, 2, 3] {
                    let mut c = vec![f32::NAN; m * n];
                    product(Strided::row_major(&a, 0, m, k), b, &mut c, threads);
                    let same = c.iter().zip(&want).all(|(x, y)| x.to_bits() == y.to_bits());
                    assert!(
                        same,
                        "{m}x{k}x{n} strides {:?} threads {threads}",
                        (b.row_stride, b.col_stride)
                    );
                }
            }
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
