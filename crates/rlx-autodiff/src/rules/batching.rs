//! Batching (vmap) rules. Every batched value carries its batch on axis 0;
//! a rule receives its inputs with a flag saying which are batched and
//! returns its output batched on axis 0.

use crate::emit::*;
use crate::{AutodiffError, Result};
use rlx_ir::op::{DotDims, PadMode, SliceSpec};
use rlx_ir::{ops, Graph, Node, NodeId, Op, Shape};

fn shift(axes: &[usize]) -> Vec<usize> {
    axes.iter().map(|a| a + 1).collect()
}

/// Batches `node` whose inputs are `ins` (batched where `bat`), batch size `b`.
pub fn batch(g: &mut Graph, node: &Node, ins: &[NodeId], bat: &[bool], b: usize) -> Result<NodeId> {
    let out_shape = with_batch(b, &node.shape)?;
    let rank = node.shape.rank();
    let one = |g: &mut Graph, op: Op, x: NodeId| -> Result<NodeId> {
        let declared = ops::needs_declared_shape(&op).then(|| out_shape.clone());
        Ok(g.try_node(op, &[x], declared)?)
    };
    let x0 = ins.first().copied();
    Ok(match &node.op {
        Op::Unary(_) | Op::Binary(_) | Op::Compare(_) | Op::Select | Op::Cast => {
            // Right-aligned broadcasting keeps unbatched operands as they are;
            // batched ones need the per-example rank of the output.
            let mut lifted = Vec::with_capacity(ins.len());
            for (&x, &bx) in ins.iter().zip(bat) {
                lifted.push(if bx { lift(g, x, true, b, rank)? } else { x });
            }
            let declared = ops::needs_declared_shape(&node.op).then(|| out_shape.clone());
            g.try_node(node.op.clone(), &lifted, declared)?
        }
        Op::MatMul => batch_matmul(g, node, ins, bat, b)?,
        Op::DotGeneral(d) => batch_dot_general(g, d, ins, bat, b)?,
        Op::Reduce { op, axes, keep_dim } => one(
            g,
            Op::Reduce {
                op: *op,
                axes: shift(axes),
                keep_dim: *keep_dim,
            },
            ins[0],
        )?,
        Op::ArgReduce { op, axis, keep_dim } => one(
            g,
            Op::ArgReduce {
                op: *op,
                axis: axis + 1,
                keep_dim: *keep_dim,
            },
            ins[0],
        )?,
        Op::Cumsum {
            axis,
            exclusive,
            reverse,
        } => one(
            g,
            Op::Cumsum {
                axis: axis + 1,
                exclusive: *exclusive,
                reverse: *reverse,
            },
            ins[0],
        )?,
        Op::Softmax { axis } => one(g, Op::Softmax { axis: axis + 1 }, ins[0])?,
        Op::LogSoftmax { axis } => one(g, Op::LogSoftmax { axis: axis + 1 }, ins[0])?,
        Op::TopK {
            k,
            axis,
            largest,
            output,
        } => one(
            g,
            Op::TopK {
                k: *k,
                axis: axis + 1,
                largest: *largest,
                output: *output,
            },
            ins[0],
        )?,
        Op::Reshape | Op::Fft { .. } => one(g, node.op.clone(), ins[0])?,
        Op::Broadcast => {
            let x = lift(g, ins[0], true, b, rank)?;
            one(g, Op::Broadcast, x)?
        }
        Op::Transpose { perm } => {
            let mut p = vec![0];
            p.extend(shift(perm));
            one(g, Op::Transpose { perm: p }, ins[0])?
        }
        Op::Slice(s) => {
            let mut starts = vec![0];
            starts.extend(&s.starts);
            let mut steps = vec![1];
            steps.extend(&s.steps);
            one(g, Op::Slice(SliceSpec { starts, steps }), ins[0])?
        }
        Op::Pad { pads, mode } => {
            let mut p = vec![(0, 0)];
            p.extend(pads);
            let mode: PadMode = *mode;
            one(g, Op::Pad { pads: p, mode }, ins[0])?
        }
        Op::Concat { axis } => {
            let mut lifted = Vec::with_capacity(ins.len());
            for (&x, &bx) in ins.iter().zip(bat) {
                lifted.push(lift(g, x, bx, b, rank)?);
            }
            g.try_node(Op::Concat { axis: axis + 1 }, &lifted, None)?
        }
        Op::GatherElements { axis } | Op::ScatterAdd { axis } => {
            let mut lifted = Vec::with_capacity(ins.len());
            for (&x, &bx) in ins.iter().zip(bat) {
                lifted.push(lift(g, x, bx, b, rank)?);
            }
            let op = match node.op {
                Op::GatherElements { .. } => Op::GatherElements { axis: axis + 1 },
                _ => Op::ScatterAdd { axis: axis + 1 },
            };
            g.try_node(op, &lifted, None)?
        }
        Op::Gather { axis } => batch_gather(g, *axis, ins, bat, b, &node.shape)?,
        Op::Conv { .. } | Op::ConvTranspose { .. } | Op::Pool { .. } | Op::Upsample { .. }
            if bat[0] && !bat[1..].iter().any(|&x| x) =>
        {
            // Fold the vmap batch into the op's own batch dim N.
            let xd = dims(g, ins[0])?;
            let mut folded = vec![xd[0] * xd[1]];
            folded.extend_from_slice(&xd[2..]);
            let x = reshape(g, ins[0], &folded)?;
            let mut inner = ins.to_vec();
            inner[0] = x;
            let mut od = vec![b * node.shape.dim(0).unwrap_or(0)];
            od.extend(
                node.shape
                    .static_dims()
                    .unwrap_or_default()
                    .into_iter()
                    .skip(1),
            );
            let declared =
                ops::needs_declared_shape(&node.op).then(|| Shape::new(&od, node.shape.dtype()));
            let y = g.try_node(node.op.clone(), &inner, declared)?;
            reshape(g, y, &out_shape.static_dims().unwrap_or_default())?
        }
        Op::DequantMatMul { .. } if super::quant::kept_whole(&node.op) => {
            super::quant::batch_dequant_matmul(g, &node.op, ins, bat)?
        }
        Op::Custom(c) => {
            let id = x0.unwrap_or(NodeId(0));
            let ext = super::custom_extension(g, c, id)?;
            let rule = ext
                .vmap
                .ok_or_else(|| super::custom_refusal(g, c, id, "vmap"))?;
            let out = rule(g, c, ins, bat, b)?;
            if g.shape(out) != &out_shape {
                return Err(AutodiffError::InvalidGraph(format!(
                    "the vmap rule of custom op `{}` gave shape {}, expected {out_shape}",
                    c.name,
                    g.shape(out)
                )));
            }
            out
        }
        Op::Input { .. }
        | Op::Param { .. }
        | Op::Constant { .. }
        | Op::Iota { .. }
        | Op::LayerNorm { .. }
        | Op::RmsNorm { .. }
        | Op::GroupNorm { .. }
        | Op::Attention { .. }
        | Op::Rope { .. }
        | Op::Conv { .. }
        | Op::ConvTranspose { .. }
        | Op::Pool { .. }
        | Op::Upsample { .. }
        | Op::ElementwiseRegion { .. }
        | Op::FusedMatMul { .. }
        | Op::FusedConv { .. }
        | Op::AddNorm { .. }
        | Op::GatedMatMul { .. }
        | Op::Dequantize { .. }
        | Op::DequantMatMul { .. }
        | Op::If(_)
        | Op::While(_)
        | Op::Scan(_)
        | Op::CustomFn(_)
        | Op::TupleGet { .. } => {
            return Err(
                match super::no_rule(g, node, x0.unwrap_or(NodeId(0)), "vmap") {
                    AutodiffError::MissingRule { transform, node } => AutodiffError::MissingRule {
                        transform,
                        node: format!("{node} with batched inputs {bat:?}"),
                    },
                    other => other,
                },
            )
        }
    })
}

