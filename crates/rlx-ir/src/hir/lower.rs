//! HIR -> MIR: each block becomes the primitive / composite graph a user
//! would build by hand (matmul + bias, reshape / transpose into heads,
//! `attention`, `layer_norm`, ...).

use super::{HirDef, HirModule, HirOp, HirValue, MlpActivation};
use crate::op::{BinaryOp, MaskKind, UnaryOp};
use crate::{DType, Dim, Graph, IrError, MirModule, NodeId, Op, Shape};

impl HirModule {
    /// Lowers every block to MIR; parameters are named after their block.
    pub fn lower(&self) -> Result<MirModule, IrError> {
        let mut cx = Lowering {
            g: Graph::new(self.name()),
            dtype: DType::F32,
        };
        let mut ids: Vec<NodeId> = Vec::with_capacity(self.nodes().len());
        for n in self.nodes() {
            let id = match &n.def {
                HirDef::Input => cx.g.try_input(&n.name, n.shape.clone())?,
                HirDef::Op(op) => {
                    cx.dtype = n.shape.dtype();
                    let v = |x: &HirValue| ids[x.0];
                    cx.block(&n.name, op, &v)?
                }
            };
            ids.push(id);
        }
        let outputs = self.outputs().iter().map(|o| ids[o.0]).collect();
        cx.g.set_outputs(outputs);
        Ok(MirModule::new(cx.g))
    }
}

struct Lowering {
    g: Graph,
    dtype: DType,
}

impl Lowering {
    fn block(
        &mut self,
        name: &str,
        op: &HirOp,
        v: &dyn Fn(&HirValue) -> NodeId,
    ) -> Result<NodeId, IrError> {
        match op {
            HirOp::Linear {
                x,
                out_features,
                bias,
            } => self.linear(name, v(x), *out_features, *bias),
            HirOp::Attention {
                x,
                heads,
                causal,
                mask,
                bias,
            } => {
                let mask = match (causal, mask) {
                    (true, _) => Mask::Causal,
                    (false, Some(m)) => Mask::Bias(v(m)),
                    (false, None) => Mask::None,
                };
                self.attention(name, v(x), *heads, mask, *bias)
            }
            HirOp::LayerNorm { x, eps } => self.layer_norm(name, v(x), *eps),
            HirOp::RmsNorm { x, eps } => self.rms_norm(name, v(x), *eps),
            HirOp::Mlp {
                x,
                hidden,
                activation,
                bias,
            } => self.mlp(name, v(x), *hidden, *activation, *bias),
            HirOp::Add { a, b } => self.binary(BinaryOp::Add, v(a), v(b)),
            HirOp::EncoderBlock {
                x,
                heads,
                ffn,
                eps,
                mask,
            } => {
                let x = v(x);
                let mask = mask.as_ref().map_or(Mask::None, |m| Mask::Bias(v(m)));
                let a = self.attention(&format!("{name}.attn"), x, *heads, mask, true)?;
                let r1 = self.binary(BinaryOp::Add, a, x)?;
                let h1 = self.layer_norm(&format!("{name}.ln1"), r1, *eps)?;
                let f = self.mlp(&format!("{name}.mlp"), h1, *ffn, MlpActivation::Gelu, true)?;
                let r2 = self.binary(BinaryOp::Add, f, h1)?;
                self.layer_norm(&format!("{name}.ln2"), r2, *eps)
            }
            HirOp::DecoderBlock { x, heads, ffn, eps } => {
                let x = v(x);
                let n1 = self.rms_norm(&format!("{name}.norm1"), x, *eps)?;
                let a = self.attention(&format!("{name}.attn"), n1, *heads, Mask::Causal, false)?;
                let h = self.binary(BinaryOp::Add, x, a)?;
                let n2 = self.rms_norm(&format!("{name}.norm2"), h, *eps)?;
                let f = self.mlp(
                    &format!("{name}.mlp"),
                    n2,
                    *ffn,
                    MlpActivation::SwiGlu,
                    false,
                )?;
                self.binary(BinaryOp::Add, h, f)
            }
        }
    }

    fn width(&self, x: NodeId) -> usize {
        // HirModule::push checked the last axis is static.
        self.g
            .shape(x)
            .dims()
            .last()
            .and_then(Dim::as_static)
            .unwrap_or(0)
    }

    fn param(&mut self, name: String, dims: &[usize]) -> Result<NodeId, IrError> {
        self.g.try_param(&name, Shape::new(dims, self.dtype))
    }

    fn binary(&mut self, op: BinaryOp, a: NodeId, b: NodeId) -> Result<NodeId, IrError> {
        self.g.try_node(Op::Binary(op), &[a, b], None)
    }

    fn unary(&mut self, op: UnaryOp, x: NodeId) -> Result<NodeId, IrError> {
        self.g.try_node(Op::Unary(op), &[x], None)
    }

