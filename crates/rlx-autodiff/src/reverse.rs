//! Reverse mode: `grad_with_loss` and friends.

use crate::emit::{add, broadcast, dims, zeros};
use crate::prepare::{check_leaves, prepare};
use crate::{rules, AutodiffError, Result};
use rlx_ir::{node_label, Graph, NodeId, NodeOrigin, Shape};

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
        if g.node(id).inputs.iter().any(|i| fwd[i.index()]) && g.shape(id).dtype().is_float() {
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
    let (h, map) = prepare(g)?;
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
    let mut out = h.clone();
    let seed = if loss_shape.numel() == Some(1) {
        let one = out.scalar(1.0, loss_shape.dtype());
        broadcast(&mut out, one, &dims(&h, loss)?)?
    } else {
        out.try_input(D_OUTPUT, loss_shape.clone())?
    };
    let needed = on_path(&h, &wrt, loss);
    let mut adj: Vec<Option<NodeId>> = vec![None; h.len()];
    adj[loss.index()] = Some(seed);
    let origin = NodeOrigin::Pass {
        name: "grad".into(),
    };
    for id in h.ids().rev() {
        let (Some(ct), true) = (adj[id.index()], needed[id.index()]) else {
            continue;
        };
        let node = h.node(id);
        if node.op.is_leaf() {
            continue;
        }
        let first = out.len();
        let cts = rules::vjp(&mut out, node, id, ct)?;
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