/// numpy matmul over batched operands: 1-d operands are promoted to
/// matrices, batched ones get size-1 batch axes so the vmap axis lines up,
/// and the promotion is undone at the end.
fn batch_matmul(
    g: &mut Graph,
    node: &Node,
    ins: &[NodeId],
    bat: &[bool],
    b: usize,
) -> Result<NodeId> {
    let per = |g: &Graph, x: NodeId, bx: bool| -> Result<Vec<usize>> {
        let d = dims(g, x)?;
        Ok(if bx { d[1..].to_vec() } else { d })
    };
    let (pa, pb) = (per(g, ins[0], bat[0])?, per(g, ins[1], bat[1])?);
    let batch_rank = pa.len().saturating_sub(2).max(pb.len().saturating_sub(2));
    let promote = |g: &mut Graph, x: NodeId, bx: bool, p: &[usize], lhs: bool| -> Result<NodeId> {
        let mut m = if p.len() == 1 {
            if lhs {
                vec![1, p[0]]
            } else {
                vec![p[0], 1]
            }
        } else {
            p.to_vec()
        };
        if !bx {
            return reshape(g, x, &m);
        }
        // [b, 1.., batch.., r, c] with batch rank `batch_rank`.
        let pad = batch_rank + 2 - m.len();
        let mut d = vec![b];
        d.extend(std::iter::repeat_n(1, pad));
        d.append(&mut m);
        reshape(g, x, &d)
    };
    let a = promote(g, ins[0], bat[0], &pa, true)?;
    let c = promote(g, ins[1], bat[1], &pb, false)?;
    let y = matmul(g, a, c)?;
    let out = with_batch(b, &node.shape)?
        .static_dims()
        .unwrap_or_default();
    reshape(g, y, &out)
}

