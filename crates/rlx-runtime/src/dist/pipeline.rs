//! A whole graph as a pipeline over ranks, driven from rank 0:
//! [`pipeline_stages`] (split + weights per stage), [`run_pipeline`] (ship,
//! feed, collect, stop) and [`pipeline_divergence`] (the pipeline against
//! the same graph run in this process).

use super::activation::{recv_activation, send_activation, send_stop};
use super::divergence::{compare, RunDivergence};
use super::error::{DistError, DistResult};
use super::split::split_pipeline;
use super::stage::{compile_with_weights, ship_stage, StageSpec};
use super::weights::{Resolver, WeightRef};
use rlx_collectives::ProcessGroup;
use rlx_ir::{Graph, HostTensor, NodeId};

/// `graph` split at `cuts` ([`split_pipeline`]) into stage specs for ranks
/// `1..=stages`: stage `s` runs on rank `s + 1`, reads from rank `s` (rank 0
/// feeds the first) and sends to rank `s + 2` (the last sends back to rank
/// 0). Each stage gets the `weights` of its own params.
pub fn pipeline_stages(
    graph: &Graph,
    weights: &[(String, WeightRef)],
    cuts: &[NodeId],
) -> DistResult<Vec<StageSpec>> {
    let parts = split_pipeline(graph, cuts)?;
    let last = parts.len();
    parts
        .iter()
        .enumerate()
        .map(|(s, g)| {
            let mine = g
                .params()
                .iter()
                .map(|(_, name, _)| {
                    weights
                        .iter()
                        .find(|(n, _)| n == name)
                        .cloned()
                        .ok_or_else(|| {
                            DistError::InvalidSpec(format!("no weight for param {name:?}"))
                        })
                })
                .collect::<DistResult<Vec<_>>>()?;
            let next = if s + 1 == last { 0 } else { s + 2 };
            Ok(StageSpec::new(g, mine, s, next))
        })
        .collect()
}

/// Rank 0's side of a pipeline whose ranks `1..=stages.len()` run
/// [`serve_stage`](super::serve_stage): ships stage `s` to rank `s + 1`,
/// sends `inputs` to the first stage, receives the last stage's outputs,
/// then sends the stop frame round the pipeline and waits for it to come
/// back (so every stage has finished when this returns).
pub fn run_pipeline(
    pg: &dyn ProcessGroup,
    stages: &[StageSpec],
    inputs: &[HostTensor],
) -> DistResult<Vec<HostTensor>> {
    let Some(last) = stages.last() else {
        return Err(DistError::InvalidSpec("a pipeline of no stages".into()));
    };
    if stages.len() >= pg.world_size() {
        return Err(DistError::InvalidSpec(format!(
            "{} stages need {} ranks, the group has {}",
            stages.len(),
            stages.len() + 1,
            pg.world_size()
        )));
    }
    for (s, spec) in stages.iter().enumerate() {
        ship_stage(pg, s + 1, spec)?;
    }
    let tail = stages.len();
    if last.next != 0 {
        return Err(DistError::InvalidSpec(format!(
            "the last stage sends to rank {}, not back to rank 0",
            last.next
        )));
    }
    send_activation(pg, 1, inputs)?;
    let outputs = recv_activation(pg, tail)?.ok_or_else(|| {
        DistError::InvalidSpec("the pipeline stopped before returning outputs".into())
    })?;
    send_stop(pg, 1)?;
    match recv_activation(pg, tail)? {
        None => Ok(outputs),
        Some(_) => Err(DistError::InvalidSpec(
            "the pipeline returned more outputs than it was fed".into(),
        )),
    }
}

/// Runs `graph` with `weights` in this process (CPU) and as the pipeline
/// `stages` over `pg` (rank 0 drives, see [`run_pipeline`]) on the same
/// `inputs` (graph order), and reports the largest absolute / relative
/// difference per output, labelled `pipeline over N ranks`.
pub fn pipeline_divergence(
    pg: &dyn ProcessGroup,
    graph: &Graph,
    weights: &[(String, WeightRef)],
    stages: &[StageSpec],
    inputs: &[HostTensor],
    resolve: &Resolver,
) -> DistResult<RunDivergence> {
    let mut one = compile_with_weights(graph.clone(), None, weights, resolve)?;
    let names = one.input_names();
    let named: Vec<(&str, &HostTensor)> = names.iter().map(String::as_str).zip(inputs).collect();
    let want = one
        .try_run_typed(&named)
        .map_err(|e| DistError::graph("running the graph in one process", e))?;
    let got = run_pipeline(pg, stages, inputs)?;
    let dims = |v: &[HostTensor]| v.iter().map(|t| t.dims().to_vec()).collect::<Vec<_>>();
    if dims(&got) != dims(&want) {
        return Err(DistError::InvalidSpec(format!(
            "the pipeline returned outputs of dims {:?}, the graph {:?}",
            dims(&got),
            dims(&want)
        )));
    }
    Ok(RunDivergence {
        label: format!("pipeline over {} ranks", stages.len()),
        per_output: compare(&want, &got),
    })
}
