//! The storage-only dtypes ([`DType::is_storage_only`]) reach only leaves
//! and casts: [`check_storage_dtypes`] refuses a graph with any other op
//! on one (a fused region or matmul epilogue is checked step by step, so
//! a cast fused next to arithmetic still runs).

use rlx_driver::BackendError;
use rlx_ir::op::{ChainOperand, ChainStep};
use rlx_ir::{node_label, DType, Graph, Op};

/// The first node (or fused step) other than a leaf or a cast whose
/// result or an operand has a storage-only dtype, as an error naming the
/// node, the op and the dtype.
pub(crate) fn check_storage_dtypes(g: &Graph) -> Result<(), BackendError> {
    for id in g.ids() {
        let n = g.node(id);
        let input = |i: usize| g.node(n.inputs[i]).shape.dtype();
        let found = match &n.op {
            Op::Input { .. } | Op::Param { .. } | Op::Constant { .. } | Op::Cast => None,
            Op::ElementwiseRegion { steps } => {
                let ins: Vec<DType> = (0..n.inputs.len()).map(input).collect();
                misused_step(steps, &ins)
            }
            Op::FusedMatMul { epilogue } => {
                // Its inputs a, b feed the matmul; the epilogue's input 0 is
                // the product (a's dtype), input i is extra i - 1.
                let mut ins: Vec<DType> = (0..n.inputs.len()).map(input).collect();
                match ins.iter().take(2).find(|d| d.is_storage_only()) {
                    Some(&d) => Some(("matmul".to_string(), d)),
                    None => {
                        ins.remove(1);
                        misused_step(epilogue, &ins)
                    }
                }
            }
            Op::FusedConv { bias, epilogue, .. } => {
                // x, w [, bias] feed the conv; the epilogue's input 0 is its
                // result (x's dtype), input i is extra i - 1.
                let k = rlx_ir::ops::fused_conv::conv_arity(*bias).min(n.inputs.len());
                let ins: Vec<DType> = (0..n.inputs.len()).map(input).collect();
                match ins[..k].iter().find(|d| d.is_storage_only()) {
                    Some(&d) => Some(("conv".to_string(), d)),
                    None => {
                        let region: Vec<DType> =
                            ins[..1].iter().chain(&ins[k..]).copied().collect();
                        misused_step(epilogue, &region)
                    }
                }
            }
            op => std::iter::once(n.shape.dtype())
                .chain((0..n.inputs.len()).map(input))
                .find(|d| d.is_storage_only())
                .map(|d| (op.mnemonic(), d)),
        };
        if let Some((op, d)) = found {
            return Err(BackendError::Kernel {
                node: node_label(g, id),
                message: format!(
                    "{op} does not compute on {d}, a storage-only dtype: only inputs, params, \
                     constants and cast may hold it (cast it to a compute dtype first)"
                ),
            });
        }
    }
    Ok(())
}

/// The first non-cast step of a fused chain over `inputs` that reads or
/// gives a storage-only dtype: its op's name and that dtype.
fn misused_step(steps: &[ChainStep], inputs: &[DType]) -> Option<(String, DType)> {
    let mut out: Vec<DType> = Vec::with_capacity(steps.len());
    for step in steps {
        let of = |o: ChainOperand| match o {
            ChainOperand::Input(i) => inputs[i],
            ChainOperand::Step(j) => out[j],
        };
        let operands: Vec<DType> = step.operands().into_iter().map(of).collect();
        let result = match *step {
            ChainStep::Cast(_, to) => to,
            ChainStep::Compare(..) => DType::Bool,
            ChainStep::Select(..) => operands[1],
            _ => operands[0],
        };
        if !matches!(step, ChainStep::Cast(..)) {
            if let Some(&d) = operands
                .iter()
                .chain([&result])
                .find(|d| d.is_storage_only())
            {
                return Some((step.op().mnemonic(), d));
            }
        }
        out.push(result);
    }
    None
}
