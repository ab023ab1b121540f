//! The compressed-sparse layout shared by CSR (rows major) and CSC (columns
//! major): validation and canonicalisation.

use crate::error::{Result, SparseError};
use crate::kernel::{CsrView, Structure};
use crate::scalar::Scalar;

/// A compressed matrix: `indptr[o]..indptr[o + 1]` are the entries of outer
/// line `o` (a row for CSR, a column for CSC), `indices` their inner
/// positions as u32 (scipy's index width: half the memory traffic of
/// usize in products), canonical (sorted within each line, no duplicates).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Compressed<T> {
    pub outer: usize,
    pub inner: usize,
    pub indptr: Vec<usize>,
    pub indices: Vec<u32>,
    pub values: Vec<T>,
}

impl<T: Scalar> Compressed<T> {
    /// Checks the arrays (lengths, a monotone `indptr` from 0 to nnz, inner
    /// indices in range), then sorts each line and sums duplicates, as
    /// scipy's `sum_duplicates` does.
    pub fn try_new(
        outer: usize,
        inner: usize,
        indptr: Vec<usize>,
        indices: Vec<usize>,
        values: Vec<T>,
        inner_axis: &'static str,
    ) -> Result<Self> {
        if indptr.len() != outer + 1 {
            return Err(SparseError::BadIndptr(format!(
                "length {} for {outer} lines; expected {}",
                indptr.len(),
                outer + 1
            )));
        }
        if indptr[0] != 0 {
            return Err(SparseError::BadIndptr(format!(
                "starts at {}, not 0",
                indptr[0]
            )));
        }
        if let Some(o) = (0..outer).find(|&o| indptr[o + 1] < indptr[o]) {
            return Err(SparseError::BadIndptr(format!(
                "decreases at position {}: {} after {}",
                o + 1,
                indptr[o + 1],
                indptr[o]
            )));
        }
        if indices.len() != values.len() {
            return Err(SparseError::Length(format!(
                "{} indices but {} values",
                indices.len(),
                values.len()
            )));
        }
        if indptr[outer] != indices.len() {
            return Err(SparseError::BadIndptr(format!(
                "ends at {} but there are {} entries",
                indptr[outer],
                indices.len()
            )));
        }
        if let Some((position, &index)) = indices.iter().enumerate().find(|(_, &j)| j >= inner) {
            return Err(SparseError::IndexOutOfRange {
                axis: inner_axis,
                index,
                position,
                bound: inner,
            });
        }
        if u32::try_from(outer.max(inner).saturating_sub(1)).is_err() {
            return Err(SparseError::Length(format!(
                "{outer} x {inner} has a dimension over 2^32 (indices are u32)"
            )));
        }
        let mut m = Compressed {
            outer,
            inner,
            indptr,
            indices: indices.iter().map(|&j| j as u32).collect(),
            values,
        };
        m.canonicalize();
        Ok(m)
    }

    /// The pattern as a row-loop view (outer lines as rows).
    pub fn structure(&self) -> Structure<'_, u32> {
        // SAFETY: try_new validated indptr / indices and canonicalize keeps
        // them valid; the fields are only written there and in transposed,
        // which builds a valid layout.
        unsafe { Structure::new_unchecked(&self.indptr, &self.indices, self.inner) }
    }

    /// The matrix as a row-loop view (outer lines as rows).
    pub fn view(&self) -> CsrView<'_, T, u32> {
        self.structure().with_values(&self.values)
    }

    fn canonicalize(&mut self) {
        let canonical = (0..self.outer).all(|o| {
            self.indices[self.indptr[o]..self.indptr[o + 1]]
                .windows(2)
                .all(|w| w[0] < w[1])
        });
        if canonical {
            return;
        }
        let mut indptr = Vec::with_capacity(self.outer + 1);
        let mut indices = Vec::with_capacity(self.indices.len());
        let mut values = Vec::with_capacity(self.values.len());
        indptr.push(0);
        let mut line: Vec<(u32, T)> = Vec::new();
        for o in 0..self.outer {
            line.clear();
            let span = self.indptr[o]..self.indptr[o + 1];
            line.extend(
                self.indices[span.clone()]
                    .iter()
                    .copied()
                    .zip(self.values[span].iter().copied()),
            );
            // Stable: duplicates are summed in their stored order.
            line.sort_by_key(|&(j, _)| j);
            for &(j, v) in &line {
                match indices.last() {
                    Some(&last) if last == j && indices.len() > indptr[o] => {
                        *values.last_mut().expect("a value per index") += v;
                    }
                    _ => {
                        indices.push(j);
                        values.push(v);
                    }
                }
            }
            indptr.push(indices.len());
        }
        self.indptr = indptr;
        self.indices = indices;
        self.values = values;
    }

    /// The same matrix compressed along the other axis (a transpose of
    /// the layout), canonical.
    pub fn transposed(&self) -> Compressed<T> {
        let mut counts = vec![0usize; self.inner + 1];
        for &j in &self.indices {
            counts[j as usize + 1] += 1;
        }
        for j in 0..self.inner {
            counts[j + 1] += counts[j];
        }
        let indptr = counts.clone();
        let mut next = counts;
        let mut indices = vec![0; self.indices.len()];
        let mut values = vec![T::ZERO; self.values.len()];
        for o in 0..self.outer {
            for p in self.indptr[o]..self.indptr[o + 1] {
                let j = self.indices[p] as usize;
                // o < outer <= 2^32 (checked on construction).
                indices[next[j]] = o as u32;
                values[next[j]] = self.values[p];
                next[j] += 1;
            }
        }
        Compressed {
            outer: self.inner,
            inner: self.outer,
            indptr,
            indices,
            values,
        }
    }
}
