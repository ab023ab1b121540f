//! Graph -> graph passes.

pub mod amp;
pub mod calibration;
pub mod cse;
pub mod dce;
pub mod decompose;
pub mod fold;
pub mod legalize;
pub mod precision;
pub mod quantize;
pub mod simplify;

use rlx_ir::{Graph, IrError, Node, NodeId};

/// Copies `n` into `out` with its inputs renumbered through `map`, re-inferring its shape.
pub(crate) fn copy_node(out: &mut Graph, n: &Node, map: &[NodeId]) -> Result<NodeId, IrError> {
    let inputs: Vec<NodeId> = n.inputs.iter().map(|i| map[i.index()]).collect();
    let mut node = n.clone();
    node.inputs = inputs;
    Ok(out.push_verified(node))
}

/// Wraps an IR error raised while rebuilding a node in `pass`.
pub(crate) fn pass_error(pass: &'static str) -> impl Fn(IrError) -> crate::CompileError {
    move |source| crate::CompileError::Pass { pass, source }
}
