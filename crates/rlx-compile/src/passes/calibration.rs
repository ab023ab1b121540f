//! Calibration methods of post-training quantisation, as ONNX Runtime's
//! quantizer offers them: [`CalibrationMethod::MinMax`], histogram
//! [`CalibrationMethod::Percentile`] and [`CalibrationMethod::Entropy`]
//! (the KL-divergence threshold search of TensorRT / ORT), per tensor or per
//! channel along an axis the user picks.
//!
//! [`Histogram`] follows `onnxruntime.quantization.calibrate.HistogramCollector`
//! step for step (its float32 bin edges, the way it widens and merges
//! histograms across batches, its percentile and entropy searches), so the
//! thresholds equal ORT's (`tools/gen_calibration_fixtures.py`). NaNs are
//! ignored. A [`CalibrationCollector`] gathers these per value and turns
//! them into the [`CalibrationRecord`] that [`crate::insert_fake_quant`] reads.

use super::quantize::{CalibrationRecord, TensorStats};
use crate::CompileError;
use rlx_ir::{Graph, NodeId};
use std::collections::BTreeMap;

/// How calibration chooses activation ranges: the method, and an optional
/// channel axis for per-channel activation stats (weights are always min /
/// max per output channel, as in ORT).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CalibrationOptions {
    /// The method for activations.
    pub method: CalibrationMethod,
    /// Per-channel activation stats along this axis (`None`: per tensor).
    pub activation_axis: Option<usize>,
}

impl Default for CalibrationOptions {
    fn default() -> Self {
        CalibrationOptions {
            method: CalibrationMethod::MinMax,
            activation_axis: None,
        }
    }
}

/// How a value's quantisation range is chosen from what calibration saw.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum CalibrationMethod {
    /// The smallest and largest value seen.
    MinMax,
    /// The range keeping `percentile` % of the values of a histogram
    /// (ORT `PercentileCalibrater`). `symmetric` histograms `|x|` and gives
    /// `[-t, t]`; otherwise `(100 - percentile) / 2` % is cut on each side.
    Percentile {
        /// Percent of values kept, in `[0, 100]` (ORT's default 99.999).
        percentile: f64,
        /// Initial histogram bins (ORT's default 2048).
        num_bins: usize,
        /// Histogram of absolute values, symmetric range.
        symmetric: bool,
    },
    /// The threshold minimising the KL divergence between the clipped
    /// histogram and its quantized version (ORT `EntropyCalibrater`).
    Entropy {
        /// Initial histogram bins (ORT's default 128; TensorRT uses 2048).
        num_bins: usize,
        /// Bins of the quantized distribution (ORT's default 128).
        num_quantized_bins: usize,
    },
}

impl CalibrationMethod {
    /// ORT's `PercentileCalibrater` defaults with another percentile.
    pub fn percentile(percentile: f64) -> Self {
        CalibrationMethod::Percentile {
            percentile,
            num_bins: 2048,
            symmetric: false,
        }
    }

    /// ORT's `EntropyCalibrater` defaults (128 bins, 128 quantized bins).
    pub fn entropy() -> Self {
        CalibrationMethod::Entropy {
            num_bins: 128,
            num_quantized_bins: 128,
        }
    }

    /// A fresh histogram for this method (`None` for min / max).
    fn histogram(&self) -> Result<Option<Histogram>, CompileError> {
        Ok(match *self {
            CalibrationMethod::MinMax => None,
            CalibrationMethod::Percentile {
                percentile,
                num_bins,
                symmetric,
            } => {
                if !(0.0..=100.0).contains(&percentile) {
                    return Err(calibration(format!(
                        "percentile {percentile} is not in [0, 100]"
                    )));
                }
                Some(Histogram::new(num_bins, symmetric)?)
            }
            CalibrationMethod::Entropy {
                num_bins,
                num_quantized_bins,
            } => {
                if num_quantized_bins < 2 {
                    return Err(calibration(format!(
                        "entropy calibration needs at least 2 quantized bins, given {num_quantized_bins}"
                    )));
                }
                Some(Histogram::new(num_bins, false)?)
            }
        })
    }
}

fn calibration(reason: String) -> CompileError {
    CompileError::Calibration { reason }
}

