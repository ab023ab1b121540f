//! The placement planner: a closed-form step-time and memory model over
//! every `data × tensor × pipeline` factorization of the world.

use super::cost::ring_all_reduce_seconds;
use super::layout::{DeviceMesh, MeshAxis};
use super::model::{ClusterSpec, ModelProfile};
use std::ops::Range;

/// Why no placement was returned.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PlanError {
    /// The request itself is unusable (no devices, no layers, a zero rate, ...).
    #[error("invalid placement request: {0}")]
    InvalidInput(String),
    /// No placement fits in memory. Names the device of the closest miss.
    #[error(
        "model does not fit: device {device} needs {needed} bytes but has {available} \
         (best of {candidates} placements: data {} × tensor {} × pipeline {})",
        mesh.size(MeshAxis::Data), mesh.size(MeshAxis::Tensor), mesh.size(MeshAxis::Pipeline)
    )]
    DoesNotFit {
        /// World rank of the device that overflows.
        device: usize,
        /// Bytes that device would need.
        needed: u64,
        /// Bytes it has.
        available: u64,
        /// The placement that came closest to fitting.
        mesh: DeviceMesh,
        /// How many placements were tried.
        candidates: usize,
    },
}

/// Predicted time of one optimizer step, split by cause (seconds).
///
/// Nothing is assumed to overlap, so the total is the sum of the parts.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct StepTime {
    /// Forward + backward compute of the slowest pipeline stage.
    pub compute_s: f64,
    /// Idle time of the pipeline fill and drain:
    /// `(Σ stage + (m-1) · max stage) / m - max stage` for `m` micro-batches.
    pub bubble_s: f64,
    /// Ring all-reduce of the gradients over the data axis (slowest stage).
    pub data_all_reduce_s: f64,
    /// Tensor-parallel all-reduces: one forward and one backward per layer
    /// of its output, per micro-batch (slowest stage).
    pub tensor_comm_s: f64,
    /// Activations and their gradients sent across pipeline boundaries.
    pub pipeline_comm_s: f64,
}

impl StepTime {
    /// The predicted step time: the sum of the parts.
    pub fn total_s(&self) -> f64 {
        self.compute_s
            + self.bubble_s
            + self.data_all_reduce_s
            + self.tensor_comm_s
            + self.pipeline_comm_s
    }
}

/// A placement: the mesh, which layers each pipeline stage holds, the
/// predicted step time and the memory each device needs.
#[derive(Debug, Clone, PartialEq)]
pub struct ParallelPlan {
    /// The `data × tensor × pipeline` layout.
    pub mesh: DeviceMesh,
    /// Layer ranges of the pipeline stages, in stage order.
    pub stages: Vec<Range<usize>>,
    /// Predicted step time.
    pub step: StepTime,
    /// Bytes needed on each device, by world rank (parameters, gradients,
    /// optimizer state and saved activations).
    pub memory_per_device: Vec<u64>,
}

