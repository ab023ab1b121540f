//! The serving loops of a node: [`serve_worker`] (pipeline stages) and
//! [`serve_trainer`] (data-parallel training), with their reports.

use super::control::NodeControl;
use crate::dist::error::{DistError, DistResult};
use crate::dist::stage::{StageSpec, WorkerStage};
use crate::dist::train::{run_train, GradReduce, TrainMetrics};
use crate::dist::train_spec::{recv_train, ship_train, TrainSpec};
use crate::dist::weights::Resolver;
use crate::dist::wire::{expect_kinds, send_frame, Kind, CH_CONTROL};
use rlx_collectives::{all_reduce, ProcessGroup, ReduceKind, ReduceMode};
use std::sync::Arc;

/// What a serving node did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodeReport {
    /// Stages received and served.
    pub stages: usize,
    /// Activations (or fixed-function calls) run.
    pub activations: usize,
    /// Whether it ended because of a stop request.
    pub stopped: bool,
}

/// What a trainer node did.
#[derive(Debug, Clone, PartialEq)]
pub struct TrainReport {
    /// This rank's metrics (losses and params are the same on every rank).
    pub metrics: TrainMetrics,
    /// Global samples per second, averaged over the ranks ([`mean_reduce`]).
    pub mean_samples_per_sec: f64,
    /// Number of ranks that trained.
    pub world: usize,
}

/// The element-wise mean of `values` over every rank of `pg`, with the
/// deterministic reduction (the same bits on every rank).
pub fn mean_reduce(pg: &dyn ProcessGroup, values: &[f64]) -> DistResult<Vec<f64>> {
    Ok(all_reduce(
        pg,
        values,
        ReduceKind::Mean,
        ReduceMode::Deterministic,
    )?)
}

/// Tells the node at `dst` (in [`serve_worker`]) that no more stages come.
pub fn stop_node(pg: &dyn ProcessGroup, dst: usize) -> DistResult<()> {
    send_frame(pg, dst, CH_CONTROL, Kind::Stop, &[])
}

/// Serves stages from `coordinator` until it sends [`stop_node`] or a stop
/// is requested through `control`.
pub fn serve_worker(
    group: &Arc<dyn ProcessGroup>,
    coordinator: usize,
    control: &NodeControl,
    resolve: &Resolver,
) -> DistResult<NodeReport> {
    serve_worker_n(group, coordinator, usize::MAX, control, resolve)
}

/// [`serve_worker`] for at most `n` stages.
pub fn serve_worker_n(
    group: &Arc<dyn ProcessGroup>,
    coordinator: usize,
    n: usize,
    control: &NodeControl,
    resolve: &Resolver,
) -> DistResult<NodeReport> {
    control.attach(group.clone());
    let mut report = NodeReport::default();
    let result = (|| {
        while report.stages < n && !control.is_stopped() {
            let (kind, body) = expect_kinds(
                &**group,
                coordinator,
                CH_CONTROL,
                &[Kind::Stage, Kind::Stop],
            )?;
            if kind == Kind::Stop {
                return Ok(());
            }
            let mut stage = WorkerStage::build(StageSpec::decode(coordinator, &body)?, resolve)?;
            report.stages += 1;
            report.activations += stage.serve(&**group)?;
        }
        Ok(())
    })();
    match result {
        Err(_) if control.is_stopped() => {}
        Err(e) => return Err(e),
        Ok(()) => {}
    }
    report.stopped = control.is_stopped();
    Ok(report)
}

fn train_report(
    group: &Arc<dyn ProcessGroup>,
    spec: &TrainSpec,
    control: &NodeControl,
    resolve: &Resolver,
) -> DistResult<TrainReport> {
    let run =
        run_train(group, group.rank(), spec, resolve, GradReduce::InGraph).and_then(|metrics| {
            let mean = mean_reduce(&**group, &[metrics.samples_per_sec])?[0];
            Ok(TrainReport {
                metrics,
                mean_samples_per_sec: mean,
                world: group.world_size(),
            })
        });
    match run {
        Err(_) if control.is_stopped() => Err(DistError::Stopped),
        r => r,
    }
}

/// Receives a training spec from `coordinator` and trains this rank's share.
pub fn serve_trainer(
    group: &Arc<dyn ProcessGroup>,
    coordinator: usize,
    control: &NodeControl,
    resolve: &Resolver,
) -> DistResult<TrainReport> {
    control.attach(group.clone());
    let spec = match recv_train(&**group, coordinator) {
        Err(_) if control.is_stopped() => return Err(DistError::Stopped),
        r => r?,
    };
    train_report(group, &spec, control, resolve)
}

/// On the coordinator: ships `spec` to every other rank (each in
/// [`serve_trainer`]) and trains its own share.
pub fn serve_trainer_here(
    group: &Arc<dyn ProcessGroup>,
    spec: &TrainSpec,
    control: &NodeControl,
    resolve: &Resolver,
) -> DistResult<TrainReport> {
    control.attach(group.clone());
    for r in (0..group.world_size()).filter(|&r| r != group.rank()) {
        ship_train(&**group, r, spec)?;
    }
    train_report(group, spec, control, resolve)
}
