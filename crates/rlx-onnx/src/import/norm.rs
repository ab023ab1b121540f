//! Normalisation and softmax: BatchNormalization, InstanceNormalization,
//! LayerNormalization, GroupNormalization, Softmax, LogSoftmax, Hardmax,
//! LpNormalization, MeanVarianceNormalization.

use super::NodeCx;
use crate::Result;
use rlx_ir::op::{ArgReduceOp, BinaryOp as B, CmpOp, ReduceOp, UnaryOp as U};
use rlx_ir::{Dim, HostTensor, NodeId, Op};

op_table! {
    "BatchNormalization" => batch_norm,
    "InstanceNormalization" => instance_norm,
    "LayerNormalization" => layer_norm,
    "GroupNormalization" => group_norm,
    "RMSNormalization" => rms_norm,
    "Softmax" => |cx| softmax(cx, false),
    "LogSoftmax" => |cx| softmax(cx, true),
    "Hardmax" => hardmax,
    "LpNormalization" => lp_norm,
    "MeanVarianceNormalization" => mvn,
}

/// Reshapes a per-channel vector `[C]` to `[C, 1, ..]` for x of `rank`.
fn per_channel(cx: &mut NodeCx, v: NodeId, rank: usize) -> Result<NodeId> {
    let mut dims = cx.shape(v).dims().to_vec();
    dims.extend(std::iter::repeat_n(Dim::Static(1), rank.saturating_sub(2)));
    cx.reshape(v, dims)
}

fn batch_norm(cx: &mut NodeCx) -> Result<Vec<NodeId>> {
    let x = cx.x(0)?;
    let eps = cx.attr_f("epsilon", 1e-5);
    let r = cx.rank(x);
    let dt = cx.dtype(x);
    let mut p = Vec::new();
    for i in 1..5 {
        let v = cx.x(i)?;
        let v = cx.cast(v, dt)?;
        p.push(per_channel(cx, v, r)?);
    }
    let (scale, bias, mut mean, mut var) = (p[0], p[1], p[2], p[3]);
    let training = cx.attr_i("training_mode", 0) != 0;
    if !training && cx.n_outputs() <= 1 {
        if let Some(y) = super::conv_bn::fold(cx, eps)? {
            return Ok(vec![y]);
        }
    }
    let mut running = Vec::new();
    if training {
        // Batch statistics normalise; the running ones are updated with momentum.
        let axes: Vec<usize> = (0..r).filter(|&a| a != 1).collect();
        let bm = cx.reduce(ReduceOp::Mean, x, axes.clone(), true)?;
        let c = cx.bin(B::Sub, x, bm)?;
        let sq = cx.bin(B::Mul, c, c)?;
        let bv = cx.reduce(ReduceOp::Mean, sq, axes, true)?;
        let momentum = cx.attr_f("momentum", 0.9);
        for (run, batch) in [(mean, bm), (var, bv)] {
            let a = cx.bin_scalar(B::Mul, run, momentum)?;
            let b = cx.bin_scalar(B::Mul, batch, 1.0 - momentum)?;
            let u = cx.bin(B::Add, a, b)?;
            let c = *cx
                .static_dims(x, "BatchNormalization")?
                .get(1)
                .ok_or_else(|| cx.err("input must have a channel axis"))?;
            running.push(cx.reshape_static(u, &[c])?);
        }
        (mean, var) = (bm, bv);
    } else if cx.n_outputs() > 1 && cx.wants_output(1) {
        return Err(cx.err("running statistics outputs need training_mode=1"));
    }
    let ve = cx.bin_scalar(B::Add, var, eps)?;
    let inv = cx.un(U::Rsqrt, ve)?;
    let c = cx.bin(B::Sub, x, mean)?;
    let n = cx.bin(B::Mul, c, inv)?;
    let s = cx.bin(B::Mul, n, scale)?;
    let y = cx.bin(B::Add, s, bias)?;
    Ok(std::iter::once(y).chain(running).collect())
}

fn instance_norm(cx: &mut NodeCx) -> Result<Vec<NodeId>> {
    let (x, s, b) = (cx.x(0)?, cx.x(1)?, cx.x(2)?);
    let eps = cx.attr_f("epsilon", 1e-5);
    let c = cx
        .static_dims(x, "InstanceNormalization")?
        .get(1)
        .copied()
        .unwrap_or(0);
    if c == 0 {
        return Err(cx.err("input must have a non-empty channel axis"));
    }
    Ok(vec![cx.node(
        Op::GroupNorm { groups: c, eps },
        &[x, s, b],
        None,
    )?])
}

