//! Common-subexpression elimination: two nodes with the same op, payload,
//! inputs and shape compute the same value, so the later one is replaced by
//! the earlier. Leaves other than constants are never merged (two inputs
//! with equal shapes are different values); equal constants are.

use super::{copy_node, pass_error};
use crate::CompileError;
use rlx_ir::{Graph, NodeId, Op};
use std::collections::HashMap;

/// Merges nodes that compute the same value.
pub fn cse(g: &Graph) -> Result<Graph, CompileError> {
    let mut out = Graph::new(g.name());
    let mut map: Vec<NodeId> = Vec::with_capacity(g.len());
    // Keyed by the op's full payload (its Debug form is exact: it prints every
    // field, constant bytes included), the renumbered inputs and the shape.
    let mut seen: HashMap<(String, Vec<NodeId>, String), NodeId> = HashMap::new();
    for n in g.nodes() {
        let inputs: Vec<NodeId> = n.inputs.iter().map(|i| map[i.index()]).collect();
        let mergeable = !matches!(n.op, Op::Input { .. } | Op::Param { .. });
        let key = (format!("{:?}", n.op), inputs, format!("{:?}", n.shape));
        if mergeable {
            if let Some(&earlier) = seen.get(&key) {
                map.push(earlier);
                continue;
            }
        }
        let id = copy_node(&mut out, n, &map).map_err(pass_error("cse"))?;
        if mergeable {
            seen.insert(key, id);
        }
        map.push(id);
    }
    out.set_outputs(g.outputs().iter().map(|o| map[o.index()]).collect());
    Ok(out)
}