/// Predicts `mesh` for `model` on `cluster`, or says why it cannot run.
///
/// Layers are split into contiguous pipeline stages with the smallest
/// possible largest-stage FLOPs. Each data replica trains
/// `global_batch / data` samples; a stage's compute is its FLOPs ×
/// (1 + backward factor) × that batch / tensor / the slowest rate among
/// its devices.
pub fn evaluate_mesh(
    model: &ModelProfile,
    cluster: &ClusterSpec,
    mesh: DeviceMesh,
) -> Result<ParallelPlan, PlanError> {
    validate(model, cluster)?;
    let (dp, tp, pp) = (
        mesh.size(MeshAxis::Data),
        mesh.size(MeshAxis::Tensor),
        mesh.size(MeshAxis::Pipeline),
    );
    if mesh.world_size() != cluster.devices.len() {
        return Err(PlanError::InvalidInput(format!(
            "mesh covers {} ranks, the cluster has {} devices",
            mesh.world_size(),
            cluster.devices.len()
        )));
    }
    if pp > model.layers.len() {
        return Err(PlanError::InvalidInput(format!(
            "{pp} pipeline stages for {} layers",
            model.layers.len()
        )));
    }
    if dp as u64 > model.global_batch {
        return Err(PlanError::InvalidInput(format!(
            "{dp} data replicas for a global batch of {}",
            model.global_batch
        )));
    }
    let flops: Vec<f64> = model.layers.iter().map(|l| l.forward_flops).collect();
    let stages = balanced_split(&flops, pp);
    let batch = model.global_batch as f64 / dp as f64;
    let m = model.microbatches as f64;
    let link = &cluster.link;

    let ranks_of_stage = |s: usize| -> Vec<usize> {
        (0..mesh.world_size())
            .filter(|&r| mesh.coord(r).map(|c| c.pipeline == s).unwrap_or(false))
            .collect()
    };
    let mut stage_s = Vec::with_capacity(pp);
    let mut tensor_comm: f64 = 0.0;
    let mut data_comm: f64 = 0.0;
    let mut memory = vec![0u64; mesh.world_size()];
    for (s, layers) in stages.iter().enumerate() {
        let ls = &model.layers[layers.clone()];
        let ranks = ranks_of_stage(s);
        let slowest = ranks
            .iter()
            .map(|&r| cluster.devices[r].flops_per_s)
            .fold(f64::INFINITY, f64::min);
        let fwd: f64 = ls.iter().map(|l| l.forward_flops).sum();
        stage_s.push(fwd * (1.0 + model.backward_flops_factor) * batch / tp as f64 / slowest);

        let tensor: f64 = ls
            .iter()
            .map(|l| 2.0 * m * ring_all_reduce_seconds(l.output_bytes as f64 * batch / m, tp, link))
            .sum();
        tensor_comm = tensor_comm.max(tensor);

        let params: u64 = ls
            .iter()
            .fold(0u64, |a, l| a.saturating_add(l.params))
            .div_ceil(tp as u64);
        let grad_bytes = params as f64 * model.bytes_per_grad as f64;
        data_comm = data_comm.max(ring_all_reduce_seconds(grad_bytes, dp, link));

        let activations = ls.iter().map(|l| l.activation_bytes as f64).sum::<f64>();
        let act_bytes = (activations * batch / tp as f64).ceil() as u64;
        // Saturating: an absurd profile must become DoesNotFit, not an overflow.
        let bytes = params
            .saturating_mul(model.bytes_per_owned_param())
            .saturating_add(act_bytes);
        for r in ranks {
            memory[r] = bytes;
        }
    }
    let slowest_stage = stage_s.iter().copied().fold(0.0, f64::max);
    let pipelined = (stage_s.iter().sum::<f64>() + (m - 1.0) * slowest_stage) / m;
    let pipeline_comm: f64 = stages[..pp - 1]
        .iter()
        .map(|r| {
            let out = model.layers[r.end - 1].output_bytes as f64 * batch;
            // Activations forward and their gradients back, one message per micro-batch.
            2.0 * m * link.send_seconds(out / m)
        })
        .sum();
    let plan = ParallelPlan {
        mesh,
        stages,
        step: StepTime {
            compute_s: slowest_stage,
            bubble_s: (pipelined - slowest_stage).max(0.0),
            data_all_reduce_s: data_comm,
            tensor_comm_s: tensor_comm,
            pipeline_comm_s: pipeline_comm,
        },
        memory_per_device: memory,
    };
    if let Some((device, needed, available)) = worst_overflow(&plan, cluster) {
        return Err(PlanError::DoesNotFit {
            device,
            needed,
            available,
            mesh,
            candidates: 1,
        });
    }
    Ok(plan)
}

/// The fastest placement of `model` on `cluster` that fits in every
/// device's memory, over every `data × tensor × pipeline` = world with at
/// most one stage per layer and at most one replica per sample. Ties go to
/// fewer pipeline stages, then fewer tensor ranks.
///
/// When none fits, [`PlanError::DoesNotFit`] names the device of the
/// placement that missed by the fewest bytes.
pub fn plan_placement(
    model: &ModelProfile,
    cluster: &ClusterSpec,
) -> Result<ParallelPlan, PlanError> {
    validate(model, cluster)?;
    let world = cluster.devices.len();
    let mut best: Option<ParallelPlan> = None;
    let mut closest: Option<(u64, PlanError)> = None;
    let mut tried = 0usize;
    for pp in divisors(world) {
        for tp in divisors(world / pp) {
            let dp = world / pp / tp;
            if pp > model.layers.len() || dp as u64 > model.global_batch {
                continue;
            }
            let mesh = DeviceMesh::new(dp, tp, pp).expect("divisors are >= 1");
            tried += 1;
            match evaluate_mesh(model, cluster, mesh) {
                Ok(plan) => {
                    if best
                        .as_ref()
                        .is_none_or(|b| plan.step.total_s() < b.step.total_s())
                    {
                        best = Some(plan);
                    }
                }
                Err(
                    e @ PlanError::DoesNotFit {
                        needed, available, ..
                    },
                ) => {
                    let miss = needed.saturating_sub(available);
                    if closest.as_ref().is_none_or(|(m, _)| miss < *m) {
                        closest = Some((miss, e));
                    }
                }
                Err(e) => return Err(e),
            }
        }
    }
    if let Some(plan) = best {
        return Ok(plan);
    }
    match closest {
        Some((_, PlanError::DoesNotFit { device, needed, available, mesh, .. })) => {
            Err(PlanError::DoesNotFit {
                device,
                needed,
                available,
                mesh,
                candidates: tried,
            })
        }
        _ => Err(PlanError::InvalidInput(format!(
            "no data × tensor × pipeline split of {world} devices suits {} layers and a batch of {}",
            model.layers.len(),
            model.global_batch
        ))),
    }
}

