//! CPU kernels of the sparse ops, in the values' own precision (as scipy).
//! The pattern is validated on every call (a malformed `indptr` or an
//! out-of-range column is an error naming the position, not a panic).

use super::shapes::pattern_attrs;
use crate::kernel::{CsrView, Structure};
use crate::scalar::Scalar;
use rlx_ir::custom::{CustomOp, KernelArg, KernelOut};
use rlx_ir::DType;

fn read<T: Scalar>(a: &KernelArg) -> Vec<T> {
    a.bytes
        .chunks_exact(std::mem::size_of::<T>())
        .map(T::from_le)
        .collect()
}

fn write<T: Scalar>(out: &mut KernelOut, v: &[T]) -> Result<(), String> {
    match out.dtype {
        DType::F64 => out
            .bytes
            .chunks_exact_mut(8)
            .zip(v)
            .for_each(|(o, x)| o.copy_from_slice(&x.to_f64().to_le_bytes())),
        // Exact: T is f32 whenever the output is.
        DType::F32 => out
            .bytes
            .chunks_exact_mut(4)
            .zip(v)
            .for_each(|(o, x)| o.copy_from_slice(&(x.to_f64() as f32).to_le_bytes())),
        d => return Err(format!("output dtype {d} is not f32 or f64")),
    }
    Ok(())
}

fn read_index(a: &KernelArg, what: &str) -> Result<Vec<usize>, String> {
    let wide: Vec<i64> = match a.dtype {
        DType::I32 => a
            .bytes
            .chunks_exact(4)
            .map(|b| i64::from(i32::from_le_bytes(b.try_into().expect("4 bytes"))))
            .collect(),
        DType::I64 => a
            .bytes
            .chunks_exact(8)
            .map(|b| i64::from_le_bytes(b.try_into().expect("8 bytes")))
            .collect(),
        d => return Err(format!("{what} must be i32 or i64, is {d}")),
    };
    wide.iter()
        .enumerate()
        .map(|(k, &v)| usize::try_from(v).map_err(|_| format!("{what}[{k}] = {v} is negative")))
        .collect()
}

/// A validated CSR pattern.
struct Pattern {
    nrows: usize,
    ncols: usize,
    indptr: Vec<usize>,
    indices: Vec<usize>,
}

impl Pattern {
    /// The checked pattern as a row-loop view.
    fn structure(&self) -> Structure<'_, usize> {
        // SAFETY: `pattern` checked indptr (nrows + 1 entries, monotone
        // from 0 to nnz) and every index (< ncols).
        unsafe { Structure::new_unchecked(&self.indptr, &self.indices, self.ncols) }
    }

    /// The matrix with these `values`, after checking that there is one
    /// per stored entry.
    fn view<'a, T: Scalar>(&'a self, values: &'a [T]) -> Result<CsrView<'a, T, usize>, String> {
        if values.len() != self.indices.len() {
            return Err(format!(
                "{} values for {} stored entries",
                values.len(),
                self.indices.len()
            ));
        }
        Ok(self.structure().with_values(values))
    }
}

fn pattern(op: &CustomOp, indptr: &KernelArg, indices: &KernelArg) -> Result<Pattern, String> {
    let (nrows, ncols, _) = pattern_attrs(op)?;
    let indptr = read_index(indptr, "indptr")?;
    let indices = read_index(indices, "indices")?;
    if indptr.len() != nrows + 1 || indptr[0] != 0 || indptr[nrows] != indices.len() {
        return Err(format!(
            "indptr must run from 0 to nnz = {} over {} entries, is {:?}..{:?} over {}",
            indices.len(),
            nrows + 1,
            indptr.first(),
            indptr.last(),
            indptr.len()
        ));
    }
    if let Some(r) = (0..nrows).find(|&r| indptr[r + 1] < indptr[r]) {
        return Err(format!(
            "indptr decreases at position {}: {} after {}",
            r + 1,
            indptr[r + 1],
            indptr[r]
        ));
    }
    if let Some((p, &c)) = indices.iter().enumerate().find(|(_, &c)| c >= ncols) {
        return Err(format!(
            "column index {c} at position {p} is out of range for {ncols} columns"
        ));
    }
    Ok(Pattern {
        nrows,
        ncols,
        indptr,
        indices,
    })
}

/// Rows of a dense operand: its trailing size (1 for a vector).
fn width(a: &KernelArg) -> usize {
    a.dims.get(1).copied().unwrap_or(1)
}

/// Checks that a dense operand holds `rows × k` values.
fn check_dense<T>(what: &str, v: &[T], rows: usize, k: usize) -> Result<(), String> {
    if rows.checked_mul(k) != Some(v.len()) {
        return Err(format!(
            "{what} has {} values, expected {rows} x {k}",
            v.len()
        ));
    }
    Ok(())
}

fn product_t<T: Scalar>(
    op: &CustomOp,
    ins: &[KernelArg],
    out: &mut KernelOut,
) -> Result<(), String> {
    let trans = op.attrs.bool_or("trans", false)?;
    let pat = pattern(op, &ins[1], &ins[2])?;
    let (v, x) = (read::<T>(&ins[0]), read::<T>(&ins[3]));
    let a = pat.view(&v)?;
    let k = width(&ins[3]);
    let (in_rows, out_rows) = if trans {
        (pat.nrows, pat.ncols)
    } else {
        (pat.ncols, pat.nrows)
    };
    check_dense("x", &x, in_rows, k)?;
    let mut y = vec![T::ZERO; out_rows * k];
    if trans {
        a.spmm_transpose(&x, k, &mut y);
    } else {
        a.spmm(&x, k, &mut y);
    }
    write(out, &y)
}

fn sddmm_t<T: Scalar>(op: &CustomOp, ins: &[KernelArg], out: &mut KernelOut) -> Result<(), String> {
    let pat = pattern(op, &ins[0], &ins[1])?;
    let (a, b) = (read::<T>(&ins[2]), read::<T>(&ins[3]));
    let k = width(&ins[2]);
    check_dense("a", &a, pat.nrows, k)?;
    check_dense("b", &b, pat.ncols, k)?;
    let mut s = vec![T::ZERO; pat.indices.len()];
    pat.structure().sddmm(&a, &b, k, &mut s);
    write(out, &s)
}

/// `sparse.spmv` / `sparse.spmm{trans}`: `A x` or `A^T x`.
pub(crate) fn product(op: &CustomOp, ins: &[KernelArg], out: &mut KernelOut) -> Result<(), String> {
    match ins[0].dtype {
        DType::F64 => product_t::<f64>(op, ins, out),
        DType::F32 => product_t::<f32>(op, ins, out),
        d => Err(format!("values dtype {d} is not f32 or f64")),
    }
}

/// `sparse.sddmm`: `s[p] = <a[row p], b[col p]>` over the pattern.
pub(crate) fn sddmm(op: &CustomOp, ins: &[KernelArg], out: &mut KernelOut) -> Result<(), String> {
    match ins[2].dtype {
        DType::F64 => sddmm_t::<f64>(op, ins, out),
        DType::F32 => sddmm_t::<f32>(op, ins, out),
        d => Err(format!("dtype {d} is not f32 or f64")),
    }
}
