//! Replaces composite ops the target does not claim by their decomposition.

use super::copy_node;
use crate::CompileError;
use rlx_ir::{ops, Graph, NodeId, NodeOrigin, Op};

/// Rebuilds `g`, decomposing each composite node for which `claims` is false.
/// Decompositions only emit primitives, so one pass suffices.
pub fn decompose_unclaimed(g: &Graph, claims: &dyn Fn(&Op) -> bool) -> Result<Graph, CompileError> {
    let wrap = |source| CompileError::Pass {
        pass: "decompose",
        source,
    };
    let mut out = Graph::new(g.name());
    let mut map: Vec<NodeId> = Vec::with_capacity(g.len());
    for n in g.nodes() {
        if let Op::Custom(c) = &n.op {
            if !claims(&n.op) {
                return Err(CompileError::UnclaimedCustomOp {
                    op: c.name.clone(),
                    registered: rlx_ir::custom::lookup_op(&c.name).is_some(),
                });
            }
        }
        let id = if n.op.kind().is_composite() && !claims(&n.op) {
            let inputs: Vec<NodeId> = n.inputs.iter().map(|i| map[i.index()]).collect();
            let first_new = out.len();
            let id = ops::decompose(&mut out, n, &inputs)
                .map_err(wrap)?
                .expect("composite ops have a decomposition");
            let origin = NodeOrigin::Decomposed {
                of: n.op.mnemonic(),
            };
            for k in first_new..out.len() {
                out.set_origin(NodeId(k as u32), origin.clone());
            }
            if let Some(name) = &n.name {
                out.set_name(id, name.clone());
            }
            id
        } else {
            copy_node(&mut out, n, &map).map_err(wrap)?
        };
        map.push(id);
    }
    out.set_outputs(g.outputs().iter().map(|o| map[o.index()]).collect());
    Ok(out)
}
