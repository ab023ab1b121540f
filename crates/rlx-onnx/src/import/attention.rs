//! Attention and RotaryEmbedding. Attention (opset 23): 3-d or 4-d Q / K / V, grouped heads, scale,
//! soft-cap, boolean or additive masks (shorter masks padded as masked),
//! causal masking aligned after the past, past / present key-value caches,
//! an external cache's per-batch valid key lengths (`nonpad_kv_seqlen`, the
//! causal frontier at each row's end), and the `qk_matmul_output` output. Composed in the reference's order:
//! `softmax(softcap(Q K^T * scale) + bias)` in f32, fully masked rows zeroed,
//! times V.

use super::elementwise::{cmp_scalar, select};
use super::NodeCx;
use crate::Result;
use rlx_ir::op::{BinaryOp as B, CmpOp, PadMode, ReduceOp, UnaryOp as U};
use rlx_ir::{DType, Dim, NodeId, Op};

op_table! {
    "Attention" => attention,
    "RotaryEmbedding" => rotary_embedding,
}

/// `[B, S, H*D]` -> `[B, H, S, D]`.
fn split_heads(cx: &mut NodeCx, x: NodeId, heads: usize) -> Result<NodeId> {
    let d = cx.static_dims(x, "Attention")?;
    if heads == 0 || d[2] % heads != 0 {
        return Err(cx.err(format!(
            "hidden size {} is not divisible by {heads} heads",
            d[2]
        )));
    }
    let y = cx.reshape_static(x, &[d[0], d[1], heads, d[2] / heads])?;
    cx.transpose(y, vec![0, 2, 1, 3])
}

/// Repeats each of `kvh` heads `groups` times: `[B, kvh, T, D]` -> `[B, kvh*groups, T, D]`.
fn repeat_heads(cx: &mut NodeCx, x: NodeId, groups: usize) -> Result<NodeId> {
    if groups == 1 {
        return Ok(x);
    }
    let d = cx.static_dims(x, "Attention")?;
    let y = cx.reshape_static(x, &[d[0], d[1], 1, d[2], d[3]])?;
    let y = cx.broadcast(
        y,
        [d[0], d[1], groups, d[2], d[3]]
            .iter()
            .map(|&n| Dim::Static(n))
            .collect(),
    )?;
    cx.reshape_static(y, &[d[0], d[1] * groups, d[2], d[3]])
}

