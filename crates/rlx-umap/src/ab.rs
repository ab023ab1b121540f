//! `find_ab_params`: the `(a, b)` of the embedding-space similarity
//! `1 / (1 + a d^(2b))` that best fits (least squares) the target curve
//! "1 within `min_dist`, then `exp(-(d - min_dist) / spread)`" on 300
//! points of `[0, 3 spread]`, as umap-learn fits it with
//! `scipy.optimize.curve_fit` (Levenberg-Marquardt from `(1, 1)`).

use crate::{Result, UmapError};

const SAMPLES: usize = 300;
const MAX_ITERATIONS: usize = 500;

/// Residuals `f(x; a, b) - y` and their Jacobian rows `(df/da, df/db)`.
fn residuals(xs: &[f64], ys: &[f64], a: f64, b: f64) -> (Vec<f64>, Vec<[f64; 2]>) {
    let mut r = Vec::with_capacity(xs.len());
    let mut j = Vec::with_capacity(xs.len());
    for (&x, &y) in xs.iter().zip(ys) {
        if x == 0.0 {
            r.push(1.0 - y);
            j.push([0.0, 0.0]);
            continue;
        }
        let p = x.powf(2.0 * b);
        let den = 1.0 + a * p;
        r.push(1.0 / den - y);
        let common = -1.0 / (den * den);
        j.push([common * p, common * a * p * 2.0 * x.ln()]);
    }
    (r, j)
}

fn cost(r: &[f64]) -> f64 {
    r.iter().map(|v| v * v).sum()
}

/// umap-learn's `find_ab_params(spread, min_dist)`.
pub fn find_ab_params(spread: f64, min_dist: f64) -> Result<(f64, f64)> {
    if !(spread > 0.0 && spread.is_finite()) {
        return Err(UmapError::InvalidParameter {
            name: "spread",
            reason: format!("must be positive and finite, given {spread}"),
        });
    }
    if !(min_dist >= 0.0 && min_dist.is_finite()) {
        return Err(UmapError::InvalidParameter {
            name: "min_dist",
            reason: format!("must be >= 0 and finite, given {min_dist}"),
        });
    }
    let xs: Vec<f64> = (0..SAMPLES)
        .map(|i| 3.0 * spread * i as f64 / (SAMPLES - 1) as f64)
        .collect();
    let ys: Vec<f64> = xs
        .iter()
        .map(|&x| {
            if x < min_dist {
                1.0
            } else {
                (-(x - min_dist) / spread).exp()
            }
        })
        .collect();
    let (mut a, mut b) = (1.0f64, 1.0f64);
    let mut lambda = 1e-3;
    let (mut r, mut jac) = residuals(&xs, &ys, a, b);
    let mut c = cost(&r);
    for _ in 0..MAX_ITERATIONS {
        // Normal equations (J^T J + lambda diag(J^T J)) step = -J^T r.
        let (mut h, mut g) = ([[0.0f64; 2]; 2], [0.0f64; 2]);
        for (row, &res) in jac.iter().zip(&r) {
            for p in 0..2 {
                g[p] += row[p] * res;
                for q in 0..2 {
                    h[p][q] += row[p] * row[q];
                }
            }
        }
        let mut improved = false;
        while lambda < 1e12 {
            let m = [
                [h[0][0] * (1.0 + lambda), h[0][1]],
                [h[1][0], h[1][1] * (1.0 + lambda)],
            ];
            let det = m[0][0] * m[1][1] - m[0][1] * m[1][0];
            let da = -(m[1][1] * g[0] - m[0][1] * g[1]) / det;
            let db = -(m[0][0] * g[1] - m[1][0] * g[0]) / det;
            let (na, nb) = (a + da, b + db);
            let (nr, nj) = residuals(&xs, &ys, na, nb);
            let nc = cost(&nr);
            if nc.is_finite() && nc <= c {
                let converged = (c - nc) <= 1e-15 * c.max(1e-300) && da.abs() + db.abs() < 1e-13;
                (a, b, r, jac, c) = (na, nb, nr, nj, nc);
                lambda = (lambda / 10.0).max(1e-15);
                improved = !converged;
                break;
            }
            lambda *= 10.0;
        }
        if !improved {
            break;
        }
    }
    Ok((a, b))
}
