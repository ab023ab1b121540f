//! Derivative rules, one file per op family, dispatched here.
//!
//! `vjp` maps an output cotangent to one optional cotangent per input
//! (`None` is a symbolic zero); `jvp` maps optional input tangents to the
//! output tangent. Composites other than softmax / log-softmax reach these
//! rules already decomposed (`prepare_graph_for_ad`), except that reverse
//! mode keeps layer / rms norm and attention whole for their closed-form vjps.
//! Conv reaches reverse and forward mode whole (vmap lowers it to im2col).

pub mod attention;
pub mod batching;
pub mod control;
pub mod conv;
pub mod elementwise;
pub mod fft;
pub mod indexing;
pub mod linalg;
pub mod movement;
pub mod norm;
pub mod quant;
pub mod reduce;

use crate::emit::*;
use crate::{AutodiffError, Result};
use rlx_ir::op::{PadMode, TopKOutput};
use rlx_ir::{node_label, ops, Graph, Node, NodeId, Op, Rule};

/// The error for a node this transform has no rule for here, from the op
/// table: a kind that is not differentiable (or not batchable) by design
/// says why; a kind decomposed before the transform, or a control-flow
/// tuple (handled by `rules::control`), should not have reached this rule.
pub(crate) fn no_rule(
    g: &Graph,
    node: &Node,
    id: NodeId,
    transform: &'static str,
) -> AutodiffError {
    let info = node.op.kind().info();
    let rule = match transform {
        "vjp" => info.vjp,
        "jvp" => info.jvp,
        _ => info.vmap,
    };
    let label = node_label(g, id);
    match rule {
        Rule::NotDifferentiable(reason) | Rule::Unsupported(reason) => AutodiffError::Unsupported {
            transform,
            node: label,
            reason: reason.into(),
        },
        Rule::Decomposed | Rule::Partial(_) => AutodiffError::MissingRule {
            transform,
            node: format!(
                "{label} (the op table: {}; prepare_graph_for_ad lowers it first)",
                rule.cell()
            ),
        },
        Rule::Own | Rule::Zero | Rule::Leaf => AutodiffError::MissingRule {
            transform,
            node: format!("{label} (a control-flow tuple is transformed by rules::control)"),
        },
    }
}

/// Cotangents of `node`'s inputs given the cotangent `ct` of its output `y`.
pub fn vjp(g: &mut Graph, node: &Node, y: NodeId, ct: NodeId) -> Result<Vec<Option<NodeId>>> {
    let x = &node.inputs;
    match &node.op {
        Op::Input { .. } | Op::Param { .. } | Op::Constant { .. } | Op::Iota { .. } => Ok(vec![]),
        // No cotangent flows into Bool / index results or block bytes.
        Op::Compare(_) | Op::ArgReduce { .. } | Op::Dequantize { .. } => Ok(vec![None; x.len()]),
        Op::TopK {
            output: TopKOutput::Indices,
            ..
        } => Ok(vec![None]),
        Op::Unary(u) => elementwise::vjp_unary(g, *u, x[0], y, ct),
        Op::Binary(b) => elementwise::vjp_binary(g, *b, x[0], x[1], y, ct),
        Op::Select => elementwise::vjp_select(g, x, ct),
        Op::Cast => elementwise::vjp_cast(g, x[0], ct),
        Op::MatMul => linalg::vjp_matmul(g, x[0], x[1], ct),
        Op::DotGeneral(d) => linalg::vjp_dot_general(g, d, x[0], x[1], ct),
        Op::Reduce { op, axes, .. } => reduce::vjp_reduce(g, *op, axes, x[0], y, ct),
        Op::Cumsum {
            axis,
            exclusive,
            reverse,
        } => reduce::vjp_cumsum(g, *axis, *exclusive, *reverse, ct),
        Op::Reshape => Ok(vec![Some(reshape(g, ct, &dims(g, x[0])?)?)]),
        Op::Transpose { perm } => Ok(vec![Some(transpose(g, ct, &inverse_perm(perm))?)]),
        Op::Slice(spec) => movement::vjp_slice(g, spec, x[0], ct),
        Op::Concat { axis } => movement::vjp_concat(g, *axis, x, ct),
        Op::Pad { pads, mode } => movement::vjp_pad(g, pads, mode, x[0], ct),
        Op::Broadcast => Ok(vec![Some(sum_to(g, ct, &dims(g, x[0])?)?)]),
        Op::Gather { axis } => indexing::vjp_gather(g, *axis, x[0], x[1], ct),
        Op::GatherElements { axis } => indexing::vjp_gather_elements(g, *axis, x[0], x[1], ct),
        Op::ScatterAdd { axis } => indexing::vjp_scatter_add(g, *axis, x[1], ct),
        Op::TopK {
            k, axis, largest, ..
        } => indexing::vjp_topk(g, *k, *axis, *largest, x[0], ct),
        Op::Softmax { axis } => Ok(vec![Some(norm::softmax_jac(g, *axis, y, ct)?)]),
        Op::LogSoftmax { axis } => Ok(vec![Some(norm::log_softmax_vjp(g, *axis, y, ct)?)]),
        Op::DequantMatMul {
            scheme: Some(_), ..
        } => quant::vjp_dequant_matmul(g, &node.op, x[1], ct),
        Op::LayerNorm { axis, eps } => norm::layer_norm_vjp(g, *axis, *eps, x, ct),
        Op::RmsNorm { eps } => norm::rms_norm_vjp(g, *eps, x, ct),
        Op::Attention {
            mask,
            scale,
            softcap,
            layout,
        } => attention::attention_vjp(g, *mask, *scale, *softcap, *layout, x, ct),
        Op::Conv { window, groups } => conv::conv_vjp(g, window, *groups, x, ct),
        Op::Fft { kind, norm } => Ok(vec![Some(fft::vjp_fft(g, *kind, *norm, x[0], ct)?)]),
        Op::Custom(c) => custom_vjp(g, node, c, y, ct),
        Op::DequantMatMul { scheme: None, .. }
        | Op::GroupNorm { .. }
        | Op::Rope { .. }
        | Op::ConvTranspose { .. }
        | Op::Pool { .. }
        | Op::Upsample { .. }
        | Op::ElementwiseRegion { .. }
        | Op::FusedMatMul { .. }
        | Op::FusedConv { .. }
        | Op::AddNorm { .. }
        | Op::GatedMatMul { .. }
        | Op::If(_)
        | Op::While(_)
        | Op::Scan(_)
        | Op::CustomFn(_)
        | Op::TupleGet { .. } => Err(no_rule(g, node, y, "vjp")),
    }
}