/// `(x - mean) / sqrt(var + eps)` over `axes` (kept), with mean and 1/std.
fn normalize(
    cx: &mut NodeCx,
    x: NodeId,
    axes: Vec<usize>,
    eps: f64,
) -> Result<(NodeId, NodeId, NodeId)> {
    let mean = cx.reduce(ReduceOp::Mean, x, axes.clone(), true)?;
    let c = cx.bin(B::Sub, x, mean)?;
    let sq = cx.bin(B::Mul, c, c)?;
    let var = cx.reduce(ReduceOp::Mean, sq, axes, true)?;
    let ve = cx.bin_scalar(B::Add, var, eps)?;
    let inv = cx.un(U::Rsqrt, ve)?;
    Ok((cx.bin(B::Mul, c, inv)?, mean, inv))
}

fn layer_norm(cx: &mut NodeCx) -> Result<Vec<NodeId>> {
    let x = cx.x(0)?;
    let scale = cx.x(1)?;
    let bias = cx.opt(2);
    let r = cx.rank(x);
    let axis = cx.axis(cx.attr_i("axis", -1), r)?;
    let eps = cx.attr_f("epsilon", 1e-5);
    let stash = cx.attr_i("stash_type", 1);
    let dt = cx.dtype(x);
    let tail = cx.shape(x).dims()[axis..].to_vec();
    let wants_stats = cx.wants_output(1) || cx.wants_output(2);
    let exact_affine = cx.shape(scale).dims() == tail.as_slice()
        && bias.is_none_or(|b| cx.shape(b).dims() == tail.as_slice());
    if exact_affine && !wants_stats && (stash == 1 || dt == rlx_ir::DType::F32) {
        let mut ins = vec![x, scale];
        ins.extend(bias);
        return Ok(vec![cx.node(Op::LayerNorm { axis, eps }, &ins, None)?]);
    }
    // General form: statistics in f32 (stash_type 1), affine by broadcasting.
    let xs = if stash == 1 {
        cx.cast(x, rlx_ir::DType::F32)?
    } else {
        x
    };
    let (n, mean, inv) = normalize(cx, xs, (axis..r).collect(), eps)?;
    let n = cx.cast(n, dt)?;
    let mut y = cx.bin(B::Mul, n, scale)?;
    if let Some(b) = bias {
        y = cx.bin(B::Add, y, b)?;
    }
    Ok(vec![y, mean, inv])
}

fn group_norm(cx: &mut NodeCx) -> Result<Vec<NodeId>> {
    let (x, mut s, mut b) = (cx.x(0)?, cx.x(1)?, cx.x(2)?);
    let groups = cx.attr_i("num_groups", 0).max(0) as usize;
    let eps = cx.attr_f("epsilon", 1e-5);
    let xd = cx.static_dims(x, "GroupNormalization")?;
    let c = xd.get(1).copied().unwrap_or(0);
    if groups == 0 || c % groups != 0 {
        return Err(cx.err(format!("num_groups {groups} does not divide {c} channels")));
    }
    // Opset 18 gives scale / bias per group: repeat each over its channels.
    if cx.shape(s).dims() == [Dim::Static(groups)] && groups != c {
        let idx: Vec<i64> = (0..c as i64).map(|i| i / (c / groups) as i64).collect();
        let t = HostTensor::from_vec(idx, &[c]).expect("1-d");
        let idx = cx.constant(&t);
        s = cx.node(Op::Gather { axis: 0 }, &[s, idx], None)?;
        b = cx.node(Op::Gather { axis: 0 }, &[b, idx], None)?;
    }
    Ok(vec![cx.node(
        Op::GroupNorm { groups, eps },
        &[x, s, b],
        None,
    )?])
}

