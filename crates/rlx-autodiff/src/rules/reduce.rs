//! Derivative rules of reductions and cumsum.

use crate::emit::*;
use crate::Result;
use rlx_ir::op::{CmpOp, ReduceOp};
use rlx_ir::{Graph, NodeId, Op};

/// Dims of a reduction's result with the reduced axes kept as 1.
fn kept_dims(x: &[usize], axes: &[usize]) -> Vec<usize> {
    x.iter()
        .enumerate()
        .map(|(i, &d)| if axes.contains(&i) { 1 } else { d })
        .collect()
}

/// Where `x` attains its max / min `y`, `1 / (number of ties)`; 0 elsewhere
/// (JAX splits the derivative of a chosen extremum evenly among ties).
fn tie_share(
    g: &mut Graph,
    axes: &[usize],
    kept: &[usize],
    x: NodeId,
    y: NodeId,
) -> Result<NodeId> {
    let yk = reshape(g, y, kept)?;
    let hit = cmp(g, CmpOp::Eq, x, yk)?;
    let hit = cast(g, hit, dtype(g, x))?;
    let count = sum(g, hit, axes, true)?;
    div(g, hit, count)
}

/// Reverse mode of a reduction. Max / min split the gradient evenly among
/// ties (JAX's rule); prod uses `y / x`, so a zero in the input gives NaN.
pub fn vjp_reduce(
    g: &mut Graph,
    op: ReduceOp,
    axes: &[usize],
    x: NodeId,
    y: NodeId,
    ct: NodeId,
) -> Result<Vec<Option<NodeId>>> {
    let xd = dims(g, x)?;
    let kd = kept_dims(&xd, axes);
    let ctk = reshape(g, ct, &kd)?;
    let ctb = broadcast(g, ctk, &xd)?;
    let dx = match op {
        ReduceOp::Sum => ctb,
        ReduceOp::Mean => {
            let n: usize = axes.iter().map(|&a| xd[a]).product();
            scale(g, ctb, 1.0 / n.max(1) as f64)?
        }
        ReduceOp::Max | ReduceOp::Min => {
            let share = tie_share(g, axes, &kd, x, y)?;
            mul(g, ctb, share)?
        }
        ReduceOp::Prod => {
            let yk = reshape(g, y, &kd)?;
            let r = div(g, yk, x)?;
            mul(g, ctb, r)?
        }
    };
    Ok(vec![Some(dx)])
}

/// Forward mode of a reduction.
pub fn jvp_reduce(
    g: &mut Graph,
    op: ReduceOp,
    axes: &[usize],
    keep_dim: bool,
    x: NodeId,
    y: NodeId,
    t: NodeId,
) -> Result<NodeId> {
    let xd = dims(g, x)?;
    let kd = kept_dims(&xd, axes);
    let weighted = match op {
        ReduceOp::Sum | ReduceOp::Mean => t,
        ReduceOp::Max | ReduceOp::Min => {
            let share = tie_share(g, axes, &kd, x, y)?;
            mul(g, t, share)?
        }
        ReduceOp::Prod => {
            let yk = reshape(g, y, &kd)?;
            let r = div(g, yk, x)?;
            mul(g, t, r)?
        }
    };
    let red = if op == ReduceOp::Mean {
        ReduceOp::Mean
    } else {
        ReduceOp::Sum
    };
    Ok(g.try_node(
        Op::Reduce {
            op: red,
            axes: axes.to_vec(),
            keep_dim,
        },
        &[weighted],
        None,
    )?)
}

/// Reverse mode of cumsum: a cumsum the other way.
pub fn vjp_cumsum(
    g: &mut Graph,
    axis: usize,
    exclusive: bool,
    reverse: bool,
    ct: NodeId,
) -> Result<Vec<Option<NodeId>>> {
    let dx = g.try_node(
        Op::Cumsum {
            axis,
            exclusive,
            reverse: !reverse,
        },
        &[ct],
        None,
    )?;
    Ok(vec![Some(dx)])
}
