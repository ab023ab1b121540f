//! Attention family: scaled dot-product attention (every [`MaskKind`]) and rotary embedding.

use super::emit::{bin, reshape, scalar, static_dims, un};
use super::emit_more::narrow;
use super::{arity, broadcast_dims, fmt_dims, InferResult};
use crate::op::{AttentionLayout, BinaryOp, CmpOp, MaskKind, UnaryOp};
use crate::{DType, Dim, Graph, IrError, NodeId, Op, Shape};

pub(crate) fn infer_attention(
    mask: MaskKind,
    layout: AttentionLayout,
    inputs: &[&Shape],
) -> InferResult {
    if layout == AttentionLayout::HeadsMajor {
        return infer_heads_major(mask, inputs);
    }
    // Sequence-major: the heads-major rule over operands with their
    // sequence and heads axes swapped, and the output swapped back.
    let r = inputs.first().map_or(0, |s| s.rank());
    if r < 3 || inputs[..3.min(inputs.len())].iter().any(|s| s.rank() != r) {
        return Err(format!(
            "sequence-major attention needs q, k, v [.., S, H, D] of one rank >= 3, given {}",
            inputs
                .iter()
                .map(|s| s.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    let swapped: Vec<Shape> = inputs
        .iter()
        .enumerate()
        .map(|(i, s)| {
            if i < 3 {
                swap_seq_heads(s)
            } else {
                (*s).clone()
            }
        })
        .collect();
    let refs: Vec<&Shape> = swapped.iter().collect();
    infer_heads_major(mask, &refs).map(|out| swap_seq_heads(&out))
}

/// `s` with its axes rank-3 and rank-2 (sequence and heads) swapped.
fn swap_seq_heads(s: &Shape) -> Shape {
    let mut dims = s.dims().to_vec();
    let r = dims.len();
    dims.swap(r - 3, r - 2);
    s.with_dims(dims)
}

fn infer_heads_major(mask: MaskKind, inputs: &[&Shape]) -> InferResult {
    let needs_mask = matches!(mask, MaskKind::Custom | MaskKind::Bias);
    arity(inputs, 3 + needs_mask as usize, 3 + needs_mask as usize)?;
    let (q, k, v) = (inputs[0], inputs[1], inputs[2]);
    if !q.dtype().is_float() || k.dtype() != q.dtype() || v.dtype() != q.dtype() {
        return Err(format!("q, k, v must share one float dtype: {q}, {k}, {v}"));
    }
    let r = q.rank();
    if r < 2 || k.rank() != r || v.rank() != r {
        return Err(format!("q, k, v must have one rank >= 2: {q}, {k}, {v}"));
    }
    let (sq, d) = (&q.dims()[r - 2], &q.dims()[r - 1]);
    let (sk, dk) = (&k.dims()[r - 2], &k.dims()[r - 1]);
    if d != dk || v.dims()[r - 2] != *sk {
        return Err(format!(
            "q {q}, k {k}, v {v}: head dims or key lengths differ"
        ));
    }
    for i in 0..r - 2 {
        let (qi, ki, vi) = (&q.dims()[i], &k.dims()[i], &v.dims()[i]);
        if ki != vi {
            return Err(format!("k {k} and v {v} differ on axis {i}"));
        }
        let grouped = i + 3 == r
            && matches!((qi, ki), (Dim::Static(a), Dim::Static(b)) if *b > 0 && a % b == 0);
        if qi != ki && !grouped {
            return Err(format!(
                "q {q} and k {k} differ on axis {i} (grouped heads need q heads a multiple of kv heads on axis {})",
                r.saturating_sub(3)
            ));
        }
    }
    if needs_mask {
        let m = inputs[3];
        let want = if mask == MaskKind::Custom {
            DType::Bool
        } else {
            q.dtype()
        };
        if m.dtype() != want {
            return Err(format!("the {mask:?} mask must be {want}, is {m}"));
        }
        let mut scores = q.dims()[..r - 1].to_vec();
        scores.push(sk.clone());
        let b = broadcast_dims(m.dims(), &scores)?;
        if b != scores {
            return Err(format!(
                "the mask {m} does not broadcast to the scores {}",
                fmt_dims(&scores)
            ));
        }
    }
    let mut out = q.dims()[..r - 1].to_vec();
    out.push(v.dims()[r - 1].clone());
    let _ = sq;
    Ok(q.with_dims(out))
}

pub(crate) fn infer_rope(inputs: &[&Shape]) -> InferResult {
    arity(inputs, 3, 3)?;
    let (x, c, s) = (inputs[0], inputs[1], inputs[2]);
    if !x.dtype().is_float() || c.dtype() != x.dtype() || s.dtype() != x.dtype() {
        return Err(format!(
            "x, cos, sin must share one float dtype: {x}, {c}, {s}"
        ));
    }
    let r = x.rank();
    if r < 2 {
        return Err(format!("rope needs x [.., S, D], given {x}"));
    }
    let d = super::static_dim(&x.dims()[r - 1], "the rotary dim")?;
    if d % 2 != 0 {
        return Err(format!("the rotary dim {d} must be even"));
    }
    let want = vec![x.dims()[r - 2].clone(), Dim::Static(d / 2)];
    if c.dims() != want.as_slice() || s.dims() != want.as_slice() {
        return Err(format!("cos {c} and sin {s} must be {}", fmt_dims(&want)));
    }
    Ok(x.clone())
}

/// Repeats kv heads (axis rank-3) `groups` times: `[.., Hkv, S, D] -> [.., Hkv*groups, S, D]`.
fn repeat_heads(g: &mut Graph, x: NodeId, groups: usize) -> Result<NodeId, IrError> {
    let dims = static_dims(g, x, "attention")?;
    let r = dims.len();
    let mut expanded_in = dims[..r - 2].to_vec();
    expanded_in.push(1);
    expanded_in.extend_from_slice(&dims[r - 2..]);
    let x5 = reshape(g, x, &expanded_in)?;
    let mut expanded = expanded_in.clone();
    expanded[r - 2] = groups;
    let dt = g.shape(x).dtype();
    let b = g.try_node(Op::Broadcast, &[x5], Some(Shape::new(&expanded, dt)))?;
    let mut out = dims.clone();
    out[r - 3] *= groups;
    reshape(g, b, &out)
}

/// The intermediate values of the attention decomposition that a reverse
/// rule needs (see [`attention_parts`]).
#[derive(Clone, Copy, Debug)]
pub struct AttentionParts {
    /// k with its heads repeated to q's (GQA), `[.., H, Sk, D]`.
    pub k: NodeId,
    /// v likewise, `[.., H, Sk, Dv]`.
    pub v: NodeId,
    /// The score scale used.
    pub scale: f64,
    /// `tanh(scores / cap)` when soft-capping.
    pub capped: Option<NodeId>,
    /// The probabilities `softmax(scores)`, `[.., H, Sq, Sk]`.
    pub probs: NodeId,
}

pub(crate) fn decompose_attention(
    g: &mut Graph,
    inputs: &[NodeId],
    mask: MaskKind,
    scale: Option<f64>,
    softcap: Option<f64>,
    layout: AttentionLayout,
) -> Result<NodeId, IrError> {
    if layout == AttentionLayout::SeqMajor {
        let mut heads_major = inputs.to_vec();
        for x in &mut heads_major[..3] {
            *x = swap_seq_heads_of(g, *x)?;
        }
        let out = decompose_attention(
            g,
            &heads_major,
            mask,
            scale,
            softcap,
            AttentionLayout::HeadsMajor,
        )?;
        return swap_seq_heads_of(g, out);
    }
    let p = attention_parts(g, inputs, mask, scale, softcap)?;
    g.try_node(Op::MatMul, &[p.probs, p.v], None)
}

/// A transpose of `x` swapping its sequence and heads axes (rank-3 and
/// rank-2): the bridge between the two [`AttentionLayout`]s.
pub fn swap_seq_heads_of(g: &mut Graph, x: NodeId) -> Result<NodeId, IrError> {
    let r = g.shape(x).rank();
    if r < 3 {
        return Err(IrError::InvalidOp {
            op: "attention{layout=seq_major}".into(),
            reason: format!(
                "operands need rank >= 3 ([.., S, H, D]), given {}",
                g.shape(x)
            ),
        });
    }
    let mut perm: Vec<usize> = (0..r).collect();
    perm.swap(r - 3, r - 2);
    g.try_node(Op::Transpose { perm }, &[x], None)
}

/// The attention decomposition up to the probabilities (`probs @ v` is
/// the output).
pub fn attention_parts(
    g: &mut Graph,
    inputs: &[NodeId],
    mask: MaskKind,
    scale: Option<f64>,
    softcap: Option<f64>,
) -> Result<AttentionParts, IrError> {
    let (q, mut k, mut v) = (inputs[0], inputs[1], inputs[2]);
    let qd = static_dims(g, q, "attention")?;
    let kd = static_dims(g, k, "attention")?;
    let r = qd.len();
    let dt = g.shape(q).dtype();
    if r >= 3 && qd[r - 3] != kd[r - 3] {
        let groups = qd[r - 3] / kd[r - 3];
        k = repeat_heads(g, k, groups)?;
        v = repeat_heads(g, v, groups)?;
    }
    let mut perm: Vec<usize> = (0..r).collect();
    perm.swap(r - 2, r - 1);
    let kt = g.try_node(Op::Transpose { perm }, &[k], None)?;
    let mut s = g.try_node(Op::MatMul, &[q, kt], None)?;
    let scale = scale.unwrap_or(1.0 / (qd[r - 1] as f64).sqrt());
    let sc = scalar(g, scale, dt);
    s = bin(g, BinaryOp::Mul, s, sc)?;
    let mut capped = None;
    if let Some(cap) = softcap {
        let c = scalar(g, cap, dt);
        let t = bin(g, BinaryOp::Div, s, c)?;
        let t = un(g, UnaryOp::Tanh, t)?;
        capped = Some(t);
        s = bin(g, BinaryOp::Mul, t, c)?;
    }
    let (sq, sk) = (qd[r - 2], kd[r - 2]);
    let keep = match mask {
        MaskKind::None | MaskKind::Bias => None,
        MaskKind::Custom => Some(inputs[3]),
        MaskKind::Causal | MaskKind::SlidingWindow(_) => {
            let row = g.try_node(
                Op::Iota {
                    axis: 0,
                    start: 0.0,
                    step: 1.0,
                },
                &[],
                Some(Shape::new(&[sq, sk], DType::I64)),
            )?;
            let col = g.try_node(
                Op::Iota {
                    axis: 1,
                    start: 0.0,
                    step: 1.0,
                },
                &[],
                Some(Shape::new(&[sq, sk], DType::I64)),
            )?;
            let off = scalar(g, sk as f64 - sq as f64, DType::I64);
            let diag = bin(g, BinaryOp::Add, row, off)?;
            let mut keep = g.try_node(Op::Compare(CmpOp::Le), &[col, diag], None)?;
            if let MaskKind::SlidingWindow(w) = mask {
                let wn = scalar(g, w as f64, DType::I64);
                let lo = bin(g, BinaryOp::Sub, diag, wn)?;
                let above = g.try_node(Op::Compare(CmpOp::Gt), &[col, lo], None)?;
                keep = bin(g, BinaryOp::And, keep, above)?;
            }
            Some(keep)
        }
    };
    if let Some(keep) = keep {
        let ninf = scalar(g, f64::NEG_INFINITY, dt);
        s = g.try_node(Op::Select, &[keep, s, ninf], None)?;
    }
    if mask == MaskKind::Bias {
        s = bin(g, BinaryOp::Add, s, inputs[3])?;
    }
    let probs = super::norm::decompose_softmax(g, s, r - 1, false)?;
    Ok(AttentionParts {
        k,
        v,
        scale,
        capped,
        probs,
    })
}

pub(crate) fn decompose_rope(
    g: &mut Graph,
    inputs: &[NodeId],
    interleaved: bool,
) -> Result<NodeId, IrError> {
    let (x, cos, sin) = (inputs[0], inputs[1], inputs[2]);
    let dims = static_dims(g, x, "rope")?;
    let r = dims.len();
    let d = dims[r - 1];
    let rotate = |g: &mut Graph, x1, x2, cos, sin| -> Result<(NodeId, NodeId), IrError> {
        let a = bin(g, BinaryOp::Mul, x1, cos)?;
        let b = bin(g, BinaryOp::Mul, x2, sin)?;
        let o1 = bin(g, BinaryOp::Sub, a, b)?;
        let c = bin(g, BinaryOp::Mul, x2, cos)?;
        let e = bin(g, BinaryOp::Mul, x1, sin)?;
        let o2 = bin(g, BinaryOp::Add, c, e)?;
        Ok((o1, o2))
    };
    if !interleaved {
        let x1 = narrow(g, x, r - 1, 0, d / 2)?;
        let x2 = narrow(g, x, r - 1, d / 2, d)?;
        let (o1, o2) = rotate(g, x1, x2, cos, sin)?;
        return g.try_node(Op::Concat { axis: r - 1 }, &[o1, o2], None);
    }
    let mut pairs = dims[..r - 1].to_vec();
    pairs.extend([d / 2, 2]);
    let xp = reshape(g, x, &pairs)?;
    let x1 = narrow(g, xp, r, 0, 1)?;
    let x2 = narrow(g, xp, r, 1, 2)?;
    let s = dims[r - 2];
    let c3 = reshape(g, cos, &[s, d / 2, 1])?;
    let s3 = reshape(g, sin, &[s, d / 2, 1])?;
    let (o1, o2) = rotate(g, x1, x2, c3, s3)?;
    let o = g.try_node(Op::Concat { axis: r }, &[o1, o2], None)?;
    reshape(g, o, &dims)
}
