//! Parametric UMAP (Sainburg, McInnes & Gentner 2021; umap-learn's
//! `ParametricUMAP`): an MLP encoder graph `x -> embedding` trained with
//! the UMAP cross-entropy through rlx autodiff (`grad_with_loss`) and Adam,
//! on edges of the fuzzy graph sampled in proportion to their weight, each
//! with `negative_sample_rate` random negatives.
//!
//! Per batch of `B` edges `(i, j)` and negatives `(i, n)`:
//! `loss = mean_B[-log q_ij] + repulsion * mean_B sum_n[-log(1 - q_in + 1e-4)]`,
//! `q = 1 / (1 + a (d^2)^b)` (umap-learn's `umap_loss`).

use crate::ab::find_ab_params;
use crate::data::rows_of;
use crate::rng::SplitMix;
use crate::{fuzzy_simplicial_set, knn, Result, UmapError, UmapParams};
use rlx_ir::{DType, Graph, GraphExt, NodeId, Shape};
use rlx_optim::{Adam, AdamConfig, Optimizer};
use rlx_runtime::{Device, Session};

/// Parametric UMAP's settings.
#[derive(Clone, Debug, PartialEq)]
pub struct ParametricParams {
    /// The UMAP graph and curve settings (`n_neighbors`, `min_dist`,
    /// `spread`, `negative_sample_rate`, `repulsion_strength`,
    /// `n_components`, `random_state`); `n_epochs` and `learning_rate` of
    /// the SGD layout are not used.
    pub umap: UmapParams,
    /// Hidden layer widths of the ReLU MLP encoder.
    pub hidden: Vec<usize>,
    /// Positive edges per training step.
    pub batch_size: usize,
    /// Training steps.
    pub steps: usize,
    /// Adam's learning rate.
    pub learning_rate: f64,
}

impl Default for ParametricParams {
    fn default() -> Self {
        ParametricParams {
            umap: UmapParams::default(),
            hidden: vec![100, 100],
            batch_size: 1024,
            steps: 1000,
            learning_rate: 3e-3,
        }
    }
}

/// A parametric UMAP encoder.
#[derive(Clone, Debug)]
pub struct ParametricUmap {
    params: ParametricParams,
    n_features: usize,
    weights: Vec<(String, Vec<usize>, Vec<f32>)>,
    losses: Vec<f32>,
}

fn runtime<E: std::fmt::Display>(e: E) -> UmapError {
    UmapError::Runtime(e.to_string())
}

/// The param names and shapes of an MLP `n_in -> hidden... -> n_out`.
fn layer_shapes(n_in: usize, hidden: &[usize], n_out: usize) -> Vec<(String, Vec<usize>)> {
    let widths: Vec<usize> = std::iter::once(n_in)
        .chain(hidden.iter().copied())
        .chain([n_out])
        .collect();
    let mut out = Vec::new();
    for (l, w) in widths.windows(2).enumerate() {
        out.push((format!("w{l}"), vec![w[0], w[1]]));
        out.push((format!("b{l}"), vec![w[1]]));
    }
    out
}

/// The encoder applied to `x` `[rows, n_in]`: ReLU between layers, linear out.
fn encode(g: &mut Graph, x: NodeId, shapes: &[(String, Vec<usize>)]) -> NodeId {
    let mut h = x;
    let layers = shapes.len() / 2;
    for l in 0..layers {
        let (wn, ws) = &shapes[2 * l];
        let (bn, bs) = &shapes[2 * l + 1];
        let w = g.param(wn, Shape::new(ws, DType::F32));
        let b = g.param(bn, Shape::new(bs, DType::F32));
        h = g.mm(h, w);
        h = g.add(h, b);
        if l + 1 < layers {
            h = g.relu(h);
        }
    }
    h
}

/// `(d^2 + eps)^b` of the rows of `u - v` (`[.., dim]`), reduced over the last axis.
fn powered_distance(g: &mut Graph, u: NodeId, v: NodeId, b: f64) -> NodeId {
    let diff = g.sub(u, v);
    let sq = g.mul(diff, diff);
    let d2 = g.sum(sq, &[-1], false);
    let d2 = g.add(d2, 1e-6);
    let logd = g.log(d2);
    let scaled = g.mul(logd, b);
    g.exp(scaled)
}

