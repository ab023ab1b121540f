//! Closed-form rules of softmax and log-softmax (the other composites are
//! differentiated through their decomposition, see `prepare_graph_for_ad`).

use crate::emit::*;
use crate::Result;
use rlx_ir::op::UnaryOp;
use rlx_ir::{Graph, NodeId};

/// `y (v - sum(v y))`: the softmax Jacobian applied to `v` (it is symmetric).
pub fn softmax_jac(g: &mut Graph, axis: usize, y: NodeId, v: NodeId) -> Result<NodeId> {
    let vy = mul(g, v, y)?;
    let s = sum(g, vy, &[axis], true)?;
    let d = sub(g, v, s)?;
    mul(g, y, d)
}

/// Reverse mode of log-softmax: `ct - exp(y) sum(ct)`.
pub fn log_softmax_vjp(g: &mut Graph, axis: usize, y: NodeId, ct: NodeId) -> Result<NodeId> {
    let p = un(g, UnaryOp::Exp, y)?;
    let s = sum(g, ct, &[axis], true)?;
    let ps = mul(g, p, s)?;
    sub(g, ct, ps)
}

/// Forward mode of log-softmax: `t - sum(exp(y) t)`.
pub fn log_softmax_jvp(g: &mut Graph, axis: usize, y: NodeId, t: NodeId) -> Result<NodeId> {
    let p = un(g, UnaryOp::Exp, y)?;
    let pt = mul(g, p, t)?;
    let s = sum(g, pt, &[axis], true)?;
    sub(g, t, s)
}
