//! The SGD layout (umap-learn's `optimize_layout_euclidean`): each edge is
//! sampled every `epochs_per_sample` epochs (its weight relative to the
//! largest), pulls its endpoints together along the gradient of
//! `log(1 + a d^(2b))`, and each sample pushes the head away from
//! `negative_sample_rate` random points; gradients clipped to [-4, 4],
//! learning rate decaying linearly to 0.

use crate::fuzzy::SparseGraph;
use crate::rng::SplitMix;

const CLIP: f64 = 4.0;

/// The curve and optimiser settings of one layout run.
#[derive(Clone, Copy, Debug)]
pub(crate) struct LayoutParams {
    pub a: f64,
    pub b: f64,
    pub gamma: f64,
    pub initial_alpha: f64,
    pub negative_sample_rate: f64,
    pub n_epochs: usize,
}

/// Edges kept for the layout and their sampling periods.
pub(crate) struct Edges {
    head: Vec<usize>,
    tail: Vec<usize>,
    epochs_per_sample: Vec<f64>,
}

impl Edges {
    /// Drops weights below `max / n_epochs` (never sampled) as umap-learn
    /// does, then `epochs_per_sample = max / weight`.
    pub(crate) fn from_graph(g: &SparseGraph, n_epochs: usize) -> Edges {
        let max = g.vals.iter().copied().fold(0.0f64, f64::max);
        let floor = if n_epochs > 0 {
            max / n_epochs as f64
        } else {
            0.0
        };
        let mut e = Edges {
            head: Vec::new(),
            tail: Vec::new(),
            epochs_per_sample: Vec::new(),
        };
        for ((&r, &c), &v) in g.rows.iter().zip(&g.cols).zip(&g.vals) {
            if v >= floor && v > 0.0 {
                e.head.push(r);
                e.tail.push(c);
                e.epochs_per_sample.push(max / v);
            }
        }
        e
    }
}

fn clip(v: f64) -> f64 {
    v.clamp(-CLIP, CLIP)
}

/// Optimises `head` (`[n_head, dim]`) in place. With `tail = None` the
/// edges join points of `head` itself and both ends move (fit); otherwise
/// they point into the fixed `tail` embedding (transform).
pub(crate) fn optimize_layout(
    head: &mut [f32],
    tail: Option<&[f32]>,
    dim: usize,
    edges: &Edges,
    p: &LayoutParams,
    rng: &mut SplitMix,
) {
    let n_tail = tail.map_or(head.len(), <[f32]>::len) / dim;
    let move_other = tail.is_none();
    let m = edges.epochs_per_sample.len();
    let epochs_per_negative: Vec<f64> = edges
        .epochs_per_sample
        .iter()
        .map(|e| e / p.negative_sample_rate)
        .collect();
    let mut next_sample = edges.epochs_per_sample.clone();
    let mut next_negative = epochs_per_negative.clone();
    let (a, b) = (p.a, p.b);
    let mut current = vec![0.0f64; dim];
    let mut other = vec![0.0f64; dim];
    for epoch in 0..p.n_epochs {
        let alpha = p.initial_alpha * (1.0 - epoch as f64 / p.n_epochs as f64);
        let n = epoch as f64;
        for i in 0..m {
            if next_sample[i] > n {
                continue;
            }
            let (j, k) = (edges.head[i], edges.tail[i]);
            for d in 0..dim {
                current[d] = head[j * dim + d] as f64;
                other[d] = match tail {
                    Some(t) => t[k * dim + d] as f64,
                    None => head[k * dim + d] as f64,
                };
            }
            let d2: f64 = current
                .iter()
                .zip(&other)
                .map(|(x, y)| (x - y) * (x - y))
                .sum();
            let coeff = if d2 > 0.0 {
                // d2^(b-1) = d2^b / d2: one pow per sample.
                let pb = d2.powf(b);
                -2.0 * a * b * (pb / d2) / (a * pb + 1.0)
            } else {
                0.0
            };
            for d in 0..dim {
                let g = clip(coeff * (current[d] - other[d])) * alpha;
                current[d] += g;
                head[j * dim + d] = current[d] as f32;
                if move_other {
                    head[k * dim + d] = (other[d] - g) as f32;
                }
            }
            // Re-read: with move_other and j == k the head row moved twice.
            for d in 0..dim {
                current[d] = head[j * dim + d] as f64;
            }
            next_sample[i] += edges.epochs_per_sample[i];
            let negatives = ((n - next_negative[i]) / epochs_per_negative[i]).max(0.0) as usize;
            for _ in 0..negatives {
                let k = rng.below(n_tail);
                for d in 0..dim {
                    other[d] = match tail {
                        Some(t) => t[k * dim + d] as f64,
                        None => head[k * dim + d] as f64,
                    };
                }
                let d2: f64 = current
                    .iter()
                    .zip(&other)
                    .map(|(x, y)| (x - y) * (x - y))
                    .sum();
                if d2 <= 0.0 {
                    // umap-learn skips the point itself and moves nothing
                    // for an exact coincidence.
                    continue;
                }
                let coeff = 2.0 * p.gamma * b / ((0.001 + d2) * (a * d2.powf(b) + 1.0));
                for d in 0..dim {
                    current[d] += clip(coeff * (current[d] - other[d])) * alpha;
                    head[j * dim + d] = current[d] as f32;
                }
            }
            next_negative[i] += negatives as f64 * epochs_per_negative[i];
        }
    }
}
