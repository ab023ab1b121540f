//! Copying a run of nodes out of a graph into a new one: what pipeline
//! stages (`dist::split_pipeline`) and device segments
//! (`hetero::HeteroExecutable`) are made of.

use rlx_ir::{Graph, Node, NodeId};
use std::collections::HashMap;

/// Copies the nodes `ops` of `graph` (in the given order, which must be
/// topological) into `sub`, recording each copy in `local` (original id →
/// id in `sub`). An input that `local` does not hold yet is brought in
/// once by `outside(sub, id)` (a stage input, a param, a copied constant,
/// a transfer, or an error), and recorded too.
pub(crate) fn copy_nodes<E>(
    graph: &Graph,
    sub: &mut Graph,
    local: &mut HashMap<NodeId, NodeId>,
    ops: &[NodeId],
    mut outside: impl FnMut(&mut Graph, NodeId) -> Result<NodeId, E>,
) -> Result<(), E> {
    for &id in ops {
        let node = graph.node(id);
        let mut inputs = Vec::with_capacity(node.inputs.len());
        for &i in &node.inputs {
            let l = match local.get(&i) {
                Some(&l) => l,
                None => {
                    let l = outside(sub, i)?;
                    local.insert(i, l);
                    l
                }
            };
            inputs.push(l);
        }
        let l = sub.push_verified(Node {
            inputs,
            ..node.clone()
        });
        local.insert(id, l);
    }
    Ok(())
}
