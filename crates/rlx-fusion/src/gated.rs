//! Gated-MLP fusion (SwiGLU / GeGLU): `act(x @ w_gate) * (x @ w_up)` with
//! both matmuls reading the same `x` becomes one `Op::GatedMatMul`, which
//! computes the gate product in the output buffer and applies the
//! activation and the product as its epilogue; neither product nor the
//! activation is materialised as a graph value.

use crate::report::{FusionKind, FusionReport, MissReason, MissedFusion};
use crate::uses::{emit_fused, rebuild, Uses};
use rlx_ir::op::{BinaryOp, UnaryOp};
use rlx_ir::{Graph, IrError, NodeId, Op};

struct Plan {
    mul: NodeId,
    act: UnaryOp,
    /// x, w_gate, w_up (old ids).
    operands: [NodeId; 3],
    /// gate matmul, activation, up matmul (old ids, absorbed).
    absorbed: [NodeId; 3],
}

/// `(act, gate matmul)` when `a` is a gate activation of a matmul.
fn gate_of(g: &Graph, a: NodeId) -> Option<(UnaryOp, NodeId)> {
    match g.node(a).op {
        Op::Unary(u @ (UnaryOp::Silu | UnaryOp::Gelu | UnaryOp::GeluApprox)) => {
            let m = g.node(a).inputs[0];
            matches!(g.node(m).op, Op::MatMul).then_some((u, m))
        }
        _ => None,
    }
}

/// Fuses gated MLP products into `Op::GatedMatMul`.
pub fn fuse_gated_matmul(g: &Graph) -> Result<(Graph, FusionReport), IrError> {
    let uses = Uses::of(g);
    let mut report = FusionReport::default();
    let mut plans: Vec<Plan> = Vec::new();
    for mul in g.ids() {
        let n = g.node(mul);
        if !matches!(n.op, Op::Binary(BinaryOp::Mul)) {
            continue;
        }
        let (l, r) = (n.inputs[0], n.inputs[1]);
        let found = [(l, r), (r, l)].into_iter().find_map(|(a, u)| {
            let (act, gm) = gate_of(g, a)?;
            let (gn, un) = (g.node(gm), g.node(u));
            let same_x = matches!(un.op, Op::MatMul) && un.inputs[0] == gn.inputs[0];
            (same_x && gn.shape == n.shape && un.shape == n.shape).then_some((act, gm, a, u))
        });
        let Some((act, gm, a, u)) = found else {
            continue;
        };
        let blocker = [(gm, a), (a, mul), (u, mul)]
            .into_iter()
            .find(|&(p, c)| !uses.only_read_by(p, c));
        if let Some((p, c)) = blocker {
            report.missed.push(MissedFusion {
                producer: p,
                op: g.node(p).op.mnemonic(),
                consumer: c,
                reason: if uses.is_output(p) {
                    MissReason::GraphOutput
                } else {
                    MissReason::MultipleConsumers
                },
            });
            continue;
        }
        let (gn, un) = (g.node(gm), g.node(u));
        plans.push(Plan {
            mul,
            act,
            operands: [gn.inputs[0], gn.inputs[1], un.inputs[1]],
            absorbed: [gm, a, u],
        });
    }

    let out = rebuild(
        g,
        plans.iter().map(|p| (p.mul, p.absorbed.to_vec())),
        |out, k, map| {
            let p = &plans[k];
            let inputs: Vec<NodeId> = p.operands.iter().map(|i| map[i.index()]).collect();
            let op = Op::GatedMatMul { act: p.act };
            let fused = emit_fused(out, g, p.mul, op, &inputs, None)?;
            map[p.mul.index()] = fused;
            report.regions.push(crate::report::region_of(
                g,
                FusionKind::GatedMatMul,
                p.absorbed.iter().copied().chain([p.mul]),
                fused,
            ));
            Ok(())
        },
    )?;
    Ok((out, report))
}
