//! The UMAP estimator: `fit` / `fit_transform` / `transform` following
//! umap-learn (exact kNN as umap-learn uses below 4,096 points, fuzzy
//! simplicial set, `find_ab_params`, spectral initialisation, SGD layout).

use crate::ab::find_ab_params;
use crate::data::rows_of;
use crate::fuzzy::{fuzzy_simplicial_set, membership_strengths, smooth_knn_dist, SparseGraph};
use crate::layout::{optimize_layout, Edges, LayoutParams};
use crate::rng::SplitMix;
use crate::spectral::spectral_layout;
use crate::{knn, knn_query, Result, UmapError};

/// The input-space distance.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Metric {
    /// Euclidean distance.
    #[default]
    Euclidean,
}

/// UMAP's parameters, with umap-learn's defaults.
#[derive(Clone, Debug, PartialEq)]
pub struct UmapParams {
    /// Neighbours of each point in the kNN graph (umap-learn: 15).
    pub n_neighbors: usize,
    /// Embedding dimensions (2).
    pub n_components: usize,
    /// Smallest distance between embedded points (0.1).
    pub min_dist: f64,
    /// Scale of the embedded points (1.0).
    pub spread: f64,
    /// SGD epochs; `None`: 500 up to 10,000 points, else 200.
    pub n_epochs: Option<usize>,
    /// Initial SGD learning rate (1.0).
    pub learning_rate: f64,
    /// Negative samples per positive sample (5).
    pub negative_sample_rate: f64,
    /// Weight of the negative samples (1.0).
    pub repulsion_strength: f64,
    /// Nearest neighbours assumed connected (1.0).
    pub local_connectivity: f64,
    /// Input-space metric.
    pub metric: Metric,
    /// Seed of every random draw; the same seed gives the same embedding.
    pub random_state: u64,
}

impl Default for UmapParams {
    fn default() -> Self {
        UmapParams {
            n_neighbors: 15,
            n_components: 2,
            min_dist: 0.1,
            spread: 1.0,
            n_epochs: None,
            learning_rate: 1.0,
            negative_sample_rate: 5.0,
            repulsion_strength: 1.0,
            local_connectivity: 1.0,
            metric: Metric::Euclidean,
            random_state: 42,
        }
    }
}

/// What `fit` learned, needed by `transform`.
#[derive(Clone, Debug)]
struct Fitted {
    data: Vec<f64>,
    n_features: usize,
    embedding: Vec<f32>,
    graph: SparseGraph,
    a: f64,
    b: f64,
}

/// A UMAP model; [`Umap::fit`] it, then read [`Umap::embedding`] or
/// [`Umap::transform`] new points.
#[derive(Clone, Debug)]
pub struct Umap {
    params: UmapParams,
    fitted: Option<Fitted>,
}

fn invalid(name: &'static str, reason: String) -> UmapError {
    UmapError::InvalidParameter { name, reason }
}

fn check(p: &UmapParams) -> Result<()> {
    if p.n_neighbors < 2 {
        return Err(invalid(
            "n_neighbors",
            format!("must be at least 2, given {}", p.n_neighbors),
        ));
    }
    if p.n_components == 0 {
        return Err(invalid(
            "n_components",
            "must be at least 1, given 0".into(),
        ));
    }
    if !(p.min_dist >= 0.0 && p.min_dist <= p.spread) {
        return Err(invalid(
            "min_dist",
            format!(
                "must be in [0, spread = {}], given {}",
                p.spread, p.min_dist
            ),
        ));
    }
    for (name, v) in [
        ("learning_rate", p.learning_rate),
        ("negative_sample_rate", p.negative_sample_rate),
        ("repulsion_strength", p.repulsion_strength),
        ("local_connectivity", p.local_connectivity),
    ] {
        if !(v >= 0.0 && v.is_finite()) {
            return Err(invalid(name, format!("must be >= 0 and finite, given {v}")));
        }
    }
    if p.n_epochs == Some(0) {
        return Err(invalid("n_epochs", "must be at least 1, given 0".into()));
    }
    Ok(())
}

impl Umap {
    /// A model with `params` (checked when fitting).
    pub fn new(params: UmapParams) -> Umap {
        Umap {
            params,
            fitted: None,
        }
    }

    /// The parameters.
    pub fn params(&self) -> &UmapParams {
        &self.params
    }

    /// The fitted embedding, row-major `[n, n_components]`.
    pub fn embedding(&self) -> Result<&[f32]> {
        Ok(&self.fitted.as_ref().ok_or(UmapError::NotFitted)?.embedding)
    }

    /// The fitted fuzzy graph (symmetric, before the layout's pruning).
    pub fn graph(&self) -> Result<&SparseGraph> {
        Ok(&self.fitted.as_ref().ok_or(UmapError::NotFitted)?.graph)
    }

    /// The fitted curve parameters `(a, b)`.
    pub fn ab(&self) -> Result<(f64, f64)> {
        let f = self.fitted.as_ref().ok_or(UmapError::NotFitted)?;
        Ok((f.a, f.b))
    }

