//! `Op::FusedConv`: a conv whose elementwise reader (bias-folded BN's
//! activation, a residual add, ...) is applied to each output block before
//! it is stored. Inputs `x, w, [bias,] extra...`; the epilogue's input 0 is
//! the conv result (bias included), input `i >= 1` is `extra[i - 1]`.

use super::conv::infer_conv;
use super::region::{decompose_region, infer_region, ChainStep};
use super::InferResult;
use crate::op::Window;
use crate::{Graph, IrError, NodeId, Op, Shape};

/// How many leading inputs belong to the conv itself.
pub fn conv_arity(bias: bool) -> usize {
    2 + usize::from(bias)
}

/// Shape rule: the conv's shape, which the epilogue must keep (it is
/// computed in place).
pub fn infer_fused_conv(
    window: &Window,
    groups: usize,
    bias: bool,
    epilogue: &[ChainStep],
    inputs: &[&Shape],
) -> InferResult {
    let k = conv_arity(bias);
    if inputs.len() < k {
        return Err(format!(
            "fused conv takes x, w{} and extras, got {} inputs",
            if bias { ", bias" } else { "" },
            inputs.len()
        ));
    }
    let conv = infer_conv(window, groups, &inputs[..k])?;
    let mut region_inputs = vec![&conv];
    region_inputs.extend_from_slice(&inputs[k..]);
    let out = infer_region(epilogue, &region_inputs)?;
    if out != conv {
        return Err(format!(
            "the epilogue turns the conv result {conv} into {out}; it must keep its dims and dtype"
        ));
    }
    Ok(out)
}

/// Decomposition: the conv, then the epilogue steps.
pub fn decompose_fused_conv(
    g: &mut Graph,
    (window, groups, bias): (&Window, usize, bool),
    epilogue: &[ChainStep],
    inputs: &[NodeId],
    out: &Shape,
) -> Result<NodeId, IrError> {
    let k = conv_arity(bias);
    let op = Op::Conv {
        window: window.clone(),
        groups,
    };
    let conv = g.try_node(op, &inputs[..k], None)?;
    let mut region_inputs = vec![conv];
    region_inputs.extend_from_slice(&inputs[k..]);
    decompose_region(g, epilogue, &region_inputs, out)
}
