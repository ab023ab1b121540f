//! Algebraic simplification: identities that remove work without changing a
//! single bit of the result (apart from the sign of a zero in `x + 0`, as
//! XLA's simplifier also allows).
//!
//! - `x + 0`, `0 + x`, `x - 0`, `x * 1`, `1 * x`, `x / 1` -> `x` when the
//!   constant does not broadcast `x` to a larger shape. `x * 0` is kept
//!   (NaN and infinities).
//! - `neg(neg(x))` -> `x`.
//! - transpose chains compose; an identity transpose disappears.
//! - reshape chains collapse; reshape / broadcast to the same shape
//!   disappear.
//! - a cast to the value's own dtype disappears; `cast(cast(x, A), B)` ->
//!   `cast(x, B)` when `A` holds every value of `x`'s dtype exactly.
//! - zero padding, single-input concat and full unit-step slices disappear.

use super::pass_error;
use crate::CompileError;
use rlx_ir::op::{BinaryOp, UnaryOp};
use rlx_ir::{DType, Graph, HostTensor, Node, NodeId, NodeOrigin, Op};

const PASS: &str = "simplify";

enum Rewrite {
    /// The node's value is this (already emitted) node.
    Forward(NodeId),
    /// Emit this op instead.
    Replace(Op, Vec<NodeId>),
}

/// Applies the identities above in one forward sweep (rewrites feed later
/// rewrites, so chains of any length collapse).
pub fn simplify(g: &Graph) -> Result<Graph, CompileError> {
    let mut out = Graph::new(g.name());
    let mut map: Vec<NodeId> = Vec::with_capacity(g.len());
    for n in g.nodes() {
        let inputs: Vec<NodeId> = n.inputs.iter().map(|i| map[i.index()]).collect();
        let id = match rewrite(&out, n, &inputs) {
            Some(Rewrite::Forward(id)) => id,
            Some(Rewrite::Replace(op, ins)) => {
                let id = out
                    .try_node(op, &ins, Some(n.shape.clone()))
                    .map_err(pass_error(PASS))?;
                out.set_origin(id, NodeOrigin::Pass { name: PASS.into() });
                id
            }
            None => {
                let mut node = n.clone();
                node.inputs = inputs;
                out.push_verified(node)
            }
        };
        map.push(id);
    }
    out.set_outputs(g.outputs().iter().map(|o| map[o.index()]).collect());
    Ok(out)
}

fn rewrite(out: &Graph, n: &Node, inputs: &[NodeId]) -> Option<Rewrite> {
    let same_shape = |id: NodeId| out.shape(id) == &n.shape;
    let forward_if_same = |id: NodeId| same_shape(id).then_some(Rewrite::Forward(id));
    match &n.op {
        Op::Binary(op) => {
            let (a, b) = (inputs[0], inputs[1]);
            let is = |id: NodeId, v: f64| splat_value(out, id) == Some(v);
            match op {
                BinaryOp::Add if is(b, 0.0) => forward_if_same(a),
                BinaryOp::Add if is(a, 0.0) => forward_if_same(b),
                BinaryOp::Sub if is(b, 0.0) => forward_if_same(a),
                BinaryOp::Mul if is(b, 1.0) => forward_if_same(a),
                BinaryOp::Mul if is(a, 1.0) => forward_if_same(b),
                BinaryOp::Div if is(b, 1.0) => forward_if_same(a),
                _ => None,
            }
        }
        Op::Unary(UnaryOp::Neg) => {
            let inner = out.node(inputs[0]);
            matches!(inner.op, Op::Unary(UnaryOp::Neg)).then(|| Rewrite::Forward(inner.inputs[0]))
        }
        Op::Transpose { perm } => {
            let inner = out.node(inputs[0]);
            let (source, perm) = match &inner.op {
                // out axis i = inner axis perm[i] = source axis inner_perm[perm[i]]
                Op::Transpose { perm: inner_perm } => (
                    inner.inputs[0],
                    perm.iter().map(|&p| inner_perm[p]).collect::<Vec<_>>(),
                ),
                _ => (inputs[0], perm.clone()),
            };
            if perm.iter().enumerate().all(|(i, &p)| i == p) {
                Some(Rewrite::Forward(source))
            } else if source != inputs[0] {
                Some(Rewrite::Replace(Op::Transpose { perm }, vec![source]))
            } else {
                None
            }
        }
        Op::Reshape => {
            let inner = out.node(inputs[0]);
            if same_shape(inputs[0]) {
                Some(Rewrite::Forward(inputs[0]))
            } else if matches!(inner.op, Op::Reshape) {
                let source = inner.inputs[0];
                Some(if same_shape(source) {
                    Rewrite::Forward(source)
                } else {
                    Rewrite::Replace(Op::Reshape, vec![source])
                })
            } else {
                None
            }
        }
        Op::Broadcast => forward_if_same(inputs[0]),
        Op::Cast => {
            if same_shape(inputs[0]) {
                return Some(Rewrite::Forward(inputs[0]));
            }
            let inner = out.node(inputs[0]);
            if !matches!(inner.op, Op::Cast) {
                return None;
            }
            let source = inner.inputs[0];
            let from = out.shape(source).dtype();
            if !holds_exactly(inner.shape.dtype(), from) {
                return None;
            }
            Some(if from == n.shape.dtype() {
                Rewrite::Forward(source)
            } else {
                Rewrite::Replace(Op::Cast, vec![source])
            })
        }
        Op::Pad { pads, .. } if pads.iter().all(|&p| p == (0, 0)) => forward_if_same(inputs[0]),
        Op::Concat { .. } if inputs.len() == 1 => forward_if_same(inputs[0]),
        Op::Slice(spec)
            if spec.starts.iter().all(|&s| s == 0) && spec.steps.iter().all(|&s| s == 1) =>
        {
            forward_if_same(inputs[0])
        }
        _ => None,
    }
}

/// The value of a constant whose elements are all equal (small constants only).
fn splat_value(g: &Graph, id: NodeId) -> Option<f64> {
    let n = g.node(id);
    let Op::Constant { bytes } = &n.op else {
        return None;
    };
    let dims = n.shape.static_dims()?;
    if dims.iter().product::<usize>() > 4096 || n.shape.dtype() == DType::C64 {
        return None;
    }
    let values = HostTensor::from_bytes(n.shape.dtype(), &dims, bytes.to_vec())
        .ok()?
        .to_f64_lossy();
    let first = *values.first()?;
    values.iter().all(|&v| v == first).then_some(first)
}

/// True when every value of `from` converts to `to` and back unchanged.
fn holds_exactly(to: DType, from: DType) -> bool {
    use DType::*;
    if to == from {
        return true;
    }
    match from {
        Bool => to != C64,
        F16 | BF16 => matches!(to, F32 | F64 | C64),
        F32 => matches!(to, F64 | C64),
        I8 => matches!(to, I16 | I32 | I64 | F16 | BF16 | F32 | F64),
        U8 => matches!(to, I16 | I32 | I64 | U32 | F16 | BF16 | F32 | F64),
        I16 => matches!(to, I32 | I64 | F32 | F64),
        I32 | U32 => matches!(to, I64 | F64),
        _ => false,
    }
}