/// Softmax / LogSoftmax; before opset 13 the input is seen as 2-d
/// `[prod(dims[..axis]), prod(dims[axis..])]`.
fn softmax(cx: &mut NodeCx, log: bool) -> Result<Vec<NodeId>> {
    let x = cx.x(0)?;
    let r = cx.rank(x);
    let legacy = cx.opset < 13;
    let axis = cx.axis(cx.attr_i("axis", if legacy { 1 } else { -1 }), r)?;
    let make = |axis| {
        if log {
            Op::LogSoftmax { axis }
        } else {
            Op::Softmax { axis }
        }
    };
    if !legacy || axis + 1 == r {
        return Ok(vec![cx.node(make(axis), &[x], None)?]);
    }
    let dims = cx.static_dims(x, "legacy Softmax")?;
    let (a, b): (usize, usize) = (dims[..axis].iter().product(), dims[axis..].iter().product());
    let flat = cx.reshape_static(x, &[a, b])?;
    let y = cx.node(make(1), &[flat], None)?;
    Ok(vec![cx.reshape_static(y, &dims)?])
}

fn hardmax(cx: &mut NodeCx) -> Result<Vec<NodeId>> {
    let x = cx.x(0)?;
    let r = cx.rank(x);
    let axis = cx.axis(cx.attr_i("axis", -1), r)?;
    let dims = cx.static_dims(x, "Hardmax")?;
    let am = cx.node(
        Op::ArgReduce {
            op: ArgReduceOp::ArgMax,
            axis,
            keep_dim: true,
        },
        &[x],
        None,
    )?;
    let iota = cx.iota_i64(&dims, axis)?;
    let hit = cx.node(Op::Compare(CmpOp::Eq), &[iota, am], None)?;
    Ok(vec![cx.cast(hit, cx.dtype(x))?])
}

fn lp_norm(cx: &mut NodeCx) -> Result<Vec<NodeId>> {
    let x = cx.x(0)?;
    let axis = cx.axis(cx.attr_i("axis", -1), cx.rank(x))?;
    let p = cx.attr_i("p", 2);
    let a = cx.un(U::Abs, x)?;
    let norm = if p == 1 {
        cx.reduce(ReduceOp::Sum, a, vec![axis], true)?
    } else {
        let sq = cx.bin(B::Mul, a, a)?;
        let s = cx.reduce(ReduceOp::Sum, sq, vec![axis], true)?;
        cx.un(U::Sqrt, s)?
    };
    // A zero norm leaves the (zero) slice as it is.
    let zero = super::elementwise::cmp_scalar(cx, rlx_ir::op::CmpOp::Eq, norm, 0.0)?;
    let one = cx.scalar(1.0, cx.dtype(norm));
    let norm = super::elementwise::select(cx, zero, one, norm)?;
    Ok(vec![cx.bin(B::Div, x, norm)?])
}

fn mvn(cx: &mut NodeCx) -> Result<Vec<NodeId>> {
    let x = cx.x(0)?;
    let r = cx.rank(x);
    let axes = cx.attr_ints("axes").unwrap_or_else(|| vec![0, 2, 3]);
    let axes = axes
        .iter()
        .map(|&a| cx.axis(a, r))
        .collect::<Result<Vec<_>>>()?;
    let mean = cx.reduce(ReduceOp::Mean, x, axes.clone(), true)?;
    let c = cx.bin(B::Sub, x, mean)?;
    let sq = cx.bin(B::Mul, c, c)?;
    let var = cx.reduce(ReduceOp::Mean, sq, axes, true)?;
    let sd = cx.un(U::Sqrt, var)?;
    let sde = cx.bin_scalar(B::Add, sd, 1e-9)?;
    Ok(vec![cx.bin(B::Div, c, sde)?])
}

fn rms_norm(cx: &mut NodeCx) -> Result<Vec<NodeId>> {
    let (x, scale) = (cx.x(0)?, cx.x(1)?);
    let r = cx.rank(x);
    let axis = cx.axis(cx.attr_i("axis", -1), r)?;
    let eps = cx.attr_f("epsilon", 1e-5);
    let dt = cx.dtype(x);
    let xs = if cx.attr_i("stash_type", 1) == 1 {
        cx.cast(x, rlx_ir::DType::F32)?
    } else {
        x
    };
    let sq = cx.bin(B::Mul, xs, xs)?;
    let ms = cx.reduce(ReduceOp::Mean, sq, (axis..r).collect(), true)?;
    let ms = cx.bin_scalar(B::Add, ms, eps)?;
    let inv = cx.un(U::Rsqrt, ms)?;
    let n = cx.bin(B::Mul, xs, inv)?;
    let n = cx.cast(n, dt)?;
    Ok(vec![cx.bin(B::Mul, n, scale)?])
}