fn validate(model: &ModelProfile, cluster: &ClusterSpec) -> Result<(), PlanError> {
    let bad = |why: String| Err(PlanError::InvalidInput(why));
    if model.layers.is_empty() {
        return bad("the model has no layers".into());
    }
    if model.global_batch == 0 || model.microbatches == 0 {
        return bad(format!(
            "global batch {} and micro-batches {} must be >= 1",
            model.global_batch, model.microbatches
        ));
    }
    if !non_negative(model.backward_flops_factor) {
        return bad(format!(
            "backward FLOPs factor {}",
            model.backward_flops_factor
        ));
    }
    if let Some((i, l)) = model
        .layers
        .iter()
        .enumerate()
        .find(|(_, l)| !non_negative(l.forward_flops))
    {
        return bad(format!("layer {i} has forward FLOPs {}", l.forward_flops));
    }
    if cluster.devices.is_empty() {
        return bad("the cluster has no devices".into());
    }
    if let Some((i, d)) = cluster
        .devices
        .iter()
        .enumerate()
        .find(|(_, d)| !positive(d.flops_per_s))
    {
        return bad(format!("device {i} computes at {} FLOP/s", d.flops_per_s));
    }
    let link = &cluster.link;
    if !positive(link.bandwidth_bytes_per_s) || !non_negative(link.latency_s) {
        return bad(format!(
            "link bandwidth {} B/s and latency {} s",
            link.bandwidth_bytes_per_s, link.latency_s
        ));
    }
    Ok(())
}

/// Finite and > 0 (false for NaN).
fn positive(x: f64) -> bool {
    x.is_finite() && x > 0.0
}

/// Finite and >= 0 (false for NaN).
fn non_negative(x: f64) -> bool {
    x.is_finite() && x >= 0.0
}

/// The device whose need exceeds its memory by the most bytes.
fn worst_overflow(plan: &ParallelPlan, cluster: &ClusterSpec) -> Option<(usize, u64, u64)> {
    plan.memory_per_device
        .iter()
        .zip(&cluster.devices)
        .enumerate()
        .filter(|(_, (need, dev))| **need > dev.memory_bytes)
        .max_by_key(|(_, (need, dev))| **need - dev.memory_bytes)
        .map(|(r, (need, dev))| (r, *need, dev.memory_bytes))
}

fn divisors(n: usize) -> impl Iterator<Item = usize> {
    (1..=n).filter(move |d| n.is_multiple_of(*d))
}

/// Splits `cost` into `parts` contiguous non-empty runs minimizing the
/// largest run's sum (the linear-partition dynamic program; the first
/// optimum found in split order wins, so the result is deterministic).
fn balanced_split(cost: &[f64], parts: usize) -> Vec<Range<usize>> {
    let n = cost.len();
    let mut prefix = vec![0.0; n + 1];
    for (i, c) in cost.iter().enumerate() {
        prefix[i + 1] = prefix[i] + c;
    }
    // best[k][i]: smallest max-run over the first i items in k runs; cut[k][i]: where the last run starts.
    let mut best = vec![vec![f64::INFINITY; n + 1]; parts + 1];
    let mut cut = vec![vec![0usize; n + 1]; parts + 1];
    best[0][0] = 0.0;
    for k in 1..=parts {
        for i in k..=n {
            for j in (k - 1)..i {
                let v = best[k - 1][j].max(prefix[i] - prefix[j]);
                if v < best[k][i] {
                    best[k][i] = v;
                    cut[k][i] = j;
                }
            }
        }
    }
    let mut runs = Vec::with_capacity(parts);
    let mut end = n;
    for k in (1..=parts).rev() {
        let start = cut[k][end];
        runs.push(start..end);
        end = start;
    }
    runs.reverse();
    runs
}

#[cfg(test)]
mod tests {
    use super::balanced_split;

    #[test]
    fn split_balances_and_covers() {
        assert_eq!(balanced_split(&[1.0, 1.0, 1.0, 1.0], 2), vec![0..2, 2..4]);
        assert_eq!(balanced_split(&[3.0, 1.0, 1.0, 1.0], 2), vec![0..1, 1..4]);
        assert_eq!(balanced_split(&[5.0], 1), vec![0..1]);
        assert_eq!(balanced_split(&[1.0, 2.0, 3.0], 3), vec![0..1, 1..2, 2..3]);
    }
}
