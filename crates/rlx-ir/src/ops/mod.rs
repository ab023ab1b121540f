//! One module per op family: shape inference, verification and (for
//! composites) the decomposition into primitives.
//!
//! [`infer_shape`] is the single shape rule every builder, the verifier and
//! `bind_dims` go through; [`decompose`] is the reference semantics of each
//! composite and the fallback for a backend without a native kernel.

pub mod attention;
pub mod control;
pub mod conv;
pub mod elementwise;
pub mod fft;
pub mod fused;
pub mod fused_conv;
pub mod indexing;
pub mod linalg;
pub mod movement;
pub mod norm;
pub mod quant;
pub mod reduce;
pub mod region;
pub mod splat;
pub mod upsample;

use crate::{Dim, Graph, IrError, Node, NodeId, Op, Shape};

/// Result of a shape rule: the output shape, or why the inputs are invalid.
pub type InferResult = Result<Shape, String>;

/// Infers the output shape of `op` over `inputs`. `declared` is the shape the
/// node is declared with; it is required for [`needs_declared_shape`] ops.
pub fn infer_shape(op: &Op, inputs: &[&Shape], declared: Option<&Shape>) -> InferResult {
    use Op::*;
    let info = op.kind().info();
    if !info.arity.admits(inputs.len()) {
        let want = match info.arity.max {
            Some(hi) if hi == info.arity.min => format!("{hi}"),
            Some(hi) => format!("{} to {hi}", info.arity.min),
            None => format!("at least {}", info.arity.min),
        };
        return Err(format!("expects {want} inputs, given {}", inputs.len()));
    }
    match op {
        Input { .. } | Param { .. } | Constant { .. } => declared
            .cloned()
            .ok_or_else(|| "a leaf needs its shape".into()),
        Unary(u) => elementwise::infer_unary(*u, inputs),
        Binary(b) => elementwise::infer_binary(*b, inputs),
        Compare(c) => elementwise::infer_compare(*c, inputs),
        Select => elementwise::infer_select(inputs),
        Cast => elementwise::infer_cast(inputs, need(declared)?),
        MatMul => linalg::infer_matmul(inputs),
        DotGeneral(d) => linalg::infer_dot_general(d, inputs),
        Reduce { op, axes, keep_dim } => reduce::infer_reduce(*op, axes, *keep_dim, inputs),
        ArgReduce { axis, keep_dim, .. } => reduce::infer_arg_reduce(*axis, *keep_dim, inputs),
        Cumsum { axis, .. } => reduce::infer_cumsum(*axis, inputs),
        Reshape => movement::infer_reshape(inputs, need(declared)?),
        Transpose { perm } => movement::infer_transpose(perm, inputs),
        Slice(spec) => movement::infer_slice(spec, inputs, need(declared)?),
        Concat { axis } => movement::infer_concat(*axis, inputs),
        Pad { pads, mode } => movement::infer_pad(pads, mode, inputs),
        Broadcast => movement::infer_broadcast(inputs, need(declared)?),
        Gather { axis } => indexing::infer_gather(*axis, inputs),
        GatherElements { axis } => indexing::infer_gather_elements(*axis, inputs),
        ScatterAdd { axis } => indexing::infer_scatter_add(*axis, inputs),
        TopK {
            k, axis, output, ..
        } => indexing::infer_topk(*k, *axis, *output, inputs),
        Iota { axis, .. } => indexing::infer_iota(*axis, inputs, need(declared)?),
        Softmax { axis } | LogSoftmax { axis } => norm::infer_softmax(*axis, inputs),
        LayerNorm { axis, .. } => norm::infer_layer_norm(*axis, inputs),
        RmsNorm { .. } => norm::infer_rms_norm(inputs),
        GroupNorm { groups, .. } => norm::infer_group_norm(*groups, inputs),
        Attention { mask, layout, .. } => attention::infer_attention(*mask, *layout, inputs),
        Rope { .. } => attention::infer_rope(inputs),
        Conv { window, groups } => conv::infer_conv(window, *groups, inputs),
        ConvTranspose {
            window,
            output_padding,
            groups,
        } => conv::infer_conv_transpose(window, output_padding, *groups, inputs),
        Pool { window, .. } => conv::infer_pool(window, inputs),
        Upsample { .. } => upsample::infer_upsample(inputs, need(declared)?),
        Fft { kind, .. } => fft::infer_fft(*kind, inputs, declared),
        ElementwiseRegion { steps } => region::infer_region(steps, inputs),
        FusedMatMul { epilogue } => region::infer_fused_matmul(epilogue, inputs),
        FusedConv {
            window,
            groups,
            bias,
            epilogue,
        } => fused_conv::infer_fused_conv(window, *groups, *bias, epilogue, inputs),
        AddNorm {
            axis,
            rms,
            keep_sum,
            ..
        } => fused::infer_add_norm(*axis, *rms, *keep_sum, inputs),
        GatedMatMul { act } => fused::infer_gated_matmul(*act, inputs),
        Dequantize { scheme } => quant::infer_dequantize(*scheme, inputs, need(declared)?),
        DequantMatMul { scheme, n, k } => quant::infer_dequant_matmul(*scheme, *n, *k, inputs),
        If(s) => control::infer_if(s, inputs),
        While(s) => control::infer_while(s, inputs),
        Scan(s) => control::infer_scan(s, inputs),
        CustomFn(s) => control::infer_custom_fn(s, inputs),
        TupleGet { offset, shape, .. } => control::infer_tuple_get(*offset, shape, inputs),
        Custom(c) => crate::custom::infer_custom(c, inputs),
    }
}

