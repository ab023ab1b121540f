//! Derivative rules of the indexing family: gathers scatter back, scatters gather.

use crate::emit::*;
use crate::Result;
use rlx_ir::op::TopKOutput;
use rlx_ir::{Graph, NodeId, Op};

fn scatter_add(
    g: &mut Graph,
    base: NodeId,
    idx: NodeId,
    upd: NodeId,
    axis: usize,
) -> Result<NodeId> {
    Ok(g.try_node(Op::ScatterAdd { axis }, &[base, idx, upd], None)?)
}

/// Reverse mode of `take(x, idx, axis)`: scatter-add the cotangent into zeros.
pub fn vjp_gather(
    g: &mut Graph,
    axis: usize,
    x: NodeId,
    idx: NodeId,
    ct: NodeId,
) -> Result<Vec<Option<NodeId>>> {
    let xd = dims(g, x)?;
    let id = dims(g, idx)?;
    let k: usize = id.iter().product();
    // ct [x[:axis], idx.., x[axis+1:]] -> [x[:axis], k, x[axis+1:]], indices broadcast to it.
    let mut cd = xd[..axis].to_vec();
    cd.push(k);
    cd.extend_from_slice(&xd[axis + 1..]);
    let c = reshape(g, ct, &cd)?;
    let mut id1 = vec![1; xd.len()];
    id1[axis] = k;
    let i = reshape(g, idx, &id1)?;
    let i = broadcast(g, i, &cd)?;
    let z = zeros_like(g, x)?;
    Ok(vec![Some(scatter_add(g, z, i, c, axis)?), None])
}

/// Reverse mode of `take_along_axis`.
pub fn vjp_gather_elements(
    g: &mut Graph,
    axis: usize,
    x: NodeId,
    idx: NodeId,
    ct: NodeId,
) -> Result<Vec<Option<NodeId>>> {
    let z = zeros_like(g, x)?;
    Ok(vec![Some(scatter_add(g, z, idx, ct, axis)?), None])
}

/// Reverse mode of scatter_add: the base passes through, updates gather.
pub fn vjp_scatter_add(
    g: &mut Graph,
    axis: usize,
    idx: NodeId,
    ct: NodeId,
) -> Result<Vec<Option<NodeId>>> {
    let du = g.try_node(Op::GatherElements { axis }, &[ct, idx], None)?;
    Ok(vec![Some(ct), None, Some(du)])
}

/// The indices node of a top-k whose values node is `(k, axis, largest)` over `x`.
pub fn topk_indices(
    g: &mut Graph,
    k: usize,
    axis: usize,
    largest: bool,
    x: NodeId,
) -> Result<NodeId> {
    Ok(g.try_node(
        Op::TopK {
            k,
            axis,
            largest,
            output: TopKOutput::Indices,
        },
        &[x],
        None,
    )?)
}

/// Reverse mode of top-k values: scatter the cotangent to the chosen positions.
pub fn vjp_topk(
    g: &mut Graph,
    k: usize,
    axis: usize,
    largest: bool,
    x: NodeId,
    ct: NodeId,
) -> Result<Vec<Option<NodeId>>> {
    let idx = topk_indices(g, k, axis, largest, x)?;
    let z = zeros_like(g, x)?;
    Ok(vec![Some(scatter_add(g, z, idx, ct, axis)?)])
}
