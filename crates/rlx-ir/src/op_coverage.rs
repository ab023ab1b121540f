//! Graph fragments that apply every value-typed op of an elementwise
//! family, built from the op tables ([`UnaryOp::ALL`], [`BinaryOp::ALL`]):
//! a backend's test suite that runs them covers an op added to the IR by
//! itself, and fails until the backend has a kernel for it.

use crate::op::{BinaryOp, UnaryOp};
use crate::{Graph, GraphExt, NodeId};

/// Whether `op` needs a positive argument for a finite real result
/// (logarithm, roots, reciprocal): test inputs for it should be positive.
pub fn wants_positive(op: UnaryOp) -> bool {
    matches!(
        op,
        UnaryOp::Log | UnaryOp::Sqrt | UnaryOp::Rsqrt | UnaryOp::Reciprocal
    )
}

/// Whether `op` is defined on values (numbers), not only on Bool / bits.
pub fn unary_takes_values(op: UnaryOp) -> bool {
    !matches!(op, UnaryOp::Not)
}

/// Whether `op` is defined on floats (the logical ops are Bool / int only).
pub fn binary_takes_floats(op: BinaryOp) -> bool {
    !matches!(op, BinaryOp::And | BinaryOp::Or | BinaryOp::Xor)
}

/// One output per value-typed unary op, applied to `x`, or to the
/// positive `pos` for the ops that [`wants_positive`].
pub fn every_unary(g: &mut Graph, x: NodeId, pos: NodeId) -> Vec<NodeId> {
    UnaryOp::ALL
        .into_iter()
        .filter(|&u| unary_takes_values(u))
        .map(|u| g.unary(u, if wants_positive(u) { pos } else { x }))
        .collect()
}

/// One output per float binary op of `a` and `b` (broadcast as the IR
/// does); `pow` takes the positive base `pos` (a negative base to a
/// fractional power has no real result).
pub fn every_binary(g: &mut Graph, a: NodeId, b: NodeId, pos: NodeId) -> Vec<NodeId> {
    BinaryOp::ALL
        .into_iter()
        .filter(|&op| binary_takes_floats(op))
        .map(|op| g.binary_op(op, if op == BinaryOp::Pow { pos } else { a }, b))
        .collect()
}
