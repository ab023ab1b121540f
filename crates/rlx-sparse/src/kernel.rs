//! The CSR loops behind every product: [`CsrMatrix`](crate::CsrMatrix)'s
//! `spmv` / `spmm` / transposed products, the Krylov solvers, and the
//! graph ops' CPU kernels. The pattern's invariants are checked once, when
//! a [`CsrView`] is made, so the loops index without bounds checks.
//!
//! Rows shorter than [`MULTI_ACC_MIN`] are summed in column order with one
//! accumulator (bit-for-bit scipy's `csr_matvec`); longer rows use four
//! independent accumulators, which hides the add latency that otherwise
//! serialises a long dot product (their rounding differs from scipy's by
//! normal reassociation error).
//!
//! There is no SIMD-gather variant: an AVX2 `vgatherdpd` row loop measured
//! slower than this scalar one on the reference machine (AMD Zen 3):
//! 0.92 vs 0.57 ms on the 1M-entry Poisson matrix (5-entry rows) and
//! 0.76 vs 0.70 ms with 64-entry rows; scalar loads issue on three ports.

use crate::scalar::Scalar;

/// The row length from which a row's dot product runs on four
/// accumulators (shorter rows do not amortise the final reduction).
pub(crate) const MULTI_ACC_MIN: usize = 16;

/// A stored inner index: u32 in matrices (scipy's width), usize in the
/// graph kernels' decoded patterns.
pub(crate) trait Index: Copy {
    /// The index as a position.
    fn at(self) -> usize;
}

impl Index for u32 {
    #[inline(always)]
    fn at(self) -> usize {
        self as usize
    }
}

impl Index for usize {
    #[inline(always)]
    fn at(self) -> usize {
        self
    }
}

/// A borrowed CSR pattern that satisfies, by construction, what the loops
/// rely on: `indptr` has `nrows + 1` non-decreasing entries from 0 to
/// `nnz = indices.len()`, and every index is below `ncols`.
#[derive(Clone, Copy)]
pub(crate) struct Structure<'a, I> {
    indptr: &'a [usize],
    indices: &'a [I],
    ncols: usize,
}

impl<'a, I: Index> Structure<'a, I> {
    /// A view of an already-validated pattern.
    ///
    /// # Safety
    /// The invariants in the type's description must hold (the callers
    /// are `Compressed`'s canonical arrays and the graph kernels' checked
    /// patterns); the loops read out of bounds otherwise.
    pub unsafe fn new_unchecked(indptr: &'a [usize], indices: &'a [I], ncols: usize) -> Self {
        debug_assert!(
            !indptr.is_empty()
                && indptr[0] == 0
                && indptr.windows(2).all(|w| w[0] <= w[1])
                && indptr[indptr.len() - 1] == indices.len()
                && indices.iter().all(|j| j.at() < ncols),
            "CSR pattern invariants violated"
        );
        Structure {
            indptr,
            indices,
            ncols,
        }
    }

    /// Rows.
    pub fn nrows(&self) -> usize {
        self.indptr.len() - 1
    }

    /// Stored entries.
    pub fn nnz(&self) -> usize {
        self.indices.len()
    }

    /// The matrix with these entries' `values` (one per stored entry;
    /// panics otherwise).
    pub fn with_values<T: Scalar>(self, values: &'a [T]) -> CsrView<'a, T, I> {
        assert_eq!(values.len(), self.nnz(), "one value per stored entry");
        CsrView { s: self, values }
    }

    /// `out[p] = <a[row of p], b[column of p]>` over the stored entries
    /// (`a` row-major `nrows × k`, `b` row-major `ncols × k`): the
    /// values' cotangent of `A B`.
    pub fn sddmm<T: Scalar>(&self, a: &[T], b: &[T], k: usize, out: &mut [T]) {
        assert_eq!(a.len(), self.nrows() * k, "a must be nrows x k");
        assert_eq!(b.len(), self.ncols * k, "b must be ncols x k");
        assert_eq!(out.len(), self.nnz(), "out must have nnz values");
        for i in 0..self.nrows() {
            // SAFETY: i < nrows so a's row is in range; p < nnz == out.len();
            // j < ncols so b's row is in range.
            unsafe {
                let ai = a.get_unchecked(i * k..i * k + k);
                for p in *self.indptr.get_unchecked(i)..*self.indptr.get_unchecked(i + 1) {
                    let j = self.indices.get_unchecked(p).at();
                    let bj = b.get_unchecked(j * k..j * k + k);
                    let mut s = T::ZERO;
                    for (&x, &y) in ai.iter().zip(bj) {
                        s += x * y;
                    }
                    *out.get_unchecked_mut(p) = s;
                }
            }
        }
    }
}

/// A validated [`Structure`] with one value per stored entry.
#[derive(Clone, Copy)]
pub(crate) struct CsrView<'a, T, I> {
    s: Structure<'a, I>,
    values: &'a [T],
}

