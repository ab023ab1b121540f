//! Trustworthiness (scikit-learn's `sklearn.manifold.trustworthiness`):
//! how many of each point's `k` nearest neighbours in the embedding are
//! intruders in input space, weighted by their input-space rank.

use crate::data::rows_of;
use crate::{knn_query, Result, UmapError};

/// `1 - 2 / (n k (2n - 3k - 1)) * sum_i sum_{j in N_k^emb(i)} max(0, r(i, j) - k)`
/// with `r(i, j)` the rank of `j` among `i`'s input-space neighbours
/// (self excluded, ties by index), euclidean in both spaces. `x` is
/// `[n, n_features]`, `embedding` `[n, dim]`.
pub fn trustworthiness(
    x: &[f64],
    n_features: usize,
    embedding: &[f64],
    dim: usize,
    k: usize,
) -> Result<f64> {
    let n = rows_of("x", x, n_features)?;
    let ne = rows_of("embedding", embedding, dim)?;
    if ne != n {
        return Err(UmapError::InvalidData {
            name: "embedding",
            reason: format!("{ne} rows, x has {n}"),
        });
    }
    if k == 0 || 2 * k >= n {
        return Err(UmapError::InvalidParameter {
            name: "k",
            reason: format!("must be in 1..{} for {n} points (k < n / 2)", n / 2),
        });
    }
    // Input-space ranks of every point (the full ordering, self first).
    let full = knn_query(x, x, n_features, n)?;
    let emb = knn_query(embedding, embedding, dim, k + 1)?;
    let mut rank = vec![0usize; n];
    let mut penalty = 0.0f64;
    for i in 0..n {
        let order: Vec<usize> = full.indices[i * n..(i + 1) * n]
            .iter()
            .copied()
            .filter(|&j| j != i)
            .collect();
        for (r, &j) in order.iter().enumerate() {
            rank[j] = r + 1;
        }
        let neighbours = emb.indices[i * (k + 1)..(i + 1) * (k + 1)]
            .iter()
            .filter(|&&j| j != i)
            .take(k);
        for &j in neighbours {
            penalty += rank[j].saturating_sub(k) as f64;
        }
    }
    let (n, k) = (n as f64, k as f64);
    Ok(1.0 - penalty * 2.0 / (n * k * (2.0 * n - 3.0 * k - 1.0)))
}