    fn linear(&mut self, name: &str, x: NodeId, out: usize, bias: bool) -> Result<NodeId, IrError> {
        let din = self.width(x);
        let w = self.param(format!("{name}.w"), &[din, out])?;
        let y = self.g.try_node(Op::MatMul, &[x, w], None)?;
        if !bias {
            return Ok(y);
        }
        let b = self.param(format!("{name}.b"), &[out])?;
        self.binary(BinaryOp::Add, y, b)
    }

    /// `[.., S, H] -> [.., heads, S, H / heads]`.
    fn split_heads(&mut self, x: NodeId, heads: usize) -> Result<NodeId, IrError> {
        let s = self.g.shape(x).clone();
        let h = self.width(x);
        let mut dims = s.dims()[..s.rank() - 1].to_vec();
        dims.extend([Dim::Static(heads), Dim::Static(h / heads)]);
        let r = self
            .g
            .try_node(Op::Reshape, &[x], Some(s.with_dims(dims)))?;
        let perm = swap_perm(s.rank() + 1);
        self.g.try_node(Op::Transpose { perm }, &[r], None)
    }

    /// Inverse of [`Self::split_heads`] back to `like`'s shape.
    fn merge_heads(&mut self, x: NodeId, like: &Shape) -> Result<NodeId, IrError> {
        let perm = swap_perm(like.rank() + 1);
        let t = self.g.try_node(Op::Transpose { perm }, &[x], None)?;
        self.g.try_node(Op::Reshape, &[t], Some(like.clone()))
    }

    fn attention(
        &mut self,
        name: &str,
        x: NodeId,
        heads: usize,
        mask: Mask,
        bias: bool,
    ) -> Result<NodeId, IrError> {
        let h = self.width(x);
        let like = self.g.shape(x).clone();
        let mut qkv = [x; 3];
        for (slot, role) in qkv.iter_mut().zip(["q", "k", "v"]) {
            let p = self.linear(&format!("{name}.{role}"), x, h, bias)?;
            *slot = self.split_heads(p, heads)?;
        }
        let (kind, extra) = match mask {
            Mask::None => (MaskKind::None, None),
            Mask::Causal => (MaskKind::Causal, None),
            Mask::Bias(m) => (MaskKind::Bias, Some(m)),
        };
        let mut inputs = qkv.to_vec();
        inputs.extend(extra);
        let a = self.g.try_node(
            Op::Attention {
                mask: kind,
                scale: None,
                softcap: None,
                layout: crate::op::AttentionLayout::HeadsMajor,
            },
            &inputs,
            None,
        )?;
        let merged = self.merge_heads(a, &like)?;
        self.linear(&format!("{name}.o"), merged, h, bias)
    }

    fn layer_norm(&mut self, name: &str, x: NodeId, eps: f64) -> Result<NodeId, IrError> {
        let h = self.width(x);
        let gamma = self.param(format!("{name}.g"), &[h])?;
        let beta = self.param(format!("{name}.b"), &[h])?;
        let axis = self.g.shape(x).rank() - 1;
        self.g
            .try_node(Op::LayerNorm { axis, eps }, &[x, gamma, beta], None)
    }

    fn rms_norm(&mut self, name: &str, x: NodeId, eps: f64) -> Result<NodeId, IrError> {
        let h = self.width(x);
        let gamma = self.param(format!("{name}.g"), &[h])?;
        self.g.try_node(Op::RmsNorm { eps }, &[x, gamma], None)
    }

    fn mlp(
        &mut self,
        name: &str,
        x: NodeId,
        hidden: usize,
        activation: MlpActivation,
        bias: bool,
    ) -> Result<NodeId, IrError> {
        let h = self.width(x);
        let inner = match activation {
            MlpActivation::Gelu => {
                let up = self.linear(&format!("{name}.up"), x, hidden, bias)?;
                self.unary(UnaryOp::Gelu, up)?
            }
            MlpActivation::SwiGlu => {
                let gate = self.linear(&format!("{name}.gate"), x, hidden, bias)?;
                let up = self.linear(&format!("{name}.up"), x, hidden, bias)?;
                let act = self.unary(UnaryOp::Silu, gate)?;
                self.binary(BinaryOp::Mul, act, up)?
            }
        };
        self.linear(&format!("{name}.down"), inner, h, bias)
    }
}

enum Mask {
    None,
    Causal,
    Bias(NodeId),
}

/// The permutation of `rank` axes swapping the two before the last
/// (`[.., S, heads, D] <-> [.., heads, S, D]`).
fn swap_perm(rank: usize) -> Vec<usize> {
    let mut p: Vec<usize> = (0..rank).collect();
    p.swap(rank - 3, rank - 2);
    p
}
