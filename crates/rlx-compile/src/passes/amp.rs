//! Automatic mixed precision: each F32 op runs in the precision its class
//! asks for, with casts only where a value crosses from one class to
//! another.
//!
//! Classes (as in torch.autocast / XLA's AMP):
//! - **low** — matmuls, convolutions, attention: compute-bound, safe in
//!   F16 / BF16 (the CPU kernels accumulate in F32);
//! - **f32** — reductions, softmax, norms, cumulative sums, exp / log /
//!   pow and other range-sensitive functions: always F32;
//! - **follow** — everything else (elementwise arithmetic, movement,
//!   indexing): the precision of its float inputs (F32 if any is F32) —
//!   except that a param / constant broadcast into a low value (a bias
//!   added to a matmul result) is cast down to it, as torch's `addmm`
//!   takes its bias: the add then stays low, and the matmul epilogue
//!   fusion still folds it (with the activation after it) into the matmul.
//!
//! Fused ops are classed too (the pass may run on a fused graph): gated
//! matmuls are matmuls, add + norm is a norm, attention is low under
//! `AutoMixed*`, elementwise regions follow.
//!
//! Graph inputs, params and outputs stay F32; leaves are cast on the way
//! into a low op, and low outputs are cast back to F32.

use super::pass_error;
use crate::CompileError;
use rlx_ir::op::UnaryOp;
use rlx_ir::{ops, DType, Graph, IrError, NodeId, NodeOrigin, Op, OpKind};
use std::collections::HashMap;

const PASS: &str = "amp";

/// The precision class of an op under a policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PassPrecision {
    /// Computes in the policy's low dtype (F16 / BF16).
    Low,
    /// Always computes in F32.
    F32,
    /// Takes the precision of its float inputs.
    Follow,
}

/// Which ops run in low precision.
#[derive(Clone, Debug, PartialEq, Default)]
pub enum PrecisionPolicy {
    /// No rewrite.
    #[default]
    AlwaysF32,
    /// Every F32 value in F16 (the session `Precision::F16` rewrite).
    AlwaysF16,
    /// Only matmuls and convolutions in F16; everything else F32.
    AutoMixedConservative,
    /// Matmuls, convolutions and attention in F16; reductions, softmax,
    /// norms and range-sensitive functions in F32; the rest follows.
    AutoMixed,
    /// [`PrecisionPolicy::AutoMixed`] with BF16.
    AutoMixedBf16,
    /// Your own classes: kinds not listed follow.
    Custom {
        /// The low dtype (F16 or BF16).
        low: DType,
        /// Kinds computed in `low`.
        low_kinds: Vec<OpKind>,
        /// Kinds always computed in F32.
        f32_kinds: Vec<OpKind>,
    },
}

impl PrecisionPolicy {
    /// The low dtype, or `None` when the policy changes nothing.
    pub fn low_dtype(&self) -> Option<DType> {
        match self {
            PrecisionPolicy::AlwaysF32 => None,
            PrecisionPolicy::AlwaysF16
            | PrecisionPolicy::AutoMixedConservative
            | PrecisionPolicy::AutoMixed => Some(DType::F16),
            PrecisionPolicy::AutoMixedBf16 => Some(DType::BF16),
            PrecisionPolicy::Custom { low, .. } => Some(*low),
        }
    }

