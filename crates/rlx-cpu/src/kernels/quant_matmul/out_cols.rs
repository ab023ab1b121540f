//! Where one part of a quantized matmul writes: columns `lo..hi` of the
//! row-major `[M, N]` output, in place. The parts of a multi-threaded call
//! hold disjoint column ranges of the same rows, so this is a raw strided
//! view (no part holds an overlapping `&mut` slice); it replaced a private
//! block per part that the calling thread copied into place afterwards
//! (while the other threads waited).

use crate::team::Disjoint;
use std::marker::PhantomData;

/// Columns `lo..lo + cols` of every row of an `[M, N]` output.
pub(crate) struct OutCols<'a> {
    ptr: *mut f32,
    /// The output's row length `N`.
    ld: usize,
    rows: usize,
    cols: usize,
    _life: PhantomData<&'a mut [f32]>,
}

impl<'a> OutCols<'a> {
    /// The whole `[M, N]` output (`out.len() == m * n`).
    pub(crate) fn whole(out: &'a mut [f32], m: usize, n: usize) -> Self {
        assert_eq!(out.len(), m * n, "output holds M * N values");
        OutCols {
            ptr: out.as_mut_ptr(),
            ld: n,
            rows: m,
            cols: n,
            _life: PhantomData,
        }
    }

    /// Columns `lo..hi` of the `[m, n]` output shared by `d`.
    ///
    /// # Safety
    /// No other live `OutCols` or slice from `d` may reach these columns.
    pub(crate) unsafe fn part(
        d: &Disjoint<'a, f32>,
        m: usize,
        n: usize,
        lo: usize,
        hi: usize,
    ) -> Self {
        assert!(lo <= hi && hi <= n, "columns {lo}..{hi} of {n}");
        // Bounds of the whole view: the last row's last column lies inside.
        if m > 0 && hi > lo {
            // SAFETY: the range is exclusive to this part by the caller's contract;
            // `range` checks it lies in the buffer.
            let _ = unsafe { d.range((m - 1) * n + lo..(m - 1) * n + hi) };
        }
        OutCols {
            // SAFETY: `lo <= n <= len` (checked above through `range` when non-empty).
            ptr: d.as_ptr().wrapping_add(lo),
            ld: n,
            rows: m,
            cols: hi - lo,
            _life: PhantomData,
        }
    }

    /// Writes output `(i, lo + j)`.
    #[inline(always)]
    pub(crate) fn set(&mut self, i: usize, j: usize, v: f32) {
        assert!(
            i < self.rows && j < self.cols,
            "output ({i}, {j}) outside the part"
        );
        // SAFETY: in bounds (checked), and the columns are this part's alone.
        unsafe { *self.ptr.add(i * self.ld + j) = v }
    }

    /// Output `(i, lo + j..lo + j + len)` as a slice.
    #[inline(always)]
    pub(crate) fn row_mut(&mut self, i: usize, j: usize, len: usize) -> &mut [f32] {
        assert!(
            i < self.rows && j + len <= self.cols,
            "output ({i}, {j}..{}) outside the part",
            j + len
        );
        // SAFETY: in bounds (checked), and the columns are this part's alone.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.add(i * self.ld + j), len) }
    }
}
