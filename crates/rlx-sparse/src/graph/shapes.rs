//! Shape / dtype rules of the sparse ops. Every op names its CSR pattern by
//! the attributes `nrows` / `ncols` and the inputs `indptr` (`[nrows + 1]`)
//! and `indices` (`[nnz]`), both I32 or I64; all dims must be static.

use rlx_ir::custom::CustomOp;
use rlx_ir::{DType, Shape};

/// The pattern's `(nrows, ncols)` from the attributes, and whether the op
/// reads the matrix transposed.
pub(crate) fn pattern_attrs(op: &CustomOp) -> Result<(usize, usize, bool), String> {
    let dim = |name: &str| -> Result<usize, String> {
        let v = op.attrs.int_or(name, -1)?;
        usize::try_from(v).map_err(|_| format!("attribute `{name}` must be set and >= 0, is {v}"))
    };
    Ok((
        dim("nrows")?,
        dim("ncols")?,
        op.attrs.bool_or("trans", false)?,
    ))
}

fn dims(s: &Shape) -> Result<Vec<usize>, String> {
    s.static_dims()
        .ok_or_else(|| format!("needs static dims, given {s}"))
}

fn float(s: &Shape, what: &str) -> Result<(), String> {
    match s.dtype() {
        DType::F32 | DType::F64 => Ok(()),
        d => Err(format!("{what} must be f32 or f64, is {d} ({s})")),
    }
}

/// Checks `indptr` / `indices` against `nrows`; returns nnz.
fn pattern(indptr: &Shape, indices: &Shape, nrows: usize) -> Result<usize, String> {
    for (s, what) in [(indptr, "indptr"), (indices, "indices")] {
        if !matches!(s.dtype(), DType::I32 | DType::I64) {
            return Err(format!("{what} must be i32 or i64, is {s}"));
        }
    }
    let (p, i) = (dims(indptr)?, dims(indices)?);
    if p != [nrows + 1] {
        return Err(format!(
            "indptr must be [nrows + 1] = [{}], is {indptr}",
            nrows + 1
        ));
    }
    match i[..] {
        [nnz] => Ok(nnz),
        _ => Err(format!("indices must be [nnz], is {indices}")),
    }
}

/// `sparse.spmv` / `sparse.spmm`: inputs `(values [nnz], indptr, indices,
/// x)`, `x` `[n]` (spmv, `rank = 1`) or `[n, k]` (spmm, `rank = 2`) with
/// `n = ncols` (`nrows` when `trans`); the output has `nrows` (`ncols`) rows.
fn product(op: &CustomOp, s: &[&Shape], rank: usize) -> Result<Shape, String> {
    let (nrows, ncols, trans) = pattern_attrs(op)?;
    let (values, x) = (s[0], s[3]);
    let nnz = pattern(s[1], s[2], nrows)?;
    float(values, "values")?;
    if dims(values)? != [nnz] {
        return Err(format!(
            "values must be [nnz] = [{nnz}] like indices, is {values}"
        ));
    }
    let (inner, outer) = if trans {
        (nrows, ncols)
    } else {
        (ncols, nrows)
    };
    let xd = dims(x)?;
    if xd.len() != rank || xd[0] != inner {
        let want = if rank == 1 {
            format!("[{inner}]")
        } else {
            format!("[{inner}, k]")
        };
        return Err(format!(
            "the dense operand must be {want} for a {nrows} x {ncols} matrix{}, is {x}",
            if trans { " (transposed)" } else { "" }
        ));
    }
    if x.dtype() != values.dtype() {
        return Err(format!(
            "values and the dense operand must share a dtype, given {values} and {x}"
        ));
    }
    let mut out = xd;
    out[0] = outer;
    Ok(Shape::new(&out, x.dtype()))
}

pub(crate) fn spmv(op: &CustomOp, s: &[&Shape]) -> Result<Shape, String> {
    product(op, s, 1)
}

pub(crate) fn spmm(op: &CustomOp, s: &[&Shape]) -> Result<Shape, String> {
    product(op, s, 2)
}

/// `sparse.sddmm`: inputs `(indptr, indices, a, b)`, `a` `[nrows]` /
/// `[nrows, k]`, `b` `[ncols]` / `[ncols, k]` (same rank, dtype and `k`);
/// output `[nnz]`.
pub(crate) fn sddmm(op: &CustomOp, s: &[&Shape]) -> Result<Shape, String> {
    let (nrows, ncols, _) = pattern_attrs(op)?;
    let nnz = pattern(s[0], s[1], nrows)?;
    let (a, b) = (s[2], s[3]);
    float(a, "a")?;
    let (ad, bd) = (dims(a)?, dims(b)?);
    let ok = matches!(ad.len(), 1 | 2)
        && ad.len() == bd.len()
        && ad[0] == nrows
        && bd[0] == ncols
        && ad[1..] == bd[1..];
    if !ok {
        return Err(format!(
            "needs a [{nrows}] and b [{ncols}] (or [{nrows}, k] and [{ncols}, k]), given {a} and {b}"
        ));
    }
    if a.dtype() != b.dtype() {
        return Err(format!("a and b must share a dtype, given {a} and {b}"));
    }
    Ok(Shape::new(&[nnz], a.dtype()))
}
