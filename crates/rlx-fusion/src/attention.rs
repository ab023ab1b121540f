//! Attention-block recognition: `softmax(q @ kᵀ * scale [+ bias]) @ v`
//! written out of primitives becomes the `Op::Attention` the backend runs
//! natively (the CPU's runs the scores block by block, never materialising
//! the `[.., Sq, Sk]` score and probability tensors as graph values).
//! The scale must be a scalar constant; an additive mask becomes a `Bias`
//! mask. The fused kernel's softmax differs from the unfused one in
//! rounding only (tolerance, not bits; see the equivalence tests).

use crate::report::{region_of, FusionKind, FusionReport, MissReason, MissedFusion};
use crate::uses::{emit_fused, rebuild, Uses};
use rlx_ir::op::{BinaryOp, MaskKind};
use rlx_ir::{Graph, HostTensor, IrError, NodeId, Op};

struct Plan {
    out: NodeId,
    /// q, k, v [, mask] (old ids); k may still need `k_perm`.
    operands: Vec<NodeId>,
    /// The transpose that turns operand 1 into k, when simplification
    /// merged k's own transpose into kᵀ's.
    k_perm: Option<Vec<usize>>,
    scale: f64,
    absorbed: Vec<NodeId>,
}

/// The value of a scalar (one-element) float constant.
fn scalar_value(g: &Graph, c: NodeId) -> Option<f64> {
    let n = g.node(c);
    let Op::Constant { bytes } = &n.op else {
        return None;
    };
    let dims = n.shape.static_dims()?;
    if dims.iter().product::<usize>() != 1 || !n.shape.dtype().is_float() {
        return None;
    }
    let t = HostTensor::from_bytes(n.shape.dtype(), &dims, bytes.clone()).ok()?;
    t.to_f64_lossy().first().copied()
}

/// `(scores matmul, scale, [mul node])` of the scaled scores `t`.
fn scaled_scores(g: &Graph, t: NodeId) -> Option<(NodeId, f64, Vec<NodeId>)> {
    let n = g.node(t);
    match n.op {
        Op::MatMul => Some((t, 1.0, vec![])),
        Op::Binary(BinaryOp::Mul) => {
            let (a, b) = (n.inputs[0], n.inputs[1]);
            [(a, b), (b, a)].into_iter().find_map(|(m, c)| {
                let scale = scalar_value(g, c)?;
                (matches!(g.node(m).op, Op::MatMul) && g.shape(m) == &n.shape)
                    .then(|| (m, scale, vec![t]))
            })
        }
        _ => None,
    }
}

fn attention_op(bias: bool, scale: f64) -> Op {
    Op::Attention {
        mask: if bias { MaskKind::Bias } else { MaskKind::None },
        scale: Some(scale),
        softcap: None,
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
    let sn = g.node(s);
    // An additive float mask: softmax(t + mask).
    let (t, mask, mut chain) = match sn.op {
        Op::Binary(BinaryOp::Add) => {
            let (a, b) = (sn.inputs[0], sn.inputs[1]);
            let (t, m) = [(a, b), (b, a)]
                .into_iter()
                .find(|&(t, _)| scaled_scores(g, t).is_some() && g.shape(t) == &sn.shape)?;
            (t, Some(m), vec![s])
        }
        _ => (s, None, vec![]),
    };
    let (mm, scale, muls) = scaled_scores(g, t)?;
    chain.extend(muls);
    let mn = g.node(mm);
    let (q, kt) = (mn.inputs[0], mn.inputs[1]);
    // kᵀ = transpose(src, perm), so k = transpose(src, perm with its last two swapped).
    let Op::Transpose { perm } = &g.node(kt).op else {
        return None;
    };
    let mut k_perm = perm.clone();
    k_perm.swap(r - 2, r - 1);
    let k_perm = (!k_perm.iter().enumerate().all(|(i, &p)| i == p)).then_some(k_perm);
    let k = g.node(kt).inputs[0];
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
    let op = attention_op(mask.is_some(), scale);
    if rlx_ir::ops::infer_shape(&op, &shapes, None).as_ref() != Ok(&on.shape) {
        return Some(Err(miss(mm, o, MissReason::ShapeMismatch)));
    }
    let mut absorbed = vec![kt, mm, p];
    absorbed.extend(chain);
    Some(Ok(Plan {
        out: o,
        operands,
        k_perm,
        scale,
        absorbed,
    }))
}

/// Replaces attention blocks written out of primitives by `Op::Attention`.
pub fn fuse_attention(g: &Graph) -> Result<(Graph, FusionReport), IrError> {
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
            let op = attention_op(p.operands.len() == 4, p.scale);
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