/// The op applied to tangents: the forward rule of an op linear in the inputs
/// that carry tangents (missing tangents of other differentiable inputs are zeros).
fn relinearize(g: &mut Graph, node: &Node, inputs: &[NodeId]) -> Result<NodeId> {
    let op = match &node.op {
        Op::Pad {
            pads,
            mode: PadMode::Constant(_),
        } => Op::Pad {
            pads: pads.clone(),
            mode: PadMode::Constant(0.0),
        },
        op => op.clone(),
    };
    let declared = ops::needs_declared_shape(&op).then(|| node.shape.clone());
    Ok(g.try_node(op, inputs, declared)?)
}

fn or_zeros(g: &mut Graph, t: Option<NodeId>, like: NodeId) -> Result<NodeId> {
    match t {
        Some(t) => Ok(t),
        None => zeros_like(g, like),
    }
}

/// Tangent of `node`'s output `y` given its inputs' tangents (`None`: zero).
pub fn jvp(g: &mut Graph, node: &Node, y: NodeId, t: &[Option<NodeId>]) -> Result<Option<NodeId>> {
    let x = &node.inputs;
    if t.iter().all(Option::is_none) {
        return Ok(None);
    }
    let out = match &node.op {
        Op::Input { .. } | Op::Param { .. } | Op::Constant { .. } | Op::Iota { .. } => {
            return Ok(None)
        }
        Op::Compare(_)
        | Op::ArgReduce { .. }
        | Op::Dequantize { .. }
        | Op::TopK {
            output: TopKOutput::Indices,
            ..
        } => return Ok(None),
        Op::Unary(u) => return elementwise::jvp_unary(g, *u, x[0], y, t[0].expect("tangent")),
        Op::Binary(b) => return elementwise::jvp_binary(g, *b, x[0], x[1], y, t[0], t[1]),
        Op::Select => {
            let a = or_zeros(g, t[1], x[1])?;
            let b = or_zeros(g, t[2], x[2])?;
            let s = select(g, x[0], a, b)?;
            broadcast(g, s, &dims(g, y)?)?
        }
        Op::Cast => {
            if !(differentiable(dtype(g, x[0])) && differentiable(node.shape.dtype())) {
                return Ok(None);
            }
            cast(g, t[0].expect("tangent"), node.shape.dtype())?
        }
        Op::MatMul | Op::DotGeneral(_) | Op::Conv { .. } | Op::ConvTranspose { .. } => {
            // Bilinear in (data, weight); a conv bias is linear on its own.
            let mut sum_t = None;
            for (k, tk) in t.iter().enumerate().take(2) {
                if let Some(tk) = *tk {
                    let mut ins = x.clone();
                    ins[k] = tk;
                    if ins.len() > 2 {
                        ins.truncate(2);
                    }
                    let term = relinearize(g, node, &ins)?;
                    sum_t = add_opt(g, sum_t, Some(term))?;
                }
            }
            if let (Some(Some(tb)), Op::Conv { .. } | Op::ConvTranspose { .. }) =
                (t.get(2), &node.op)
            {
                let mut bd = vec![1; node.shape.rank()];
                bd[1] = dims(g, *tb)?[0];
                let b = reshape(g, *tb, &bd)?;
                let b = broadcast(g, b, &dims(g, y)?)?;
                sum_t = add_opt(g, sum_t, Some(b))?;
            }
            sum_t.expect("some tangent")
        }
        Op::Reduce { op, axes, keep_dim } => {
            reduce::jvp_reduce(g, *op, axes, *keep_dim, x[0], y, t[0].expect("tangent"))?
        }
        Op::Softmax { axis } => norm::softmax_jac(g, *axis, y, t[0].expect("tangent"))?,
        Op::LogSoftmax { axis } => norm::log_softmax_jvp(g, *axis, y, t[0].expect("tangent"))?,
        Op::TopK {
            k, axis, largest, ..
        } => {
            let idx = indexing::topk_indices(g, *k, *axis, *largest, x[0])?;
            g.try_node(
                Op::GatherElements { axis: *axis },
                &[t[0].expect("tangent"), idx],
                None,
            )?
        }
        Op::Gather { .. } | Op::GatherElements { .. } => {
            relinearize(g, node, &[t[0].expect("tangent"), x[1]])?
        }
        Op::ScatterAdd { .. } => {
            let base = or_zeros(g, t[0], x[0])?;
            let upd = or_zeros(g, t[2], x[2])?;
            relinearize(g, node, &[base, x[1], upd])?
        }
        Op::Pool {
            kind: rlx_ir::op::PoolKind::Avg,
            ..
        }
        | Op::Upsample { .. }
        | Op::Fft { .. } => relinearize(g, node, &[t[0].expect("tangent")])?,
        Op::Reshape
        | Op::Transpose { .. }
        | Op::Slice(_)
        | Op::Pad { .. }
        | Op::Broadcast
        | Op::Cumsum { .. } => relinearize(g, node, &[t[0].expect("tangent")])?,
        Op::Concat { .. } => {
            let mut ins = Vec::with_capacity(x.len());
            for (k, &xi) in x.iter().enumerate() {
                ins.push(or_zeros(g, t[k], xi)?);
            }
            relinearize(g, node, &ins)?
        }
        Op::DequantMatMul {
            scheme: Some(_), ..
        } => quant::jvp_dequant_matmul(g, &node.op, x[1], t[0].expect("tangent"))?,
        Op::Custom(c) => {
            let ext = custom_extension(g, c, y)?;
            let rule = ext.jvp.ok_or_else(|| custom_refusal(g, c, y, "jvp"))?;
            rule(g, c, x, y, t)?
        }
        Op::DequantMatMul { scheme: None, .. }
        | Op::LayerNorm { .. }
        | Op::RmsNorm { .. }
        | Op::GroupNorm { .. }
        | Op::Attention { .. }
        | Op::Rope { .. }
        | Op::Pool { .. }
        | Op::ElementwiseRegion { .. }
        | Op::FusedMatMul { .. }
        | Op::FusedConv { .. }
        | Op::AddNorm { .. }
        | Op::GatedMatMul { .. }
        | Op::If(_)
        | Op::While(_)
        | Op::Scan(_)
        | Op::CustomFn(_)
        | Op::TupleGet { .. } => return Err(no_rule(g, node, y, "jvp")),
    };
    Ok(Some(out))
}