    /// The class of `op` under this policy.
    pub fn class_of(&self, op: &Op) -> PassPrecision {
        let kind = op.kind();
        let compute = matches!(
            kind,
            OpKind::MatMul
                | OpKind::DotGeneral
                | OpKind::FusedMatMul
                | OpKind::FusedConv
                | OpKind::GatedMatMul
                | OpKind::Conv
                | OpKind::ConvTranspose
        );
        let sensitive = matches!(
            kind,
            OpKind::Reduce
                | OpKind::Cumsum
                | OpKind::Softmax
                | OpKind::LogSoftmax
                | OpKind::LayerNorm
                | OpKind::RmsNorm
                | OpKind::GroupNorm
                | OpKind::AddNorm
                | OpKind::Fft
        ) || matches!(
            op,
            Op::Unary(
                UnaryOp::Exp
                    | UnaryOp::Log
                    | UnaryOp::Softplus
                    | UnaryOp::Rsqrt
                    | UnaryOp::Reciprocal
            ) | Op::Binary(rlx_ir::op::BinaryOp::Pow)
        );
        match self {
            PrecisionPolicy::AlwaysF32 => PassPrecision::F32,
            PrecisionPolicy::AlwaysF16 => PassPrecision::Low,
            PrecisionPolicy::AutoMixedConservative if compute => PassPrecision::Low,
            PrecisionPolicy::AutoMixedConservative => PassPrecision::F32,
            PrecisionPolicy::AutoMixed | PrecisionPolicy::AutoMixedBf16 => {
                if compute || kind == OpKind::Attention {
                    PassPrecision::Low
                } else if sensitive {
                    PassPrecision::F32
                } else {
                    PassPrecision::Follow
                }
            }
            PrecisionPolicy::Custom {
                low_kinds,
                f32_kinds,
                ..
            } => {
                if low_kinds.contains(&kind) {
                    PassPrecision::Low
                } else if f32_kinds.contains(&kind) {
                    PassPrecision::F32
                } else {
                    PassPrecision::Follow
                }
            }
        }
    }
}

/// Casts inserted so far: (value, dtype) -> cast node, so a value crossing
/// into several consumers of the same class is cast once.
struct Casts(HashMap<(NodeId, DType), NodeId>);

impl Casts {
    fn to(&mut self, out: &mut Graph, x: NodeId, dtype: DType) -> Result<NodeId, IrError> {
        if out.shape(x).dtype() == dtype {
            return Ok(x);
        }
        if let Some(&c) = self.0.get(&(x, dtype)) {
            return Ok(c);
        }
        let shape = out.shape(x).with_dtype(dtype);
        let c = out.try_node(Op::Cast, &[x], Some(shape))?;
        out.set_origin(c, NodeOrigin::Pass { name: PASS.into() });
        self.0.insert((x, dtype), c);
        Ok(c)
    }
}

fn is_float32_or_low(d: DType, low: DType) -> bool {
    d == DType::F32 || d == low
}

/// True when input `x` of elementwise node `n` is a param / constant with
/// fewer elements than `n` (a bias broadcast into it) and some other input
/// of `n` is already low: `x` then joins that value's precision.
fn broadcast_leaf_into_low(
    g: &Graph,
    n: &rlx_ir::Node,
    x: NodeId,
    mapped: &[NodeId],
    out: &Graph,
    low: DType,
) -> bool {
    let elementwise = matches!(
        n.op,
        Op::Binary(
            rlx_ir::op::BinaryOp::Add
                | rlx_ir::op::BinaryOp::Sub
                | rlx_ir::op::BinaryOp::Mul
                | rlx_ir::op::BinaryOp::Div
        )
    );
    let leaf = matches!(g.node(x).op, Op::Param { .. } | Op::Constant { .. });
    let smaller = match (g.shape(x).numel(), n.shape.numel()) {
        (Some(a), Some(b)) => a < b,
        _ => false,
    };
    elementwise
        && leaf
        && smaller
        && mapped
            .iter()
            .any(|&m| out.shape(m).dtype() == low && !out.node(m).op.is_leaf())
}

