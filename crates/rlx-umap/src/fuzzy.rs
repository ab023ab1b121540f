//! The fuzzy simplicial set of a kNN graph, as umap-learn's
//! `smooth_knn_dist`, `compute_membership_strengths` and
//! `fuzzy_simplicial_set` compute it.

use crate::knn::Knn;

const SMOOTH_K_TOLERANCE: f64 = 1e-5;
const MIN_K_DIST_SCALE: f64 = 1e-3;
const BISECTION_STEPS: usize = 64;

/// Per-point kernel widths `sigma` and distances to the nearest
/// (`local_connectivity`-th) neighbour `rho`.
#[derive(Clone, Debug, PartialEq)]
pub struct SmoothKnn {
    /// Bandwidth of each row's exponential kernel.
    pub sigmas: Vec<f64>,
    /// Each row's local connectivity offset.
    pub rhos: Vec<f64>,
}

fn rho_of(row: &[f64], local_connectivity: f64) -> f64 {
    let non_zero: Vec<f64> = row.iter().copied().filter(|&d| d > 0.0).collect();
    if non_zero.is_empty() {
        return 0.0;
    }
    if non_zero.len() as f64 >= local_connectivity {
        let index = local_connectivity.floor() as usize;
        let interpolation = local_connectivity - index as f64;
        if index > 0 {
            let mut rho = non_zero[index - 1];
            if interpolation > SMOOTH_K_TOLERANCE {
                rho += interpolation * (non_zero[index] - non_zero[index - 1]);
            }
            rho
        } else {
            interpolation * non_zero[0]
        }
    } else {
        non_zero.iter().copied().fold(f64::MIN, f64::max)
    }
}

/// Binary search of each row's `sigma` so that
/// `sum_j exp(-(d_ij - rho_i) / sigma_i) = log2(k)` over the neighbours
/// after the first (umap-learn's `smooth_knn_dist`, bandwidth 1).
pub fn smooth_knn_dist(knn: &Knn, k: f64, local_connectivity: f64) -> SmoothKnn {
    let target = k.log2();
    let width = knn.k;
    let mean_all = knn.distances.iter().sum::<f64>() / knn.distances.len().max(1) as f64;
    let mut sigmas = Vec::with_capacity(knn.rows());
    let mut rhos = Vec::with_capacity(knn.rows());
    for row in knn.distances.chunks_exact(width) {
        let rho = rho_of(row, local_connectivity);
        let (mut lo, mut hi, mut mid) = (0.0f64, f64::INFINITY, 1.0f64);
        for _ in 0..BISECTION_STEPS {
            let psum: f64 = row[1..]
                .iter()
                .map(|&d| {
                    let d = d - rho;
                    if d > 0.0 {
                        (-(d / mid)).exp()
                    } else {
                        1.0
                    }
                })
                .sum();
            if (psum - target).abs() < SMOOTH_K_TOLERANCE {
                break;
            }
            if psum > target {
                hi = mid;
                mid = (lo + hi) / 2.0;
            } else {
                lo = mid;
                mid = if hi == f64::INFINITY {
                    mid * 2.0
                } else {
                    (lo + hi) / 2.0
                };
            }
        }
        let floor = if rho > 0.0 {
            MIN_K_DIST_SCALE * row.iter().sum::<f64>() / width as f64
        } else {
            MIN_K_DIST_SCALE * mean_all
        };
        sigmas.push(mid.max(floor));
        rhos.push(rho);
    }
    SmoothKnn { sigmas, rhos }
}

/// A sparse `rows x cols` matrix in coordinate form, entries sorted by
/// (row, col), no zeros stored.
#[derive(Clone, Debug, PartialEq)]
pub struct SparseGraph {
    /// Number of rows.
    pub n_rows: usize,
    /// Number of columns.
    pub n_cols: usize,
    /// Row of each entry.
    pub rows: Vec<usize>,
    /// Column of each entry.
    pub cols: Vec<usize>,
    /// Value of each entry.
    pub vals: Vec<f64>,
}

impl SparseGraph {
    /// Number of stored entries.
    pub fn nnz(&self) -> usize {
        self.vals.len()
    }

    /// The value at `(r, c)` (0 when absent).
    pub fn get(&self, r: usize, c: usize) -> f64 {
        let lo = self.rows.partition_point(|&x| x < r);
        let hi = self.rows.partition_point(|&x| x <= r);
        match self.cols[lo..hi].binary_search(&c) {
            Ok(p) => self.vals[lo + p],
            Err(_) => 0.0,
        }
    }
}

/// The directed membership strengths `exp(-(d_ij - rho_i) / sigma_i)`
/// (1 within `rho_i`); with `skip_self` a row's own index gets 0, as in a
/// graph over one point set (umap-learn's `bipartite=False`).
pub fn membership_strengths(
    knn: &Knn,
    smooth: &SmoothKnn,
    n_cols: usize,
    skip_self: bool,
) -> SparseGraph {
    let mut entries: Vec<(usize, usize, f64)> = Vec::with_capacity(knn.indices.len());
    for (r, (idx, dist)) in knn
        .indices
        .chunks_exact(knn.k)
        .zip(knn.distances.chunks_exact(knn.k))
        .enumerate()
    {
        let (rho, sigma) = (smooth.rhos[r], smooth.sigmas[r]);
        for (&c, &d) in idx.iter().zip(dist) {
            let v = if skip_self && c == r {
                0.0
            } else if d - rho <= 0.0 || sigma == 0.0 {
                1.0
            } else {
                (-((d - rho) / sigma)).exp()
            };
            if v != 0.0 {
                entries.push((r, c, v));
            }
        }
    }
    entries.sort_unstable_by_key(|a| (a.0, a.1));
    SparseGraph {
        n_rows: knn.rows(),
        n_cols,
        rows: entries.iter().map(|e| e.0).collect(),
        cols: entries.iter().map(|e| e.1).collect(),
        vals: entries.iter().map(|e| e.2).collect(),
    }
}

/// The fuzzy union `A + A^T - A * A^T` of a square directed graph.
pub fn fuzzy_union(a: &SparseGraph) -> SparseGraph {
    let mut both: Vec<(usize, usize, f64)> = Vec::with_capacity(2 * a.nnz());
    for ((&r, &c), &v) in a.rows.iter().zip(&a.cols).zip(&a.vals) {
        both.push((r, c, v));
        both.push((c, r, v));
    }
    both.sort_unstable_by_key(|x| (x.0, x.1));
    let mut out = SparseGraph {
        n_rows: a.n_rows,
        n_cols: a.n_cols,
        rows: Vec::new(),
        cols: Vec::new(),
        vals: Vec::new(),
    };
    let mut i = 0;
    while i < both.len() {
        let (r, c, v) = both[i];
        let same_pair = i + 1 < both.len() && both[i + 1].0 == r && both[i + 1].1 == c;
        let value = if same_pair {
            let w = both[i + 1].2;
            i += 2;
            v + w - v * w
        } else {
            i += 1;
            v
        };
        if value != 0.0 {
            out.rows.push(r);
            out.cols.push(c);
            out.vals.push(value);
        }
    }
    out
}

/// umap-learn's `fuzzy_simplicial_set` over a kNN of a point set with
/// itself: `(graph, sigmas / rhos)`.
pub fn fuzzy_simplicial_set(knn: &Knn, local_connectivity: f64) -> (SparseGraph, SmoothKnn) {
    let smooth = smooth_knn_dist(knn, knn.k as f64, local_connectivity);
    let directed = membership_strengths(knn, &smooth, knn.rows(), true);
    (fuzzy_union(&directed), smooth)
}