/// The extension of the custom op `c` at node `y`, or an error naming it.
pub(crate) fn custom_extension(
    g: &Graph,
    c: &rlx_ir::custom::CustomOp,
    y: NodeId,
) -> Result<std::sync::Arc<rlx_ir::custom::OpExtension>> {
    c.extension()
        .map_err(|e| AutodiffError::InvalidGraph(format!("{}: {e}", node_label(g, y))))
}

/// The refusal of `transform` for a custom op whose extension registers no such rule.
pub(crate) fn custom_refusal(
    g: &Graph,
    c: &rlx_ir::custom::CustomOp,
    y: NodeId,
    transform: &'static str,
) -> AutodiffError {
    AutodiffError::Unsupported {
        transform,
        node: node_label(g, y),
        reason: format!("custom op `{}` registers no {transform} rule", c.name),
    }
}

/// The registered vjp rule of a custom op, its result checked: one
/// cotangent (or `None`) per input, each of its input's shape.
fn custom_vjp(
    g: &mut Graph,
    node: &Node,
    c: &rlx_ir::custom::CustomOp,
    y: NodeId,
    ct: NodeId,
) -> Result<Vec<Option<NodeId>>> {
    let ext = custom_extension(g, c, y)?;
    let rule = ext.vjp.ok_or_else(|| custom_refusal(g, c, y, "vjp"))?;
    let cts = rule(g, c, &node.inputs, y, ct)?;
    if cts.len() != node.inputs.len() {
        return Err(AutodiffError::InvalidGraph(format!(
            "the vjp rule of custom op `{}` returned {} cotangents for {} inputs",
            c.name,
            cts.len(),
            node.inputs.len()
        )));
    }
    for (k, (ct_k, &x_k)) in cts.iter().zip(&node.inputs).enumerate() {
        if let Some(ct_k) = ct_k {
            if g.shape(*ct_k) != g.shape(x_k) {
                return Err(AutodiffError::InvalidGraph(format!(
                    "the vjp rule of custom op `{}` gave input {k} a cotangent of shape {}, the input is {}",
                    c.name,
                    g.shape(*ct_k),
                    g.shape(x_k)
                )));
            }
        }
    }
    Ok(cts)
}