/// Rewrites `g` under `policy`.
pub fn auto_mixed_precision(g: &Graph, policy: &PrecisionPolicy) -> Result<Graph, CompileError> {
    let Some(low) = policy.low_dtype() else {
        return Ok(g.clone());
    };
    if *policy == PrecisionPolicy::AlwaysF16 {
        return super::precision::lower_precision(g, low);
    }
    let wrap = pass_error(PASS);
    let mut out = Graph::new(g.name());
    let mut map: Vec<NodeId> = Vec::with_capacity(g.len());
    let mut casts = Casts(HashMap::new());
    for n in g.nodes() {
        if n.op.is_leaf() {
            map.push(out.push_verified(n.clone()));
            continue;
        }
        let inputs: Vec<NodeId> = n.inputs.iter().map(|i| map[i.index()]).collect();
        // Only ops over F32 floats are rewritten; others keep their dtypes,
        // with any low input cast back to what they were built with.
        let floats: Vec<bool> = n
            .inputs
            .iter()
            .map(|&i| g.shape(i).dtype() == DType::F32)
            .collect();
        let rewritable = (n.shape.dtype() == DType::F32 || floats.iter().any(|&f| f))
            && n.inputs.iter().all(|&i| {
                !g.shape(i).dtype().is_float() || is_float32_or_low(g.shape(i).dtype(), low)
            });
        let target = if !rewritable {
            DType::F32
        } else {
            match policy.class_of(&n.op) {
                PassPrecision::Low => low,
                PassPrecision::F32 => DType::F32,
                PassPrecision::Follow => {
                    let any_f32 =
                        inputs
                            .iter()
                            .zip(&floats)
                            .zip(&n.inputs)
                            .any(|((&x, &f), &orig)| {
                                f && out.shape(x).dtype() == DType::F32
                                    && !broadcast_leaf_into_low(g, n, orig, &inputs, &out, low)
                            });
                    if any_f32 || !floats.iter().any(|&f| f) {
                        DType::F32
                    } else {
                        low
                    }
                }
            }
        };
        let mut args = Vec::with_capacity(inputs.len());
        for ((&x, &f), &orig) in inputs.iter().zip(&floats).zip(&n.inputs) {
            let want = if f { target } else { g.shape(orig).dtype() };
            args.push(casts.to(&mut out, x, want).map_err(&wrap)?);
        }
        let out_dtype = if n.shape.dtype() == DType::F32 {
            target
        } else {
            n.shape.dtype()
        };
        let declared = ops::needs_declared_shape(&n.op).then(|| n.shape.with_dtype(out_dtype));
        let id = match out.try_node(n.op.clone(), &args, declared) {
            Ok(id) => id,
            Err(_) => {
                // No low-precision form: F32 between casts.
                let mut wide = Vec::with_capacity(args.len());
                for (&x, &orig) in args.iter().zip(&n.inputs) {
                    wide.push(
                        casts
                            .to(&mut out, x, g.shape(orig).dtype())
                            .map_err(&wrap)?,
                    );
                }
                let declared = ops::needs_declared_shape(&n.op).then(|| n.shape.clone());
                out.try_node(n.op.clone(), &wide, declared).map_err(&wrap)?
            }
        };
        if let Some(name) = &n.name {
            out.set_name(id, name.clone());
        }
        map.push(id);
    }
    let mut outputs = Vec::with_capacity(g.outputs().len());
    for &o in g.outputs() {
        outputs.push(
            casts
                .to(&mut out, map[o.index()], g.shape(o).dtype())
                .map_err(&wrap)?,
        );
    }
    out.set_outputs(outputs);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rlx_ir::{GraphExt, Shape};

    #[test]
    fn fused_ops_have_classes() {
        let p = PrecisionPolicy::AutoMixed;
        let add_norm = Op::AddNorm {
            axis: 1,
            eps: 1e-5,
            rms: false,
            keep_sum: false,
        };
        assert_eq!(p.class_of(&add_norm), PassPrecision::F32);
        let gated = Op::GatedMatMul { act: UnaryOp::Silu };
        assert_eq!(p.class_of(&gated), PassPrecision::Low);
        assert_eq!(
            PrecisionPolicy::AutoMixedConservative.class_of(&gated),
            PassPrecision::Low
        );
        let region = Op::ElementwiseRegion { steps: Vec::new() };
        assert_eq!(p.class_of(&region), PassPrecision::Follow);
    }

    #[test]
    fn a_bias_joins_its_low_product_and_a_residual_does_not() {
        let mut g = Graph::new("lin");
        let x = g.input("x", Shape::new(&[4, 8], DType::F32));
        let w = g.param("w", Shape::new(&[8, 8], DType::F32));
        let b = g.param("b", Shape::new(&[8], DType::F32));
        let y = g.mm(x, w);
        let y = g.add(y, b);
        let r = g.add(y, x);
        g.set_outputs(vec![r]);
        let out = auto_mixed_precision(&g, &PrecisionPolicy::AutoMixed).unwrap();
        let adds: Vec<DType> = out
            .nodes()
            .iter()
            .filter(|n| matches!(n.op, Op::Binary(_)))
            .map(|n| n.shape.dtype())
            .collect();
        // The bias add stays f16 with its product; the residual add of two
        // full-size values is f32, as any f32 operand makes it.
        assert_eq!(adds, [DType::F16, DType::F32], "{out}");
    }
}
