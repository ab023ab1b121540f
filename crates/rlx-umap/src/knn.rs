//! Exact k nearest neighbours by brute force: squared euclidean distances,
//! ordered by (distance, index) so that ties go to the smaller index.

use crate::data::rows_of;
use crate::{Result, UmapError};

/// The `k` nearest neighbours of each query row, row-major `[rows, k]`.
#[derive(Clone, Debug, PartialEq)]
pub struct Knn {
    /// Neighbours per row.
    pub k: usize,
    /// Indices into the data rows, nearest first.
    pub indices: Vec<usize>,
    /// Euclidean distances (square roots of the squared distances ranked).
    pub distances: Vec<f64>,
}

impl Knn {
    /// An empty result for `m` rows of `k` out of `candidates`; `k` must be
    /// in `1..=candidates`.
    fn for_rows(m: usize, k: usize, candidates: usize) -> Result<Knn> {
        if k == 0 || k > candidates {
            return Err(UmapError::InvalidParameter {
                name: "k",
                reason: format!("k must be in 1..={candidates} (the candidates), given {k}"),
            });
        }
        Ok(Knn {
            k,
            indices: Vec::with_capacity(m * k),
            distances: Vec::with_capacity(m * k),
        })
    }

    /// Number of query rows.
    pub fn rows(&self) -> usize {
        self.indices.len() / self.k.max(1)
    }
}

fn squared_distance(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum()
}

/// The `k` rows of `data` nearest to each row of `queries` (both row-major
/// with `n_features` columns). A row of `queries` that is also in `data`
/// finds itself at distance 0.
pub fn knn_query(queries: &[f64], data: &[f64], n_features: usize, k: usize) -> Result<Knn> {
    let m = rows_of("queries", queries, n_features)?;
    let n = rows_of("data", data, n_features)?;
    let mut out = Knn::for_rows(m, k, n)?;
    let mut row: Vec<(f64, usize)> = Vec::with_capacity(n);
    for q in queries.chunks_exact(n_features) {
        row.clear();
        row.extend(
            data.chunks_exact(n_features)
                .enumerate()
                .map(|(j, p)| (squared_distance(q, p), j)),
        );
        push_smallest(&mut row, k, &mut out, f64::sqrt);
    }
    Ok(out)
}

/// Appends the `k` smallest of `row` (ties: smaller index first) to `out`,
/// each distance passed through `finish`.
fn push_smallest(row: &mut [(f64, usize)], k: usize, out: &mut Knn, finish: fn(f64) -> f64) {
    let by_distance_then_index =
        |a: &(f64, usize), b: &(f64, usize)| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1));
    if k < row.len() {
        row.select_nth_unstable_by(k - 1, by_distance_then_index);
    }
    row[..k].sort_unstable_by(by_distance_then_index);
    for &(d, j) in &row[..k] {
        out.indices.push(j);
        out.distances.push(finish(d));
    }
}

/// The `k` smallest entries of each row of a distance matrix
/// (`[m, n_cols]`, row-major; any dissimilarity), ties to the smaller
/// column: the kNN "from pairwise distances".
pub fn knn_from_distances(distances: &[f64], n_cols: usize, k: usize) -> Result<Knn> {
    let m = rows_of("distances", distances, n_cols)?;
    let mut out = Knn::for_rows(m, k, n_cols)?;
    let mut row: Vec<(f64, usize)> = Vec::with_capacity(n_cols);
    for r in distances.chunks_exact(n_cols) {
        row.clear();
        row.extend(r.iter().copied().zip(0..));
        push_smallest(&mut row, k, &mut out, |d| d);
    }
    Ok(out)
}

/// The `k` nearest rows of `x` to each of its rows (each row included).
pub fn knn(x: &[f64], n_features: usize, k: usize) -> Result<Knn> {
    knn_query(x, x, n_features, k)
}
