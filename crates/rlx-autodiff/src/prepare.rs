//! [`prepare_graph_for_ad`]: rewrites a graph into the ops the derivative
//! rules know, before any transform runs.

use crate::{AutodiffError, Result};
use rlx_ir::{node_label, ops, verify_all, Graph, NodeId, NodeOrigin, Op};

/// The transform a graph is prepared for: it decides which ops with
/// closed-form rules stay whole.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Mode {
    /// `jvp`: conv stays whole (its tangent is two convs).
    Forward,
    /// `grad`: conv, the norms and attention stay whole.
    Reverse,
    /// `vmap` and [`prepare`]: everything lowers.
    Batch,
}

/// True for composites differentiated through their decomposition
/// (softmax and log-softmax have closed-form rules instead; in reverse
/// `mode`, so do the norms and attention, whose closed-form vjps keep
/// less alive).
fn decomposed_for_ad(op: &Op, mode: Mode) -> bool {
    let closed_form = match op {
        Op::Softmax { .. } | Op::LogSoftmax { .. } => true,
        Op::LayerNorm { .. } | Op::RmsNorm { .. } | Op::Attention { .. } => mode == Mode::Reverse,
        _ => crate::rules::quant::kept_whole(op),
    };
    op.kind().is_composite() && !closed_form
}

/// Verifies `g` and decomposes the composites that have no closed-form
/// rule (layer / rms / group norm, attention, rope) into primitives.
/// Inputs, params and outputs keep their order; returns the new graph and,
/// per old node id, the node that now holds its value.
pub fn prepare(g: &Graph) -> Result<(Graph, Vec<NodeId>)> {
    prepare_for(g, Mode::Batch)
}

/// [`prepare`] for one transform: ops with a closed-form rule in that
/// `mode` stay whole (conv in reverse / forward mode: no im2col matrix).
pub(crate) fn prepare_for(g: &Graph, mode: Mode) -> Result<(Graph, Vec<NodeId>)> {
    let errors = verify_all(g);
    if !errors.is_empty() {
        let msg: Vec<String> = errors.iter().map(ToString::to_string).collect();
        return Err(AutodiffError::InvalidGraph(format!(
            "graph \"{}\": {}",
            g.name(),
            msg.join("; ")
        )));
    }
    for id in g.ids() {
        if !g.shape(id).is_static() {
            return Err(AutodiffError::InvalidGraph(format!(
                "{} has symbolic dims {}; bind them (Graph::bind_dims) before transforming",
                node_label(g, id),
                g.shape(id)
            )));
        }
    }
    let mut out = Graph::new(g.name());
    let mut map = Vec::with_capacity(g.len());
    for n in g.nodes() {
        let inputs: Vec<NodeId> = n.inputs.iter().map(|i| map[i.index()]).collect();
        let lowered = match &n.op {
            Op::Conv { window, groups } if mode == Mode::Batch => Some(ops::conv::decompose_conv(
                &mut out, &inputs, window, *groups,
            )),
            Op::ConvTranspose {
                window,
                output_padding,
                groups,
            } => Some(ops::conv::decompose_conv_transpose(
                &mut out,
                &inputs,
                window,
                output_padding,
                *groups,
            )),
            Op::Pool {
                kind,
                window,
                count_include_pad,
            } => Some(ops::conv::decompose_pool(
                &mut out,
                inputs[0],
                *kind,
                window,
                *count_include_pad,
            )),
            Op::Upsample {
                mode,
                align_corners,
            } => Some(ops::upsample::decompose_upsample(
                &mut out,
                inputs[0],
                *mode,
                *align_corners,
                &n.shape,
            )),
            _ => None,
        };
        let id = if let Some(r) = lowered {
            // Transposed conv, pooling, upsampling (conv under vmap) lower to primitives.
            let first = out.len();
            let id = r?;
            for k in first..out.len() {
                out.set_origin(
                    NodeId(k as u32),
                    NodeOrigin::Decomposed {
                        of: n.op.mnemonic(),
                    },
                );
            }
            id
        } else if decomposed_for_ad(&n.op, mode) {
            let first = out.len();
            let id = ops::decompose(&mut out, n, &inputs)?.expect("composites decompose");
            for k in first..out.len() {
                out.set_origin(
                    NodeId(k as u32),
                    NodeOrigin::Decomposed {
                        of: n.op.mnemonic(),
                    },
                );
            }
            id
        } else {
            let mut c = n.clone();
            c.inputs = inputs;
            out.push_verified(c)
        };
        map.push(id);
    }
    out.set_outputs(g.outputs().iter().map(|o| map[o.index()]).collect());
    Ok((out, map))
}

/// Verifies `g` and decomposes the composites that have no closed-form rule
/// (layer / rms / group norm, attention, rope) into primitives: the graph the
/// transforms differentiate.
pub fn prepare_graph_for_ad(g: &Graph) -> Result<Graph> {
    Ok(prepare(g)?.0)
}

/// Checks that `ids` are input / param leaves of `g`.
pub(crate) fn check_leaves(g: &Graph, ids: &[NodeId]) -> Result<()> {
    for &id in ids {
        match g.get(id) {
            None => {
                return Err(AutodiffError::InvalidGraph(format!(
                    "{id} does not exist (graph \"{}\" has {} nodes)",
                    g.name(),
                    g.len()
                )))
            }
            Some(n) if !matches!(n.op, Op::Input { .. } | Op::Param { .. }) => {
                return Err(AutodiffError::NotALeaf {
                    node: node_label(g, id),
                })
            }
            Some(n) if !n.shape.dtype().is_float() => {
                return Err(AutodiffError::NotDifferentiable {
                    node: node_label(g, id),
                    dtype: n.shape.dtype(),
                })
            }
            _ => {}
        }
    }
    Ok(())
}

/// The input or param named `name`.
pub(crate) fn leaf_named(g: &Graph, name: &str) -> Result<NodeId> {
    g.find_input(name)
        .or_else(|| g.find_param(name))
        .ok_or_else(|| AutodiffError::UnknownName {
            name: name.to_string(),
            graph: g.name().to_string(),
        })
}

/// The name of an input / param leaf.
pub(crate) fn leaf_name(g: &Graph, id: NodeId) -> String {
    match &g.node(id).op {
        Op::Input { name } | Op::Param { name } => name.clone(),
        _ => unreachable!("checked to be a leaf"),
    }
}