    /// Fits the model to `x` (row-major, `n_features` columns).
    pub fn fit(&mut self, x: &[f64], n_features: usize) -> Result<&mut Umap> {
        let p = &self.params;
        check(p)?;
        let n = rows_of("x", x, n_features)?;
        if n <= p.n_neighbors {
            return Err(UmapError::InvalidData {
                name: "x",
                reason: format!(
                    "{n} rows; UMAP needs more than n_neighbors = {}",
                    p.n_neighbors
                ),
            });
        }
        let (a, b) = find_ab_params(p.spread, p.min_dist)?;
        let neighbours = knn(x, n_features, p.n_neighbors)?;
        let (graph, _) = fuzzy_simplicial_set(&neighbours, p.local_connectivity);
        let n_epochs = p.n_epochs.unwrap_or(if n <= 10_000 { 500 } else { 200 });
        let mut rng = SplitMix::new(p.random_state);
        let dim = p.n_components;
        let init = spectral_layout(&graph, dim, &mut rng).unwrap_or_else(|| {
            (0..n * dim)
                .map(|_| (rng.unit() * 20.0 - 10.0) as f32)
                .collect()
        });
        let mut embedding = rescale_columns(&init, dim);
        let edges = Edges::from_graph(&graph, n_epochs);
        let layout = LayoutParams {
            a,
            b,
            gamma: p.repulsion_strength,
            initial_alpha: p.learning_rate,
            negative_sample_rate: p.negative_sample_rate,
            n_epochs,
        };
        optimize_layout(&mut embedding, None, dim, &edges, &layout, &mut rng);
        self.fitted = Some(Fitted {
            data: x.to_vec(),
            n_features,
            embedding,
            graph,
            a,
            b,
        });
        Ok(self)
    }

    /// [`Umap::fit`], then the embedding.
    pub fn fit_transform(&mut self, x: &[f64], n_features: usize) -> Result<Vec<f32>> {
        Ok(self.fit(x, n_features)?.embedding()?.to_vec())
    }

    /// Embeds new points into the fitted embedding: each starts at the
    /// membership-weighted mean of its training neighbours' positions and
    /// is optimised against the fixed embedding (umap-learn's `transform`:
    /// learning rate / 4, n_epochs / 3 or 100 epochs).
    pub fn transform(&self, x: &[f64]) -> Result<Vec<f32>> {
        let f = self.fitted.as_ref().ok_or(UmapError::NotFitted)?;
        let p = &self.params;
        let m = rows_of("x", x, f.n_features)?;
        let dim = p.n_components;
        let neighbours = knn_query(x, &f.data, f.n_features, p.n_neighbors)?;
        let smooth = smooth_knn_dist(
            &neighbours,
            p.n_neighbors as f64,
            (p.local_connectivity - 1.0).max(0.0),
        );
        let n_train = f.embedding.len() / dim;
        let graph = membership_strengths(&neighbours, &smooth, n_train, false);
        let mut embedding = init_from_neighbours(&graph, &f.embedding, dim, m);
        let n_epochs = match p.n_epochs {
            None => 100,
            Some(e) => (e / 3).max(1),
        };
        let edges = Edges::from_graph(&graph, n_epochs);
        let layout = LayoutParams {
            a: f.a,
            b: f.b,
            gamma: p.repulsion_strength,
            initial_alpha: p.learning_rate / 4.0,
            negative_sample_rate: p.negative_sample_rate,
            n_epochs,
        };
        let mut rng = SplitMix::new(p.random_state ^ 0x7472_616E_7366_6F72);
        optimize_layout(
            &mut embedding,
            Some(&f.embedding),
            dim,
            &edges,
            &layout,
            &mut rng,
        );
        Ok(embedding)
    }
}

/// Each column scaled to [0, 10] (umap-learn before the layout).
fn rescale_columns(v: &[f32], dim: usize) -> Vec<f32> {
    let mut out = v.to_vec();
    for d in 0..dim {
        let col = v.iter().skip(d).step_by(dim);
        let lo = col.clone().fold(f32::INFINITY, |m, &x| m.min(x));
        let hi = col.fold(f32::NEG_INFINITY, |m, &x| m.max(x));
        let span = if hi > lo { hi - lo } else { 1.0 };
        for x in out.iter_mut().skip(d).step_by(dim) {
            *x = 10.0 * (*x - lo) / span;
        }
    }
    out
}

/// umap-learn's `init_graph_transform`: the weighted mean of the
/// neighbours' positions, or a neighbour's position at membership 1.
fn init_from_neighbours(g: &SparseGraph, embedding: &[f32], dim: usize, m: usize) -> Vec<f32> {
    let mut out = vec![0.0f32; m * dim];
    let mut start = 0;
    for r in 0..m {
        let end = start + g.rows[start..].iter().take_while(|&&x| x == r).count();
        let sum: f64 = g.vals[start..end].iter().sum();
        let row = &mut out[r * dim..(r + 1) * dim];
        for i in start..end {
            let c = g.cols[i];
            let src = &embedding[c * dim..(c + 1) * dim];
            if g.vals[i] == 1.0 {
                row.copy_from_slice(src);
                break;
            }
            for (o, &e) in row.iter_mut().zip(src) {
                *o += (g.vals[i] / sum) as f32 * e;
            }
        }
        start = end;
    }
    out
}
