//! Post-training quantisation: a [`CalibrationRecord`] of value ranges seen
//! while running a graph over sample inputs, and [`insert_fake_quant`], which
//! puts int8 quantize-dequantize (fake-quant) steps on the activation and
//! weight inputs of every matmul and convolution.
//!
//! Fake-quant of `x` with scale `s` and zero point `z` (per tensor, or per
//! channel along one axis) is `(clamp(round(x / s) + z, lo, hi) - z) * s`,
//! built from primitives so every backend runs it. Symmetric: `s = amax /
//! 127`, `z = 0`, `[lo, hi] = [-127, 127]`; asymmetric: the range widened to
//! hold 0, `s = (max - min) / 255`, `z = round(-128 - min / s)`, `[-128, 127]`.

use crate::CompileError;
use rlx_ir::op::{BinaryOp, UnaryOp};
use rlx_ir::{DType, Graph, HostTensor, NodeId, Op};
use std::collections::{BTreeMap, HashMap};

/// How a tensor's range maps onto int8.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum QuantMode {
    /// Zero point 0, range `[-127, 127]`.
    #[default]
    Symmetric,
    /// A zero point, range `[-128, 127]`.
    Asymmetric,
}

/// What [`insert_fake_quant`] does. Activations are quantized per tensor,
/// or per channel when the record holds per-channel activation stats
/// ([`crate::CalibrationOptions::activation_axis`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct QuantConfig {
    /// Mapping of activations (always per tensor).
    pub activations: QuantMode,
    /// Mapping of weights.
    pub weights: QuantMode,
    /// One scale per output channel of each weight (else one per tensor).
    pub weights_per_channel: bool,
}

/// Observed range of one value: one `(min, max)` per channel, or one in all.
#[derive(Clone, Debug, PartialEq)]
pub struct TensorStats {
    /// The channel axis, or `None` for per-tensor stats.
    pub axis: Option<usize>,
    /// Minimum per channel.
    pub min: Vec<f32>,
    /// Maximum per channel.
    pub max: Vec<f32>,
}

impl TensorStats {
    /// The stats of `values` (row-major `dims`), per channel along `axis`.
    pub fn of(values: &[f32], dims: &[usize], axis: Option<usize>) -> Result<Self, CompileError> {
        let numel: usize = dims.iter().product();
        if values.len() != numel || axis.is_some_and(|a| a >= dims.len()) {
            return Err(calibration(format!(
                "{} values for dims {dims:?} with channel axis {axis:?}",
                values.len()
            )));
        }
        let (channels, inner) = match axis {
            Some(a) => (dims[a], dims[a + 1..].iter().product::<usize>()),
            None => (1, numel.max(1)),
        };
        let mut min = vec![f32::INFINITY; channels];
        let mut max = vec![f32::NEG_INFINITY; channels];
        for (i, &v) in values.iter().enumerate() {
            let c = (i / inner) % channels;
            min[c] = min[c].min(v);
            max[c] = max[c].max(v);
        }
        Ok(TensorStats { axis, min, max })
    }

    /// Widens these stats by `other`'s (same axis and channel count).
    pub fn merge(&mut self, other: &TensorStats) -> Result<(), CompileError> {
        if self.axis != other.axis || self.min.len() != other.min.len() {
            return Err(calibration(format!(
                "cannot merge stats of axis {:?} x{} with axis {:?} x{}",
                self.axis,
                self.min.len(),
                other.axis,
                other.min.len()
            )));
        }
        for c in 0..self.min.len() {
            self.min[c] = self.min[c].min(other.min[c]);
            self.max[c] = self.max[c].max(other.max[c]);
        }
        Ok(())
    }

    /// Scale and zero point per channel for `mode`.
    pub fn quant_params(&self, mode: QuantMode) -> (Vec<f32>, Vec<f32>) {
        self.min
            .iter()
            .zip(&self.max)
            .map(|(&lo, &hi)| quant_params(lo, hi, mode))
            .unzip()
    }
}

/// Scale and zero point of the range `[lo, hi]` (see the module docs).
pub fn quant_params(lo: f32, hi: f32, mode: QuantMode) -> (f32, f32) {
    let nonzero = |s: f32| if s > 0.0 && s.is_finite() { s } else { 1.0 };
    match mode {
        QuantMode::Symmetric => (nonzero(lo.abs().max(hi.abs()) / 127.0), 0.0),
        QuantMode::Asymmetric => {
            let (lo, hi) = (lo.min(0.0), hi.max(0.0));
            let s = nonzero((hi - lo) / 255.0);
            (s, (-128.0 - lo / s).round_ties_even().clamp(-128.0, 127.0))
        }
    }
}

fn q_range(mode: QuantMode) -> (f32, f32) {
    match mode {
        QuantMode::Symmetric => (-127.0, 127.0),
        QuantMode::Asymmetric => (-128.0, 127.0),
    }
}

fn calibration(reason: String) -> CompileError {
    CompileError::Calibration { reason }
}

/// Value ranges of one graph, keyed by node (of the graph they were
/// collected on), gathered over calibration runs.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CalibrationRecord {
    /// The graph's name.
    pub graph: String,
    /// Stats per node index.
    pub stats: BTreeMap<usize, TensorStats>,
    /// Calibration runs observed.
    pub runs: usize,
}

impl CalibrationRecord {
    /// An empty record for `graph`.
    pub fn new(graph: &Graph) -> Self {
        CalibrationRecord {
            graph: graph.name().to_string(),
            ..Default::default()
        }
    }