fn loss_graph(p: &ParametricParams, n_features: usize, a: f64, b: f64) -> Graph {
    let (bsz, neg) = (
        p.batch_size,
        p.umap.negative_sample_rate.round().max(0.0) as usize,
    );
    let dim = p.umap.n_components;
    let shapes = layer_shapes(n_features, &p.hidden, dim);
    let mut g = Graph::new("parametric_umap_loss");
    let rows = bsz * (2 + neg);
    let x = g.input("x", Shape::new(&[rows, n_features], DType::F32));
    let e = encode(&mut g, x, &shapes);
    let from = g.narrow_(e, 0, 0, bsz);
    let to = g.narrow_(e, 0, bsz, bsz);
    // Attraction: -log q = log(1 + a s).
    let s = powered_distance(&mut g, from, to, b);
    let as_ = g.mul(s, a);
    let one_plus = g.add(as_, 1.0);
    let attract = g.log(one_plus);
    let attract = g.mean(attract, &[0], false);
    let mut loss = attract;
    if neg > 0 {
        let negs = g.narrow_(e, 0, 2 * bsz, bsz * neg);
        let negs = g.reshape_(negs, &[bsz as i64, neg as i64, dim as i64]);
        let heads = g.reshape_(from, &[bsz as i64, 1, dim as i64]);
        let s = powered_distance(&mut g, heads, negs, b);
        // 1 - q = a s / (1 + a s).
        let as_ = g.mul(s, a);
        let den = g.add(as_, 1.0);
        let one_minus_q = g.div(as_, den);
        let shifted = g.add(one_minus_q, 1e-4);
        let logs = g.log(shifted);
        let total = g.sum(logs, &[0, 1], false);
        let repel = g.mul(total, -p.umap.repulsion_strength / bsz as f64);
        loss = g.add(loss, repel);
    }
    g.set_outputs(vec![loss]);
    g
}

/// Edge sampler: cumulative weights, searched with a uniform draw.
struct EdgeSampler {
    heads: Vec<usize>,
    tails: Vec<usize>,
    cumulative: Vec<f64>,
}

impl EdgeSampler {
    fn sample(&self, rng: &mut SplitMix) -> (usize, usize) {
        let total = *self.cumulative.last().unwrap_or(&0.0);
        let u = rng.unit() * total;
        let i = self
            .cumulative
            .partition_point(|&c| c <= u)
            .min(self.heads.len() - 1);
        (self.heads[i], self.tails[i])
    }
}

impl ParametricUmap {
    /// An untrained encoder with `params`.
    pub fn new(params: ParametricParams) -> ParametricUmap {
        ParametricUmap {
            params,
            n_features: 0,
            weights: Vec::new(),
            losses: Vec::new(),
        }
    }

    /// The loss of every training step.
    pub fn losses(&self) -> &[f32] {
        &self.losses
    }

