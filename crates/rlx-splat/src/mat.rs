//! Small dense matrices as nested arrays (the 2×3 / 3×3 algebra of one Gaussian).

/// `x · y`.
pub(crate) fn mul<const A: usize, const B: usize, const C: usize>(
    x: &[[f64; B]; A],
    y: &[[f64; C]; B],
) -> [[f64; C]; A] {
    let mut out = [[0.0; C]; A];
    for (i, row) in out.iter_mut().enumerate() {
        for (j, o) in row.iter_mut().enumerate() {
            *o = (0..B).map(|k| x[i][k] * y[k][j]).sum();
        }
    }
    out
}

/// `xᵀ`.
pub(crate) fn tr<const A: usize, const B: usize>(x: &[[f64; B]; A]) -> [[f64; A]; B] {
    let mut out = [[0.0; A]; B];
    for (i, row) in x.iter().enumerate() {
        for (j, v) in row.iter().enumerate() {
            out[j][i] = *v;
        }
    }
    out
}

/// `x · v`.
pub(crate) fn mul_vec<const A: usize, const B: usize>(x: &[[f64; B]; A], v: &[f64; B]) -> [f64; A] {
    let mut out = [0.0; A];
    for (o, row) in out.iter_mut().zip(x) {
        *o = row.iter().zip(v).map(|(a, b)| a * b).sum();
    }
    out
}

/// Element-wise `x * s`.
pub(crate) fn scale<const A: usize, const B: usize>(x: &[[f64; B]; A], s: f64) -> [[f64; B]; A] {
    x.map(|row| row.map(|v| v * s))
}
