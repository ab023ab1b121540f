//! `Op::FusedMatMul` (what the epilogue fusion pass makes of a matmul and
//! its elementwise tail): a bias per output column, alone or under a ReLU
//! or a tanh GELU, becomes one [`Kernel::GemmBias`] step (cuBLASLt's fused
//! epilogue); any other epilogue becomes the GEMM into scratch, then the
//! epilogue's decomposition step by step (intermediates in scratch past
//! the memory plan's arena, the last step into the node's place).
//! `Op::ElementwiseRegion` is planned the same way (claimed so that the
//! elementwise fusion pass gathers a bias add and its activation into one
//! region, which the epilogue pass then folds into the matmul).

use super::build::kernel_for;
use super::gemm::matmul;
use super::{Buf, CopyPiece, Epilogue, Kernel, Region, Step};
use rlx_ir::op::{BinaryOp, ChainOperand as In, ChainStep, UnaryOp};
use rlx_ir::ops::region::{decompose_fused_matmul, decompose_region};
use rlx_ir::{node_label, Graph, NodeId};

/// Scratch places start 256-byte aligned.
pub(super) const ALIGN: usize = 256;

/// A fused matmul's launches and the scratch bytes they use from the
/// scratch base.
pub(super) struct Fused {
    pub steps: Vec<Step>,
    pub scratch: usize,
}

/// The cuBLASLt epilogue `epilogue` spells, when it is one.
fn lt_epilogue(epilogue: &[ChainStep]) -> Option<Epilogue> {
    let bias_add = matches!(
        epilogue.first(),
        Some(ChainStep::Binary(BinaryOp::Add, In::Input(0), In::Input(1)))
            | Some(ChainStep::Binary(BinaryOp::Add, In::Input(1), In::Input(0)))
    );
    if !bias_add {
        return None;
    }
    match epilogue.get(1..)? {
        [] => Some(Epilogue::Bias),
        [ChainStep::Unary(UnaryOp::Relu, In::Step(0))] => Some(Epilogue::BiasRelu),
        [ChainStep::Unary(UnaryOp::GeluApprox, In::Step(0))] => Some(Epilogue::BiasGeluTanh),
        _ => None,
    }
}

fn overlaps(a: &Buf, b: &Buf) -> bool {
    a.region == b.region && a.byte < b.byte + b.bytes && b.byte < a.byte + a.bytes
}

/// The launches of fused matmul `id` of `g` (operand places `inputs`,
/// result place `output`), scratch from arena byte `scratch_at`.
pub(super) fn fused_matmul(
    g: &Graph,
    id: NodeId,
    epilogue: &[ChainStep],
    inputs: &[Buf],
    output: Buf,
    scratch_at: usize,
) -> Result<Fused, String> {
    let n = g.node(id);
    let dims = |i: NodeId| g.shape(i).static_dims().unwrap_or_default();
    let out = dims(id);
    if let (Some(ep), [a, b, bias]) = (lt_epilogue(epilogue), &n.inputs[..]) {
        let cols = out.last().copied().unwrap_or(0);
        let per_column = dims(*bias).last() == Some(&cols)
            && dims(*bias).iter().rev().skip(1).all(|&d| d == 1)
            && dims(*bias).len() <= out.len()
            && g.shape(*bias).dtype() == n.shape.dtype();
        let in_place = inputs.iter().any(|i| overlaps(i, &output));
        if let (true, false, Ok(Kernel::Gemm(gemm))) =
            (per_column, in_place, matmul(&dims(*a), &dims(*b), &out))
        {
            super::build::float_only(n.shape.dtype())?;
            return Ok(Fused {
                steps: vec![Step {
                    node: id,
                    label: node_label(g, id),
                    kernel: Kernel::GemmBias { gemm, epilogue: ep },
                    inputs: inputs.to_vec(),
                    output,
                }],
                scratch: 0,
            });
        }
    }
    inline(g, id, inputs, output, scratch_at, |mg, ids| {
        decompose_fused_matmul(mg, epilogue, ids, &n.shape)
    })
}

