//! Attention-block recognition: `softmax(q @ kᵀ * scale [+ bias]) @ v`
//! written out of primitives becomes the `Op::Attention` the backend runs
//! natively (the CPU's runs the scores block by block, never materialising
//! the `[.., Sq, Sk]` score and probability tensors as graph values).
//!
//! Spellings recognised: the scale as a `Mul` by a scalar constant or a
//! `Div` by one (`/ sqrt(d)`), on the scores or on q (and / or k) before
//! the product; an additive mask (a `Bias` mask); a `Select` / `Where`
//! that puts `-inf` or a large negative constant (<= -1e4) where a boolean
//! mask says so (a `Custom` mask; a fully masked row is the one case where
//! a finite fill and `-inf` differ); explicit 4-d transposes and reshapes
//! as in ONNX exports. The fused kernel's softmax differs from the
//! unfused one in rounding only (tolerance, not bits; see the tests).

use crate::report::{region_of, FusionKind, FusionReport, MissReason, MissedFusion};
use crate::uses::{emit_fused, rebuild, scalar_value, Uses};
use rlx_ir::op::{AttentionLayout, BinaryOp, MaskKind, UnaryOp};
use rlx_ir::{DType, Graph, IrError, NodeId, Op};

struct Plan {
    out: NodeId,
    /// q, k, v [, mask] (old ids); k may still need `k_perm`.
    operands: Vec<NodeId>,
    /// The transpose that turns operand 1 into k, when simplification
    /// merged k's own transpose into kᵀ's.
    k_perm: Option<Vec<usize>>,
    scale: f64,
    mask: MaskKind,
    /// A boolean mask that marks the masked (not the kept) positions.
    negate_mask: bool,
    absorbed: Vec<NodeId>,
}

/// `(x, factor)` when `t` is `x * c`, `c * x` or `x / c` for a scalar
/// constant `c` and keeps `x`'s shape.
fn scaled_by_constant(g: &Graph, t: NodeId) -> Option<(NodeId, f64)> {
    let n = g.node(t);
    let (a, b) = (*n.inputs.first()?, *n.inputs.get(1)?);
    let (x, factor) = match n.op {
        Op::Binary(BinaryOp::Mul) => [(a, b), (b, a)]
            .into_iter()
            .find_map(|(x, c)| Some((x, scalar_value(g, c)?)))?,
        Op::Binary(BinaryOp::Div) => (a, 1.0 / scalar_value(g, b)?),
        _ => return None,
    };
    (g.shape(x) == &n.shape && factor.is_finite()).then_some((x, factor))
}

/// `(scores matmul, scale, [scaling node])` of the scaled scores `t`.
fn scaled_scores(g: &Graph, t: NodeId) -> Option<(NodeId, f64, Vec<NodeId>)> {
    if matches!(g.node(t).op, Op::MatMul) {
        return Some((t, 1.0, vec![]));
    }
    let (m, scale) = scaled_by_constant(g, t)?;
    matches!(g.node(m).op, Op::MatMul).then(|| (m, scale, vec![t]))
}

/// `operand` without a constant scaling: `(base, factor, scaling node)`.
fn unscaled(g: &Graph, operand: NodeId) -> (NodeId, f64, Option<NodeId>) {
    match scaled_by_constant(g, operand) {
        Some((x, f)) => (x, f, Some(operand)),
        None => (operand, 1.0, None),
    }
}

/// The mask of the softmax input `s`: `(scores, mask, kind, negate)`;
/// `negate` when the boolean mask marks the masked positions.
fn masked_scores(g: &Graph, s: NodeId) -> Option<(NodeId, Option<NodeId>, MaskKind, bool)> {
    let sn = g.node(s);
    match sn.op {
        Op::Binary(BinaryOp::Add) => {
            let (a, b) = (sn.inputs[0], sn.inputs[1]);
            let (t, m) = [(a, b), (b, a)]
                .into_iter()
                .find(|&(t, _)| scaled_scores(g, t).is_some() && g.shape(t) == &sn.shape)?;
            Some((t, Some(m), MaskKind::Bias, false))
        }
        Op::Select => {
            let (c, a, b) = (sn.inputs[0], sn.inputs[1], sn.inputs[2]);
            let masked_fill = |f: NodeId| scalar_value(g, f).is_some_and(|v| v <= -1e4);
            if g.shape(c).dtype() != DType::Bool {
                return None;
            }
            let (t, negate) = if masked_fill(b) {
                (a, false)
            } else if masked_fill(a) {
                (b, true)
            } else {
                return None;
            };
            (scaled_scores(g, t).is_some() && g.shape(t) == &sn.shape).then_some((
                t,
                Some(c),
                MaskKind::Custom,
                negate,
            ))
        }
        _ => Some((s, None, MaskKind::None, false)),
    }
}

fn attention_op(mask: MaskKind, scale: f64) -> Op {
    Op::Attention {
        mask,
        scale: Some(scale),
        softcap: None,
        layout: AttentionLayout::HeadsMajor,
    }
}

