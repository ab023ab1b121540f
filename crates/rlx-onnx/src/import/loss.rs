//! Losses: SoftmaxCrossEntropyLoss, NegativeLogLikelihoodLoss.

use super::elementwise::{cmp_scalar, select};
use super::NodeCx;
use crate::Result;
use rlx_ir::op::{BinaryOp as B, CmpOp, ReduceOp, UnaryOp as U};
use rlx_ir::{DType, Dim, NodeId, Op};

op_table! {
    "SoftmaxCrossEntropyLoss" => softmax_cross_entropy,
    "NegativeLogLikelihoodLoss" => |cx| {
        let lp = cx.x(0)?;
        Ok(vec![nll(cx, lp)?])
    },
}

/// The weighted negative log-likelihood of `log_prob [N, C, d..]` at
/// `labels [N, d..]` (input 1), `weights [C]` (input 2), with
/// `ignore_index` and `reduction`.
fn nll(cx: &mut NodeCx, log_prob: NodeId) -> Result<NodeId> {
    let labels = cx.x(1)?;
    let labels = cx.cast(labels, DType::I64)?;
    let dt = cx.dtype(log_prob);
    // Ignored labels may be out of range: gather at 0 and mask them out.
    let keep = match cx.has_attr("ignore_index") {
        true => Some(cmp_scalar(
            cx,
            CmpOp::Ne,
            labels,
            cx.attr_i("ignore_index", 0) as f64,
        )?),
        false => None,
    };
    let safe = match keep {
        Some(k) => {
            let zero = cx.scalar(0.0, DType::I64);
            select(cx, k, labels, zero)?
        }
        None => labels,
    };
    if cx.rank(safe) == 0 || cx.rank(log_prob) != cx.rank(safe) + 1 {
        return Err(cx.err(format!(
            "labels {} do not match scores {}",
            cx.shape(safe),
            cx.shape(log_prob)
        )));
    }
    let mut udims = cx.shape(safe).dims().to_vec();
    udims.insert(1, Dim::Static(1));
    let idx = cx.reshape(safe, udims)?;
    let picked = cx.node(Op::GatherElements { axis: 1 }, &[log_prob, idx], None)?;
    let picked = cx.reshape(picked, cx.shape(safe).dims().to_vec())?;
    let mut w = match cx.opt(2) {
        Some(wt) => Some(cx.node(Op::Gather { axis: 0 }, &[wt, safe], None)?),
        None => None,
    };
    if let Some(k) = keep {
        let kf = cx.cast(k, dt)?;
        w = Some(match w {
            Some(w) => cx.bin(B::Mul, w, kf)?,
            None => kf,
        });
    }
    let neg = cx.un(U::Neg, picked)?;
    let loss = match w {
        Some(w) => cx.bin(B::Mul, neg, w)?,
        None => neg,
    };
    let all: Vec<usize> = (0..cx.rank(loss)).collect();
    match cx.attr_s("reduction", "mean").as_str() {
        "none" => Ok(loss),
        "sum" => cx.reduce(ReduceOp::Sum, loss, all, false),
        "mean" => {
            let total = cx.reduce(ReduceOp::Sum, loss, all.clone(), false)?;
            match w {
                Some(w) => {
                    let den = cx.reduce(ReduceOp::Sum, w, all, false)?;
                    cx.bin(B::Div, total, den)
                }
                None => {
                    let n: usize = cx.static_dims(loss, "loss")?.iter().product();
                    cx.bin_scalar(B::Div, total, n as f64)
                }
            }
        }
        other => Err(cx.err(format!("unknown reduction \"{other}\""))),
    }
}

fn softmax_cross_entropy(cx: &mut NodeCx) -> Result<Vec<NodeId>> {
    let scores = cx.x(0)?;
    let lp = cx.node(Op::LogSoftmax { axis: 1 }, &[scores], None)?;
    let loss = nll(cx, lp)?;
    Ok(vec![loss, lp])
}
