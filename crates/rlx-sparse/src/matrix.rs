//! The public sparse formats: [`CsrMatrix`], [`CscMatrix`], [`CooMatrix`].

use crate::compressed::Compressed;
use crate::error::{Result, SparseError};
use crate::scalar::Scalar;

/// Compressed sparse rows (scipy's `csr_matrix`), canonical: column indices
/// sorted within each row, duplicates summed.
#[derive(Debug, Clone, PartialEq)]
pub struct CsrMatrix<T> {
    pub(crate) c: Compressed<T>,
}

/// Compressed sparse columns (scipy's `csc_matrix`), canonical.
#[derive(Debug, Clone, PartialEq)]
pub struct CscMatrix<T> {
    pub(crate) c: Compressed<T>,
}

/// Coordinates (scipy's `coo_matrix`): `(row, col, value)` triplets in any
/// order, duplicates allowed (they add up on conversion).
#[derive(Debug, Clone, PartialEq)]
pub struct CooMatrix<T> {
    nrows: usize,
    ncols: usize,
    rows: Vec<usize>,
    cols: Vec<usize>,
    values: Vec<T>,
}

fn shape_err(op: &'static str, detail: String) -> SparseError {
    SparseError::Shape { op, detail }
}

impl<T: Scalar> CsrMatrix<T> {
    /// From scipy's arrays (`indptr` of `nrows + 1`, `indices`, `data`).
    /// Unsorted column indices are sorted and duplicates summed; a
    /// malformed `indptr` or an out-of-range column is an error naming the
    /// position.
    pub fn try_new(
        nrows: usize,
        ncols: usize,
        indptr: Vec<usize>,
        indices: Vec<usize>,
        values: Vec<T>,
    ) -> Result<Self> {
        Ok(CsrMatrix {
            c: Compressed::try_new(nrows, ncols, indptr, indices, values, "column")?,
        })
    }

    /// The non-zeros of a row-major dense `nrows × ncols` matrix.
    pub fn from_dense(nrows: usize, ncols: usize, dense: &[T]) -> Result<Self> {
        if nrows.checked_mul(ncols) != Some(dense.len()) {
            return Err(shape_err(
                "from_dense",
                format!("{} values for {nrows} x {ncols}", dense.len()),
            ));
        }
        let mut indptr = vec![0];
        let (mut indices, mut values) = (Vec::new(), Vec::new());
        for row in dense.chunks_exact(ncols.max(1)).take(nrows) {
            for (j, &v) in row.iter().enumerate() {
                if v != T::ZERO {
                    indices.push(j);
                    values.push(v);
                }
            }
            indptr.push(indices.len());
        }
        indptr.resize(nrows + 1, indices.len());
        Self::try_new(nrows, ncols, indptr, indices, values)
    }

    /// `(nrows, ncols)`.
    pub fn shape(&self) -> (usize, usize) {
        (self.c.outer, self.c.inner)
    }
    /// Stored entries.
    pub fn nnz(&self) -> usize {
        self.c.values.len()
    }
    /// Row pointers.
    pub fn indptr(&self) -> &[usize] {
        &self.c.indptr
    }
    /// Column indices.
    pub fn indices(&self) -> &[u32] {
        &self.c.indices
    }
    /// Stored values.
    pub fn values(&self) -> &[T] {
        &self.c.values
    }

    /// The row-major dense matrix.
    pub fn to_dense(&self) -> Vec<T> {
        let (m, n) = self.shape();
        let mut d = vec![T::ZERO; m * n];
        for i in 0..m {
            for p in self.c.indptr[i]..self.c.indptr[i + 1] {
                d[i * n + self.c.indices[p] as usize] = self.c.values[p];
            }
        }
        d
    }

    /// `A x`. Rows of under 16 entries are summed in column order (as
    /// scipy's `csr_matvec`, bit for bit); longer rows on four
    /// accumulators (reassociated, within rounding of scipy's).
    pub fn spmv(&self, x: &[T]) -> Result<Vec<T>> {
        let (m, n) = self.shape();
        if x.len() != n {
            return Err(shape_err(
                "spmv",
                format!("x has {} values; A is {m} x {n}", x.len()),
            ));
        }
        let mut y = vec![T::ZERO; m];
        self.c.view().spmv(x, &mut y);
        Ok(y)
    }