/// The bins of `np.linspace(first, last, n + 1, dtype=float32)`.
fn linspace_f32(first: f32, last: f32, bins: usize) -> Vec<f32> {
    let delta = last - first;
    let step = delta / bins as f32;
    let mut edges: Vec<f32> = (0..=bins)
        .map(|i| {
            let y = if step == 0.0 {
                i as f32 / bins as f32 * delta
            } else {
                i as f32 * step
            };
            y + first
        })
        .collect();
    edges[bins] = last;
    edges
}

/// `np.histogram(values, bins, range=(first, last))` for float32 values:
/// the counts and the edges.
fn histogram_uniform(values: &[f32], bins: usize, first: f32, last: f32) -> (Vec<u64>, Vec<f32>) {
    let (first, last) = if first == last {
        (first - 0.5, last + 0.5)
    } else {
        (first, last)
    };
    let edges = linspace_f32(first, last, bins);
    let mut counts = vec![0u64; bins];
    let denom = last - first;
    for &x in values {
        if !(x >= first && x <= last) {
            continue;
        }
        // numpy's estimate, then its one-bin corrections against the edges.
        let mut i = (((x - first) / denom) * bins as f32) as usize;
        i = i.min(bins - 1);
        if x < edges[i] {
            i -= 1;
        } else if i != bins - 1 && x >= edges[i + 1] {
            i += 1;
        }
        counts[i] += 1;
    }
    (counts, edges)
}

/// `np.histogram(values, bins=edges)` for explicit (sorted) edges: bin `i`
/// holds `edges[i] <= x < edges[i + 1]`, the last bin also its right edge.
fn histogram_edges(values: &[f32], edges: &[f32]) -> Vec<u64> {
    let bins = edges.len() - 1;
    let mut counts = vec![0u64; bins];
    for &x in values {
        if !(x >= edges[0] && x <= edges[bins]) {
            continue;
        }
        let i = edges
            .partition_point(|&e| e <= x)
            .saturating_sub(1)
            .min(bins - 1);
        counts[i] += 1;
    }
    counts
}

/// One value's (or one channel's) histogram, as ORT's `HistogramCollector`
/// keeps it.
#[derive(Clone, Debug, PartialEq)]
pub struct Histogram {
    /// Count per bin.
    pub counts: Vec<u64>,
    /// `counts.len() + 1` float32 bin edges.
    pub edges: Vec<f32>,
    /// Smallest value seen (signed, also for an absolute histogram).
    pub min: f32,
    /// Largest value seen.
    pub max: f32,
    /// Half-width of the symmetric range of a signed histogram.
    threshold: f32,
    /// Histogram of `|x|` (symmetric percentile) instead of `x`.
    absolute: bool,
    bins: usize,
}

/// More bins than this is a hostile configuration, not a histogram.
const MAX_BINS: usize = 1 << 24;

impl Histogram {
    /// An empty histogram of `bins` bins over `x` (or `|x|` when `absolute`).
    pub fn new(bins: usize, absolute: bool) -> Result<Self, CompileError> {
        if bins == 0 || bins > MAX_BINS {
            return Err(calibration(format!(
                "a histogram needs 1 to {MAX_BINS} bins, given {bins}"
            )));
        }
        Ok(Histogram {
            counts: Vec::new(),
            edges: Vec::new(),
            min: 0.0,
            max: 0.0,
            threshold: 0.0,
            absolute,
            bins,
        })
    }

    /// Adds one batch of values (ORT's `collect` for one tensor).
    pub fn collect(&mut self, values: &[f32]) -> Result<(), CompileError> {
        let values: Vec<f32> = values.iter().copied().filter(|v| !v.is_nan()).collect();
        let (lo, hi) = if values.is_empty() {
            (0.0, 0.0)
        } else {
            values
                .iter()
                .fold((f32::INFINITY, f32::NEG_INFINITY), |(a, b), &v| {
                    (a.min(v), b.max(v))
                })
        };
        if values.iter().any(|v| v.is_infinite()) {
            return Err(calibration("a calibration value is infinite".into()));
        }
        let first = self.counts.is_empty();
        if self.absolute {
            let abs: Vec<f32> = values.iter().map(|v| v.abs()).collect();
            self.collect_absolute(&abs, first)?;
        } else {
            self.collect_signed(&values, lo.abs().max(hi.abs()), first)?;
        }
        if first {
            (self.min, self.max) = (lo, hi);
        } else {
            (self.min, self.max) = (self.min.min(lo), self.max.max(hi));
        }
        Ok(())
    }

