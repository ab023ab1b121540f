//! Dead-code elimination. Inputs and params always stay (they are the
//! graph's signature); other nodes stay only if an output depends on them.

use super::copy_node;
use crate::CompileError;
use rlx_ir::{Graph, NodeId, Op};

/// Removes nodes no output depends on.
pub fn dce(g: &Graph) -> Result<Graph, CompileError> {
    let mut live = vec![false; g.len()];
    for &o in g.outputs() {
        live[o.index()] = true;
    }
    for id in g.ids().rev() {
        let n = g.node(id);
        if matches!(n.op, Op::Input { .. } | Op::Param { .. }) {
            live[id.index()] = true;
        }
        if live[id.index()] {
            for &i in &n.inputs {
                live[i.index()] = true;
            }
        }
    }
    let mut out = Graph::new(g.name());
    let mut map = vec![NodeId(u32::MAX); g.len()];
    for id in g.ids() {
        if live[id.index()] {
            map[id.index()] =
                copy_node(&mut out, g.node(id), &map).map_err(|source| CompileError::Pass {
                    pass: "dce",
                    source,
                })?;
        }
    }
    out.set_outputs(g.outputs().iter().map(|o| map[o.index()]).collect());
    Ok(out)
}
