//! Matmul epilogue fusion: a matmul whose only reader is an elementwise
//! op or region of the same dims and dtype becomes one `Op::FusedMatMul`;
//! the bias add, activation, scaling or residual add then run on the
//! result tile by tile before it is stored, instead of in a second pass
//! over a materialised product. Runs after elementwise fusion, so the whole
//! elementwise tail of a matmul folds in at once.

use crate::elementwise::{is_elementwise, step_of};
use crate::report::{FusedRegion, FusionKind, FusionReport, MissReason, MissedFusion};
use rlx_ir::op::{ChainOperand, ChainStep};
use rlx_ir::{Graph, IrError, Node, NodeId, NodeOrigin, Op};

/// The epilogue steps of `n` over its own inputs (a region's steps, or one step).
fn steps_of(n: &Node) -> Option<Vec<ChainStep>> {
    match &n.op {
        Op::ElementwiseRegion { steps } => Some(steps.clone()),
        _ if is_elementwise(n) => {
            let operands: Vec<ChainOperand> =
                (0..n.inputs.len()).map(ChainOperand::Input).collect();
            Some(vec![step_of(n, &operands)])
        }
        _ => None,
    }
}

/// Folds each matmul into its elementwise reader where legal.
pub fn fuse_matmul_epilogues(g: &Graph) -> Result<(Graph, FusionReport), IrError> {
    let mut readers: Vec<Vec<NodeId>> = vec![Vec::new(); g.len()];
    for id in g.ids() {
        for &i in &g.node(id).inputs {
            readers[i.index()].push(id);
        }
    }
    let mut is_output = vec![false; g.len()];
    for &o in g.outputs() {
        is_output[o.index()] = true;
    }
    let mut report = FusionReport::default();
    // consumer -> the matmul it absorbs
    let mut absorbs: Vec<Option<NodeId>> = vec![None; g.len()];
    let mut absorbed = vec![false; g.len()];
    for m in g.ids().filter(|&i| matches!(g.node(i).op, Op::MatMul)) {
        let rs = &readers[m.index()];
        let Some(&e) = rs.first() else { continue };
        let en = g.node(e);
        if steps_of(en).is_none() || absorbs[e.index()].is_some() {
            continue;
        }
        let reason = if is_output[m.index()] {
            Some(MissReason::GraphOutput)
        } else if rs.iter().any(|&r| r != e) {
            Some(MissReason::MultipleConsumers)
        } else if en.shape != g.node(m).shape {
            Some(MissReason::BroadcastProducer)
        } else {
            None
        };
        match reason {
            Some(reason) => report.missed.push(MissedFusion {
                producer: m,
                op: "matmul".into(),
                consumer: e,
                reason,
            }),
            None => {
                absorbs[e.index()] = Some(m);
                absorbed[m.index()] = true;
            }
        }
    }

    let mut out = Graph::new(g.name());
    let mut map = vec![NodeId(u32::MAX); g.len()];
    for id in g.ids() {
        let n = g.node(id);
        if absorbed[id.index()] {
            continue; // emitted inside its reader
        }
        map[id.index()] = match absorbs[id.index()] {
            Some(m) => {
                let fused = emit(&mut out, g, id, m, &map)?;
                report.regions.push(FusedRegion {
                    kind: FusionKind::MatMulEpilogue,
                    nodes: vec![m, id],
                    ops: vec!["matmul".into(), n.op.mnemonic()],
                    fused,
                });
                if let Some(name) = &n.name {
                    out.set_name(fused, name.clone());
                }
                fused
            }
            None => {
                let mut node = n.clone();
                node.inputs = n.inputs.iter().map(|i| map[i.index()]).collect();
                out.push_verified(node)
            }
        };
    }
    out.set_outputs(g.outputs().iter().map(|o| map[o.index()]).collect());
    Ok((out, report))
}

fn emit(
    out: &mut Graph,
    g: &Graph,
    e: NodeId,
    m: NodeId,
    map: &[NodeId],
) -> Result<NodeId, IrError> {
    let en = g.node(e);
    let mn = g.node(m);
    let steps = steps_of(en).expect("checked when planning");
    // Region input k of `e` -> epilogue input: the matmul is 0, the rest follow.
    let mut extras: Vec<NodeId> = Vec::new();
    let remap: Vec<usize> = en
        .inputs
        .iter()
        .map(|&i| {
            if i == m {
                0
            } else {
                let mapped = map[i.index()];
                1 + extras.iter().position(|&x| x == mapped).unwrap_or_else(|| {
                    extras.push(mapped);
                    extras.len() - 1
                })
            }
        })
        .collect();
    let operand = |o: ChainOperand| match o {
        ChainOperand::Input(k) => ChainOperand::Input(remap[k]),
        step => step,
    };
    let epilogue: Vec<ChainStep> = steps
        .iter()
        .map(|s| match *s {
            ChainStep::Unary(u, x) => ChainStep::Unary(u, operand(x)),
            ChainStep::Binary(b, x, y) => ChainStep::Binary(b, operand(x), operand(y)),
            ChainStep::Compare(c, x, y) => ChainStep::Compare(c, operand(x), operand(y)),
            ChainStep::Select(c, x, y) => ChainStep::Select(operand(c), operand(x), operand(y)),
            ChainStep::Cast(x, to) => ChainStep::Cast(operand(x), to),
        })
        .collect();
    let mut inputs = vec![map[mn.inputs[0].index()], map[mn.inputs[1].index()]];
    inputs.extend(extras);
    let id = out.try_node(
        Op::FusedMatMul { epilogue },
        &inputs,
        Some(en.shape.clone()),
    )?;
    out.set_origin(
        id,
        NodeOrigin::Pass {
            name: "fusion".into(),
        },
    );
    Ok(id)
}
