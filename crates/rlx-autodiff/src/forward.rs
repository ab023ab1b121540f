//! Forward mode (`jvp`) and forward-over-reverse (`hvp`).

use crate::emit::{differentiable, zeros};
use crate::prepare::{check_leaves, leaf_name, prepare_for, Mode};
use crate::reverse::grad_with_loss;
use crate::{rules, AutodiffError, Result};
use rlx_ir::ops::control::is_tuple_op;
use rlx_ir::{node_label, Graph, NodeId, NodeOrigin, Op};
use std::collections::HashMap;

/// Prefix of the tangent inputs [`jvp`] adds.
pub const TANGENT_PREFIX: &str = "tangent_";

/// Forward-mode derivative: a graph with an extra input `tangent_<name>`
/// (same shape) for each leaf in `tangent_for`, whose outputs are
/// `[primal outputs..., tangent outputs...]`. Symbolic zeros are never
/// materialised except for an output that depends on no tangent.
pub fn jvp(g: &Graph, tangent_for: &[NodeId]) -> Result<Graph> {
    check_leaves(g, tangent_for)?;
    let (h, map) = prepare_for(g, Mode::Forward)?;
    let mut out = h.clone();
    let mut tan: Vec<Option<NodeId>> = vec![None; h.len()];
    for &w in tangent_for {
        let w = map[w.index()];
        let name = format!("{TANGENT_PREFIX}{}", leaf_name(&h, w));
        tan[w.index()] = Some(out.try_input(&name, h.shape(w).clone())?);
    }
    let origin = NodeOrigin::Pass { name: "jvp".into() };
    // Tangents of tuple (control-flow) nodes, one per result.
    let mut tuple_tan: HashMap<NodeId, Vec<Option<NodeId>>> = HashMap::new();
    for id in h.ids() {
        let node = h.node(id);
        if node.op.is_leaf() {
            continue;
        }
        if let Op::TupleGet { index, .. } = node.op {
            tan[id.index()] = tuple_tan
                .get(&node.inputs[0])
                .and_then(|t| t.get(index).copied().flatten());
            continue;
        }
        let ts: Vec<Option<NodeId>> = node.inputs.iter().map(|i| tan[i.index()]).collect();
        let tuple = is_tuple_op(&node.op);
        if ts.iter().all(Option::is_none) || !(tuple || differentiable(node.shape.dtype())) {
            continue;
        }
        let first = out.len();
        if tuple {
            tuple_tan.insert(id, rules::control::jvp(&mut out, node, id, &ts)?);
        } else {
            tan[id.index()] = rules::jvp(&mut out, node, id, &ts)?;
        }
        for k in first..out.len() {
            out.set_origin(NodeId(k as u32), origin.clone());
        }
    }
    let mut outputs = h.outputs().to_vec();
    for &o in h.outputs() {
        let t = match tan[o.index()] {
            Some(t) => t,
            None => {
                let s = h.shape(o).clone();
                let d = s.static_dims().expect("prepared graphs are static");
                zeros(&mut out, &d, s.dtype())?
            }
        };
        outputs.push(t);
    }
    out.set_outputs(outputs);
    Ok(out)
}

/// Hessian-vector product of the scalar first output with respect to `wrt`
/// (forward over reverse): inputs gain `tangent_<name>` for each `wrt`;
/// outputs are `H·v` restricted to each `wrt`.
pub fn hvp(g: &Graph, wrt: &[NodeId]) -> Result<Graph> {
    check_leaves(g, wrt)?;
    let loss = *g
        .outputs()
        .first()
        .ok_or_else(|| AutodiffError::InvalidGraph("no outputs".into()))?;
    if g.shape(loss).numel() != Some(1) {
        return Err(AutodiffError::NonScalarLoss {
            transform: "hvp",
            node: node_label(g, loss),
            shape: g.shape(loss).clone(),
        });
    }
    let names: Vec<String> = wrt.iter().map(|&w| leaf_name(g, w)).collect();
    let mut d = grad_with_loss(g, wrt)?;
    let grads = d.outputs()[1..=wrt.len()].to_vec();
    d.set_outputs(grads);
    let leaves: Vec<NodeId> = names
        .iter()
        .map(|n| crate::prepare::leaf_named(&d, n))
        .collect::<Result<_>>()?;
    let mut h = jvp(&d, &leaves)?;
    let tangents = h.outputs()[wrt.len()..].to_vec();
    h.set_outputs(tangents);
    Ok(h)
}