    /// `collect_absolute_value`: the first batch sets the bins; a later one
    /// with a larger maximum appends bins of the same width.
    fn collect_absolute(&mut self, abs: &[f32], first: bool) -> Result<(), CompileError> {
        if first {
            let (lo, hi) = abs
                .iter()
                .fold((f32::INFINITY, f32::NEG_INFINITY), |(a, b), &v| {
                    (a.min(v), b.max(v))
                });
            let (lo, hi) = if abs.is_empty() { (0.0, 1.0) } else { (lo, hi) };
            (self.counts, self.edges) = histogram_uniform(abs, self.bins, lo, hi);
            return Ok(());
        }
        let amax = abs.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        let last = *self.edges.last().expect("edges of a collected histogram");
        if amax > last {
            let width = self.edges[1] - self.edges[0];
            // np.arange(last + width, amax + width, width) in float32.
            let start = last + width;
            let stop = amax + width;
            let n = ((stop - start) / width).ceil();
            if !(n.is_finite() && n >= 0.0 && (n as usize) < MAX_BINS) {
                return Err(calibration(format!(
                    "widening the histogram to {amax} would need {n} more bins"
                )));
            }
            let n = n as usize;
            let second = start + width;
            let delta = second - start;
            self.edges.extend((0..n).map(|i| match i {
                0 => start,
                1 => second,
                _ => start + i as f32 * delta,
            }));
        }
        let counts = histogram_edges(abs, &self.edges);
        let old = std::mem::replace(&mut self.counts, counts);
        for (c, o) in self.counts.iter_mut().zip(old) {
            *c += o;
        }
        Ok(())
    }

    /// `collect_value` / `merge_histogram`: a histogram over
    /// `[-threshold, threshold]`, widened by whole bins when a batch exceeds it.
    fn collect_signed(
        &mut self,
        v: &[f32],
        threshold: f32,
        first: bool,
    ) -> Result<(), CompileError> {
        if first {
            (self.counts, self.edges) = histogram_uniform(v, self.bins, -threshold, threshold);
            self.threshold = threshold;
            return Ok(());
        }
        let old_t = self.threshold;
        let n_old = self.counts.len();
        if threshold <= old_t {
            let (counts, _) = histogram_uniform(v, n_old, -old_t, old_t);
            self.counts
                .iter_mut()
                .zip(counts)
                .for_each(|(c, n)| *c += n);
            return Ok(());
        }
        if old_t == 0.0 {
            let (counts, edges) = histogram_uniform(v, n_old, -threshold, threshold);
            self.counts
                .iter_mut()
                .zip(counts)
                .for_each(|(c, n)| *c += n);
            self.edges = edges;
            self.threshold = threshold;
            return Ok(());
        }
        let stride = 2.0 * old_t / n_old as f32;
        let half = ((threshold - old_t) / stride).floor() + 1.0;
        if !(half.is_finite() && (half as usize) < MAX_BINS) {
            return Err(calibration(format!(
                "widening the histogram to {threshold} would need {half} more bins per side"
            )));
        }
        let half = half as usize;
        let bins = n_old + 2 * half;
        let new_t = half as f32 * stride + old_t;
        let (mut counts, edges) = histogram_uniform(v, bins, -new_t, new_t);
        counts[half..half + n_old]
            .iter_mut()
            .zip(&self.counts)
            .for_each(|(c, o)| *c += o);
        (self.counts, self.edges, self.threshold) = (counts, edges, new_t);
        Ok(())
    }

    /// Clamps a threshold pair into the range of the values seen.
    fn clamp(&self, lo: f32, hi: f32) -> (f32, f32) {
        (lo.max(self.min), hi.min(self.max))
    }

    /// ORT's `compute_percentile`: the edges where the cumulative
    /// distribution crosses the cut(s), clamped to the values seen.
    pub fn percentile_range(&self, percentile: f64) -> (f32, f32) {
        let total: u64 = self.counts.iter().sum();
        let mut acc = 0.0f64;
        let cdf: Vec<f64> = self
            .counts
            .iter()
            .map(|&c| {
                acc += c as f64 / total as f64;
                acc
            })
            .collect();
        let edge = |p: f64| self.edges[cdf.partition_point(|&c| c < p)];
        let (lo, hi) = if self.absolute {
            let t = edge(percentile / 100.0);
            (-t, t)
        } else {
            let cut = (100.0 - percentile) / 200.0;
            (edge(cut), edge(1.0 - cut))
        };
        self.clamp(lo, hi)
    }

