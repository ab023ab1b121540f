//! Closed-form rules of softmax and log-softmax (both modes) and the
//! memory-saving reverse mode of layer / rms norm. Forward mode and vmap
//! of the norms go through their decomposition (`prepare_graph_for_ad`).

use crate::emit::*;
use crate::Result;
use rlx_ir::op::{ReduceOp, UnaryOp};
use rlx_ir::{Graph, NodeId, Op};

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

fn mean_keep(g: &mut Graph, x: NodeId, axes: &[usize]) -> Result<NodeId> {
    Ok(g.try_node(
        Op::Reduce {
            op: ReduceOp::Mean,
            axes: axes.to_vec(),
            keep_dim: true,
        },
        &[x],
        None,
    )?)
}

/// `rstd * (d - mean(d) - xhat mean(d xhat))` without the centring terms
/// when `centred` is false (rms norm): the input cotangent of a
/// normalisation `xhat = (x - mean) * rstd` given `d = dL/dxhat`.
fn normalized_vjp(
    g: &mut Graph,
    d: NodeId,
    xhat: NodeId,
    rstd: NodeId,
    axes: &[usize],
    centred: bool,
) -> Result<NodeId> {
    let dx = mul(g, d, xhat)?;
    let m2 = mean_keep(g, dx, axes)?;
    let xm = mul(g, xhat, m2)?;
    let mut inner = sub(g, d, xm)?;
    if centred {
        let m1 = mean_keep(g, d, axes)?;
        inner = sub(g, inner, m1)?;
    }
    mul(g, rstd, inner)
}

/// Input cotangents of `x [, gamma [, beta]]` of an affine normalisation
/// whose normalised value and inverse deviation are `(xhat, rstd)`
/// (computed over `axes`, broadcast over the leading axes `0..lead`).
fn affine_vjp(
    g: &mut Graph,
    x: &[NodeId],
    (xhat, rstd): (NodeId, NodeId),
    axes: &[usize],
    lead: usize,
    centred: bool,
    ct: NodeId,
) -> Result<Vec<Option<NodeId>>> {
    let lead: Vec<usize> = (0..lead).collect();
    let d = match x.get(1) {
        Some(&gm) => mul(g, ct, gm)?,
        None => ct,
    };
    let mut out = vec![Some(normalized_vjp(g, d, xhat, rstd, axes, centred)?)];
    if x.len() > 1 {
        let cx = mul(g, ct, xhat)?;
        out.push(Some(sum(g, cx, &lead, false)?));
    }
    if x.len() > 2 {
        out.push(Some(sum(g, ct, &lead, false)?));
    }
    Ok(out)
}

/// Closed-form reverse mode of layer norm over `axis..` with inputs
/// `x [, gamma [, beta]]`. Only `x` is kept from the forward pass: the
/// mean and `rstd` are recomputed here (two reductions), so none of the
/// decomposition's full-size intermediates stay alive for the backward.
pub fn layer_norm_vjp(
    g: &mut Graph,
    axis: usize,
    eps: f64,
    x: &[NodeId],
    ct: NodeId,
) -> Result<Vec<Option<NodeId>>> {
    let rank = g.shape(x[0]).rank();
    let axes: Vec<usize> = (axis..rank).collect();
    let mean = mean_keep(g, x[0], &axes)?;
    let xc = sub(g, x[0], mean)?;
    let sq = mul(g, xc, xc)?;
    let var = mean_keep(g, sq, &axes)?;
    let e = scalar_like(g, var, eps);
    let ve = add(g, var, e)?;
    let rstd = un(g, UnaryOp::Rsqrt, ve)?;
    let xhat = mul(g, xc, rstd)?;
    affine_vjp(g, x, (xhat, rstd), &axes, axis, true, ct)
}

/// Closed-form reverse mode of rms norm over the last axis with inputs
/// `x [, gamma]` (statistics recomputed from `x`, as for layer norm).
pub fn rms_norm_vjp(
    g: &mut Graph,
    eps: f64,
    x: &[NodeId],
    ct: NodeId,
) -> Result<Vec<Option<NodeId>>> {
    let last = g.shape(x[0]).rank() - 1;
    let sq = mul(g, x[0], x[0])?;
    let ms = mean_keep(g, sq, &[last])?;
    let e = scalar_like(g, ms, eps);
    let me = add(g, ms, e)?;
    let rstd = un(g, UnaryOp::Rsqrt, me)?;
    let xhat = mul(g, x[0], rstd)?;
    affine_vjp(g, x, (xhat, rstd), &[last], last, false, ct)
}
