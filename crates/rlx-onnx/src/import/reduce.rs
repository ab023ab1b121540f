//! Reductions: ReduceSum / Mean / Max / Min / Prod / L1 / L2 / LogSum /
//! LogSumExp / SumSquare, ArgMax / ArgMin, CumSum.

use super::NodeCx;
use crate::Result;
use rlx_ir::op::{ArgReduceOp, BinaryOp as B, ReduceOp, UnaryOp as U};
use rlx_ir::{DType, NodeId, Op};

/// What to compute around the core reduction.
#[derive(Clone, Copy)]
enum Kind {
    Plain(ReduceOp),
    L1,
    L2,
    LogSum,
    LogSumExp,
    SumSquare,
}

op_table! {
    "ReduceSum" => |cx| reduce(cx, Kind::Plain(ReduceOp::Sum)),
    "ReduceMean" => |cx| reduce(cx, Kind::Plain(ReduceOp::Mean)),
    "ReduceMax" => |cx| reduce(cx, Kind::Plain(ReduceOp::Max)),
    "ReduceMin" => |cx| reduce(cx, Kind::Plain(ReduceOp::Min)),
    "ReduceProd" => |cx| reduce(cx, Kind::Plain(ReduceOp::Prod)),
    "ReduceL1" => |cx| reduce(cx, Kind::L1),
    "ReduceL2" => |cx| reduce(cx, Kind::L2),
    "ReduceLogSum" => |cx| reduce(cx, Kind::LogSum),
    "ReduceLogSumExp" => |cx| reduce(cx, Kind::LogSumExp),
    "ReduceSumSquare" => |cx| reduce(cx, Kind::SumSquare),
    "ArgMax" => |cx| arg_reduce(cx, ArgReduceOp::ArgMax),
    "ArgMin" => |cx| arg_reduce(cx, ArgReduceOp::ArgMin),
    "CumSum" => cumsum,
}

/// The reduced axes: the `axes` input (ReduceSum from opset 13, the others
/// from 18) or attribute; empty means all unless `noop_with_empty_axes`.
fn reduce_axes(cx: &NodeCx, rank: usize) -> Result<Option<Vec<usize>>> {
    let from_input = if cx.op_type() == "ReduceSum" {
        cx.opset >= 13
    } else {
        cx.opset >= 18
    };
    let axes = if from_input {
        cx.opt_const_ints(1, "axes")?
    } else {
        cx.attr_ints("axes")
    };
    let axes = axes.unwrap_or_default();
    if axes.is_empty() {
        if cx.attr_i("noop_with_empty_axes", 0) != 0 {
            return Ok(None);
        }
        return Ok(Some((0..rank).collect()));
    }
    axes.iter()
        .map(|&a| cx.axis(a, rank))
        .collect::<Result<Vec<_>>>()
        .map(Some)
}

fn reduce(cx: &mut NodeCx, kind: Kind) -> Result<Vec<NodeId>> {
    let x = cx.x(0)?;
    let r = cx.rank(x);
    let keep = cx.attr_i("keepdims", 1) != 0;
    let dt = cx.dtype(x);
    let Some(axes) = reduce_axes(cx, r)? else {
        // No axes and noop: the identity (after the elementwise pre-step).
        let y = match kind {
            Kind::L1 => cx.un(U::Abs, x)?,
            Kind::SumSquare | Kind::L2 => {
                let sq = cx.bin(B::Mul, x, x)?;
                if matches!(kind, Kind::L2) {
                    cx.un(U::Sqrt, sq)?
                } else {
                    sq
                }
            }
            Kind::LogSum => cx.un(U::Log, x)?,
            _ => x,
        };
        return Ok(vec![y]);
    };
    let y = match kind {
        Kind::Plain(op) => {
            let y = cx.reduce(op, x, axes, keep)?;
            cx.cast(y, dt)?
        }
        Kind::L1 => {
            let a = cx.un(U::Abs, x)?;
            cx.reduce(ReduceOp::Sum, a, axes, keep)?
        }
        Kind::SumSquare => {
            let sq = cx.bin(B::Mul, x, x)?;
            cx.reduce(ReduceOp::Sum, sq, axes, keep)?
        }
        Kind::L2 => {
            let xf = if dt.is_float() {
                x
            } else {
                cx.cast(x, DType::F32)?
            };
            let sq = cx.bin(B::Mul, xf, xf)?;
            let s = cx.reduce(ReduceOp::Sum, sq, axes, keep)?;
            let y = cx.un(U::Sqrt, s)?;
            cx.cast(y, dt)?
        }
        Kind::LogSum => {
            let s = cx.reduce(ReduceOp::Sum, x, axes, keep)?;
            cx.un(U::Log, s)?
        }
        Kind::LogSumExp => {
            // Stable: m + log(sum(exp(x - m))); an all -inf slice gives -inf.
            let m = cx.reduce(ReduceOp::Max, x, axes.clone(), true)?;
            let zero = cx.scalar(0.0, dt);
            let finite =
                super::elementwise::cmp_scalar(cx, rlx_ir::op::CmpOp::Ne, m, f64::NEG_INFINITY)?;
            let m = super::elementwise::select(cx, finite, m, zero)?;
            let c = cx.bin(B::Sub, x, m)?;
            let e = cx.un(U::Exp, c)?;
            let s = cx.reduce(ReduceOp::Sum, e, axes.clone(), keep)?;
            let l = cx.un(U::Log, s)?;
            let m = if keep {
                m
            } else {
                cx.reduce(ReduceOp::Max, m, axes, false)?
            };
            cx.bin(B::Add, l, m)?
        }
    };
    Ok(vec![y])
}

fn arg_reduce(cx: &mut NodeCx, op: ArgReduceOp) -> Result<Vec<NodeId>> {
    let x = cx.x(0)?;
    let r = cx.rank(x);
    let axis = cx.axis(cx.attr_i("axis", 0), r)?;
    let keep_dim = cx.attr_i("keepdims", 1) != 0;
    if cx.attr_i("select_last_index", 0) == 0 {
        return Ok(vec![cx.node(
            Op::ArgReduce { op, axis, keep_dim },
            &[x],
            None,
        )?]);
    }
    // The last index: reduce the reversed axis, map i -> n - 1 - i.
    let n = cx.static_dims(x, "select_last_index")?[axis];
    let rev = cx.slice_axis(x, axis, n.saturating_sub(1), n, -1)?;
    let i = cx.node(Op::ArgReduce { op, axis, keep_dim }, &[rev], None)?;
    let last = cx.scalar((n as f64) - 1.0, DType::I64);
    Ok(vec![cx.bin(B::Sub, last, i)?])
}

fn cumsum(cx: &mut NodeCx) -> Result<Vec<NodeId>> {
    let x = cx.x(0)?;
    let axis = cx.const_ints(1, "axis")?;
    let axis = cx.axis(
        *axis.first().ok_or_else(|| cx.err("empty axis"))?,
        cx.rank(x),
    )?;
    let exclusive = cx.attr_i("exclusive", 0) != 0;
    let reverse = cx.attr_i("reverse", 0) != 0;
    Ok(vec![cx.node(
        Op::Cumsum {
            axis,
            exclusive,
            reverse,
        },
        &[x],
        None,
    )?])
}
