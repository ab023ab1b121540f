//! Normalisation family: softmax, log_softmax, layer_norm, rms_norm, group_norm.
//! All are composites; their decompositions here are the reference semantics.

use super::emit::{bin, reduce_keep, reshape, scalar, static_dims, un};
use super::{arity, check_axis, fmt_dims, InferResult};
use crate::op::{BinaryOp, ReduceOp, UnaryOp};
use crate::{Graph, IrError, NodeId, Shape};

fn float_input(x: &Shape) -> Result<(), String> {
    if !x.dtype().is_float() {
        return Err(format!("needs a floating-point input, given {x}"));
    }
    Ok(())
}

fn affine_matches(param: &Shape, x: &Shape, tail: &[crate::Dim], what: &str) -> Result<(), String> {
    if param.dtype() != x.dtype() || param.dims() != tail {
        return Err(format!(
            "{what} {param} must be {}{}",
            x.dtype(),
            fmt_dims(tail)
        ));
    }
    Ok(())
}

pub(crate) fn infer_softmax(axis: usize, inputs: &[&Shape]) -> InferResult {
    arity(inputs, 1, 1)?;
    float_input(inputs[0])?;
    check_axis(axis, inputs[0].rank())?;
    Ok(inputs[0].clone())
}

pub(crate) fn infer_layer_norm(axis: usize, inputs: &[&Shape]) -> InferResult {
    arity(inputs, 1, 3)?;
    let x = inputs[0];
    float_input(x)?;
    check_axis(axis, x.rank())?;
    let tail = &x.dims()[axis..];
    for (p, what) in inputs[1..].iter().zip(["gamma", "beta"]) {
        affine_matches(p, x, tail, what)?;
    }
    Ok(x.clone())
}

pub(crate) fn infer_rms_norm(inputs: &[&Shape]) -> InferResult {
    arity(inputs, 1, 2)?;
    let x = inputs[0];
    float_input(x)?;
    if x.rank() == 0 {
        return Err("rms_norm of a scalar".into());
    }
    if let Some(gm) = inputs.get(1) {
        affine_matches(gm, x, &x.dims()[x.rank() - 1..], "gamma")?;
    }
    Ok(x.clone())
}

pub(crate) fn infer_group_norm(groups: usize, inputs: &[&Shape]) -> InferResult {
    if inputs.len() != 1 && inputs.len() != 3 {
        return Err(format!(
            "expects x or x, gamma, beta; given {} inputs",
            inputs.len()
        ));
    }
    let x = inputs[0];
    float_input(x)?;
    if x.rank() < 2 {
        return Err(format!("group_norm needs [N, C, ...], given {x}"));
    }
    let c = super::static_dim(&x.dims()[1], "the channel dim")?;
    if groups == 0 || c % groups != 0 {
        return Err(format!("{c} channels do not split into {groups} groups"));
    }
    for (p, what) in inputs[1..].iter().zip(["gamma", "beta"]) {
        affine_matches(p, x, &x.dims()[1..2], what)?;
    }
    Ok(x.clone())
}

/// softmax(x) = exp(x - max) / sum(exp(x - max)); log-softmax = (x - max) - log(sum).
pub(crate) fn decompose_softmax(
    g: &mut Graph,
    x: NodeId,
    axis: usize,
    log: bool,
) -> Result<NodeId, IrError> {
    let m = reduce_keep(g, ReduceOp::Max, x, vec![axis])?;
    let s = bin(g, BinaryOp::Sub, x, m)?;
    let e = un(g, UnaryOp::Exp, s)?;
    let d = reduce_keep(g, ReduceOp::Sum, e, vec![axis])?;
    if log {
        let ld = un(g, UnaryOp::Log, d)?;
        bin(g, BinaryOp::Sub, s, ld)
    } else {
        bin(g, BinaryOp::Div, e, d)
    }
}

/// Normalises over `axes` (biased variance) without affine.
fn normalize(g: &mut Graph, x: NodeId, axes: Vec<usize>, eps: f64) -> Result<NodeId, IrError> {
    let dt = g.shape(x).dtype();
    let mean = reduce_keep(g, ReduceOp::Mean, x, axes.clone())?;
    let c = bin(g, BinaryOp::Sub, x, mean)?;
    let sq = bin(g, BinaryOp::Mul, c, c)?;
    let var = reduce_keep(g, ReduceOp::Mean, sq, axes)?;
    let e = scalar(g, eps, dt);
    let ve = bin(g, BinaryOp::Add, var, e)?;
    let r = un(g, UnaryOp::Rsqrt, ve)?;
    bin(g, BinaryOp::Mul, c, r)
}

fn affine(
    g: &mut Graph,
    y: NodeId,
    gamma: Option<NodeId>,
    beta: Option<NodeId>,
) -> Result<NodeId, IrError> {
    let mut y = y;
    if let Some(gm) = gamma {
        y = bin(g, BinaryOp::Mul, y, gm)?;
    }
    if let Some(b) = beta {
        y = bin(g, BinaryOp::Add, y, b)?;
    }
    Ok(y)
}

pub(crate) fn decompose_layer_norm(
    g: &mut Graph,
    inputs: &[NodeId],
    axis: usize,
    eps: f64,
) -> Result<NodeId, IrError> {
    let x = inputs[0];
    let rank = g.shape(x).rank();
    let y = normalize(g, x, (axis..rank).collect(), eps)?;
    affine(g, y, inputs.get(1).copied(), inputs.get(2).copied())
}

pub(crate) fn decompose_rms_norm(
    g: &mut Graph,
    inputs: &[NodeId],
    eps: f64,
) -> Result<NodeId, IrError> {
    let x = inputs[0];
    let dt = g.shape(x).dtype();
    let last = g.shape(x).rank() - 1;
    let sq = bin(g, BinaryOp::Mul, x, x)?;
    let ms = reduce_keep(g, ReduceOp::Mean, sq, vec![last])?;
    let e = scalar(g, eps, dt);
    let me = bin(g, BinaryOp::Add, ms, e)?;
    let r = un(g, UnaryOp::Rsqrt, me)?;
    let y = bin(g, BinaryOp::Mul, x, r)?;
    affine(g, y, inputs.get(1).copied(), None)
}

pub(crate) fn decompose_group_norm(
    g: &mut Graph,
    inputs: &[NodeId],
    groups: usize,
    eps: f64,
) -> Result<NodeId, IrError> {
    let x = inputs[0];
    let dims = static_dims(g, x, "group_norm")?;
    let (n, c) = (dims[0], dims[1]);
    let rest: usize = dims[2..].iter().product();
    let grouped = reshape(g, x, &[n, groups, (c / groups) * rest])?;
    let y = normalize(g, grouped, vec![2], eps)?;
    let y = reshape(g, y, &dims)?;
    // gamma / beta [C] broadcast as [C, 1, 1, ...].
    let mut pdims = vec![c];
    pdims.extend(std::iter::repeat_n(1, dims.len() - 2));
    let gamma = inputs.get(1).map(|&p| reshape(g, p, &pdims)).transpose()?;
    let beta = inputs.get(2).map(|&p| reshape(g, p, &pdims)).transpose()?;
    affine(g, y, gamma, beta)
}
