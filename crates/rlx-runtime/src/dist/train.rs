//! [`run_train`]: data-parallel training of a [`TrainSpec`] on one rank.
//!
//! Each rank differentiates the loss graph (`rlx-autodiff`), runs it on its
//! micro-batches and sums their gradients in f64 (exact for the few f32
//! terms involved), all-reduces the sums across ranks with a
//! `collectives.all_reduce` op in a graph (or the host collective, see
//! [`GradReduce`]), divides by the number of micro-batches and applies the
//! optimizer (`rlx-optim`) to its copy of the params. With
//! [`ReduceMode::Deterministic`] the reduced sums are the same bits for any
//! rank count, so 1, 2 and 4 ranks follow the same trajectory bit for bit.

use super::error::{DistError, DistResult};
use super::stage::{compile_with_weights, parse_graph};
use super::train_spec::{OptimSpec, TrainSpec};
use super::weights::Resolver;
use crate::{CompileOptions, CompiledGraph, Device, Session};
use rlx_collectives::{
    all_reduce, all_reduce_op_mode, bind_groups, GroupId, GroupRegistry, ProcessGroup, ReduceKind,
    ReduceMode,
};
use rlx_ir::{DType, Graph, HostTensor, Shape};
use rlx_optim::{Adam, AdamConfig, Optimizer, Sgd, SgdConfig};
use std::sync::Arc;
use std::time::Instant;

/// Where the gradient all-reduce runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GradReduce {
    /// In a compiled graph, as a `collectives.all_reduce` op with the spec's mode.
    InGraph,
    /// With the host collective `rlx_collectives::all_reduce` (same mode).
    Host,
}

/// What a training run measured (every rank returns the same losses and params).
#[derive(Debug, Clone, PartialEq)]
pub struct TrainMetrics {
    /// Mean loss of each step's global batch (before that step's update).
    pub losses: Vec<f64>,
    /// Global samples per second over the whole run.
    pub samples_per_sec: f64,
    /// Bytes this rank passed to the gradient all-reduce, over all steps.
    pub bytes_reduced: u64,
    /// The trained params, in spec order.
    pub params: Vec<(String, HostTensor)>,
}

enum Opt {
    Sgd(Sgd),
    Adam(Adam),
}

impl Opt {
    fn new(spec: OptimSpec) -> DistResult<Opt> {
        Ok(match spec {
            OptimSpec::Sgd { lr, momentum } => Opt::Sgd(Sgd::new(SgdConfig {
                lr,
                momentum,
                ..SgdConfig::default()
            })?),
            OptimSpec::Adam { lr } => Opt::Adam(Adam::new(AdamConfig {
                lr,
                ..AdamConfig::default()
            })?),
        })
    }
    fn step(&mut self, name: &str, dims: &[usize], p: &mut [f32], g: &[f32]) -> DistResult<()> {
        match self {
            Opt::Sgd(o) => o.step_f32(name, dims, p, g)?,
            Opt::Adam(o) => o.step_f32(name, dims, p, g)?,
        }
        Ok(())
    }
    fn end_iteration(&mut self) {
        match self {
            Opt::Sgd(o) => o.end_iteration(),
            Opt::Adam(o) => o.end_iteration(),
        }
    }
}

/// Rows `start..start + n` of a `[rows, ...]` tensor.
fn rows(t: &HostTensor, start: usize, n: usize) -> DistResult<HostTensor> {
    let total = t.dims()[0];
    let row = t.bytes().len() / total.max(1);
    let mut dims = t.dims().to_vec();
    dims[0] = n;
    HostTensor::from_bytes(
        t.dtype(),
        &dims,
        t.bytes()[start * row..(start + n) * row].to_vec(),
    )
    .map_err(|e| DistError::graph("slicing a micro-batch", e))
}

/// The graph `y = all_reduce_sum(g)` over an f64 vector of `len`.
fn reduce_graph(len: usize, mode: ReduceMode) -> DistResult<Graph> {
    let mut g = Graph::new("dp_grad_all_reduce");
    let x = g.input("g", Shape::new(&[len], DType::F64));
    let y = all_reduce_op_mode(&mut g, x, GroupId(0), ReduceKind::Sum, mode)
        .map_err(|e| DistError::graph("building the all-reduce graph", e))?;
    g.set_outputs(vec![y]);
    Ok(g)
}

struct Setup {
    grad: CompiledGraph,
    names: Vec<String>,
    dims: Vec<Vec<usize>>,
    values: Vec<Vec<f32>>,
    x: HostTensor,
    y: HostTensor,
}

