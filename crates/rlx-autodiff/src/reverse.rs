//! Reverse mode: `grad_with_loss` and friends.

use crate::emit::{add, add_opt, broadcast, differentiable, dims, zeros};
use crate::prepare::{check_leaves, prepare_for, Mode};
use crate::{rules, AutodiffError, Result};
use rlx_ir::ops::control::{is_tuple_op, result_shapes};
use rlx_ir::{node_label, Graph, NodeId, NodeOrigin, Op, Shape};
use std::collections::HashMap;

/// What [`grad_with_loss_opts`] does with a `wrt` the loss does not depend on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GradWithLossOptions {
    /// Give such a `wrt` a zero gradient (else it is an error).
    pub zero_missing_wrt: bool,
}

impl GradWithLossOptions {
    /// Unconnected `wrt` is an [`AutodiffError::Unconnected`].
    pub const STRICT: GradWithLossOptions = GradWithLossOptions {
        zero_missing_wrt: false,
    };
    /// Unconnected `wrt` gets zeros (JAX's behaviour; what training loops want).
    pub const TRAINING: GradWithLossOptions = GradWithLossOptions {
        zero_missing_wrt: true,
    };
}

impl Default for GradWithLossOptions {
    fn default() -> Self {
        Self::TRAINING
    }
}

/// Name of the cotangent input of a non-scalar loss.
pub const D_OUTPUT: &str = "d_output";

/// Reverse-mode gradient: a graph with the same inputs and params (plus
/// `d_output` when the first output is not a scalar, making it a VJP)
/// whose outputs are `[loss, dloss/dwrt..., aux outputs...]`.
///
/// ```
/// use rlx_ir::{DType, Graph, GraphExt, Shape};
/// let mut g = Graph::new("sq");
/// let x = g.input("x", Shape::new(&[3], DType::F32));
/// let sq = g.mul(x, x);
/// let l = g.sum(sq, &[0], false);
/// g.set_outputs(vec![l]);
/// let d = rlx_autodiff::grad_with_loss(&g, &[x]).unwrap();
/// assert_eq!(d.outputs().len(), 2);
/// assert_eq!(d.shape(d.outputs()[1]), &Shape::new(&[3], DType::F32));
/// ```
pub fn grad_with_loss(g: &Graph, wrt: &[NodeId]) -> Result<Graph> {
    grad_with_loss_opts(g, wrt, &GradWithLossOptions::default())
}

/// [`grad_with_loss`] without the loss: outputs `[dloss/dwrt..., aux...]`.
pub fn grad(g: &Graph, wrt: &[NodeId]) -> Result<Graph> {
    let mut d = grad_with_loss(g, wrt)?;
    let outs = d.outputs()[1..].to_vec();
    d.set_outputs(outs);
    Ok(d)
}

/// The set of nodes on a path from any of `from` to `to`.
pub(crate) fn on_path(g: &Graph, from: &[NodeId], to: NodeId) -> Vec<bool> {
    let n = g.len();
    let mut fwd = vec![false; n];
    for &f in from {
        fwd[f.index()] = true;
    }
    for id in g.ids() {
        let carries = differentiable(g.shape(id).dtype()) || is_tuple_op(&g.node(id).op);
        if g.node(id).inputs.iter().any(|i| fwd[i.index()]) && carries {
            fwd[id.index()] = true;
        }
    }
    let mut bwd = vec![false; n];
    bwd[to.index()] = true;
    for id in g.ids().rev() {
        if bwd[id.index()] {
            for &i in &g.node(id).inputs {
                bwd[i.index()] = true;
            }
        }
    }
    (0..n).map(|i| fwd[i] && bwd[i]).collect()
}

/// [`grad_with_loss`] with options.
pub fn grad_with_loss_opts(g: &Graph, wrt: &[NodeId], opts: &GradWithLossOptions) -> Result<Graph> {
    check_leaves(g, wrt)?;
    let (h, map) = prepare_for(g, Mode::Reverse)?;
    let wrt: Vec<NodeId> = wrt.iter().map(|w| map[w.index()]).collect();
    let Some(&loss) = h.outputs().first() else {
        return Err(AutodiffError::InvalidGraph(format!(
            "graph \"{}\" has no outputs",
            g.name()
        )));
    };
    let loss_shape = h.shape(loss).clone();
    if !loss_shape.dtype().is_float() {
        return Err(AutodiffError::NotDifferentiable {
            node: node_label(&h, loss),
            dtype: loss_shape.dtype(),
        });
    }
    let needed = on_path(&h, &wrt, loss);
    // Scans on the path store their per-step carries in the forward pass.
    let (h, stored_scans) = rules::control::store_scan_residuals(&h, &needed)?;
    let mut out = h.clone();
    let seed = if loss_shape.numel() == Some(1) {
        let one = out.scalar(1.0, loss_shape.dtype());
        broadcast(&mut out, one, &dims(&h, loss)?)?
    } else {
        out.try_input(D_OUTPUT, loss_shape.clone())?
    };
    let mut adj: Vec<Option<NodeId>> = vec![None; h.len()];
    adj[loss.index()] = Some(seed);
    let origin = NodeOrigin::Pass {
        name: "grad".into(),
    };
    // Cotangents of tuple (control-flow) nodes, one per result.
    let mut tuple_adj: HashMap<NodeId, Vec<Option<NodeId>>> = HashMap::new();
    for id in h.ids().rev() {
        let node = h.node(id);
        if !needed[id.index()] || node.op.is_leaf() {
            continue;
        }
        let first = out.len();
        let cts = if is_tuple_op(&node.op) {
            let Some(cts) = tuple_adj.remove(&id) else {
                continue;
            };
            match stored_scans.get(&id) {
                Some(spec) => {
                    rules::control::vjp_stored_scan(&mut out, spec, id, &node.inputs, &cts)?
                }
                None => rules::control::vjp(&mut out, node, id, &cts)?,
            }
        } else {
            let Some(ct) = adj[id.index()] else {
                continue;
            };
            if let Op::TupleGet { index, .. } = node.op {
                let t = node.inputs[0];
                let n = result_shapes(&h.node(t).op).map_or(0, |r| r.len());
                let slot = tuple_adj.entry(t).or_insert_with(|| vec![None; n]);
                if let Some(s) = slot.get_mut(index) {
                    *s = add_opt(&mut out, *s, Some(ct))?;
                }
                continue;
            }
            rules::vjp(&mut out, node, id, ct)?
        };
        for (&inp, c) in node.inputs.iter().zip(cts) {
            if let (Some(c), true) = (c, needed[inp.index()]) {
                adj[inp.index()] = Some(match adj[inp.index()] {
                    Some(prev) => add(&mut out, prev, c)?,
                    None => c,
                });
            }
        }
        for k in first..out.len() {
            out.set_origin(NodeId(k as u32), origin.clone());
        }
    }
    let mut outputs = vec![loss];
    for &w in &wrt {
        let gw = match adj[w.index()] {
            Some(gw) => gw,
            None if opts.zero_missing_wrt => {
                let s: &Shape = h.shape(w);
                zeros(&mut out, &dims(&h, w)?, s.dtype())?
            }
            None => {
                return Err(AutodiffError::Unconnected {
                    node: node_label(&h, w),
                })
            }
        };
        outputs.push(gw);
    }
    outputs.extend_from_slice(&h.outputs()[1..]);
    out.set_outputs(outputs);
    Ok(out)
}