/// Recognises one attention block ending at matmul `o`.
fn recognise(g: &Graph, uses: &Uses, o: NodeId) -> Option<Result<Plan, MissedFusion>> {
    let on = g.node(o);
    let (p, v) = (on.inputs[0], on.inputs[1]);
    let pn = g.node(p);
    let r = pn.shape.rank();
    if !matches!(pn.op, Op::Softmax { axis } if axis + 1 == r) || r < 2 {
        return None;
    }
    let s = pn.inputs[0];
    let (t, mask, mask_kind, negate_mask) = masked_scores(g, s)?;
    let mut chain = if t == s { vec![] } else { vec![s] };
    let (mm, mut scale, muls) = scaled_scores(g, t)?;
    chain.extend(muls);
    let mn = g.node(mm);
    // A scale applied to q (or k) before the product.
    let (q, q_factor, q_scaling) = unscaled(g, mn.inputs[0]);
    scale *= q_factor;
    let kt = mn.inputs[1];
    // kᵀ = transpose(src, perm), so k = transpose(src, perm with its last two swapped).
    let Op::Transpose { perm } = &g.node(kt).op else {
        return None;
    };
    let mut k_perm = perm.clone();
    k_perm.swap(r - 2, r - 1);
    let k_perm = (!k_perm.iter().enumerate().all(|(i, &p)| i == p)).then_some(k_perm);
    let (k, k_factor, k_scaling) = unscaled(g, g.node(kt).inputs[0]);
    scale *= k_factor;
    let k_shape = match &k_perm {
        Some(p) => {
            let d = g.shape(k).dims();
            g.shape(k)
                .with_dims(p.iter().map(|&i| d[i].clone()).collect())
        }
        None => g.shape(k).clone(),
    };
    let miss = |producer: NodeId, consumer: NodeId, reason| MissedFusion {
        producer,
        op: g.node(producer).op.mnemonic(),
        consumer,
        reason,
    };
    let (qd, kd, vd) = (g.shape(q).dims(), k_shape.dims(), g.shape(v).dims());
    let same_batch = qd.len() == r
        && kd.len() == r
        && vd.len() == r
        && qd[..r - 2] == kd[..r - 2]
        && kd[..r - 2] == vd[..r - 2]
        && kd[r - 2] == vd[r - 2]
        && g.shape(v).dtype() == g.shape(q).dtype();
    if !same_batch {
        return Some(Err(miss(mm, o, MissReason::ShapeMismatch)));
    }
    // Every interior value is read only by the next step of the block.
    let mut interior = vec![(kt, mm)];
    interior.extend(q_scaling.map(|n| (n, mm)));
    interior.extend(k_scaling.map(|n| (n, kt)));
    let mut path = vec![mm];
    path.extend(chain.iter().rev());
    path.push(p);
    for w in path.windows(2) {
        interior.push((w[0], w[1]));
    }
    interior.push((p, o));
    for (a, b) in interior {
        if !uses.only_read_by(a, b) {
            let reason = if uses.is_output(a) {
                MissReason::GraphOutput
            } else {
                MissReason::MultipleConsumers
            };
            return Some(Err(miss(a, o, reason)));
        }
    }
    let mut operands = vec![q, k, v];
    operands.extend(mask);
    let mut shapes: Vec<&rlx_ir::Shape> = operands.iter().map(|&i| g.shape(i)).collect();
    shapes[1] = &k_shape;
    let op = attention_op(mask_kind, scale);
    if rlx_ir::ops::infer_shape(&op, &shapes, None).as_ref() != Ok(&on.shape) {
        return Some(Err(miss(mm, o, MissReason::ShapeMismatch)));
    }
    let mut absorbed = vec![kt, mm, p];
    absorbed.extend(chain);
    absorbed.extend(q_scaling);
    absorbed.extend(k_scaling);
    Some(Ok(Plan {
        out: o,
        operands,
        k_perm,
        scale,
        mask: mask_kind,
        negate_mask,
        absorbed,
    }))
}

/// Replaces attention blocks written out of primitives by `Op::Attention`,
/// then lets every attention whose q, k, v are head transposes of
/// `[.., S, H, D]` values read those in place (`AttentionLayout::SeqMajor`,
/// see `attention_layout`).
pub fn fuse_attention(g: &Graph) -> Result<(Graph, FusionReport), IrError> {
    let (fused, mut report) = recognise_blocks(g)?;
    let (out, layout) = crate::attention_layout::absorb_head_transposes(&fused)?;
    report.regions.extend(layout.regions);
    Ok((out, report))
}

fn recognise_blocks(g: &Graph) -> Result<(Graph, FusionReport), IrError> {
    let uses = Uses::of(g);
    let mut report = FusionReport::default();
    let mut plans: Vec<Plan> = Vec::new();
    for o in g.ids().filter(|&i| matches!(g.node(i).op, Op::MatMul)) {
        match recognise(g, &uses, o) {
            Some(Ok(p)) => plans.push(p),
            Some(Err(m)) => report.missed.push(m),
            None => {}
        }
    }
    let out = rebuild(
        g,
        plans.iter().map(|p| (p.out, p.absorbed.clone())),
        |out, k, map| {
            let p = &plans[k];
            let mut inputs: Vec<NodeId> = p.operands.iter().map(|i| map[i.index()]).collect();
            if let Some(perm) = &p.k_perm {
                let perm = perm.clone();
                inputs[1] = out.try_node(Op::Transpose { perm }, &[inputs[1]], None)?;
            }
            if p.negate_mask {
                inputs[3] = out.try_node(Op::Unary(UnaryOp::Not), &[inputs[3]], None)?;
            }
            let op = attention_op(p.mask, p.scale);
            let fused = emit_fused(out, g, p.out, op, &inputs, None)?;
            map[p.out.index()] = fused;
            report.regions.push(region_of(
                g,
                FusionKind::Attention,
                p.absorbed.iter().copied().chain([p.out]),
                fused,
            ));
            Ok(())
        },
    )?;
    Ok((out, report))
}
