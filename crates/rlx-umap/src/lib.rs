//! # rlx-umap — UMAP for RLX
//!
//! * [`knn`] / [`knn_query`] / [`knn_from_distances`]: exact k nearest
//!   neighbours (euclidean, or from a pairwise distance matrix), ties
//!   broken by index; [`ops`] registers them as the `umap.knn` custom op
//!   for use inside compiled graphs.
//! * [`Umap`]: `fit` / `fit_transform` / `transform` as umap-learn computes
//!   them: smooth kNN distances and the fuzzy simplicial set
//!   ([`fuzzy_simplicial_set`]), [`find_ab_params`], spectral
//!   initialisation, the SGD layout with negative sampling; seeded, so the
//!   same `random_state` gives a bit-identical embedding.
//! * [`parametric`]: parametric UMAP, an MLP encoder graph trained with the
//!   UMAP cross-entropy through rlx autodiff.
//! * [`trustworthiness`]: scikit-learn's embedding quality score.
//!
//! Checked against umap-learn and scikit-learn (`tools/gen_umap_fixtures.py`).
#![deny(missing_docs)]

mod ab;
mod data;
mod error;
mod fuzzy;
mod knn;
mod layout;
mod model;
pub mod ops;
pub mod parametric;
mod rng;
mod spectral;
mod trust;

pub use ab::find_ab_params;
pub use error::{Result, UmapError};
pub use fuzzy::{
    fuzzy_simplicial_set, fuzzy_union, membership_strengths, smooth_knn_dist, SmoothKnn,
    SparseGraph,
};
pub use knn::{knn, knn_from_distances, knn_query, Knn};
pub use model::{Metric, Umap, UmapParams};
pub use trust::trustworthiness;