    /// ORT's `get_entropy_threshold`: over symmetric windows of the
    /// histogram (at least `num_quantized_bins` wide), the one whose
    /// quantized distribution is closest (KL divergence) to the clipped one.
    pub fn entropy_range(&self, num_quantized_bins: usize) -> (f32, f32) {
        let hist = &self.counts;
        let n = hist.len();
        let zero = n / 2;
        let half_q = num_quantized_bins / 2;
        let mut best = (f64::INFINITY, (0.0f32, 0.0f32));
        let mut first = true;
        for i in half_q..=zero {
            let start = zero - i;
            let end = (zero + i + 1).min(n);
            let sliced = &hist[start..end];
            let mut p: Vec<u64> = sliced.to_vec();
            p[0] += hist[..start].iter().sum::<u64>();
            *p.last_mut().expect("a window holds a bin") += hist[end..].iter().sum::<u64>();
            let merged = sliced.len() / num_quantized_bins;
            let mut quantized: Vec<u64> = (0..num_quantized_bins)
                .map(|k| sliced[k * merged..(k + 1) * merged].iter().sum())
                .collect();
            *quantized.last_mut().expect("bins") +=
                sliced[num_quantized_bins * merged..].iter().sum::<u64>();
            let mut q = vec![0u64; p.len()];
            for (k, &total) in quantized.iter().enumerate() {
                let range = k * merged..(k + 1) * merged;
                let norm = p[range.clone()].iter().filter(|&&c| c != 0).count() as u64;
                // ORT stores the ratio into an int64 array: truncated.
                if let Some(each) = total.checked_div(norm) {
                    q[range].fill(each);
                }
            }
            let kl = match (smooth(&p), smooth(&q)) {
                (Some(p), Some(q)) => kl_divergence(&p, &q),
                _ => f64::INFINITY,
            };
            // np.argmin: the first minimum (also when every one is inf).
            if first || kl < best.0 {
                best = (kl, (self.edges[start], self.edges[end]));
                first = false;
            }
        }
        let (lo, hi) = best.1;
        self.clamp(lo, hi)
    }
}

/// `quant_utils.smooth_distribution` (float32, eps 1e-4): zeros become eps,
/// the non-zeros pay for it; `None` when all are zero or it cannot.
fn smooth(p: &[u64]) -> Option<Vec<f32>> {
    const EPS: f64 = 0.0001;
    let zeros = p.iter().filter(|&&c| c == 0).count();
    let nonzeros = p.len() - zeros;
    if nonzeros == 0 {
        return None;
    }
    let eps1 = EPS * zeros as f64 / nonzeros as f64;
    if eps1 >= 1.0 {
        return None;
    }
    let out: Vec<f32> = p
        .iter()
        .map(|&c| {
            // float32, as numpy computes `eps * is_zeros + (-eps1) * is_nonzeros`.
            let shift = if c == 0 { EPS as f32 } else { -(eps1 as f32) };
            c as f32 + shift
        })
        .collect();
    out.iter().all(|&v| v > 0.0).then_some(out)
}

/// `scipy.stats.entropy(p, q)`: both normalised, `sum p log(p / q)`.
fn kl_divergence(p: &[f32], q: &[f32]) -> f64 {
    let (sp, sq): (f64, f64) = (
        p.iter().map(|&v| v as f64).sum(),
        q.iter().map(|&v| v as f64).sum(),
    );
    p.iter()
        .zip(q)
        .map(|(&a, &b)| {
            let (a, b) = (a as f64 / sp, b as f64 / sq);
            if a > 0.0 {
                a * (a / b).ln()
            } else {
                0.0
            }
        })
        .sum()
}

