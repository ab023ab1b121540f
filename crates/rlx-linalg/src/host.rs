//! Host-side plumbing of the kernels: batched matrices read as f64 and
//! written back in the output's dtype.

use rlx_ir::custom::{KernelArg, KernelOut};
use rlx_ir::DType;

/// The values of `a` as f64 (f32 widened exactly).
pub(crate) fn read(a: &KernelArg) -> Result<Vec<f64>, String> {
    match a.dtype {
        DType::F64 => Ok(a
            .bytes
            .chunks_exact(8)
            .map(|b| f64::from_le_bytes(b.try_into().expect("8 bytes")))
            .collect()),
        DType::F32 => Ok(a
            .bytes
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes(b.try_into().expect("4 bytes")) as f64)
            .collect()),
        d => Err(format!("dtype {d} is not supported (f32 or f64)")),
    }
}

/// Writes `v` into `out`, rounded to its dtype.
pub(crate) fn write(out: &mut KernelOut, v: &[f64]) -> Result<(), String> {
    match out.dtype {
        DType::F64 => out
            .bytes
            .chunks_exact_mut(8)
            .zip(v)
            .for_each(|(o, x)| o.copy_from_slice(&x.to_le_bytes())),
        DType::F32 => out
            .bytes
            .chunks_exact_mut(4)
            .zip(v)
            .for_each(|(o, x)| o.copy_from_slice(&(*x as f32).to_le_bytes())),
        d => return Err(format!("dtype {d} is not supported (f32 or f64)")),
    }
    Ok(())
}

/// `(batch, n)` of a `[..., n, n]` argument.
pub(crate) fn square(a: &KernelArg) -> Result<(usize, usize), String> {
    let r = a.dims.len();
    if r < 2 || a.dims[r - 1] != a.dims[r - 2] {
        return Err(format!("expects [..., n, n], given {:?}", a.dims));
    }
    let n = a.dims[r - 1];
    let batch = a.dims[..r - 2].iter().product();
    Ok((batch, n))
}

/// `(batch, n, k)` of `[..., n, n]` with `[..., n, k]`.
pub(crate) fn system(a: &KernelArg, b: &KernelArg) -> Result<(usize, usize, usize), String> {
    let (batch, n) = square(a)?;
    let r = b.dims.len();
    if r != a.dims.len() || b.dims[..r - 2] != a.dims[..r - 2] || b.dims[r - 2] != n {
        return Err(format!(
            "a {:?} and b {:?} must be [..., n, n] and [..., n, k]",
            a.dims, b.dims
        ));
    }
    Ok((batch, n, b.dims[r - 1]))
}

/// Row-major `n x m` block `i` of `v` as a faer matrix.
pub(crate) fn mat(v: &[f64], i: usize, n: usize, m: usize) -> faer::Mat<f64> {
    let base = i * n * m;
    faer::Mat::from_fn(n, m, |r, c| v[base + r * m + c])
}

/// Appends `m` row-major to `out`.
pub(crate) fn push(out: &mut Vec<f64>, m: faer::MatRef<'_, f64>) {
    for r in 0..m.nrows() {
        for c in 0..m.ncols() {
            out.push(m[(r, c)]);
        }
    }
}

/// Per column of `u`: `-1.0` where its largest-magnitude entry (the first
/// such row on ties) is negative, else `1.0`. Multiplying the columns by
/// these fixes the sign of eigenvectors / singular vectors, so their
/// derivatives are well defined.
pub(crate) fn column_signs(u: faer::MatRef<'_, f64>) -> Vec<f64> {
    (0..u.ncols())
        .map(|c| {
            let mut best = 0;
            for r in 1..u.nrows() {
                if u[(r, c)].abs() > u[(best, c)].abs() {
                    best = r;
                }
            }
            if u[(best, c)] < 0.0 {
                -1.0
            } else {
                1.0
            }
        })
        .collect()
}
