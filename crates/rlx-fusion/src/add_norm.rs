//! Residual add + norm fusion: `layer_norm(a + b)` / `rms_norm(a + b)` with
//! `a`, `b` of one shape becomes one `Op::AddNorm`, which adds and
//! normalises a block of rows at a time. When the sum has other readers
//! (a pre-norm block's residual stream) the fused op also writes it: its
//! result is the `[2, ..]` stack of sum and norm, and both are read through
//! views (a contiguous narrow and a reshape), so nothing is copied.

use crate::report::{region_of, FusionKind, FusionReport, MissReason, MissedFusion};
use crate::uses::{emit_fused, rebuild, unstack, Uses};
use rlx_ir::op::BinaryOp;
use rlx_ir::{Graph, IrError, NodeId, Op};

struct Plan {
    sum: NodeId,
    norm: NodeId,
    keep_sum: bool,
    /// The old node at whose place the fused node is emitted.
    at: NodeId,
}

/// The normalised axis and eps of a layer / rms norm node.
fn norm_params(g: &Graph, n: NodeId) -> Option<(usize, f64, bool)> {
    let node = g.node(n);
    match node.op {
        Op::LayerNorm { axis, eps } => Some((axis, eps, false)),
        Op::RmsNorm { eps } => Some((node.shape.rank().checked_sub(1)?, eps, true)),
        _ => None,
    }
}

/// Fuses residual adds into the layer / rms norms that read them.
pub fn fuse_add_norm(g: &Graph) -> Result<(Graph, FusionReport), IrError> {
    let uses = Uses::of(g);
    let mut report = FusionReport::default();
    let mut plans: Vec<Plan> = Vec::new();
    let mut taken = vec![false; g.len()];
    for n in g.ids() {
        if norm_params(g, n).is_none() {
            continue;
        }
        let s = g.node(n).inputs[0];
        let sn = g.node(s);
        let residual = matches!(sn.op, Op::Binary(BinaryOp::Add))
            && sn.inputs.iter().all(|&i| g.shape(i) == &sn.shape);
        if !residual || taken[s.index()] {
            continue;
        }
        let others: Vec<NodeId> = uses
            .readers(s)
            .iter()
            .copied()
            .filter(|&r| r != n)
            .collect();
        let keep_sum = !others.is_empty() || uses.is_output(s);
        // The fused node replaces the sum, so it goes where the sum was;
        // that needs gamma / beta computed by then. Otherwise it goes where
        // the norm was, which needs every other reader of the sum after it.
        let at = if !keep_sum || g.node(n).inputs[1..].iter().all(|&p| p < s) {
            if keep_sum {
                s
            } else {
                n
            }
        } else if others.iter().all(|&r| r > n) {
            n
        } else {
            report.missed.push(MissedFusion {
                producer: s,
                op: "add".into(),
                consumer: n,
                reason: MissReason::OperandOrder,
            });
            continue;
        };
        taken[s.index()] = true;
        plans.push(Plan {
            sum: s,
            norm: n,
            keep_sum,
            at,
        });
    }

    let out = rebuild(
        g,
        plans.iter().map(|p| (p.at, vec![p.sum, p.norm])),
        |out, k, map| {
            let p = &plans[k];
            let (axis, eps, rms) = norm_params(g, p.norm).expect("planned on a norm");
            let mut inputs: Vec<NodeId> = g
                .node(p.sum)
                .inputs
                .iter()
                .map(|i| map[i.index()])
                .collect();
            inputs.extend(g.node(p.norm).inputs[1..].iter().map(|i| map[i.index()]));
            let op = Op::AddNorm {
                axis,
                eps,
                rms,
                keep_sum: p.keep_sum,
            };
            let fused = emit_fused(out, g, p.norm, op, &inputs, None)?;
            if p.keep_sum {
                let shape = g.shape(p.sum).clone();
                map[p.sum.index()] = unstack(out, fused, 0, &shape)?;
                map[p.norm.index()] = unstack(out, fused, 1, &shape)?;
            } else {
                map[p.norm.index()] = fused;
            }
            report
                .regions
                .push(region_of(g, FusionKind::AddNorm, [p.sum, p.norm], fused));
            Ok(())
        },
    )?;
    Ok((out, report))
}