fn attention(cx: &mut NodeCx) -> Result<Vec<NodeId>> {
    let kv_seqlen = cx.opt(6);
    if kv_seqlen.is_some() && cx.opt(4).is_some() {
        return Err(cx.err("nonpad_kv_seqlen cannot be combined with past_key / past_value"));
    }
    let (q, k, v) = (cx.x(0)?, cx.x(1)?, cx.x(2)?);
    let dt = cx.dtype(q);
    for v in [q, k, v] {
        if !(3..=4).contains(&cx.rank(v)) || cx.rank(v) != cx.rank(q) {
            return Err(cx.err(format!(
                "Q, K, V must all be 3-d or all 4-d, one is {}",
                cx.shape(v)
            )));
        }
    }
    let three_d = cx.rank(q) == 3;
    let (q, k, v) = if three_d {
        let qh = cx.attr_i("q_num_heads", 0).max(0) as usize;
        let kvh = cx.attr_i("kv_num_heads", 0).max(0) as usize;
        (
            split_heads(cx, q, qh)?,
            split_heads(cx, k, kvh)?,
            split_heads(cx, v, kvh)?,
        )
    } else {
        (q, k, v)
    };
    let (mut k, mut v) = (k, v);
    let mut past_len = 0;
    if let (Some(pk), Some(pv)) = (cx.opt(4), cx.opt(5)) {
        past_len = *cx
            .static_dims(pk, "past_key")?
            .get(2)
            .ok_or_else(|| cx.err("past_key must be 4-d"))?;
        k = cx.node(Op::Concat { axis: 2 }, &[pk, k], None)?;
        v = cx.node(Op::Concat { axis: 2 }, &[pv, v], None)?;
    }
    let (present_k, present_v) = (k, v);
    let qd = cx.static_dims(q, "Attention Q")?;
    let kd = cx.static_dims(k, "Attention K")?;
    let (s, t, head) = (qd[2], kd[2], qd[3]);
    if kd[1] == 0 || qd[1] % kd[1] != 0 {
        return Err(cx.err(format!(
            "{} query heads do not group over {} key heads",
            qd[1], kd[1]
        )));
    }
    let groups = qd[1] / kd[1];
    // Half-precision inputs compute in f32 (as the reference does).
    let work = if matches!(dt, DType::F16 | DType::BF16) {
        DType::F32
    } else {
        dt
    };
    let (q, k, v) = (cx.cast(q, work)?, cx.cast(k, work)?, cx.cast(v, work)?);
    let kr = repeat_heads(cx, k, groups)?;
    let vr = repeat_heads(cx, v, groups)?;
    // Q and K^T each scaled by sqrt(scale), the scale computed in f32.
    let scale = if cx.has_attr("scale") {
        cx.attr_f("scale", 1.0) as f32
    } else {
        1.0 / (head as f32).sqrt()
    };
    let root = scale.sqrt() as f64;
    let qs = cx.bin_scalar(B::Mul, q, root)?;
    let kt = cx.transpose(kr, vec![0, 1, 3, 2])?;
    let ks = cx.bin_scalar(B::Mul, kt, root)?;
    let qk = cx.node(Op::MatMul, &[qs, ks], None)?;
    let qk32 = cx.cast(qk, DType::F32)?;
    let softcap = cx.attr_f("softcap", 0.0);
    let capped = if softcap > 0.0 {
        let d = cx.bin_scalar(B::Div, qk32, softcap)?;
        let th = cx.un(U::Tanh, d)?;
        cx.bin_scalar(B::Mul, th, softcap)?
    } else {
        qk32
    };
    let frontier = match kv_seqlen {
        Some(l) => Frontier::PerBatch(l, qd[0]),
        None => Frontier::Past(past_len),
    };
    let bias = attention_bias(cx, s, t, frontier)?;
    let scores = match bias {
        Some(b) => cx.bin(B::Add, capped, b)?,
        None => capped,
    };
    let r = cx.rank(scores);
    let p = cx.node(Op::Softmax { axis: r - 1 }, &[scores], None)?;
    let p = match bias {
        Some(b) => {
            // Rows whose every key is masked attend to nothing.
            let row_max = cx.reduce(ReduceOp::Max, b, vec![cx.rank(b).saturating_sub(1)], true)?;
            let all = cmp_scalar(cx, CmpOp::Eq, row_max, f64::NEG_INFINITY)?;
            let zero = cx.scalar(0.0, DType::F32);
            select(cx, all, zero, p)?
        }
        None => p,
    };
    let p = cx.cast(p, work)?;
    let mut y = cx.node(Op::MatMul, &[p, vr], None)?;
    y = cx.cast(y, dt)?;
    if three_d {
        let yd = cx.static_dims(y, "Attention Y")?;
        let yt = cx.transpose(y, vec![0, 2, 1, 3])?;
        y = cx.reshape_static(yt, &[yd[0], yd[2], yd[1] * yd[3]])?;
    }
    let mut outs = vec![y, present_k, present_v];
    if cx.wants_output(3) {
        let out = match cx.attr_i("qk_matmul_output_mode", 0) {
            0 => qk32,
            1 if softcap > 0.0 => capped,
            1 | 2 => scores,
            _ => p,
        };
        outs.push(cx.cast(out, dt)?);
    }
    Ok(outs)
}

/// Where the queries sit among the keys: after a past cache of a fixed length,
/// or (an external cache, `nonpad_kv_seqlen [B]`) at the end of each batch
/// row's valid keys, the keys past them masked.
#[derive(Clone, Copy)]
enum Frontier {
    Past(usize),
    PerBatch(NodeId, usize),
}

