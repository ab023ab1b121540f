//! Timing: warm-up, repeated runs, order statistics.

use crate::pattern::{BenchError, BenchmarkPattern};
use rlx_ir::{DType, Graph, GraphExt, HostTensor, NodeId};
use rlx_runtime::{CompiledGraph, Device, Session};
use std::time::{Duration, Instant};

/// How long to time a workload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BenchConfig {
    /// Untimed runs first (first-touch of buffers, caches, thread pool start).
    pub warmup: usize,
    /// Timed runs at least.
    pub min_runs: usize,
    /// Keep timing until at least this much time has passed.
    pub min_time: Duration,
}

impl BenchConfig {
    /// A short run (2 warm-ups, >= 5 runs, >= 0.2 s) for smoke checks.
    pub fn quick() -> BenchConfig {
        BenchConfig {
            warmup: 2,
            min_runs: 5,
            min_time: Duration::from_millis(200),
        }
    }
}

impl Default for BenchConfig {
    /// 3 warm-ups, then >= 20 runs and >= 1 s.
    fn default() -> BenchConfig {
        BenchConfig {
            warmup: 3,
            min_runs: 20,
            min_time: Duration::from_secs(1),
        }
    }
}

/// Timing of one workload.
#[derive(Clone, Debug, PartialEq)]
pub struct BenchResult {
    /// Pattern name.
    pub name: String,
    /// Timed runs.
    pub runs: usize,
    /// Fastest run.
    pub min: Duration,
    /// Median run.
    pub median: Duration,
    /// 99th-percentile run (nearest rank).
    pub p99: Duration,
    /// Floating-point operations of one run.
    pub flops: f64,
}

impl BenchResult {
    /// Order statistics of `samples` (which must not be empty).
    pub fn from_samples(name: &str, flops: f64, mut samples: Vec<Duration>) -> BenchResult {
        assert!(!samples.is_empty(), "no samples");
        samples.sort();
        let n = samples.len();
        let rank = |q: f64| samples[((q * n as f64).ceil() as usize).clamp(1, n) - 1];
        BenchResult {
            name: name.to_string(),
            runs: n,
            min: samples[0],
            median: samples[n / 2],
            p99: rank(0.99),
            flops,
        }
    }

    /// GFLOP/s at the median time (0 when the pattern counts no flops).
    pub fn gflops(&self) -> f64 {
        self.flops / self.median.as_secs_f64() / 1e9
    }
}

/// Runs `f` `cfg.warmup` times untimed, then times it until both
/// `cfg.min_runs` runs and `cfg.min_time` have passed.
pub fn time_iterations<E>(
    cfg: &BenchConfig,
    mut f: impl FnMut() -> Result<(), E>,
) -> Result<Vec<Duration>, E> {
    for _ in 0..cfg.warmup {
        f()?;
    }
    let start = Instant::now();
    let mut samples = Vec::new();
    while samples.len() < cfg.min_runs.max(1) || start.elapsed() < cfg.min_time {
        let t = Instant::now();
        f()?;
        samples.push(t.elapsed());
    }
    Ok(samples)
}

/// A pattern compiled for the CPU with its parameters set, ready to step.
pub struct PreparedPattern {
    name: String,
    compiled: CompiledGraph,
    /// Inputs as tensors, built once: a run then copies bytes, no conversion.
    inputs: Vec<(String, HostTensor)>,
    /// Parameter names in declaration order.
    param_names: Vec<String>,
}

impl PreparedPattern {
    /// Compiles `pattern` and sets its parameters. A training pattern
    /// compiles the whole step: its `grad_with_loss` graph over every
    /// parameter, then `p - lr * grad` for each parameter, bound as that
    /// parameter's next value ([`CompiledGraph::bind_update`]), so a step
    /// updates the parameters in place and returns only the loss.
    pub fn new(pattern: &BenchmarkPattern) -> Result<PreparedPattern, BenchError> {
        let name = pattern.name.clone();
        let param_names: Vec<String> = pattern
            .graph
            .params()
            .iter()
            .map(|p| p.1.to_string())
            .collect();
        let graph = match pattern.sgd {
            Some(lr) => sgd_step_graph(&pattern.graph, lr).map_err(|e| BenchError::Autodiff {
                pattern: name.clone(),
                message: e.to_string(),
            })?,
            None => pattern.graph.clone(),
        };
        let compiled =
            Session::new(Device::Cpu)
                .try_compile(graph)
                .map_err(|e| BenchError::Runtime {
                    pattern: name.clone(),
                    source: Box::new(e),
                })?;
        let inputs = tensors(&name, "input", &pattern.inputs, &pattern.graph.inputs())?;
        let params = tensors(&name, "param", &pattern.params, &pattern.graph.params())?;
        let mut prepared = PreparedPattern {
            name,
            compiled,
            inputs,
            param_names,
        };
        for (n, t) in &params {
            prepared
                .compiled
                .set_param_typed(n, t)
                .map_err(|e| prepared.runtime(e))?;
        }
        if pattern.sgd.is_some() {
            for (i, n) in prepared.param_names.clone().iter().enumerate() {
                prepared
                    .compiled
                    .bind_update(i + 1, n)
                    .map_err(|e| prepared.runtime(e))?;
            }
        }
        Ok(prepared)
    }

