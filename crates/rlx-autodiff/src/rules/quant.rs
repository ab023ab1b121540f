//! Quantized-weight family: `dequant_matmul` with block-quantized weights
//! stays whole under the transforms (so the native quantized kernel still
//! runs); its weight bytes are not differentiable. (`scheme: None`, a plain
//! float weight, is differentiated through its decomposition instead; see
//! `prepare.rs`.)

use crate::emit::*;
use crate::{AutodiffError, Result};
use rlx_ir::{node_label, DType, Graph, NodeId, Op, Shape};

/// True for the ops these rules handle without decomposing.
pub fn kept_whole(op: &Op) -> bool {
    matches!(
        op,
        Op::DequantMatMul {
            scheme: Some(_),
            ..
        }
    )
}

/// `y = x · Wᵀ`: `dx = ct · W` with `W` dequantized to `[N, K]`; no
/// cotangent for the weight bytes.
pub fn vjp_dequant_matmul(
    g: &mut Graph,
    op: &Op,
    w: NodeId,
    ct: NodeId,
) -> Result<Vec<Option<NodeId>>> {
    let Op::DequantMatMul {
        scheme: Some(scheme),
        n,
        k,
    } = *op
    else {
        unreachable!("dispatched for block-quantized dequant_matmul only")
    };
    let wd = g.try_node(
        Op::Dequantize { scheme },
        &[w],
        Some(Shape::new(&[n, k], DType::F32)),
    )?;
    Ok(vec![Some(matmul(g, ct, wd)?), None])
}

/// `dy = dx · Wᵀ`: the op itself applied to the tangent of `x`.
pub fn jvp_dequant_matmul(g: &mut Graph, op: &Op, w: NodeId, tx: NodeId) -> Result<NodeId> {
    Ok(g.try_node(op.clone(), &[tx, w], None)?)
}

/// vmap over `x`'s batch: the op maps any leading dims of `x`, so it applies
/// to the batched `x` as is. A batched weight has no rule.
pub fn batch_dequant_matmul(
    g: &mut Graph,
    op: &Op,
    ins: &[NodeId],
    bat: &[bool],
) -> Result<NodeId> {
    if bat.get(1) == Some(&true) {
        return Err(AutodiffError::MissingRule {
            transform: "vmap",
            node: format!(
                "{} with batched (per-example) quantized weights",
                node_label(g, ins[1])
            ),
        });
    }
    Ok(g.try_node(op.clone(), &[ins[0], ins[1]], None)?)
}