/// The launches of elementwise region `id` of `g`: its steps' kernels
/// ([`inline`]).
pub(super) fn region(
    g: &Graph,
    id: NodeId,
    steps: &[ChainStep],
    inputs: &[Buf],
    output: Buf,
    scratch_at: usize,
) -> Result<Fused, String> {
    let shape = g.shape(id).clone();
    inline(g, id, inputs, output, scratch_at, |mg, ids| {
        decompose_region(mg, steps, ids, &shape)
    })
}

/// Node `id` of `g` planned as its decomposition (`decompose` over a
/// graph of its inputs): one launch per node, intermediates in scratch
/// from `scratch_at`, the last into `output`; or, when `output` shares
/// bytes with an input and the last launch cannot run in place, into
/// scratch and then copied.
fn inline(
    g: &Graph,
    id: NodeId,
    inputs: &[Buf],
    output: Buf,
    scratch_at: usize,
    decompose: impl FnOnce(&mut Graph, &[NodeId]) -> Result<NodeId, rlx_ir::IrError>,
) -> Result<Fused, String> {
    let n = g.node(id);
    let mut mg = Graph::new("decomposed");
    let ids: Vec<NodeId> = n
        .inputs
        .iter()
        .enumerate()
        .map(|(k, &i)| mg.input(&format!("in{k}"), g.shape(i).clone()))
        .collect();
    let last = decompose(&mut mg, &ids).map_err(|e| e.to_string())?;
    let mut places: Vec<Option<Buf>> = vec![None; mg.len()];
    for (k, &i) in ids.iter().enumerate() {
        places[i.index()] = Some(inputs[k]);
    }
    let mut scratch = 0usize;
    let mut scratch_buf = |bytes: usize, dtype| {
        let b = Buf {
            node: id,
            owner: id,
            region: Region::Arena,
            byte: scratch_at + scratch,
            bytes,
            dtype,
        };
        scratch += bytes.div_ceil(ALIGN) * ALIGN;
        b
    };
    let mut steps = Vec::new();
    for m in mg.ids() {
        let node = mg.node(m);
        if node.op.is_leaf() {
            if places[m.index()].is_none() {
                return Err(format!(
                    "the decomposition has a {} leaf",
                    node.op.kind().info().name
                ));
            }
            continue;
        }
        let kernel = kernel_for(&mg, m)?;
        let in_place_ok = matches!(
            kernel,
            Kernel::Unary(_) | Kernel::Binary { .. } | Kernel::Select { .. }
        ) && inputs
            .iter()
            .filter(|i| overlaps(i, &output))
            .all(|i| i.byte == output.byte && i.bytes == output.bytes);
        let bytes = node.shape.size_bytes().ok_or("a dynamic shape")?;
        let place = if m == last && in_place_ok {
            output
        } else {
            scratch_buf(bytes, node.shape.dtype())
        };
        places[m.index()] = Some(place);
        let operands = node
            .inputs
            .iter()
            .map(|i| {
                places[i.index()]
                    .ok_or_else(|| format!("{} is read before it is computed", node_label(&mg, *i)))
            })
            .collect::<Result<Vec<_>, _>>()?;
        steps.push(Step {
            node: id,
            label: format!("{} ({})", node_label(g, id), node_label(&mg, m)),
            kernel,
            inputs: operands,
            output: place,
        });
    }
    let computed = places[last.index()].ok_or("the decomposition computes nothing")?;
    if computed != output {
        // Into the node's place from scratch (or from an input, for a
        // decomposition that is its input).
        let width = output.dtype.size_bytes();
        let numel = output.bytes / width.max(1);
        steps.push(Step {
            node: id,
            label: format!("{} (copy out)", node_label(g, id)),
            kernel: Kernel::Copy {
                width,
                pieces: vec![CopyPiece {
                    dims: vec![numel],
                    x_strides: vec![1],
                    y_strides: vec![1],
                    x_offset: 0,
                    y_offset: 0,
                }],
            },
            inputs: vec![computed],
            output,
        });
    }
    Ok(Fused { steps, scratch })
}
