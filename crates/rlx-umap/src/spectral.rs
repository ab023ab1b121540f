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
pub(crate) fn spectral_layout(graph: &SparseGraph, dim: usize, rng: &mut SplitMix) -> Option<Vec<f32>> {
    let n = graph.n_rows;
    if n <= dim + 1 || !connected(graph) {
        return None;
    }
    let mut degree = vec![0.0f64; n];
    for (&c, &v) in graph.cols.iter().zip(&graph.vals) {
        degree[c] += v;
    }
    let inv_sqrt: Vec<f64> = degree.iter().map(|d| 1.0 / d.sqrt()).collect();
    // The largest eigenvalues of N = D^-1/2 A D^-1/2 are the smallest of I - N.
    let mut m = faer::Mat::<f64>::zeros(n, n);
    for ((&r, &c), &v) in graph.rows.iter().zip(&graph.cols).zip(&graph.vals) {
        m[(r, c)] = v * inv_sqrt[r] * inv_sqrt[c];
    }
    let eig = m.self_adjoint_eigen(faer::Side::Lower).ok()?;
    let vectors = eig.U();
    // Ascending eigenvalues of N: the top one (trivial) is column n-1.
    let mut coords = vec![0.0f64; n * dim];
    for d in 0..dim {
        let col = n - 2 - d;
        for i in 0..n {
            coords[i * dim + d] = vectors[(i, col)];
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