fn batch_dot_general(
    g: &mut Graph,
    d: &DotDims,
    ins: &[NodeId],
    bat: &[bool],
    b: usize,
) -> Result<NodeId> {
    let (a, c) = match (bat[0], bat[1]) {
        (true, true) => (ins[0], ins[1]),
        (true, false) => (ins[0], lift(g, ins[1], false, b, 0)?),
        (false, true) => (lift(g, ins[0], false, b, 0)?, ins[1]),
        (false, false) => unreachable!("an unbatched node is copied, not batched"),
    };
    let mut lb = vec![0];
    lb.extend(shift(&d.lhs_batch));
    let mut rb = vec![0];
    rb.extend(shift(&d.rhs_batch));
    let dd = DotDims {
        lhs_batch: lb,
        rhs_batch: rb,
        lhs_contract: shift(&d.lhs_contract),
        rhs_contract: shift(&d.rhs_contract),
    };
    Ok(g.try_node(Op::DotGeneral(dd), &[a, c], None)?)
}

/// `take` with a batched operand and / or batched indices.
fn batch_gather(
    g: &mut Graph,
    axis: usize,
    ins: &[NodeId],
    bat: &[bool],
    b: usize,
    per_out: &Shape,
) -> Result<NodeId> {
    let (x, idx) = (ins[0], ins[1]);
    if bat[0] && !bat[1] {
        return Ok(g.try_node(Op::Gather { axis: axis + 1 }, &[x, idx], None)?);
    }
    let xd = dims(g, x)?;
    let (xd_per, x) = if bat[0] {
        (xd[1..].to_vec(), x)
    } else {
        (xd.clone(), x)
    };
    let id = dims(g, idx)?;
    let ir = id.len() - 1; // per-example index rank
    if !bat[0] {
        // take(x, idx_b) puts the batch at `axis`; move it to the front.
        let y = g.try_node(Op::Gather { axis }, &[x, idx], None)?;
        let r = g.shape(y).rank();
        let mut perm = vec![axis];
        perm.extend((0..r).filter(|&i| i != axis));
        return transpose(g, y, &perm);
    }
    // Both batched: gather from [b * A, rest...] with indices offset by row.
    let a_len = xd_per[axis];
    let mut perm = vec![0, axis + 1];
    perm.extend((1..=xd_per.len()).filter(|&i| i != axis + 1));
    let xt = transpose(g, x, &perm)?;
    let mut flat = vec![b * a_len];
    flat.extend(
        xd_per
            .iter()
            .enumerate()
            .filter(|&(i, _)| i != axis)
            .map(|(_, &v)| v),
    );
    let xf = reshape(g, xt, &flat)?;
    let idt = dtype(g, idx);
    let zero = g.scalar(0.0, idt);
    let neg = cmp(g, rlx_ir::op::CmpOp::Lt, idx, zero)?;
    let wrap = g.scalar(a_len as f64, idt);
    let wrapped = add(g, idx, wrap)?;
    let norm = select(g, neg, wrapped, idx)?;
    let mut rows_d = vec![b];
    rows_d.extend(std::iter::repeat_n(1, ir));
    let rows = g.try_node(
        Op::Iota {
            axis: 0,
            start: 0.0,
            step: a_len as f64,
        },
        &[],
        Some(Shape::new(&rows_d, idt)),
    )?;
    let offs = add(g, norm, rows)?;
    let y = g.try_node(Op::Gather { axis: 0 }, &[xf, offs], None)?; // [b, idx.., rest..]
                                                                    // Per-example order: x[:axis] + idx + x[axis+1:].
    let nrest_before = axis;
    let r = g.shape(y).rank();
    let mut p = vec![0];
    p.extend((1 + ir..1 + ir + nrest_before).collect::<Vec<_>>());
    p.extend(1..1 + ir);
    p.extend(1 + ir + nrest_before..r);
    let y = transpose(g, y, &p)?;
    reshape(
        g,
        y,
        &with_batch(b, per_out)?.static_dims().unwrap_or_default(),
    )
}
