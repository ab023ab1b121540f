//! Closed-form reverse mode of scaled dot-product attention.
//!
//! The probabilities are recomputed from `q` and `k` (the forward keeps
//! only its inputs), then `dv = Pᵀ dO`, `dS = P ⊙ (dO vᵀ - rowsum(P ⊙ dO vᵀ))`
//! (through the soft-cap's `1 - tanh²` when capped), `dq = scale dS k` and
//! `dk = scale dSᵀ q`; GQA sums the cotangents of the repeated kv heads.
//! A sequence-major attention runs the same rule between transposes of the
//! sequence and heads axes. Forward mode and vmap use the decomposition.

use crate::emit::*;
use crate::rules::norm::softmax_jac;
use crate::Result;
use rlx_ir::op::{AttentionLayout, MaskKind};
use rlx_ir::ops::attention::{attention_parts, swap_seq_heads_of};
use rlx_ir::{Graph, NodeId};

/// Sums the cotangent of heads repeated `[.., Hkv*G, S, D]` back to `kv_dims`.
fn unrepeat(g: &mut Graph, d: NodeId, kv_dims: &[usize]) -> Result<NodeId> {
    let dd = dims(g, d)?;
    let r = dd.len();
    if dd == kv_dims {
        return Ok(d);
    }
    let groups = dd[r - 3] / kv_dims[r - 3];
    let mut split = kv_dims[..r - 2].to_vec();
    split.push(groups);
    split.extend_from_slice(&kv_dims[r - 2..]);
    let s = reshape(g, d, &split)?;
    sum(g, s, &[r - 2], false)
}

/// Input cotangents of `q, k, v [, mask]` given the output cotangent `ct`.
pub fn attention_vjp(
    g: &mut Graph,
    mask: MaskKind,
    scale_by: Option<f64>,
    softcap: Option<f64>,
    layout: AttentionLayout,
    x: &[NodeId],
    ct: NodeId,
) -> Result<Vec<Option<NodeId>>> {
    if layout == AttentionLayout::SeqMajor {
        let mut heads_major = x.to_vec();
        for v in &mut heads_major[..3] {
            *v = swap_seq_heads_of(g, *v)?;
        }
        let ct = swap_seq_heads_of(g, ct)?;
        let mut grads = heads_major_vjp(g, mask, scale_by, softcap, &heads_major, ct)?;
        for d in grads[..3].iter_mut().flatten() {
            *d = swap_seq_heads_of(g, *d)?;
        }
        return Ok(grads);
    }
    heads_major_vjp(g, mask, scale_by, softcap, x, ct)
}

fn heads_major_vjp(
    g: &mut Graph,
    mask: MaskKind,
    scale_by: Option<f64>,
    softcap: Option<f64>,
    x: &[NodeId],
    ct: NodeId,
) -> Result<Vec<Option<NodeId>>> {
    let p = attention_parts(g, x, mask, scale_by, softcap)?;
    let last = g.shape(p.probs).rank() - 1;
    let pt = mt(g, p.probs)?;
    let dv = matmul(g, pt, ct)?;
    let vt = mt(g, p.v)?;
    let dp = matmul(g, ct, vt)?;
    let ds = softmax_jac(g, last, p.probs, dp)?;
    let mut ds_raw = ds;
    if let Some(t) = p.capped {
        let tt = mul(g, t, t)?;
        let one = scalar_like(g, tt, 1.0);
        let d = sub(g, one, tt)?;
        ds_raw = mul(g, ds, d)?;
    }
    let ds_raw = scale(g, ds_raw, p.scale)?;
    let dq = matmul(g, ds_raw, p.k)?;
    let dst = mt(g, ds_raw)?;
    let dk = matmul(g, dst, x[0])?;
    let dk = unrepeat(g, dk, &dims(g, x[1])?)?;
    let dv = unrepeat(g, dv, &dims(g, x[2])?)?;
    let mut out = vec![Some(dq), Some(dk), Some(dv)];
    match mask {
        MaskKind::Bias => out.push(Some(sum_to(g, ds, &dims(g, x[3])?)?)),
        MaskKind::Custom => out.push(None),
        _ => {}
    }
    Ok(out)
}
