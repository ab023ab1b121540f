//! The two-output decompositions, `eigh` and `qr`: kernels and shape rules.
//! Each output is its own node (`output=0` / `output=1`), so a graph that
//! uses both computes the factorization twice unless CSE merges them.
//!
//! Sign conventions (LAPACK leaves them to the algorithm; ours are fixed so
//! results are reproducible and derivatives are well defined): each
//! eigenvector column has its largest-magnitude entry (the first, on ties)
//! positive, and `R` of a QR has a non-negative diagonal.

use crate::host::{column_signs, mat, push, read, write};
use rlx_ir::custom::{CustomOp, KernelArg, KernelOut};
use rlx_ir::{Dim, Shape};

fn output(op: &CustomOp) -> Result<i64, String> {
    let k = op.attrs.int_or("output", 0)?;
    if !(0..=1).contains(&k) {
        return Err(format!("output must be 0 or 1, is {k}"));
    }
    Ok(k)
}

/// `eigh`: `[..., n, n] -> w [..., n]` (output 0) or `V [..., n, n]` (output 1).
pub(crate) fn eigh_shape(op: &CustomOp, s: &[&Shape]) -> Result<Shape, String> {
    let k = output(op)?;
    let out = crate::shapes::same_square(op, s)?;
    if k == 1 {
        return Ok(out);
    }
    let d = out.dims();
    Ok(Shape::from_dims(d[..d.len() - 1].to_vec(), out.dtype()))
}

/// `qr` (reduced): `[..., m, n] -> Q [..., m, k]` (output 0) or
/// `R [..., k, n]` (output 1), `k = min(m, n)`.
pub(crate) fn qr_shape(op: &CustomOp, s: &[&Shape]) -> Result<Shape, String> {
    let which = output(op)?;
    let a = s[0];
    if !matches!(a.dtype(), rlx_ir::DType::F32 | rlx_ir::DType::F64) || a.rank() < 2 {
        return Err(format!("needs f32 / f64 matrices [..., m, n], given {a}"));
    }
    let d = a.dims();
    let r = d.len();
    let (Some(m), Some(n)) = (d[r - 2].as_static(), d[r - 1].as_static()) else {
        return Err(format!("needs static matrix dims, given {a}"));
    };
    let k = m.min(n);
    let mut out = d.to_vec();
    if which == 0 {
        out[r - 1] = Dim::Static(k);
    } else {
        out[r - 2] = Dim::Static(k);
    }
    Ok(Shape::from_dims(out, a.dtype()))
}

/// `linalg.eigh{output}`: eigenvalues ascending / eigenvectors as columns
/// of `(A + A^T) / 2` (`jnp.linalg.eigh`, up to the column signs above).
pub(crate) fn eigh(op: &CustomOp, ins: &[KernelArg], out: &mut KernelOut) -> Result<(), String> {
    let which = output(op)?;
    let (batch, n) = crate::host::square(&ins[0])?;
    let a = read(&ins[0])?;
    let mut res = Vec::new();
    for i in 0..batch {
        let m = mat(&a, i, n, n);
        let s = faer::Mat::from_fn(n, n, |r, c| 0.5 * (m[(r, c)] + m[(c, r)]));
        let Ok(e) = s.self_adjoint_eigen(faer::Side::Lower) else {
            let len = if which == 0 { n } else { n * n };
            res.extend(std::iter::repeat_n(f64::NAN, len));
            continue;
        };
        let w = e.S().column_vector();
        let u = e.U();
        if which == 0 {
            res.extend((0..n).map(|j| w[j]));
            continue;
        }
        let sign = column_signs(u);
        let v = faer::Mat::from_fn(n, n, |r, c| u[(r, c)] * sign[c]);
        push(&mut res, v.as_ref());
    }
    write(out, &res)
}

/// `linalg.qr{output}`: the reduced QR (`numpy.linalg.qr(mode="reduced")`,
/// up to the row signs of `R` above).
pub(crate) fn qr(op: &CustomOp, ins: &[KernelArg], out: &mut KernelOut) -> Result<(), String> {
    let which = output(op)?;
    let d = ins[0].dims;
    let r = d.len();
    if r < 2 {
        return Err(format!("expects [..., m, n], given {d:?}"));
    }
    let (m, n) = (d[r - 2], d[r - 1]);
    let k = m.min(n);
    let batch: usize = d[..r - 2].iter().product();
    let a = read(&ins[0])?;
    let mut res = Vec::new();
    for i in 0..batch {
        let f = mat(&a, i, m, n).qr();
        let q = f.compute_thin_Q();
        let rr = f.thin_R();
        let sign: Vec<f64> = (0..k)
            .map(|j| if rr[(j, j)] < 0.0 { -1.0 } else { 1.0 })
            .collect();
        if which == 0 {
            let qs = faer::Mat::from_fn(m, k, |r, c| q[(r, c)] * sign[c]);
            push(&mut res, qs.as_ref());
        } else {
            let rs =
                faer::Mat::from_fn(k, n, |r, c| if c >= r { rr[(r, c)] * sign[r] } else { 0.0 });
            push(&mut res, rs.as_ref());
        }
    }
    write(out, &res)
}