    /// `y = A x` into a caller's `y` (no allocation; otherwise as
    /// [`spmv`](Self::spmv)).
    pub fn spmv_into(&self, x: &[T], y: &mut [T]) -> Result<()> {
        let (m, n) = self.shape();
        if x.len() != n || y.len() != m {
            return Err(shape_err(
                "spmv_into",
                format!("x has {} values, y {}; A is {m} x {n}", x.len(), y.len()),
            ));
        }
        self.c.view().spmv(x, y);
        Ok(())
    }

    /// `y = A x` into `y` and `<x, y>` in the same pass (CG's `p·Ap`), for
    /// a square `A` with `x`, `y` of its size (the caller's checks).
    pub(crate) fn spmv_dot_into(&self, x: &[T], y: &mut [T]) -> T {
        self.c.view().spmv_dot(x, y)
    }

    /// `Aᵀ y` without forming `Aᵀ` (the vjp of `spmv` with respect to `x`).
    pub fn spmv_transpose(&self, y: &[T]) -> Result<Vec<T>> {
        let (m, n) = self.shape();
        if y.len() != m {
            return Err(shape_err(
                "spmv_transpose",
                format!("y has {} values; A is {m} x {n}", y.len()),
            ));
        }
        let mut out = vec![T::ZERO; n];
        self.c.view().spmm_transpose(y, 1, &mut out);
        Ok(out)
    }

    /// `A B` for a row-major dense `B` of `ncols × k`; row-major `nrows × k`.
    pub fn spmm(&self, b: &[T], k: usize) -> Result<Vec<T>> {
        let (m, n) = self.shape();
        if n.checked_mul(k) != Some(b.len()) {
            return Err(shape_err(
                "spmm",
                format!("B has {} values, expected {n} x {k}", b.len()),
            ));
        }
        let mut out = vec![T::ZERO; m * k];
        self.c.view().spmm(b, k, &mut out);
        Ok(out)
    }

    /// The gradient of `⟨G, A B⟩` with respect to the stored values:
    /// `Σ_k G[i, k] B[j, k]` at each entry `(i, j)` (same order as
    /// [`values`](Self::values)).
    pub fn spmm_values_grad(&self, b: &[T], g: &[T], k: usize) -> Result<Vec<T>> {
        let (m, n) = self.shape();
        if n.checked_mul(k) != Some(b.len()) || m.checked_mul(k) != Some(g.len()) {
            return Err(shape_err(
                "spmm_values_grad",
                format!(
                    "B has {} values (expected {n} x {k}), G {} (expected {m} x {k})",
                    b.len(),
                    g.len()
                ),
            ));
        }
        let mut out = vec![T::ZERO; self.nnz()];
        self.c.structure().sddmm(g, b, k, &mut out);
        Ok(out)
    }

    /// `Aᵀ` as CSR.
    pub fn transpose(&self) -> CsrMatrix<T> {
        CsrMatrix {
            c: self.c.transposed(),
        }
    }

    /// The same matrix as CSC.
    pub fn to_csc(&self) -> CscMatrix<T> {
        CscMatrix {
            c: self.c.transposed(),
        }
    }

    /// The same matrix as COO (row-major order).
    pub fn to_coo(&self) -> CooMatrix<T> {
        let mut rows = Vec::with_capacity(self.nnz());
        for i in 0..self.c.outer {
            rows.extend(std::iter::repeat_n(
                i,
                self.c.indptr[i + 1] - self.c.indptr[i],
            ));
        }
        CooMatrix {
            nrows: self.c.outer,
            ncols: self.c.inner,
            rows,
            cols: self.c.indices.iter().map(|&j| j as usize).collect(),
            values: self.c.values.clone(),
        }
    }

