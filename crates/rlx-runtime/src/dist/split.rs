//! [`split_pipeline`]: cut one graph into pipeline stages whose outputs
//! feed the next stage's inputs, in order, so each can be shipped as a
//! [`StageSpec`](super::StageSpec) and chained with activations.

use super::error::{DistError, DistResult};
use rlx_ir::{Graph, NodeId, Op};
use std::collections::HashMap;

/// Name of the stage input that carries node `id` of the original graph.
fn carried_name(graph: &Graph, id: NodeId) -> String {
    match &graph.node(id).op {
        Op::Input { name } => name.clone(),
        _ => format!("__stage_{}", id.0),
    }
}

/// Splits `graph` into `cuts.len() + 1` stages: stage `s` holds the
/// operations whose node index lies in `[cuts[s-1], cuts[s])` (node ids are
/// in topological order, so a cut at the first node of a layer puts that
/// layer and what follows in the next stage).
///
/// Stage 0 takes the graph's inputs in graph order; every later stage takes
/// exactly the previous stage's outputs, in order: the values some later
/// stage reads or the graph returns (a value one stage does not use is
/// passed through it). The last stage returns the graph's outputs. Params
/// go to the stages that read them (a param read by two stages is a param
/// of both); constants are copied where used.
///
/// Errors: cuts out of order or out of range, a stage without operations,
/// a graph output that is a leaf.
pub fn split_pipeline(graph: &Graph, cuts: &[NodeId]) -> DistResult<Vec<Graph>> {
    let bad = |m: String| DistError::InvalidSpec(format!("split_pipeline: {m}"));
    let len = graph.len();
    if let Some(w) = cuts.windows(2).find(|w| w[0] >= w[1]) {
        return Err(bad(format!("cuts must increase ({} then {})", w[0], w[1])));
    }
    if let Some(c) = cuts.iter().find(|c| c.index() >= len) {
        return Err(bad(format!("cut {c} is past the graph's {len} nodes")));
    }
    let is_leaf = |id: NodeId| graph.node(id).op.is_leaf();
    let stages = cuts.len() + 1;
    let stage_of_index = |i: usize| cuts.iter().take_while(|c| c.index() <= i).count();
    // Where each value is defined: graph inputs count as defined before stage 0.
    let defined: Vec<Option<usize>> = graph
        .ids()
        .map(|id| match &graph.node(id).op {
            Op::Input { .. } => Some(0),
            _ if is_leaf(id) => None,
            _ => Some(stage_of_index(id.index())),
        })
        .collect();
    let mut ops: Vec<Vec<NodeId>> = vec![Vec::new(); stages];
    for id in graph.ids().filter(|&id| !is_leaf(id)) {
        ops[stage_of_index(id.index())].push(id);
    }
    if let Some(s) = ops.iter().position(Vec::is_empty) {
        return Err(bad(format!("stage {s} has no operations")));
    }
    if let Some(&o) = graph.outputs().iter().find(|&&o| is_leaf(o)) {
        return Err(bad(format!("output {o} is a leaf; no stage computes it")));
    }
    // live[s]: the values stage s receives (s >= 1), in node order.
    let mut last_use: HashMap<NodeId, usize> = HashMap::new();
    for (s, ids) in ops.iter().enumerate() {
        for &id in ids {
            for &i in &graph.node(id).inputs {
                if defined[i.index()].is_some() {
                    let u = last_use.entry(i).or_insert(s);
                    *u = (*u).max(s);
                }
            }
        }
    }
    for &o in graph.outputs() {
        last_use.insert(o, stages);
    }
    let mut live: Vec<Vec<NodeId>> = vec![Vec::new(); stages];
    live[0] = graph.inputs().iter().map(|(id, _, _)| *id).collect();
    for (s, slot) in live.iter_mut().enumerate().skip(1) {
        *slot = graph
            .ids()
            .filter(|&id| {
                let born = match &graph.node(id).op {
                    Op::Input { .. } => Some(0),
                    _ => defined[id.index()].map(|d| d + 1),
                };
                born.is_some_and(|b| b <= s) && last_use.get(&id).is_some_and(|&u| u >= s)
            })
            .collect();
    }
    (0..stages)
        .map(|s| {
            let outs: &[NodeId] = if s + 1 < stages {
                &live[s + 1]
            } else {
                graph.outputs()
            };
            build_stage(graph, s, &live[s], &ops[s], outs)
        })
        .collect()
}

/// One stage's graph: `carried` as inputs, `ops` copied, `outs` returned.
fn build_stage(
    graph: &Graph,
    s: usize,
    carried: &[NodeId],
    ops: &[NodeId],
    outs: &[NodeId],
) -> DistResult<Graph> {
    let ir = |e| DistError::graph(format!("building pipeline stage {s}"), e);
    let mut sub = Graph::new(format!("{}.stage{s}", graph.name()));
    let mut local: HashMap<NodeId, NodeId> = HashMap::new();
    for &c in carried {
        let l = sub
            .try_input(&carried_name(graph, c), graph.node(c).shape.clone())
            .map_err(ir)?;
        local.insert(c, l);
    }
    crate::subgraph::copy_nodes(graph, &mut sub, &mut local, ops, |sub, i| {
        let src = graph.node(i);
        match &src.op {
            Op::Param { name } => sub.try_param(name, src.shape.clone()).map_err(ir),
            _ if src.op.is_leaf() => Ok(sub.push_verified(src.clone())),
            _ => Err(DistError::InvalidSpec(format!(
                "split_pipeline: stage {s} reads {i}, which no earlier stage hands on"
            ))),
        }
    })?;
    sub.set_outputs(outs.iter().map(|o| local[o]).collect());
    Ok(sub)
}
