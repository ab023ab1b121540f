//! Spectral initialisation (umap-learn's `spectral_layout` +
//! `noisy_scale_coords`): the eigenvectors of the normalized Laplacian
//! `I - D^-1/2 A D^-1/2` for the 2nd .. (dim+1)-th smallest eigenvalues,
//! scaled so the largest coordinate is 10, plus N(0, 1e-4) noise.

use crate::fuzzy::SparseGraph;
use crate::rng::SplitMix;

/// Whether the graph (symmetric) is connected: one breadth-first search.
fn connected(g: &SparseGraph) -> bool {
    let n = g.n_rows;
    let mut start = vec![0usize; n + 1];
    for &r in &g.rows {
        start[r + 1] += 1;
    }
    for i in 0..n {
        start[i + 1] += start[i];
    }
    let mut seen = vec![false; n];
    let mut stack = vec![0usize];
    seen[0] = true;
    let mut count = 1;
    while let Some(v) = stack.pop() {
        for &c in &g.cols[start[v]..start[v + 1]] {
            if !seen[c] {
                seen[c] = true;
                count += 1;
                stack.push(c);
            }
        }
    }
    count == n
}

/// The spectral layout of `graph` in `dim` dimensions, row-major, or
/// `None` when it does not apply (a disconnected graph, or too few points)
/// and the caller falls back to a random initialisation.
pub(crate) fn spectral_layout(
    graph: &SparseGraph,
    dim: usize,
    rng: &mut SplitMix,
) -> Option<Vec<f32>> {
    let n = graph.n_rows;
    if n <= dim + 1 || !connected(graph) {
        return None;
    }
    let mut degree = vec![0.0f64; n];
    for (&c, &v) in graph.cols.iter().zip(&graph.vals) {
        degree[c] += v;
    }
    let inv_sqrt: Vec<f64> = degree.iter().map(|d| 1.0 / d.sqrt()).collect();
    // N = D^-1/2 A D^-1/2 in CSR; its largest eigenvalues are the smallest
    // of the Laplacian I - N. Its top eigenvector sqrt(degree) is known.
    let normalized: Vec<f64> = graph
        .rows
        .iter()
        .zip(&graph.cols)
        .zip(&graph.vals)
        .map(|((&r, &c), &v)| v * inv_sqrt[r] * inv_sqrt[c])
        .collect();
    let mut row_start = vec![0usize; n + 1];
    for &r in &graph.rows {
        row_start[r + 1] += 1;
    }
    for i in 0..n {
        row_start[i + 1] += row_start[i];
    }
    let op = Csr {
        row_start: &row_start,
        cols: &graph.cols,
        vals: &normalized,
    };
    let mut trivial: Vec<f64> = degree.iter().map(|d| d.sqrt()).collect();
    normalize(&mut trivial);
    let start: Vec<f64> = (0..n).map(|_| rng.normal()).collect();
    let vectors = top_eigenvectors(&op, &trivial, start, dim)?;
    let mut coords = vec![0.0f64; n * dim];
    for (d, v) in vectors.iter().enumerate() {
        for i in 0..n {
            coords[i * dim + d] = v[i];
        }
    }
    let max = coords.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    if max.is_nan() || max == 0.0 {
        return None;
    }
    let expansion = 10.0 / max;
    Some(
        coords
            .iter()
            .map(|&v| (v * expansion) as f32 + (rng.normal() * 1e-4) as f32)
            .collect(),
    )
}

/// A symmetric sparse matrix in CSR form.
struct Csr<'a> {
    row_start: &'a [usize],
    cols: &'a [usize],
    vals: &'a [f64],
}

impl Csr<'_> {
    fn apply(&self, x: &[f64], y: &mut [f64]) {
        for (r, out) in y.iter_mut().enumerate() {
            let span = self.row_start[r]..self.row_start[r + 1];
            *out = self.cols[span.clone()]
                .iter()
                .zip(&self.vals[span])
                .map(|(&c, &v)| v * x[c])
                .sum();
        }
    }
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

fn normalize(v: &mut [f64]) -> f64 {
    let norm = dot(v, v).sqrt();
    if norm > 0.0 {
        v.iter_mut().for_each(|x| *x /= norm);
    }
    norm
}

/// Removes the components of `v` along `basis` (twice, for stability).
fn orthogonalize(v: &mut [f64], basis: &[Vec<f64>]) {
    for _ in 0..2 {
        for q in basis {
            let c = dot(v, q);
            v.iter_mut().zip(q).for_each(|(x, y)| *x -= c * y);
        }
    }
}

const RESIDUAL_TOLERANCE: f64 = 1e-8;

/// The eigenvectors of the `count` largest eigenvalues of `op` orthogonal
/// to `trivial` (a known unit eigenvector), by Lanczos with full
/// reorthogonalisation, growing the Krylov space until the Ritz pairs'
/// residuals fall below tolerance (the role of umap-learn's `eigsh`).
fn top_eigenvectors(
    op: &Csr,
    trivial: &[f64],
    start: Vec<f64>,
    count: usize,
) -> Option<Vec<Vec<f64>>> {
    let n = trivial.len();
    let limit = n - 1;
    let mut basis = vec![trivial.to_vec()];
    let mut q = start;
    orthogonalize(&mut q, &basis);
    if normalize(&mut q) == 0.0 {
        return None;
    }
    let (mut alphas, mut betas) = (Vec::new(), Vec::new());
    let mut krylov: Vec<Vec<f64>> = Vec::new();
    let mut w = vec![0.0f64; n];
    let mut check_at = (4 * count + 40).min(limit);
    loop {
        op.apply(&q, &mut w);
        let alpha = dot(&w, &q);
        krylov.push(q.clone());
        basis.push(q.clone());
        alphas.push(alpha);
        orthogonalize(&mut w, &basis);
        let beta = normalize(&mut w);
        let m = krylov.len();
        let exhausted = beta < 1e-12 || m >= limit;
        if m >= check_at || exhausted {
            let t = faer::Mat::<f64>::from_fn(m, m, |i, j| {
                if i == j {
                    alphas[i]
                } else if i + 1 == j {
                    betas[i]
                } else if j + 1 == i {
                    betas[j]
                } else {
                    0.0
                }
            });
            let eig = t.self_adjoint_eigen(faer::Side::Lower).ok()?;
            let y = eig.U();
            let take = count.min(m);
            let converged =
                (0..take).all(|c| (beta * y[(m - 1, m - 1 - c)]).abs() < RESIDUAL_TOLERANCE);
            if converged || exhausted {
                if take < count {
                    return None;
                }
                return Some(
                    (0..count)
                        .map(|c| {
                            let col = m - 1 - c;
                            let mut v = vec![0.0f64; n];
                            for (k, qk) in krylov.iter().enumerate() {
                                let coef = y[(k, col)];
                                v.iter_mut().zip(qk).for_each(|(x, q)| *x += coef * q);
                            }
                            v
                        })
                        .collect(),
                );
            }
            check_at = (check_at * 3 / 2).min(limit);
        }
        betas.push(beta);
        q.copy_from_slice(&w);
    }
}