/// The per-channel pieces of `values` (row-major `dims`) along `axis`.
fn split_channels(values: &[f32], dims: &[usize], axis: Option<usize>) -> Vec<Vec<f32>> {
    let Some(a) = axis else {
        return vec![values.to_vec()];
    };
    let channels = dims[a];
    let inner: usize = dims[a + 1..].iter().product();
    let mut out = vec![Vec::with_capacity(values.len() / channels.max(1)); channels];
    for (i, &v) in values.iter().enumerate() {
        out[(i / inner.max(1)) % channels].push(v);
    }
    out
}

/// What calibration has seen of one value.
#[derive(Clone, Debug, PartialEq)]
enum Observed {
    Range(TensorStats),
    Histograms {
        axis: Option<usize>,
        channels: Vec<Histogram>,
    },
}

/// Gathers calibration data per value with a [`CalibrationMethod`] and
/// turns it into the [`CalibrationRecord`] fake-quant reads.
#[derive(Clone, Debug, PartialEq)]
pub struct CalibrationCollector {
    graph: String,
    method: CalibrationMethod,
    values: BTreeMap<usize, Observed>,
    /// Calibration runs observed.
    pub runs: usize,
}

impl CalibrationCollector {
    /// An empty collector for `graph` using `method` for activations.
    pub fn new(graph: &Graph, method: CalibrationMethod) -> Result<Self, CompileError> {
        method.histogram()?;
        Ok(CalibrationCollector {
            graph: graph.name().to_string(),
            method,
            values: BTreeMap::new(),
            runs: 0,
        })
    }

    /// Adds a batch of `node`'s values (row-major `dims`), per channel along
    /// `axis`, with the collector's method.
    pub fn observe(
        &mut self,
        node: NodeId,
        values: &[f32],
        dims: &[usize],
        axis: Option<usize>,
    ) -> Result<(), CompileError> {
        let checked = TensorStats::of(values, dims, axis)?;
        let Some(empty) = self.method.histogram()? else {
            return self.observe_range(node, checked);
        };
        let parts = split_channels(values, dims, axis);
        let entry = self
            .values
            .entry(node.index())
            .or_insert_with(|| Observed::Histograms {
                axis,
                channels: vec![empty; parts.len()],
            });
        match entry {
            Observed::Histograms {
                axis: a,
                channels,
            } if *a == axis && channels.len() == parts.len() => {
                for (h, part) in channels.iter_mut().zip(&parts) {
                    h.collect(part)?;
                }
                Ok(())
            }
            _ => Err(calibration(format!(
                "{node}: a batch of {} channels along axis {axis:?} does not match the earlier ones",
                parts.len()
            ))),
        }
    }

    /// Widens `node`'s min / max by a batch (weights always use min / max,
    /// as ORT does).
    pub fn observe_min_max(
        &mut self,
        node: NodeId,
        values: &[f32],
        dims: &[usize],
        axis: Option<usize>,
    ) -> Result<(), CompileError> {
        self.observe_range(node, TensorStats::of(values, dims, axis)?)
    }

    fn observe_range(&mut self, node: NodeId, s: TensorStats) -> Result<(), CompileError> {
        match self.values.get_mut(&node.index()) {
            None => {
                self.values.insert(node.index(), Observed::Range(s));
                Ok(())
            }
            Some(Observed::Range(old)) => old.merge(&s),
            Some(Observed::Histograms { .. }) => Err(calibration(format!(
                "{node} was observed with histograms and with min / max"
            ))),
        }
    }

    /// The ranges chosen for every observed value.
    pub fn finish(&self) -> CalibrationRecord {
        let mut record = CalibrationRecord {
            graph: self.graph.clone(),
            runs: self.runs,
            ..Default::default()
        };
        for (&node, observed) in &self.values {
            let stats = match observed {
                Observed::Range(s) => s.clone(),
                Observed::Histograms { axis, channels } => {
                    let (min, max) = channels.iter().map(|h| self.range_of(h)).unzip();
                    TensorStats {
                        axis: *axis,
                        min,
                        max,
                    }
                }
            };
            record.stats.insert(node, stats);
        }
        record
    }

    fn range_of(&self, h: &Histogram) -> (f32, f32) {
        match self.method {
            CalibrationMethod::MinMax => (h.min, h.max),
            CalibrationMethod::Percentile { percentile, .. } => h.percentile_range(percentile),
            CalibrationMethod::Entropy {
                num_quantized_bins, ..
            } => h.entropy_range(num_quantized_bins),
        }
    }
}