    /// Widens the stats of `node` by `values` (row-major `dims`).
    pub fn observe(
        &mut self,
        node: NodeId,
        values: &[f32],
        dims: &[usize],
        axis: Option<usize>,
    ) -> Result<(), CompileError> {
        let s = TensorStats::of(values, dims, axis)?;
        match self.stats.get_mut(&node.index()) {
            Some(old) => old.merge(&s),
            None => {
                self.stats.insert(node.index(), s);
                Ok(())
            }
        }
    }

    /// The stats of `node`.
    pub fn get(&self, node: NodeId) -> Option<&TensorStats> {
        self.stats.get(&node.index())
    }
}

/// What a quantized input of a matmul / conv is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum QuantRole {
    /// The data input (per tensor).
    Activation,
    /// The weight, with its output-channel axis.
    Weight {
        /// Output-channel axis.
        axis: usize,
    },
}

/// Every value [`insert_fake_quant`] quantizes: `(value, role)`, each once,
/// in node order. Weights are the second input of matmul (channel axis: the
/// last) and conv (axis 0); data inputs are the first.
pub fn quant_targets(g: &Graph) -> Vec<(NodeId, QuantRole)> {
    let mut seen = HashMap::new();
    let mut out = Vec::new();
    for n in g.nodes() {
        let weight_axis = match n.op {
            Op::MatMul => g.shape(n.inputs[1]).rank().saturating_sub(1),
            Op::Conv { .. } => 0,
            _ => continue,
        };
        for (v, role) in [
            (n.inputs[0], QuantRole::Activation),
            (n.inputs[1], QuantRole::Weight { axis: weight_axis }),
        ] {
            if g.shape(v).dtype() == DType::F32 && seen.insert(v, role).is_none() {
                out.push((v, role));
            }
        }
    }
    out
}

/// Inserts fake-quant on every [`quant_targets`] value, with scales from
/// `record` (collected on this same graph).
pub fn insert_fake_quant(
    g: &Graph,
    record: &CalibrationRecord,
    cfg: &QuantConfig,
) -> Result<Graph, CompileError> {
    let wrap = super::pass_error("fake_quant");
    let targets: HashMap<NodeId, QuantRole> = quant_targets(g).into_iter().collect();
    let mut out = Graph::new(g.name());
    let mut map: Vec<NodeId> = Vec::with_capacity(g.len());
    // Consumers read the fake-quantized copy; the graph's own outputs too.
    let mut quantized: Vec<NodeId> = Vec::with_capacity(g.len());
    for (id, n) in g.ids().zip(g.nodes()) {
        let new = super::copy_node(&mut out, n, &quantized).map_err(&wrap)?;
        map.push(new);
        let q = match targets.get(&id) {
            None => new,
            Some(&role) => {
                let stats = record.get(id).ok_or_else(|| {
                    calibration(format!(
                        "no calibration stats for {} (record of \"{}\", {} runs)",
                        rlx_ir::node_label(g, id),
                        record.graph,
                        record.runs
                    ))
                })?;
                let (mode, axis) = match role {
                    // Per channel when calibration collected it so.
                    QuantRole::Activation => (cfg.activations, stats.axis),
                    QuantRole::Weight { axis } => {
                        (cfg.weights, cfg.weights_per_channel.then_some(axis))
                    }
                };
                let stats = per_axis(stats, axis)?;
                fake_quant(&mut out, new, &stats, mode).map_err(&wrap)?
            }
        };
        quantized.push(q);
    }
    out.set_outputs(g.outputs().iter().map(|o| map[o.index()]).collect());
    Ok(out)
}

/// `stats` reduced to per-tensor when `axis` is `None`.
fn per_axis(stats: &TensorStats, axis: Option<usize>) -> Result<TensorStats, CompileError> {
    match (axis, stats.axis) {
        (a, b) if a == b => Ok(stats.clone()),
        (None, Some(_)) => Ok(TensorStats {
            axis: None,
            min: vec![stats.min.iter().cloned().fold(f32::INFINITY, f32::min)],
            max: vec![stats.max.iter().cloned().fold(f32::NEG_INFINITY, f32::max)],
        }),
        (a, b) => Err(calibration(format!(
            "per-channel axis {a:?} asked, but the record holds axis {b:?}"
        ))),
    }
}

/// Appends `(clamp(round(x / s) + z, lo, hi) - z) * s` for `x`.
fn fake_quant(
    g: &mut Graph,
    x: NodeId,
    stats: &TensorStats,
    mode: QuantMode,
) -> Result<NodeId, rlx_ir::IrError> {
    let (scale, zero) = stats.quant_params(mode);
    let rank = g.shape(x).rank();
    let dims: Vec<usize> = match stats.axis {
        Some(a) => (0..rank)
            .map(|i| if i == a { scale.len() } else { 1 })
            .collect(),
        None => Vec::new(),
    };
    let mut constant = |v: &[f32]| -> Result<NodeId, rlx_ir::IrError> {
        Ok(g.constant_tensor(&HostTensor::from_slice(v, &dims)?))
    };
    let (s, z) = (constant(&scale)?, constant(&zero)?);
    let (lo, hi) = q_range(mode);
    let (lo, hi) = (
        g.constant_tensor(&HostTensor::scalar(lo)),
        g.constant_tensor(&HostTensor::scalar(hi)),
    );
    let bin = |g: &mut Graph, op, a, b| g.try_node(Op::Binary(op), &[a, b], None);
    let t = bin(g, BinaryOp::Div, x, s)?;
    let t = g.try_node(Op::Unary(UnaryOp::Round), &[t], None)?;
    let t = bin(g, BinaryOp::Add, t, z)?;
    let t = bin(g, BinaryOp::Max, t, lo)?;
    let t = bin(g, BinaryOp::Min, t, hi)?;
    let t = bin(g, BinaryOp::Sub, t, z)?;
    bin(g, BinaryOp::Mul, t, s)
}