/// The additive f32 bias `[.., S, T]` of the mask input, `is_causal`, the
/// sliding window and the valid key lengths.
fn attention_bias(
    cx: &mut NodeCx,
    s: usize,
    t: usize,
    frontier: Frontier,
) -> Result<Option<NodeId>> {
    let mut bias = None;
    if let Some(m) = cx.opt(3) {
        let mut m = if cx.dtype(m) == DType::Bool {
            let zero = cx.scalar(0.0, DType::F32);
            let ninf = cx.scalar(f64::NEG_INFINITY, DType::F32);
            select(cx, m, zero, ninf)?
        } else {
            cx.cast(m, DType::F32)?
        };
        // A mask shorter than the keys leaves the rest masked.
        let md = cx.static_dims(m, "attn_mask")?;
        let last = md
            .len()
            .checked_sub(1)
            .ok_or_else(|| cx.err("attn_mask must have rank >= 1"))?;
        if md[last] < t {
            let mut pads = vec![(0, 0); md.len()];
            pads[last] = (0, t - md[last]);
            m = cx.node(
                Op::Pad {
                    pads,
                    mode: PadMode::Constant(f64::NEG_INFINITY),
                },
                &[m],
                None,
            )?;
        }
        bias = Some(m);
    }
    // Causal and sliding-window limits on `key - (query + past)`.
    let left = cx.attr_i("left_window_size", -1);
    let mut right = cx.attr_i("right_window_size", -1);
    if cx.attr_i("is_causal", 0) != 0 {
        right = if right < 0 { 0 } else { right.min(0) };
    }
    if left >= 0 || right >= 0 {
        let diff = match frontier {
            Frontier::Past(past_len) => super::indexing::col_minus_row(cx, s, t, past_len)?,
            Frontier::PerBatch(lens, b) => {
                // key - (query + len_b - S), one [S, T] plane per batch row.
                let plane = super::indexing::col_minus_row(cx, s, t, 0)?;
                let lens = batch_lens(cx, lens, b)?;
                let offset = cx.bin_scalar(B::Sub, lens, s as f64)?;
                cx.bin(B::Sub, plane, offset)?
            }
        };
        let mut hidden: Option<NodeId> = None;
        for (limit, op) in [(right, CmpOp::Gt), (-left, CmpOp::Lt)] {
            if (op == CmpOp::Gt && right < 0) || (op == CmpOp::Lt && left < 0) {
                continue;
            }
            let h = cmp_scalar(cx, op, diff, limit as f64)?;
            hidden = Some(match hidden {
                Some(p) => cx.bin(B::Or, p, h)?,
                None => h,
            });
        }
        if let Some(h) = hidden {
            bias = Some(hide(cx, bias, h)?);
        }
    }
    if let Frontier::PerBatch(lens, b) = frontier {
        let lens = batch_lens(cx, lens, b)?;
        let key = cx.iota_i64(&[1, 1, 1, t], 3)?;
        let padded = cx.node(Op::Compare(CmpOp::Ge), &[key, lens], None)?;
        bias = Some(hide(cx, bias, padded)?);
    }
    Ok(bias)
}

/// `bias` plus -inf where `hidden` holds (0 elsewhere).
fn hide(cx: &mut NodeCx, bias: Option<NodeId>, hidden: NodeId) -> Result<NodeId> {
    let zero = cx.scalar(0.0, DType::F32);
    let ninf = cx.scalar(f64::NEG_INFINITY, DType::F32);
    let c = select(cx, hidden, ninf, zero)?;
    match bias {
        Some(b) => cx.bin(B::Add, b, c),
        None => Ok(c),
    }
}

/// `nonpad_kv_seqlen [B]` as I64 `[B, 1, 1, 1]`, checked against the batch.
fn batch_lens(cx: &mut NodeCx, lens: NodeId, batch: usize) -> Result<NodeId> {
    let d = cx.static_dims(lens, "nonpad_kv_seqlen")?;
    if d != [batch] {
        return Err(cx.err(format!(
            "nonpad_kv_seqlen must be [{batch}] (one length per batch row), given {d:?}"
        )));
    }
    let l = cx.cast(lens, DType::I64)?;
    cx.reshape_static(l, &[batch, 1, 1, 1])
}