    /// The main diagonal (zeros where nothing is stored).
    pub fn diagonal(&self) -> Vec<T> {
        let (m, n) = self.shape();
        (0..m.min(n))
            .map(|i| {
                let span = self.c.indptr[i]..self.c.indptr[i + 1];
                match self.c.indices[span.clone()].binary_search(&(i as u32)) {
                    Ok(k) => self.c.values[span.start + k],
                    Err(_) => T::ZERO,
                }
            })
            .collect()
    }
}

impl<T: Scalar> CscMatrix<T> {
    /// From scipy's arrays (`indptr` of `ncols + 1`, row `indices`, `data`);
    /// validated and canonicalised as [`CsrMatrix::try_new`].
    pub fn try_new(
        nrows: usize,
        ncols: usize,
        indptr: Vec<usize>,
        indices: Vec<usize>,
        values: Vec<T>,
    ) -> Result<Self> {
        Ok(CscMatrix {
            c: Compressed::try_new(ncols, nrows, indptr, indices, values, "row")?,
        })
    }
    /// `(nrows, ncols)`.
    pub fn shape(&self) -> (usize, usize) {
        (self.c.inner, self.c.outer)
    }
    /// Stored entries.
    pub fn nnz(&self) -> usize {
        self.c.values.len()
    }
    /// Column pointers.
    pub fn indptr(&self) -> &[usize] {
        &self.c.indptr
    }
    /// Row indices.
    pub fn indices(&self) -> &[u32] {
        &self.c.indices
    }
    /// Stored values.
    pub fn values(&self) -> &[T] {
        &self.c.values
    }
    /// The same matrix as CSR.
    pub fn to_csr(&self) -> CsrMatrix<T> {
        CsrMatrix {
            c: self.c.transposed(),
        }
    }
}

impl<T: Scalar> CooMatrix<T> {
    /// Triplets, checked: equal lengths, every row / column in range (the
    /// error names the position).
    pub fn try_new(
        nrows: usize,
        ncols: usize,
        rows: Vec<usize>,
        cols: Vec<usize>,
        values: Vec<T>,
    ) -> Result<Self> {
        if rows.len() != values.len() || cols.len() != values.len() {
            return Err(SparseError::Length(format!(
                "{} rows, {} cols, {} values",
                rows.len(),
                cols.len(),
                values.len()
            )));
        }
        for (axis, idx, bound) in [("row", &rows, nrows), ("column", &cols, ncols)] {
            if let Some((position, &index)) = idx.iter().enumerate().find(|(_, &i)| i >= bound) {
                return Err(SparseError::IndexOutOfRange {
                    axis,
                    index,
                    position,
                    bound,
                });
            }
        }
        Ok(CooMatrix {
            nrows,
            ncols,
            rows,
            cols,
            values,
        })
    }
    /// `(nrows, ncols)`.
    pub fn shape(&self) -> (usize, usize) {
        (self.nrows, self.ncols)
    }
    /// Row indices.
    pub fn rows(&self) -> &[usize] {
        &self.rows
    }
    /// Column indices.
    pub fn cols(&self) -> &[usize] {
        &self.cols
    }
    /// Values.
    pub fn values(&self) -> &[T] {
        &self.values
    }
    /// As CSR, duplicates summed in their stored order.
    pub fn to_csr(&self) -> CsrMatrix<T> {
        let mut counts = vec![0usize; self.nrows + 1];
        for &r in &self.rows {
            counts[r + 1] += 1;
        }
        for r in 0..self.nrows {
            counts[r + 1] += counts[r];
        }
        let indptr = counts.clone();
        let mut next = counts;
        let mut indices = vec![0; self.values.len()];
        let mut values = vec![T::ZERO; self.values.len()];
        for ((&r, &c), &v) in self.rows.iter().zip(&self.cols).zip(&self.values) {
            indices[next[r]] = c;
            values[next[r]] = v;
            next[r] += 1;
        }
        CsrMatrix::try_new(self.nrows, self.ncols, indptr, indices, values)
            .expect("checked triplets make a valid CSR")
    }
}