/// Ops whose output shape is (part of) their payload, so a node of them
/// must be declared with its shape.
pub fn needs_declared_shape(op: &Op) -> bool {
    matches!(
        op,
        Op::Cast
            | Op::Reshape
            | Op::Slice(_)
            | Op::Broadcast
            | Op::Iota { .. }
            | Op::Upsample { .. }
            | Op::Dequantize { .. }
    ) || matches!(
        op,
        Op::Fft {
            kind: fft::FftKind::Irfft,
            ..
        }
    )
}

fn need(declared: Option<&Shape>) -> Result<&Shape, String> {
    declared.ok_or_else(|| "this op needs its output shape declared".to_string())
}

/// Emits the decomposition of the composite `node` (whose inputs are
/// `inputs` in `g`) into primitives of `g` and returns the node that
/// replaces it, or `None` for a primitive.
pub fn decompose(g: &mut Graph, node: &Node, inputs: &[NodeId]) -> Result<Option<NodeId>, IrError> {
    let id = match &node.op {
        Op::Softmax { axis } => norm::decompose_softmax(g, inputs[0], *axis, false)?,
        Op::LogSoftmax { axis } => norm::decompose_softmax(g, inputs[0], *axis, true)?,
        Op::LayerNorm { axis, eps } => norm::decompose_layer_norm(g, inputs, *axis, *eps)?,
        Op::RmsNorm { eps } => norm::decompose_rms_norm(g, inputs, *eps)?,
        Op::GroupNorm { groups, eps } => norm::decompose_group_norm(g, inputs, *groups, *eps)?,
        Op::Attention {
            mask,
            scale,
            softcap,
            layout,
        } => attention::decompose_attention(g, inputs, *mask, *scale, *softcap, *layout)?,
        Op::Rope { interleaved } => attention::decompose_rope(g, inputs, *interleaved)?,
        Op::ElementwiseRegion { steps } => region::decompose_region(g, steps, inputs, &node.shape)?,
        Op::FusedMatMul { epilogue } => {
            region::decompose_fused_matmul(g, epilogue, inputs, &node.shape)?
        }
        Op::FusedConv {
            window,
            groups,
            bias,
            epilogue,
        } => fused_conv::decompose_fused_conv(
            g,
            (window, *groups, *bias),
            epilogue,
            inputs,
            &node.shape,
        )?,
        Op::AddNorm {
            axis,
            eps,
            rms,
            keep_sum,
        } => fused::decompose_add_norm(g, inputs, *axis, *eps, *rms, *keep_sum)?,
        Op::GatedMatMul { act } => fused::decompose_gated_matmul(g, inputs, *act)?,
        Op::DequantMatMul { scheme, n, k } => {
            quant::decompose_dequant_matmul(g, inputs, *scheme, *n, *k)?
        }
        // Primitives (the op table's `composite: false`).
        Op::Input { .. }
        | Op::Param { .. }
        | Op::Constant { .. }
        | Op::Unary(_)
        | Op::Binary(_)
        | Op::Compare(_)
        | Op::Select
        | Op::Cast
        | Op::MatMul
        | Op::DotGeneral(_)
        | Op::Reduce { .. }
        | Op::ArgReduce { .. }
        | Op::Cumsum { .. }
        | Op::Reshape
        | Op::Transpose { .. }
        | Op::Slice(_)
        | Op::Concat { .. }
        | Op::Pad { .. }
        | Op::Broadcast
        | Op::Gather { .. }
        | Op::GatherElements { .. }
        | Op::ScatterAdd { .. }
        | Op::TopK { .. }
        | Op::Iota { .. }
        | Op::Conv { .. }
        | Op::ConvTranspose { .. }
        | Op::Pool { .. }
        | Op::Upsample { .. }
        | Op::Fft { .. }
        | Op::Dequantize { .. }
        | Op::If(_)
        | Op::While(_)
        | Op::Scan(_)
        | Op::CustomFn(_)
        | Op::Custom(_)
        | Op::TupleGet { .. } => return Ok(None),
    };
    Ok(Some(id))
}

// ── shared helpers ──

/// Checks the input count.
pub(crate) fn arity(inputs: &[&Shape], lo: usize, hi: usize) -> Result<(), String> {
    if inputs.len() < lo || inputs.len() > hi {
        let want = if lo == hi {
            format!("{lo}")
        } else {
            format!("{lo} to {hi}")
        };
        return Err(format!("expects {want} inputs, given {}", inputs.len()));
    }
    Ok(())
}