    /// Trains the encoder on `x` (row-major, `n_features` columns) and
    /// returns the embedding of `x`.
    pub fn fit_transform(&mut self, x: &[f64], n_features: usize) -> Result<Vec<f32>> {
        let p = self.params.clone();
        let n = rows_of("x", x, n_features)?;
        if p.batch_size == 0 || p.steps == 0 {
            return Err(UmapError::InvalidParameter {
                name: "batch_size / steps",
                reason: format!("must be at least 1, given {} / {}", p.batch_size, p.steps),
            });
        }
        if n <= p.umap.n_neighbors || p.umap.n_neighbors < 2 {
            return Err(UmapError::InvalidData {
                name: "x",
                reason: format!("{n} rows for n_neighbors = {}", p.umap.n_neighbors),
            });
        }
        let (a, b) = find_ab_params(p.umap.spread, p.umap.min_dist)?;
        let (graph, _) = fuzzy_simplicial_set(
            &knn(x, n_features, p.umap.n_neighbors)?,
            p.umap.local_connectivity,
        );
        let mut acc = 0.0;
        let sampler = EdgeSampler {
            heads: graph.rows.clone(),
            tails: graph.cols.clone(),
            cumulative: graph
                .vals
                .iter()
                .map(|v| {
                    acc += v;
                    acc
                })
                .collect(),
        };
        let shapes = layer_shapes(n_features, &p.hidden, p.umap.n_components);
        let mut rng = SplitMix::new(p.umap.random_state);
        self.weights = shapes
            .iter()
            .map(|(name, dims)| {
                // Glorot-uniform weights, zero biases (Keras' Dense defaults).
                let values = if dims.len() == 2 {
                    let bound = (6.0 / (dims[0] + dims[1]) as f64).sqrt();
                    (0..dims[0] * dims[1])
                        .map(|_| ((rng.unit() * 2.0 - 1.0) * bound) as f32)
                        .collect()
                } else {
                    vec![0.0; dims[0]]
                };
                (name.clone(), dims.clone(), values)
            })
            .collect();
        self.n_features = n_features;

        let lg = loss_graph(&p, n_features, a, b);
        let wrt: Vec<NodeId> = shapes
            .iter()
            .map(|(name, _)| {
                lg.find_param(name)
                    .ok_or_else(|| runtime(format!("param {name} missing")))
            })
            .collect::<Result<_>>()?;
        let grad_graph = rlx_autodiff::grad_with_loss(&lg, &wrt).map_err(runtime)?;
        let mut compiled = Session::new(Device::Cpu)
            .try_compile(grad_graph)
            .map_err(runtime)?;
        let mut adam = Adam::new(AdamConfig {
            lr: p.learning_rate,
            ..AdamConfig::default()
        })
        .map_err(runtime)?;
        let neg = p.umap.negative_sample_rate.round().max(0.0) as usize;
        let xf: Vec<f32> = x.iter().map(|&v| v as f32).collect();
        let row = |i: usize| &xf[i * n_features..(i + 1) * n_features];
        let mut batch = Vec::with_capacity(p.batch_size * (2 + neg) * n_features);
        self.losses.clear();
        for _ in 0..p.steps {
            for (name, _, v) in &self.weights {
                compiled.try_set_param(name, v).map_err(runtime)?;
            }
            let pairs: Vec<(usize, usize)> = (0..p.batch_size)
                .map(|_| sampler.sample(&mut rng))
                .collect();
            batch.clear();
            pairs
                .iter()
                .for_each(|&(i, _)| batch.extend_from_slice(row(i)));
            pairs
                .iter()
                .for_each(|&(_, j)| batch.extend_from_slice(row(j)));
            for _ in 0..p.batch_size * neg {
                batch.extend_from_slice(row(rng.below(n)));
            }
            let out = compiled.try_run(&[("x", &batch)]).map_err(runtime)?;
            self.losses.push(out[0][0]);
            for ((name, dims, values), grad) in self.weights.iter_mut().zip(&out[1..]) {
                adam.step_f32(name, dims, values, grad).map_err(runtime)?;
            }
            adam.end_iteration();
        }
        self.transform(x)
    }

    /// Embeds `x` with the trained encoder (one compiled forward pass).
    pub fn transform(&self, x: &[f64]) -> Result<Vec<f32>> {
        if self.weights.is_empty() {
            return Err(UmapError::NotFitted);
        }
        let n = rows_of("x", x, self.n_features)?;
        let shapes = layer_shapes(
            self.n_features,
            &self.params.hidden,
            self.params.umap.n_components,
        );
        let mut g = Graph::new("parametric_umap_encoder");
        let xi = g.input("x", Shape::new(&[n, self.n_features], DType::F32));
        let e = encode(&mut g, xi, &shapes);
        g.set_outputs(vec![e]);
        let mut c = Session::new(Device::Cpu).try_compile(g).map_err(runtime)?;
        for (name, _, v) in &self.weights {
            c.try_set_param(name, v).map_err(runtime)?;
        }
        let xf: Vec<f32> = x.iter().map(|&v| v as f32).collect();
        let out = c.try_run(&[("x", &xf)]).map_err(runtime)?;
        Ok(out.into_iter().next().unwrap_or_default())
    }
}
