//! Head transposes absorbed into attention: a multi-head block projects
//! `[.., S, H * D]`, reshapes to `[.., S, H, D]` and transposes q, k and v
//! to `[.., H, S, D]` for a heads-major `Op::Attention`, whose output is
//! transposed back before the heads merge. Each of those four transposes
//! is a full copy of a small tensor into a fresh buffer (on a 2-core CPU
//! at MiniLM seq 16, ~6% of a run, mostly the misses of writing the
//! copies). With the heads-major op's three operands all such transposes,
//! the block becomes one [`AttentionLayout::SeqMajor`] attention reading
//! the `[.., S, H, D]` values in place; a transpose of its output back to
//! `[.., S, H, Dv]` is absorbed too (else one is emitted, so the value is
//! the same).

use crate::report::{region_of, FusionKind, FusionReport};
use crate::uses::{emit_fused, rebuild, Uses};
use rlx_ir::op::AttentionLayout;
use rlx_ir::{Graph, IrError, NodeId, Op};

struct Plan {
    /// The node the rewrite stands at: the output transpose when absorbed,
    /// else the attention.
    at: NodeId,
    attention: NodeId,
    /// q, k, v before their transposes [, mask] (old ids).
    operands: Vec<NodeId>,
    /// The output transpose is absorbed (`at` is it).
    output_absorbed: bool,
    absorbed: Vec<NodeId>,
}

/// True when `perm` swaps axes rank-3 and rank-2 and keeps the rest.
fn swaps_seq_heads(perm: &[usize]) -> bool {
    let r = perm.len();
    r >= 3
        && perm.iter().enumerate().all(|(i, &p)| {
            p == if i == r - 3 {
                r - 2
            } else if i == r - 2 {
                r - 3
            } else {
                i
            }
        })
}

/// The source of `x` when `x` is a sequence / heads swap.
fn swapped_source(g: &Graph, x: NodeId) -> Option<NodeId> {
    match &g.node(x).op {
        Op::Transpose { perm } if swaps_seq_heads(perm) => Some(g.node(x).inputs[0]),
        _ => None,
    }
}

fn plan(g: &Graph, uses: &Uses, a: NodeId) -> Option<Plan> {
    let n = g.node(a);
    let Op::Attention {
        layout: AttentionLayout::HeadsMajor,
        ..
    } = n.op
    else {
        return None;
    };
    let sources: Vec<NodeId> = n.inputs[..3]
        .iter()
        .map(|&x| swapped_source(g, x))
        .collect::<Option<_>>()?;
    let mut operands = sources;
    operands.extend(n.inputs.get(3));
    // A transpose read by anything else stays for that reader.
    let mut absorbed: Vec<NodeId> = Vec::new();
    for &t in &n.inputs[..3] {
        if uses.readers(t).iter().all(|&r| r == a) && !uses.is_output(t) && !absorbed.contains(&t) {
            absorbed.push(t);
        }
    }
    let back = match uses.readers(a) {
        [t] if !uses.is_output(a) && swapped_source(g, *t) == Some(a) => Some(*t),
        _ => None,
    };
    match back {
        Some(t) => {
            absorbed.push(a);
            Some(Plan {
                at: t,
                attention: a,
                operands,
                output_absorbed: true,
                absorbed,
            })
        }
        None => Some(Plan {
            at: a,
            attention: a,
            operands,
            output_absorbed: false,
            absorbed,
        }),
    }
}

/// Rewrites heads-major attentions whose q, k, v are sequence / heads
/// transposes into sequence-major ones over the transposes' sources.
pub(crate) fn absorb_head_transposes(g: &Graph) -> Result<(Graph, FusionReport), IrError> {
    let uses = Uses::of(g);
    let plans: Vec<Plan> = g.ids().filter_map(|a| plan(g, &uses, a)).collect();
    let mut report = FusionReport::default();
    if plans.is_empty() {
        return Ok((g.clone(), report));
    }
    let out = rebuild(
        g,
        plans.iter().map(|p| (p.at, p.absorbed.clone())),
        |out, k, map| {
            let p = &plans[k];
            let inputs: Vec<NodeId> = p.operands.iter().map(|i| map[i.index()]).collect();
            let Op::Attention {
                mask,
                scale,
                softcap,
                ..
            } = g.node(p.attention).op
            else {
                unreachable!("planned at an attention");
            };
            let op = Op::Attention {
                mask,
                scale,
                softcap,
                layout: AttentionLayout::SeqMajor,
            };
            let seq_major = emit_fused(out, g, p.attention, op, &inputs, None)?;
            let fused = if p.output_absorbed {
                seq_major
            } else {
                rlx_ir::ops::attention::swap_seq_heads_of(out, seq_major)?
            };
            map[p.at.index()] = fused;
            report.regions.push(region_of(
                g,
                FusionKind::AttentionLayout,
                p.absorbed.iter().copied().chain([p.at]),
                fused,
            ));
            Ok(())
        },
    )?;
    Ok((out, report))
}
