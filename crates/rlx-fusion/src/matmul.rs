//! Matmul epilogue fusion: a matmul whose only reader is an elementwise
//! op or region of the same dims and dtype becomes one `Op::FusedMatMul`;
//! the bias add, activation, scaling or residual add then run on the
//! result tile by tile before it is stored, instead of in a second pass
//! over a materialised product. Runs after elementwise fusion, so the whole
//! elementwise tail of a matmul folds in at once. A tail that ends by
//! casting to another dtype (mixed precision: a half-precision product,
//! bias and activation, then back to f32) folds in up to the cast, which
//! stays a separate node after the fused matmul.

use crate::elementwise::{is_elementwise, step_of};
use crate::report::{FusedRegion, FusionKind, FusionReport, MissReason, MissedFusion};
use rlx_ir::op::{ChainOperand, ChainStep};
use rlx_ir::{DType, Graph, IrError, Node, NodeId, NodeOrigin, Op};

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

/// The epilogue of reader `e` of matmul `m`: its steps, and the dtype of a
/// final cast left out of them (`None` when `e` keeps `m`'s dtype).
fn epilogue_of(g: &Graph, e: NodeId, m: NodeId) -> Option<(Vec<ChainStep>, Option<DType>)> {
    let (en, ms) = (g.node(e), g.shape(m));
    let steps = steps_of(en)?;
    if &en.shape == ms {
        return Some((steps, None));
    }
    let n = steps.len();
    let ChainStep::Cast(ChainOperand::Step(k), to) = steps.last()? else {
        return None;
    };
    if n < 2 || *k != n - 2 || to != &en.shape.dtype() || en.shape.dims() != ms.dims() {
        return None;
    }
    let prefix = steps[..n - 1].to_vec();
    let shapes: Vec<&rlx_ir::Shape> = en.inputs.iter().map(|&i| g.shape(i)).collect();
    let op = Op::ElementwiseRegion {
        steps: prefix.clone(),
    };
    (rlx_ir::ops::infer_shape(&op, &shapes, None).as_ref() == Ok(ms)).then_some((prefix, Some(*to)))
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
        } else if epilogue_of(g, e, m).is_none() {
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
    let (steps, cast_to) = epilogue_of(g, e, m).expect("checked when planning");
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
        Some(mn.shape.clone()),
    )?;
    let origin = NodeOrigin::Pass {
        name: "fusion".into(),
    };
    out.set_origin(id, origin.clone());
    let Some(to) = cast_to else {
        return Ok(id);
    };
    let cast = out.try_node(Op::Cast, &[id], Some(mn.shape.with_dtype(to)))?;
    out.set_origin(cast, origin);
    Ok(cast)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rlx_ir::{GraphExt, Shape};

    #[test]
    fn a_tail_that_casts_back_to_f32_folds_in_up_to_the_cast() {
        let mut g = Graph::new("half");
        let x = g.input("x", Shape::new(&[4, 8], DType::F16));
        let w = g.input("w", Shape::new(&[8, 6], DType::F16));
        let b = g.input("b", Shape::new(&[6], DType::F16));
        let y = g.mm(x, w);
        let y = g.add(y, b);
        let y = g.cast(y, DType::F32);
        g.set_outputs(vec![y]);
        let (regions, _) = crate::fuse_elementwise(&g, 2).unwrap();
        let (out, report) = fuse_matmul_epilogues(&regions).unwrap();
        assert_eq!(
            report.of_kind(FusionKind::MatMulEpilogue).len(),
            1,
            "{report}"
        );
        let ops: Vec<String> = out
            .nodes()
            .iter()
            .filter(|n| !n.op.is_leaf())
            .map(|n| n.op.mnemonic())
            .collect();
        assert_eq!(ops.len(), 2, "{out}");
        assert!(ops[0].starts_with("matmul+epilogue"), "{out}");
        assert_eq!(ops[1], "cast", "{out}");
        assert_eq!(out.shape(out.outputs()[0]).dtype(), DType::F32);
        assert!(rlx_ir::verify_all(&out).is_empty());
    }
}