/// RotaryEmbedding (opset 23): rotates the first `rotary_embedding_dim`
/// features of each head by the cached angles (halves, or interleaved pairs).
fn rotary_embedding(cx: &mut NodeCx) -> Result<Vec<NodeId>> {
    let (x, cos_cache, sin_cache) = (cx.x(0)?, cx.x(1)?, cx.x(2)?);
    let xd = cx.static_dims(x, "RotaryEmbedding")?;
    // Work in [B, S, H, D].
    let y = match xd.len() {
        4 => cx.transpose(x, vec![0, 2, 1, 3])?,
        3 => {
            let h = cx.attr_i("num_heads", 0).max(0) as usize;
            if h == 0 || xd[2] % h != 0 {
                return Err(cx.err(format!("num_heads {h} does not divide {}", xd[2])));
            }
            cx.reshape_static(x, &[xd[0], xd[1], h, xd[2] / h])?
        }
        _ => return Err(cx.err("input must be 3-d or 4-d")),
    };
    let yd = cx.static_dims(y, "RotaryEmbedding")?;
    let d = yd[3];
    let rot = match cx.attr_i("rotary_embedding_dim", 0) {
        0 => d,
        r => r.max(0) as usize,
    };
    if rot > d || rot % 2 != 0 {
        return Err(cx.err(format!(
            "rotary_embedding_dim {rot} does not fit head size {d}"
        )));
    }
    let (mut cos, mut sin) = (cos_cache, sin_cache);
    if let Some(pos) = cx.opt(3) {
        cos = cx.node(Op::Gather { axis: 0 }, &[cos, pos], None)?;
        sin = cx.node(Op::Gather { axis: 0 }, &[sin, pos], None)?;
    }
    // [B, S, rot/2] -> [B, S, 1, rot/2], sliced to the rotated half-width.
    let cd = cx.static_dims(cos, "cos_cache")?;
    if cd.is_empty() || cx.rank(sin) != cd.len() {
        return Err(cx.err("cos_cache / sin_cache ranks do not match"));
    }
    let half = rot / 2;
    let cos = cx.slice_axis(cos, cd.len() - 1, 0, half, 1)?;
    let sin = cx.slice_axis(sin, cd.len() - 1, 0, half, 1)?;
    let cos = cx.reshape_static(cos, &[yd[0], yd[1], 1, half])?;
    let sin = cx.reshape_static(sin, &[yd[0], yd[1], 1, half])?;
    let xr = cx.slice_axis(y, 3, 0, rot, 1)?;
    let interleaved = cx.attr_i("interleaved", 0) != 0;
    let (x1, x2) = if interleaved {
        (
            cx.slice_axis(xr, 3, 0, half, 2)?,
            cx.slice_axis(xr, 3, 1, half, 2)?,
        )
    } else {
        (
            cx.slice_axis(xr, 3, 0, half, 1)?,
            cx.slice_axis(xr, 3, half, half, 1)?,
        )
    };
    let (c1, s2) = (cx.bin(B::Mul, cos, x1)?, cx.bin(B::Mul, sin, x2)?);
    let real = cx.bin(B::Sub, c1, s2)?;
    let (s1, c2) = (cx.bin(B::Mul, sin, x1)?, cx.bin(B::Mul, cos, x2)?);
    let imag = cx.bin(B::Add, s1, c2)?;
    let rotated = if interleaved {
        let pair = [yd[0], yd[1], yd[2], half, 1];
        let r = cx.reshape_static(real, &pair)?;
        let i = cx.reshape_static(imag, &pair)?;
        let both = cx.node(Op::Concat { axis: 4 }, &[r, i], None)?;
        cx.reshape_static(both, &[yd[0], yd[1], yd[2], rot])?
    } else {
        cx.node(Op::Concat { axis: 3 }, &[real, imag], None)?
    };
    let out = if rot < d {
        let rest = cx.slice_axis(y, 3, rot, d - rot, 1)?;
        cx.node(Op::Concat { axis: 3 }, &[rotated, rest], None)?
    } else {
        rotated
    };
    let out = match xd.len() {
        4 => cx.transpose(out, vec![0, 2, 1, 3])?,
        _ => cx.reshape_static(out, &xd)?,
    };
    Ok(vec![out])
}
