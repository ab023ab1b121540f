//! Graph -> graph passes.

pub mod dce;
pub mod decompose;
pub mod precision;

use rlx_ir::{Graph, IrError, Node, NodeId};

/// Copies `n` into `out` with its inputs renumbered through `map`, re-inferring its shape.
pub(crate) fn copy_node(out: &mut Graph, n: &Node, map: &[NodeId]) -> Result<NodeId, IrError> {
    let inputs: Vec<NodeId> = n.inputs.iter().map(|i| map[i.index()]).collect();
    let mut node = n.clone();
    node.inputs = inputs;
    Ok(out.push_verified(node))
}
