//! Elementwise-region fusion: maximal trees of elementwise nodes (unary,
//! binary, compare, select, cast) become one `Op::ElementwiseRegion`.
//!
//! A producer joins a region when it is elementwise, every reader of it is
//! already in the region, it is not a graph output and it has the region's
//! full size (a smaller, broadcast producer would be recomputed per output
//! element). Every non-root member is then read only inside its region, so
//! a region never needs an intermediate buffer and never creates a cycle.

use crate::report::{FusedRegion, FusionKind, FusionReport, MissReason, MissedFusion};
use rlx_ir::op::{ChainOperand, ChainStep};
use rlx_ir::{Graph, IrError, Node, NodeId, NodeOrigin, Op};
use std::collections::{BinaryHeap, HashMap, HashSet};

pub(crate) fn is_elementwise(n: &Node) -> bool {
    matches!(
        n.op,
        Op::Unary(_) | Op::Binary(_) | Op::Compare(_) | Op::Select | Op::Cast
    ) && n.shape.static_dims().is_some()
}

pub(crate) fn step_of(n: &Node, operands: &[ChainOperand]) -> ChainStep {
    match n.op {
        Op::Unary(u) => ChainStep::Unary(u, operands[0]),
        Op::Binary(b) => ChainStep::Binary(b, operands[0], operands[1]),
        Op::Compare(c) => ChainStep::Compare(c, operands[0], operands[1]),
        Op::Select => ChainStep::Select(operands[0], operands[1], operands[2]),
        Op::Cast => ChainStep::Cast(operands[0], n.shape.dtype()),
        _ => unreachable!("only elementwise nodes are region members"),
    }
}

/// Fuses elementwise regions of at least `min_nodes` nodes.
pub fn fuse_elementwise(g: &Graph, min_nodes: usize) -> Result<(Graph, FusionReport), IrError> {
    let mut readers: Vec<Vec<NodeId>> = vec![Vec::new(); g.len()];
    for id in g.ids() {
        for &i in &g.node(id).inputs {
            readers[i.index()].push(id);
        }
    }
    let mut is_output = vec![false; g.len()];
    for &o in g.outputs() {
        is_output[o.index()] = true;
    }

    // Grow regions from the last node backwards. Candidates are decided in
    // decreasing id order, so when a producer is decided every reader that
    // could be in the region has been decided already.
    let mut root_of: Vec<Option<NodeId>> = vec![None; g.len()];
    let mut regions: Vec<(NodeId, Vec<NodeId>)> = Vec::new();
    let mut report = FusionReport::default();
    for id in g.ids().rev() {
        let n = g.node(id);
        if root_of[id.index()].is_some() || !is_elementwise(n) {
            continue;
        }
        let mut members: HashSet<NodeId> = HashSet::from([id]);
        let mut candidates: BinaryHeap<NodeId> = n.inputs.iter().copied().collect();
        let mut decided: HashSet<NodeId> = HashSet::new();
        let mut missed = Vec::new();
        while let Some(p) = candidates.pop() {
            let pn = g.node(p);
            if !decided.insert(p) || !is_elementwise(pn) || root_of[p.index()].is_some() {
                continue;
            }
            let reason = if is_output[p.index()] {
                Some(MissReason::GraphOutput)
            } else if !readers[p.index()].iter().all(|r| members.contains(r)) {
                Some(MissReason::MultipleConsumers)
            } else if pn.shape.dims() != n.shape.dims() {
                Some(MissReason::BroadcastProducer)
            } else {
                None
            };
            match reason {
                Some(reason) => missed.push(MissedFusion {
                    producer: p,
                    op: pn.op.mnemonic(),
                    consumer: id,
                    reason,
                }),
                None => {
                    members.insert(p);
                    candidates.extend(pn.inputs.iter().copied());
                }
            }
        }
        if members.len() >= min_nodes.max(2) {
            let mut members: Vec<NodeId> = members.into_iter().collect();
            members.sort();
            for &m in &members {
                root_of[m.index()] = Some(id);
            }
            report.missed.extend(missed);
            regions.push((id, members));
        } else {
            // A lone node has nothing to fuse with; its misses are not news.
            root_of[id.index()] = Some(id);
        }
    }
    let regions: HashMap<NodeId, Vec<NodeId>> = regions.into_iter().collect();

    let mut out = Graph::new(g.name());
    let mut map = vec![NodeId(u32::MAX); g.len()];
    for id in g.ids() {
        let n = g.node(id);
        if let Some(members) = regions.get(&id) {
            let fused = emit_region(&mut out, g, members, &map)?;
            report.regions.push(FusedRegion {
                kind: FusionKind::Elementwise,
                nodes: members.clone(),
                ops: members.iter().map(|&m| g.node(m).op.mnemonic()).collect(),
                fused,
            });
            if let Some(name) = &n.name {
                out.set_name(fused, name.clone());
            }
            map[id.index()] = fused;
        } else if root_of[id.index()].is_some_and(|r| r != id && regions.contains_key(&r)) {
            // An interior member: read only inside its region.
        } else {
            let mut node = n.clone();
            node.inputs = n.inputs.iter().map(|i| map[i.index()]).collect();
            map[id.index()] = out.push_verified(node);
        }
    }
    out.set_outputs(g.outputs().iter().map(|o| map[o.index()]).collect());
    report.regions.sort_by_key(|r| r.fused);
    Ok((out, report))
}

fn emit_region(
    out: &mut Graph,
    g: &Graph,
    members: &[NodeId],
    map: &[NodeId],
) -> Result<NodeId, IrError> {
    let step_of_member: HashMap<NodeId, usize> =
        members.iter().enumerate().map(|(k, &m)| (m, k)).collect();
    let mut inputs: Vec<NodeId> = Vec::new();
    let mut steps = Vec::with_capacity(members.len());
    for &m in members {
        let n = g.node(m);
        let operands: Vec<ChainOperand> = n
            .inputs
            .iter()
            .map(|i| match step_of_member.get(i) {
                Some(&k) => ChainOperand::Step(k),
                None => {
                    let mapped = map[i.index()];
                    let pos = inputs.iter().position(|&x| x == mapped).unwrap_or_else(|| {
                        inputs.push(mapped);
                        inputs.len() - 1
                    });
                    ChainOperand::Input(pos)
                }
            })
            .collect();
        steps.push(step_of(n, &operands));
    }
    let root = g.node(*members.last().expect("regions have members"));
    let id = out.try_node(
        Op::ElementwiseRegion { steps },
        &inputs,
        Some(root.shape.clone()),
    )?;
    out.set_origin(
        id,
        NodeOrigin::Pass {
            name: "fusion".into(),
        },
    );
    Ok(id)
}