impl<T: Scalar, I: Index> CsrView<'_, T, I> {
    /// Rows.
    pub fn nrows(&self) -> usize {
        self.s.nrows()
    }

    /// `Σ_p values[p] x[indices[p]]` over `start..end` (one row).
    #[inline(always)]
    fn row_dot(&self, start: usize, end: usize, x: &[T]) -> T {
        // SAFETY: start <= end <= nnz (indptr is monotone and ends at nnz)
        // and every stored index is < ncols == x.len() (callers assert it).
        unsafe {
            let at = |p: usize| {
                *self.values.get_unchecked(p)
                    * *x.get_unchecked(self.s.indices.get_unchecked(p).at())
            };
            if end - start < MULTI_ACC_MIN {
                let mut s = T::ZERO;
                for p in start..end {
                    s += at(p);
                }
                return s;
            }
            let mut acc = [T::ZERO; 4];
            let mut p = start;
            while p + 4 <= end {
                acc[0] += at(p);
                acc[1] += at(p + 1);
                acc[2] += at(p + 2);
                acc[3] += at(p + 3);
                p += 4;
            }
            let mut s = (acc[0] + acc[1]) + (acc[2] + acc[3]);
            for q in p..end {
                s += at(q);
            }
            s
        }
    }

    /// Calls `f(row, row_dot)` for every row, in order.
    #[inline(always)]
    fn for_each_row_dot(&self, x: &[T], mut f: impl FnMut(usize, T)) {
        assert_eq!(x.len(), self.s.ncols, "x must have ncols values");
        let mut start = 0;
        for i in 0..self.nrows() {
            // SAFETY: i + 1 <= nrows < indptr.len().
            let end = unsafe { *self.s.indptr.get_unchecked(i + 1) };
            f(i, self.row_dot(start, end, x));
            start = end;
        }
    }

    /// `y = A x` (`x` of `ncols`, `y` of `nrows`; panics otherwise).
    pub fn spmv(&self, x: &[T], y: &mut [T]) {
        assert_eq!(y.len(), self.nrows(), "y must have nrows values");
        // SAFETY (in the closure): i < nrows == y.len().
        self.for_each_row_dot(x, |i, s| unsafe { *y.get_unchecked_mut(i) = s });
    }

    /// `y = A x` and `<x, y>` in the same pass (CG's `p·Ap`); `A` square.
    pub fn spmv_dot(&self, x: &[T], y: &mut [T]) -> T {
        assert_eq!(y.len(), self.nrows(), "y must have nrows values");
        assert_eq!(x.len(), y.len(), "spmv_dot needs a square matrix");
        let mut acc = T::ZERO;
        // SAFETY (in the closure): i < nrows == y.len() == x.len().
        self.for_each_row_dot(x, |i, s| unsafe {
            *y.get_unchecked_mut(i) = s;
            acc += *x.get_unchecked(i) * s;
        });
        acc
    }

    /// `out = A B` for a row-major `B` of `ncols × k`; `out` is `nrows × k`.
    pub fn spmm(&self, b: &[T], k: usize, out: &mut [T]) {
        if k == 1 {
            return self.spmv(b, out);
        }
        assert_eq!(b.len(), self.s.ncols * k, "B must be ncols x k");
        assert_eq!(out.len(), self.nrows() * k, "out must be nrows x k");
        out.fill(T::ZERO);
        for (i, row) in out.chunks_exact_mut(k.max(1)).enumerate() {
            // SAFETY: i + 1 < indptr.len(); p < nnz; j < ncols so
            // j * k + k <= b.len().
            unsafe {
                for p in *self.s.indptr.get_unchecked(i)..*self.s.indptr.get_unchecked(i + 1) {
                    let a = *self.values.get_unchecked(p);
                    let j = self.s.indices.get_unchecked(p).at();
                    let bj = b.get_unchecked(j * k..j * k + k);
                    for (o, &bv) in row.iter_mut().zip(bj) {
                        *o += a * bv;
                    }
                }
            }
        }
    }

    /// `out = Aᵀ B` for a row-major `B` of `nrows × k`; `out` is `ncols × k`
    /// (a scatter: each stored `A[i, j]` adds `A[i, j] B[i]` to `out[j]`).
    pub fn spmm_transpose(&self, b: &[T], k: usize, out: &mut [T]) {
        assert_eq!(b.len(), self.nrows() * k, "B must be nrows x k");
        assert_eq!(out.len(), self.s.ncols * k, "out must be ncols x k");
        out.fill(T::ZERO);
        for (i, bi) in b.chunks_exact(k.max(1)).enumerate().take(self.nrows()) {
            // SAFETY: as in spmm, with the roles of B and out swapped.
            unsafe {
                for p in *self.s.indptr.get_unchecked(i)..*self.s.indptr.get_unchecked(i + 1) {
                    let a = *self.values.get_unchecked(p);
                    let j = self.s.indices.get_unchecked(p).at();
                    let oj = out.get_unchecked_mut(j * k..j * k + k);
                    for (o, &bv) in oj.iter_mut().zip(bi) {
                        *o += a * bv;
                    }
                }
            }
        }
    }
}