    fn runtime(&self, source: rlx_runtime::RuntimeError) -> BenchError {
        BenchError::Runtime {
            pattern: self.name.clone(),
            source: Box::new(source),
        }
    }

    /// One iteration: runs the graph (typed run on prebuilt input tensors).
    /// For a training pattern that is the whole SGD step (forward,
    /// backward, `p -= lr * grad` in place) and the output is the loss at
    /// the parameters before the update.
    pub fn step(&mut self) -> Result<Vec<HostTensor>, BenchError> {
        let inputs: Vec<(&str, &HostTensor)> =
            self.inputs.iter().map(|(n, t)| (n.as_str(), t)).collect();
        let outs = self.compiled.try_run_typed(&inputs);
        outs.map_err(|e| self.runtime(e))
    }

    /// Zero-filled tensors of the step's outputs, for
    /// [`PreparedPattern::step_into`].
    pub fn output_tensors(&self) -> Vec<HostTensor> {
        self.compiled.output_tensors()
    }

    /// [`PreparedPattern::step`] writing its outputs into `outputs`, kept
    /// between steps ([`CompiledGraph::try_run_into`]; the numpy references
    /// write into a kept `out=` array too): what [`run_benchmark`] times.
    pub fn step_into(&mut self, outputs: &mut [HostTensor]) -> Result<(), BenchError> {
        let inputs: Vec<(&str, &HostTensor)> =
            self.inputs.iter().map(|(n, t)| (n.as_str(), t)).collect();
        let done = self.compiled.try_run_into(&inputs, outputs);
        done.map_err(|e| self.runtime(e))
    }

    /// Current parameter values (updated by training steps), in declaration order.
    pub fn params(&self) -> Result<Vec<(String, Vec<f32>)>, BenchError> {
        self.param_names
            .iter()
            .map(|n| {
                let t = self.compiled.param_value(n).map_err(|e| self.runtime(e))?;
                let v = t.to_vec::<f32>().map_err(|e| BenchError::Input {
                    pattern: self.name.clone(),
                    message: format!("param {n:?}: {e}"),
                })?;
                Ok((n.clone(), v))
            })
            .collect()
    }
}

/// The SGD step of a loss graph: outputs the loss, then `p - lr * dloss/dp`
/// for every param in declaration order.
fn sgd_step_graph(loss: &Graph, lr: f32) -> Result<Graph, rlx_autodiff::AutodiffError> {
    let params: Vec<NodeId> = loss.params().iter().map(|p| p.0).collect();
    let mut g = rlx_autodiff::grad_with_loss(loss, &params)?;
    let outs = g.outputs().to_vec();
    let mut next = vec![outs[0]];
    for (&p, &grad) in params.iter().zip(&outs[1..]) {
        let step = g.mul(grad, g.constant(f64::from(lr), DType::F32));
        next.push(g.sub(p, step));
    }
    g.set_outputs(next);
    Ok(g)
}

/// The named f32 `values` as tensors of their leaf's dims (from `leaves`,
/// the graph's inputs or params; 1-d where the leaf is not static).
fn tensors(
    pattern: &str,
    what: &str,
    values: &[(String, Vec<f32>)],
    leaves: &[(rlx_ir::NodeId, &str, &rlx_ir::Shape)],
) -> Result<Vec<(String, HostTensor)>, BenchError> {
    values
        .iter()
        .map(|(n, v)| {
            let dims = leaves
                .iter()
                .find(|l| l.1 == n)
                .and_then(|l| l.2.static_dims())
                .unwrap_or_else(|| vec![v.len()]);
            let t = HostTensor::from_slice(v, &dims).map_err(|e| BenchError::Input {
                pattern: pattern.to_string(),
                message: format!("{what} {n:?}: {e}"),
            })?;
            Ok((n.clone(), t))
        })
        .collect()
}

/// Compiles `pattern` for the CPU, sets its parameters, and times one
/// iteration ([`PreparedPattern::step_into`]: a forward run into kept
/// output tensors; for a training pattern forward + backward and the SGD
/// update of every parameter).
pub fn run_benchmark(
    pattern: &BenchmarkPattern,
    cfg: &BenchConfig,
) -> Result<BenchResult, BenchError> {
    let mut prepared = PreparedPattern::new(pattern)?;
    let mut outputs = prepared.output_tensors();
    let samples = time_iterations(cfg, || prepared.step_into(&mut outputs))?;
    Ok(BenchResult::from_samples(
        &pattern.name,
        pattern.flops,
        samples,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_statistics() {
        let ms = |v: u64| Duration::from_millis(v);
        let r = BenchResult::from_samples("x", 2e9, (1..=100).rev().map(ms).collect());
        assert_eq!(
            (r.min, r.median, r.p99, r.runs),
            (ms(1), ms(51), ms(99), 100)
        );
        assert!((r.gflops() - 2e9 / 0.051 / 1e9).abs() < 1e-9);
        let one = BenchResult::from_samples("y", 0.0, vec![ms(7)]);
        assert_eq!((one.min, one.median, one.p99), (ms(7), ms(7), ms(7)));
    }
}
