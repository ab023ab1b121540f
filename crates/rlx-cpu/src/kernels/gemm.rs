//! Float GEMM behind the matmul kernels.
//!
//! Products go to faer's packed SIMD GEMM (it picks AVX-512 / AVX2 kernels at
//! run time), read in place through strided views, so transposed operands and
//! batch slices are never copied. f32 products with one row (M = 1) use our
//! own GEMV (`kernels::gemv`), which beats a general GEMM's packing there;
//! tall and deep f32 products our own packed tiles ([`super::gemm_blocked`]).
//!
//! Threads: [`crate::num_threads`] (the running executable's limit, else
//! `RLX_NUM_THREADS`, else the available cores). A large product is split into one block of columns (or
//! rows) per thread, each a single-thread faer GEMM, run as one job of
//! the crate's thread team; products below a grain stay on the calling thread.

use super::scalar::Real;
use super::{gemm_blocked, gemv, small_rows};
use crate::team;
use faer::linalg::matmul::matmul;
use faer::{Accum, MatMut, MatRef, Par};

/// Multiply-adds below which a GEMM stays on the calling thread: about
/// 9 µs of one core's work at ~115 G multiply-adds/s. The team's workers
/// spin between jobs (see [`crate::team`]), so a job costs about a
/// microsecond, not a pool wake-up.
pub(crate) const GEMM_GRAIN: usize = 1 << 20;

/// Column / row granularity of a GEMM split over threads (whole
/// micro-kernel tiles).
const NR: usize = 32;
const MR: usize = 16;

/// True when a threaded `m x n` product splits into blocks of rows (tall
/// outputs), false when into blocks of columns (each thread then reads
/// only its share of the weights, which bounds products with few rows).
pub(crate) fn splits_by_rows(m: usize, n: usize) -> bool {
    n.div_ceil(NR) < m.div_ceil(MR)
}

pub use crate::threads::num_threads;

/// A matrix read in place: element `(i, j)` is
/// `data[offset + i * row_stride + j * col_stride]` (strides are elements, >= 0).
#[derive(Clone, Copy, Debug)]
pub struct Strided<'a, T> {
    /// The buffer the matrix lies in.
    pub data: &'a [T],
    /// Element offset of `(0, 0)`.
    pub offset: usize,
    /// Rows.
    pub rows: usize,
    /// Columns.
    pub cols: usize,
    /// Elements between rows.
    pub row_stride: usize,
    /// Elements between columns.
    pub col_stride: usize,
}

impl<'a, T> Strided<'a, T> {
    /// A dense row-major `rows x cols` matrix starting at `offset`.
    pub fn row_major(data: &'a [T], offset: usize, rows: usize, cols: usize) -> Self {
        Strided {
            data,
            offset,
            rows,
            cols,
            row_stride: cols,
            col_stride: 1,
        }
    }

    /// One past the largest element offset the view reads (`offset` when empty).
    fn end(&self) -> usize {
        if self.rows == 0 || self.cols == 0 {
            return self.offset;
        }
        self.offset + (self.rows - 1) * self.row_stride + (self.cols - 1) * self.col_stride + 1
    }

    /// Panics unless every element the view names lies inside `data`: the
    /// raw-pointer views below rely on it.
    pub(super) fn check(&self) {
        assert!(
            self.end() <= self.data.len(),
            "strided view reads past its buffer ({} > {})",
            self.end(),
            self.data.len()
        );
    }

    fn faer(&self) -> MatRef<'a, T> {
        self.check();
        // SAFETY: check() proved every (i, j) offset lies inside `data`, which
        // outlives 'a; strides fit isize because they index a live allocation.
        unsafe {
            MatRef::from_raw_parts(
                self.data.as_ptr().add(self.offset),
                self.rows,
                self.cols,
                self.row_stride as isize,
                self.col_stride as isize,
            )
        }
    }
}

/// Float types with a fast GEMM.
pub trait GemmFloat: Real {
    /// `c = a · b`: `a` is `m x k`, `b` is `k x n`, `c` is dense row-major
    /// `m x n`. Splits over `threads` threads when the product is large.
    fn gemm(a: Strided<Self>, b: Strided<Self>, c: &mut [Self], threads: usize);

    /// `c += a · b`, shapes as in [`GemmFloat::gemm`].
    fn gemm_add(a: Strided<Self>, b: Strided<Self>, c: &mut [Self], threads: usize);

    /// A product for `a` of at most `small_rows::MAX_ROWS` rows whose sums
    /// do not depend on the operands' layouts
    /// (`kernels::small_rows`), where this type and CPU have one.
    fn few_rows() -> Option<FewRows<Self>> {
        None
    }
}

/// `c = a · b` with `threads`, as [`GemmFloat::gemm`].
pub(crate) type FewRows<T> = fn(Strided<T>, Strided<T>, &mut [T], usize);