fn setup(spec: &TrainSpec, world: usize, resolve: &Resolver) -> DistResult<Setup> {
    let m = spec.micro_batches;
    if spec.micro_batch == 0 || m == 0 || !m.is_multiple_of(world) {
        return Err(DistError::InvalidSpec(format!(
            "{m} micro-batches of {} rows do not split over {world} ranks",
            spec.micro_batch
        )));
    }
    let g = parse_graph(&spec.graph_text, &spec.params)?;
    let wrt = spec
        .params
        .iter()
        .map(|(n, _)| g.find_param(n).expect("parse_graph checked the names"))
        .collect::<Vec<_>>();
    let mut dims = Vec::new();
    let mut values = Vec::new();
    for (n, w) in &spec.params {
        let t = resolve(w)?;
        if t.dtype() != DType::F32 {
            return Err(DistError::InvalidSpec(format!(
                "param {n:?} is {}, training needs f32 params",
                t.dtype().short_name()
            )));
        }
        dims.push(t.dims().to_vec());
        values.push(
            t.to_vec::<f32>()
                .map_err(|e| DistError::graph(n.clone(), e))?,
        );
    }
    let dg = rlx_autodiff::grad_with_loss(&g, &wrt)
        .map_err(|e| DistError::graph("differentiating the loss graph", e))?;
    let grad = compile_with_weights(dg, spec.threads, &spec.params, resolve)?;
    let (x, y) = (resolve(&spec.data.x)?, resolve(&spec.data.y)?);
    let n = x.dims().first().copied().unwrap_or(0);
    if y.dims().first() != Some(&n) || n < spec.global_batch() {
        return Err(DistError::InvalidSpec(format!(
            "data of {n} samples (x {:?}, y {:?}) for a global batch of {}",
            x.dims(),
            y.dims(),
            spec.global_batch()
        )));
    }
    Ok(Setup {
        grad,
        names: spec.params.iter().map(|(n, _)| n.clone()).collect(),
        dims,
        values,
        x,
        y,
    })
}

/// Trains `spec` as rank `rank` of `group` (every rank calls this with the
/// same spec); `resolve` loads weights and data, `reduce` picks where the
/// gradient all-reduce runs.
pub fn run_train(
    group: &Arc<dyn ProcessGroup>,
    rank: usize,
    spec: &TrainSpec,
    resolve: &Resolver,
    reduce: GradReduce,
) -> DistResult<TrainMetrics> {
    if rank != group.rank() {
        return Err(DistError::InvalidSpec(format!(
            "run_train as rank {rank} on a group where this process is rank {}",
            group.rank()
        )));
    }
    let world = group.world_size();
    let mut s = setup(spec, world, resolve)?;
    let total: usize = s.values.iter().map(|v| v.len()).sum();
    let mut reducer = match reduce {
        GradReduce::InGraph => Some(
            Session::new(Device::Cpu)
                .try_compile_with(
                    reduce_graph(total + 1, spec.mode)?,
                    &CompileOptions::default(),
                )
                .map_err(|e| DistError::graph("compiling the all-reduce graph", e))?,
        ),
        GradReduce::Host => None,
    };
    let _bound = bind_groups(Arc::new(GroupRegistry::new(group.clone())));
    let mut opt = Opt::new(spec.optimizer)?;
    let (mb, m) = (spec.micro_batch, spec.micro_batches);
    let per_rank = m / world;
    let batches = s.x.dims()[0] / spec.global_batch();
    let mut losses = Vec::with_capacity(spec.steps);
    let mut bytes_reduced = 0u64;
    let started = Instant::now();
    for step in 0..spec.steps {
        let base = (step % batches) * spec.global_batch();
        let mut acc = vec![0.0f64; total + 1];
        for k in rank * per_rank..(rank + 1) * per_rank {
            let (x, y) = (
                rows(&s.x, base + k * mb, mb)?,
                rows(&s.y, base + k * mb, mb)?,
            );
            let out = s
                .grad
                .try_run_typed(&[("x", &x), ("y", &y)])
                .map_err(|e| DistError::graph("running the gradient graph", e))?;
            let mut at = 0;
            for t in &out[1..] {
                for v in t.to_f64_lossy() {
                    acc[at] += v;
                    at += 1;
                }
            }
            acc[total] += out[0].to_f64_lossy()[0];
        }
        let summed = match reducer.as_mut() {
            Some(c) => {
                let t = HostTensor::from_vec(acc, &[total + 1])
                    .map_err(|e| DistError::graph("packing gradients", e))?;
                let out = c
                    .try_run_typed(&[("g", &t)])
                    .map_err(|e| DistError::graph("all-reducing gradients", e))?;
                out[0]
                    .to_vec::<f64>()
                    .map_err(|e| DistError::graph("unpacking gradients", e))?
            }
            None => all_reduce(&**group, &acc, ReduceKind::Sum, spec.mode)?,
        };
        bytes_reduced += (8 * (total + 1)) as u64;
        losses.push(summed[total] / m as f64);
        let mut at = 0;
        for i in 0..s.values.len() {
            let n = s.values[i].len();
            let g: Vec<f32> = summed[at..at + n]
                .iter()
                .map(|v| (v / m as f64) as f32)
                .collect();
            at += n;
            opt.step(&s.names[i], &s.dims[i], &mut s.values[i], &g)?;
            s.grad
                .try_set_param(&s.names[i], &s.values[i])
                .map_err(|e| DistError::graph("updating a param", e))?;
        }
        opt.end_iteration();
    }
    let secs = started.elapsed().as_secs_f64().max(1e-9);
    let params = s
        .names
        .iter()
        .zip(s.dims.iter().zip(&s.values))
        .map(|(n, (d, v))| {
            HostTensor::from_slice(v, d)
                .map(|t| (n.clone(), t))
                .map_err(|e| DistError::graph("packing params", e))
        })
        .collect::<DistResult<Vec<_>>>()?;
    Ok(TrainMetrics {
        losses,
        samples_per_sec: (spec.steps * spec.global_batch()) as f64 / secs,
        bytes_reduced,
        params,
    })
}
