//! Fused composites that fusion passes emit: residual add + norm
//! (`Op::AddNorm`) and the gated MLP matmul (`Op::GatedMatMul`, SwiGLU /
//! GeGLU). Their decompositions are exactly the unfused graphs, the
//! reference every backend kernel is tested against.

use super::emit::{bin, un};
use super::{arity, fmt_dims, InferResult};
use crate::op::{BinaryOp, UnaryOp};
use crate::{Graph, IrError, NodeId, Op, Shape};

/// Shape rule of `Op::AddNorm`: inputs `a, b [, gamma [, beta]]` with `a`
/// and `b` of one float shape; the norm runs over the axes from `axis` to
/// the end (RMS norm: only the last). With `keep_sum` the result is
/// `[2, ..dims]`: the sum at index 0, the normalised value at index 1.
pub fn infer_add_norm(axis: usize, rms: bool, keep_sum: bool, inputs: &[&Shape]) -> InferResult {
    arity(inputs, 2, if rms { 3 } else { 4 })?;
    let (a, b) = (inputs[0], inputs[1]);
    if a != b {
        return Err(format!(
            "the residual operands must have one shape: {a} vs {b}"
        ));
    }
    let rank = a.rank();
    if rms && axis + 1 != rank {
        return Err(format!(
            "an RMS norm runs over the last axis ({}), given axis {axis}",
            rank.saturating_sub(1)
        ));
    }
    let normed = if rms {
        super::norm::infer_rms_norm(&[a])?
    } else {
        super::norm::infer_layer_norm(axis, &[a])?
    };
    let tail = &a.dims()[axis..];
    for (p, what) in inputs[2..].iter().zip(["gamma", "beta"]) {
        if p.dtype() != a.dtype() || p.dims() != tail {
            return Err(format!(
                "{what} {p} must be {}{}",
                a.dtype(),
                fmt_dims(tail)
            ));
        }
    }
    if !keep_sum {
        return Ok(normed);
    }
    let mut dims = vec![crate::Dim::Static(2)];
    dims.extend_from_slice(a.dims());
    Ok(a.with_dims(dims))
}

/// Decomposition of `Op::AddNorm`: `s = a + b`, then the norm of `s`
/// (and, with `keep_sum`, both stacked along a new leading axis).
pub fn decompose_add_norm(
    g: &mut Graph,
    inputs: &[NodeId],
    axis: usize,
    eps: f64,
    rms: bool,
    keep_sum: bool,
) -> Result<NodeId, IrError> {
    let s = bin(g, BinaryOp::Add, inputs[0], inputs[1])?;
    let mut norm_inputs = vec![s];
    norm_inputs.extend_from_slice(&inputs[2..]);
    let y = if rms {
        super::norm::decompose_rms_norm(g, &norm_inputs, eps)?
    } else {
        super::norm::decompose_layer_norm(g, &norm_inputs, axis, eps)?
    };
    if !keep_sum {
        return Ok(y);
    }
    let shape = g.shape(s).clone();
    let mut dims = vec![crate::Dim::Static(1)];
    dims.extend_from_slice(shape.dims());
    let one = shape.with_dims(dims);
    let s1 = g.try_node(Op::Reshape, &[s], Some(one.clone()))?;
    let y1 = g.try_node(Op::Reshape, &[y], Some(one))?;
    g.try_node(Op::Concat { axis: 0 }, &[s1, y1], None)
}

/// Shape rule of `Op::GatedMatMul`: inputs `x, w_gate, w_up`; the result
/// is `act(x @ w_gate) * (x @ w_up)`, so both matmuls must agree.
pub fn infer_gated_matmul(act: UnaryOp, inputs: &[&Shape]) -> InferResult {
    arity(inputs, 3, 3)?;
    let gate = super::linalg::infer_matmul(&inputs[..2])?;
    let up = super::linalg::infer_matmul(&[inputs[0], inputs[2]])?;
    if gate != up {
        return Err(format!(
            "the gate product {gate} and the up product {up} differ"
        ));
    }
    super::elementwise::infer_unary(act, &[&gate])?;
    Ok(gate)
}

/// Decomposition of `Op::GatedMatMul`: two matmuls, the activation, the product.
pub fn decompose_gated_matmul(
    g: &mut Graph,
    inputs: &[NodeId],
    act: UnaryOp,
) -> Result<NodeId, IrError> {
    let gate = g.try_node(Op::MatMul, &[inputs[0], inputs[1]], None)?;
    let up = g.try_node(Op::MatMul, &[inputs[0], inputs[2]], None)?;
    let a = un(g, act, gate)?;
    bin(g, BinaryOp::Mul, a, up)
}

#[cfg(test)]
mod tests {
    use crate::op::UnaryOp;
    use crate::{DType, Graph, Op, Shape};

    #[test]
    fn bad_operands_are_errors_naming_them() {
        let mut g = Graph::new("g");
        let a = g.input("a", Shape::new(&[2, 4], DType::F32));
        let b = g.input("b", Shape::new(&[2, 3], DType::F32));
        let gamma = g.input("gamma", Shape::new(&[3], DType::F32));
        let add_norm = |axis, rms| Op::AddNorm {
            axis,
            eps: 1e-5,
            rms,
            keep_sum: false,
        };
        let e = g.try_node(add_norm(1, false), &[a, b], None).unwrap_err();
        assert!(e.to_string().contains("one shape"), "{e}");
        let e = g.try_node(add_norm(0, true), &[a, a], None).unwrap_err();
        assert!(e.to_string().contains("last axis"), "{e}");
        let e = g
            .try_node(add_norm(1, false), &[a, a, gamma], None)
            .unwrap_err();
        assert!(e.to_string().contains("gamma"), "{e}");
        let kept = Op::AddNorm {
            axis: 1,
            eps: 1e-5,
            rms: false,
            keep_sum: true,
        };
        let s = g.try_node(kept, &[a, a], None).unwrap();
        assert_eq!(g.shape(s), &Shape::new(&[2, 2, 4], DType::F32));
        let w = g.input("w", Shape::new(&[4, 5], DType::F32));
        let u = g.input("u", Shape::new(&[4, 6], DType::F32));
        let op = Op::GatedMatMul { act: UnaryOp::Silu };
        let e = g.try_node(op.clone(), &[a, w, u], None).unwrap_err();
        assert!(e.to_string().contains("differ"), "{e}");
        let y = g.try_node(op, &[a, w, w], None).unwrap();
        assert_eq!(g.shape(y), &Shape::new(&[2, 5], DType::F32));
    }
}