/// numpy broadcasting of two dim lists.
pub fn broadcast_dims(a: &[Dim], b: &[Dim]) -> Result<Vec<Dim>, String> {
    let rank = a.len().max(b.len());
    let mut out = Vec::with_capacity(rank);
    for i in 0..rank {
        let da = (i + a.len()).checked_sub(rank).map(|j| &a[j]);
        let db = (i + b.len()).checked_sub(rank).map(|j| &b[j]);
        let d = match (da, db) {
            (Some(x), None) | (None, Some(x)) => x.clone(),
            (Some(x), Some(y)) => broadcast_dim(x, y).ok_or_else(|| {
                format!(
                    "cannot broadcast {} with {} (axis {i} of the result: {x} vs {y})",
                    fmt_dims(a),
                    fmt_dims(b)
                )
            })?,
            (None, None) => unreachable!(),
        };
        out.push(d);
    }
    Ok(out)
}

fn broadcast_dim(x: &Dim, y: &Dim) -> Option<Dim> {
    match (x, y) {
        (Dim::Static(1), d) | (d, Dim::Static(1)) => Some(d.clone()),
        (a, b) if a == b => Some(a.clone()),
        _ => None,
    }
}

/// `[2,3,batch]` style rendering of dims.
pub fn fmt_dims(d: &[Dim]) -> String {
    let parts: Vec<String> = d.iter().map(ToString::to_string).collect();
    format!("[{}]", parts.join(","))
}

/// Resolves a possibly negative axis against `rank`.
pub fn normalize_axis(axis: i64, rank: usize) -> Result<usize, String> {
    let r = rank as i64;
    let a = if axis < 0 { axis + r } else { axis };
    if a < 0 || a >= r {
        return Err(format!("axis {axis} is out of range for rank {rank}"));
    }
    Ok(a as usize)
}

pub(crate) fn check_axis(axis: usize, rank: usize) -> Result<(), String> {
    if axis >= rank {
        return Err(format!("axis {axis} is out of range for rank {rank}"));
    }
    Ok(())
}

pub(crate) fn static_dim(d: &Dim, what: &str) -> Result<usize, String> {
    d.as_static()
        .ok_or_else(|| format!("{what} must be static, is symbol {d}"))
}

/// Small fallible builders the decompositions share.
pub(crate) mod emit {
    use crate::op::{BinaryOp, ReduceOp, UnaryOp};
    use crate::{DType, Graph, IrError, NodeId, Op, Shape};

    pub fn bin(g: &mut Graph, op: BinaryOp, a: NodeId, b: NodeId) -> Result<NodeId, IrError> {
        g.try_node(Op::Binary(op), &[a, b], None)
    }
    pub fn un(g: &mut Graph, op: UnaryOp, x: NodeId) -> Result<NodeId, IrError> {
        g.try_node(Op::Unary(op), &[x], None)
    }
    pub fn reduce_keep(
        g: &mut Graph,
        op: ReduceOp,
        x: NodeId,
        axes: Vec<usize>,
    ) -> Result<NodeId, IrError> {
        g.try_node(
            Op::Reduce {
                op,
                axes,
                keep_dim: true,
            },
            &[x],
            None,
        )
    }
    pub fn scalar(g: &mut Graph, v: f64, dtype: DType) -> NodeId {
        g.scalar(v, dtype)
    }
    pub fn reshape(g: &mut Graph, x: NodeId, dims: &[usize]) -> Result<NodeId, IrError> {
        let dt = g.shape(x).dtype();
        g.try_node(Op::Reshape, &[x], Some(Shape::new(dims, dt)))
    }
    pub fn static_dims(g: &Graph, x: NodeId, what: &str) -> Result<Vec<usize>, IrError> {
        g.shape(x).static_dims().ok_or_else(|| {
            IrError::invalid(
                what,
                format!(
                    "decomposition needs static dims, {} is symbolic",
                    g.shape(x)
                ),
            )
        })
    }
}

pub(crate) mod emit_more {
    use crate::op::SliceSpec;
    use crate::{Graph, IrError, NodeId, Op, Shape};

    /// `x[..., lo:hi]` along `axis` (static dims).
    pub fn narrow(
        g: &mut Graph,
        x: NodeId,
        axis: usize,
        lo: usize,
        hi: usize,
    ) -> Result<NodeId, IrError> {
        let s = g.shape(x).clone();
        let r = s.rank();
        let mut starts = vec![0; r];
        starts[axis] = lo;
        let mut dims = s.dims().to_vec();
        dims[axis] = crate::Dim::Static(hi - lo);
        g.try_node(
            Op::Slice(SliceSpec {
                starts,
                steps: vec![1; r],
            }),
            &[x],
            Some(Shape::from_dims(dims, s.dtype())),
        )
    }
}