fn faer_gemm<T: faer::traits::ComplexField + Real>(
    a: Strided<T>,
    b: Strided<T>,
    c: &mut [T],
    accum: Accum,
    threads: usize,
) {
    let (m, k, n) = (a.rows, a.cols, b.cols);
    assert!(b.rows == k && c.len() == m * n, "gemm operand shapes");
    if m * n == 0 {
        return;
    }
    if k == 0 {
        if accum == Accum::Replace {
            c.fill(T::ZERO);
        }
        return;
    }
    let parts = if m * n * k >= GEMM_GRAIN {
        threads.min(m.div_ceil(MR).max(n.div_ceil(NR)))
    } else {
        1
    };
    if parts <= 1 {
        let dst = MatMut::from_row_major_slice_mut(c, m, n);
        seq_matmul(dst, accum, a.faer(), b.faer());
        return;
    }
    // Each thread multiplies a block of columns (or, for a narrow product, of
    // rows) on its own: one job for the whole product, and each block keeps
    // faer's single-thread kernel efficiency.
    let (a, b) = (a.faer(), b.faer());
    let by_cols = !splits_by_rows(m, n);
    let blocks = if by_cols {
        team::split(n, parts, NR)
    } else {
        team::split(m, parts, MR)
    };
    let c = team::Disjoint::new(c);
    team::parallel_for(blocks.len(), |p| {
        let r = blocks[p].clone();
        // SAFETY: the blocks are disjoint row or column ranges of the
        // row-major m x n output `c`, which outlives the job.
        let dst = unsafe {
            if by_cols {
                MatMut::from_raw_parts_mut(c.as_ptr().add(r.start), m, r.len(), n as isize, 1)
            } else {
                MatMut::from_raw_parts_mut(c.as_ptr().add(r.start * n), r.len(), n, n as isize, 1)
            }
        };
        let (ap, bp) = if by_cols {
            (a, b.subcols(r.start, r.len()))
        } else {
            (a.subrows(r.start, r.len()), b)
        };
        seq_matmul(dst, accum, ap, bp);
    });
}

/// Widest product faer runs at full speed in one call here: at n = 1536
/// (MiniLM's FFN) a single call ran at 214 GFLOP/s against 272 for
/// n <= 1152 on the same rows and depth.
const MAX_SEQ_COLS: usize = 1152;

/// One thread's product, wide ones as a few calls of at most
/// [`MAX_SEQ_COLS`] columns.
fn seq_matmul<T: faer::traits::ComplexField>(
    mut dst: MatMut<T>,
    accum: Accum,
    a: MatRef<T>,
    b: MatRef<T>,
) {
    let n = b.ncols();
    if n <= MAX_SEQ_COLS {
        matmul(dst, accum, a, b, T::one_impl(), Par::Seq);
        return;
    }
    let chunk = n.div_ceil(n.div_ceil(MAX_SEQ_COLS)).div_ceil(NR) * NR;
    let mut j = 0;
    while j < n {
        let w = chunk.min(n - j);
        matmul(
            dst.as_mut().subcols_mut(j, w),
            accum,
            a,
            b.subcols(j, w),
            T::one_impl(),
            Par::Seq,
        );
        j += w;
    }
}

impl GemmFloat for f32 {
    fn gemm(a: Strided<f32>, b: Strided<f32>, c: &mut [f32], threads: usize) {
        if a.rows == 1 && b.rows > 0 && b.cols > 0 {
            a.check();
            b.check();
            let x: std::borrow::Cow<[f32]> = if a.col_stride == 1 {
                a.data[a.offset..a.offset + a.cols].into()
            } else {
                (0..a.cols)
                    .map(|p| a.data[a.offset + p * a.col_stride])
                    .collect()
            };
            gemv::vec_mat(&x, b, c, threads);
            return;
        }
        if gemm_blocked::prefers(a.rows, a.cols, b.cols) {
            return gemm_blocked::gemm(a, b, c, false, threads);
        }
        faer_gemm(a, b, c, Accum::Replace, threads)
    }

    fn gemm_add(a: Strided<f32>, b: Strided<f32>, c: &mut [f32], threads: usize) {
        if gemm_blocked::prefers(a.rows, a.cols, b.cols) {
            return gemm_blocked::gemm(a, b, c, true, threads);
        }
        faer_gemm(a, b, c, Accum::Add, threads)
    }

    fn few_rows() -> Option<FewRows<f32>> {
        small_rows::available().then_some(small_rows::product as FewRows<f32>)
    }
}

impl GemmFloat for f64 {
    fn gemm(a: Strided<f64>, b: Strided<f64>, c: &mut [f64], threads: usize) {
        faer_gemm(a, b, c, Accum::Replace, threads)
    }
    fn gemm_add(a: Strided<f64>, b: Strided<f64>, c: &mut [f64], threads: usize) {
        faer_gemm(a, b, c, Accum::Add, threads)
    }
}
