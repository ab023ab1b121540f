//! Matmul epilogue fusion: a matmul whose only reader is an elementwise
//! op or region of the same dims and dtype becomes one `Op::FusedMatMul`;
//! the bias add, activation, scaling or residual add then run on the
//! result tile by tile before it is stored, instead of in a second pass
//! over a materialised product. Runs after elementwise fusion, so the whole
//! elementwise tail of a matmul folds in at once. A tail that ends by
//! casting to another dtype (mixed precision: a half-precision product,
//! bias and activation, then back to f32) folds in up to the cast, which
//! stays a separate node after the fused matmul.
//!
//! Convs fold their elementwise tails the same way (`Op::FusedConv`: bias,
//! activation, residual add) where the target runs fused convs
//! ([`fuse_epilogues`] with `conv` set).

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
    fuse_epilogues(g, false)
}

/// True for the producers [`fuse_epilogues`] folds a reader into.
fn is_producer(op: &Op, conv: bool) -> bool {
    matches!(op, Op::MatMul) || (conv && matches!(op, Op::Conv { .. }))
}

/// Folds each matmul, and with `conv` each conv, into its elementwise
/// reader where legal.
pub fn fuse_epilogues(g: &Graph, conv: bool) -> Result<(Graph, FusionReport), IrError> {
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
    for m in g.ids().filter(|&i| is_producer(&g.node(i).op, conv)) {
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
                op: producer_name(&g.node(m).op).into(),
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
                let kind = match g.node(m).op {
                    Op::Conv { .. } => FusionKind::ConvEpilogue,
                    _ => FusionKind::MatMulEpilogue,
                };
                report.regions.push(FusedRegion {
                    kind,
                    nodes: vec![m, id],
                    ops: vec![producer_name(&g.node(m).op).into(), n.op.mnemonic()],
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

/// The producer's name in the report.
fn producer_name(op: &Op) -> &'static str {
    match op {
        Op::Conv { .. } => "conv",
        _ => "matmul",
    }
}

/// The fused op of producer `op` with `epilogue`, and how many of the
/// producer's inputs it keeps in front of the extras.
fn fused_op(op: &Op, arity: usize, epilogue: Vec<ChainStep>) -> (Op, usize) {
    match op {
        Op::Conv { window, groups } => (
            Op::FusedConv {
                window: window.clone(),
                groups: *groups,
                bias: arity == 3,
                epilogue,
            },
            arity,
        ),
        _ => (Op::FusedMatMul { epilogue }, 2),
    }
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
    let (op, kept) = fused_op(&mn.op, mn.inputs.len(), epilogue);
    let mut inputs: Vec<NodeId> = mn.inputs[..kept].iter().map(|i| map[i.index()]).collect();
    inputs.extend(extras);
    let id = out.try_node(op, &inputs, Some(mn.shape.clone()))?;
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

    /// conv + bias -> residual add -> relu: with `conv` set the whole tail
    /// folds into one `conv+epilogue` (bias kept as the conv's input 2, the
    /// residual as the epilogue's extra); without it the conv stays.
    #[test]
    fn a_conv_tail_folds_into_a_fused_conv_only_when_asked() {
        let mut g = Graph::new("block");
        let x = g.input("x", Shape::new(&[1, 4, 6, 6], DType::F32));
        let w = g.input("w", Shape::new(&[4, 4, 3, 3], DType::F32));
        let b = g.input("b", Shape::new(&[4], DType::F32));
        let window = rlx_ir::op::Window {
            kernel: vec![],
            stride: vec![1, 1],
            padding: vec![(1, 1), (1, 1)],
            dilation: vec![1, 1],
        };
        let conv = Op::Conv { window, groups: 1 };
        let y = g.try_node(conv, &[x, w, b], None).unwrap();
        let y = g.add(y, x);
        let y = g.relu(y);
        g.set_outputs(vec![y]);
        let (regions, _) = crate::fuse_elementwise(&g, 2).unwrap();
        let (out, report) = fuse_epilogues(&regions, true).unwrap();
        assert_eq!(
            report.of_kind(FusionKind::ConvEpilogue).len(),
            1,
            "{report}"
        );
        let fused: Vec<&Node> = out.nodes().iter().filter(|n| !n.op.is_leaf()).collect();
        assert_eq!(fused.len(), 1, "{out}");
        let Op::FusedConv { bias, epilogue, .. } = &fused[0].op else {
            panic!("{out}");
        };
        assert!(*bias, "{out}");
        assert_eq!(epilogue.len(), 2, "{out}");
        assert_eq!(fused[0].inputs, vec![x, w, b, x], "{out}");
        assert!(rlx_ir::verify_all(&out).is_empty());
        let text = out.to_text();
        assert!(text.contains("conv+epilogue{stride=[1, 1]"), "{text}");
        assert_eq!(rlx_ir::Graph::from_text(&text).unwrap().to_text(), text);

        let (kept, report) = fuse_epilogues(&regions, false).unwrap();
        assert!(report.of_kind(FusionKind::ConvEpilogue).is_empty());
        assert!(kept.nodes().iter().any(|n| matches!(n.op, Op::Conv { .. })));
    }
}
