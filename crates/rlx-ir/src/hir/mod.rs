//! HIR: model-level blocks (linear, attention, norms, MLP, encoder / decoder
//! blocks) over named values. Each block lowers to MIR ([`HirModule::lower`]);
//! the lowering is the block's meaning.
//!
//! ```
//! use rlx_ir::{DType, HirModule, HirOp, Shape};
//! let mut h = HirModule::new("tiny");
//! let x = h.input("x", Shape::new(&[4, 8], DType::F32)).unwrap();
//! let y = h.push("proj", HirOp::Linear { x, out_features: 2, bias: true }).unwrap();
//! h.set_outputs(vec![y]);
//! assert_eq!(h.shape(y), &Shape::new(&[4, 2], DType::F32));
//! let mir = h.lower().unwrap();
//! assert_eq!(mir.graph().params().len(), 2); // proj.w, proj.b
//! ```

mod lower;
mod text;

use crate::{IrError, Shape};

/// A value of a [`HirModule`]: an input or the result of a block.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct HirValue(pub(crate) usize);

impl HirValue {
    /// Position in the module's value list.
    pub fn index(self) -> usize {
        self.0
    }
}

/// The activation of an [`HirOp::Mlp`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MlpActivation {
    /// `down(gelu(up(x)))`, exact (erf) GELU.
    Gelu,
    /// `down(silu(gate(x)) * up(x))`.
    SwiGlu,
}

/// A model-level block. Parameters are created at lowering, named after the
/// block (`<block>.w`, `<block>.q.w`, `<block>.mlp.up.w`, ...; see
/// [`HirModule::lower`]).
#[derive(Clone, Debug, PartialEq)]
pub enum HirOp {
    /// `x @ w (+ b)`, `w: [in, out]`.
    Linear {
        /// Input `[.., in]`.
        x: HirValue,
        /// Output features.
        out_features: usize,
        /// Add a bias `[out]`.
        bias: bool,
    },
    /// Multi-head self-attention with q / k / v / o projections.
    Attention {
        /// Input `[.., S, H]`.
        x: HirValue,
        /// Head count (divides H).
        heads: usize,
        /// Query `i` sees keys `j <= i`.
        causal: bool,
        /// Additive score bias broadcast to `[.., heads, S, S]` (not with `causal`).
        mask: Option<HirValue>,
        /// Projections carry biases.
        bias: bool,
    },
    /// Layer norm over the last axis with gamma `g` and beta `b`.
    LayerNorm {
        /// Input.
        x: HirValue,
        /// Epsilon.
        eps: f64,
    },
    /// RMS norm over the last axis with gamma `g`.
    RmsNorm {
        /// Input.
        x: HirValue,
        /// Epsilon.
        eps: f64,
    },
    /// Feed-forward block `H -> hidden -> H`.
    Mlp {
        /// Input `[.., H]`.
        x: HirValue,
        /// Hidden width.
        hidden: usize,
        /// GELU or SwiGLU.
        activation: MlpActivation,
        /// Linears carry biases.
        bias: bool,
    },
    /// Elementwise `a + b` (a residual).
    Add {
        /// Left.
        a: HirValue,
        /// Right.
        b: HirValue,
    },
    /// Post-norm (BERT) encoder layer:
    /// `h = ln1(x + attn(x)); y = ln2(h + mlp_gelu(h))`, all with biases.
    EncoderBlock {
        /// Input `[.., S, H]`.
        x: HirValue,
        /// Head count.
        heads: usize,
        /// FFN width.
        ffn: usize,
        /// Layer-norm epsilon.
        eps: f64,
        /// Additive attention bias (padding mask).
        mask: Option<HirValue>,
    },
    /// Pre-norm (llama) decoder layer without biases:
    /// `h = x + attn_causal(rms1(x)); y = h + mlp_swiglu(rms2(h))`.
    DecoderBlock {
        /// Input `[.., S, H]`.
        x: HirValue,
        /// Head count.
        heads: usize,
        /// FFN width.
        ffn: usize,
        /// RMS-norm epsilon.
        eps: f64,
    },
}

impl HirOp {
    /// The textual mnemonic (`encoder_block`, ...).
    pub fn mnemonic(&self) -> &'static str {
        match self {
            HirOp::Linear { .. } => "linear",
            HirOp::Attention { .. } => "attention",
            HirOp::LayerNorm { .. } => "layer_norm",
            HirOp::RmsNorm { .. } => "rms_norm",
            HirOp::Mlp { .. } => "mlp",
            HirOp::Add { .. } => "add",
            HirOp::EncoderBlock { .. } => "encoder_block",
            HirOp::DecoderBlock { .. } => "decoder_block",
        }
    }

    /// The values the block reads, in order.
    pub fn inputs(&self) -> Vec<HirValue> {
        match self {
            HirOp::Linear { x, .. }
            | HirOp::LayerNorm { x, .. }
            | HirOp::RmsNorm { x, .. }
            | HirOp::Mlp { x, .. }
            | HirOp::DecoderBlock { x, .. } => vec![*x],
            HirOp::Attention { x, mask, .. } | HirOp::EncoderBlock { x, mask, .. } => {
                std::iter::once(*x).chain(*mask).collect()
            }
            HirOp::Add { a, b } => vec![*a, *b],
        }
    }
}

/// How a value is defined.
#[derive(Clone, Debug, PartialEq)]
pub enum HirDef {
    /// A graph input.
    Input,
    /// A block's result.
    Op(HirOp),
}

/// One named value of a [`HirModule`].
#[derive(Clone, Debug, PartialEq)]
pub struct HirNode {
    /// Unique name; also the parameter prefix of a block.
    pub name: String,
    /// Input or block.
    pub def: HirDef,
    /// Inferred shape.
    pub shape: Shape,
}

/// A model as a list of blocks over named values (the HIR stage).
#[derive(Clone, Debug, PartialEq, Default)]
pub struct HirModule {
    name: String,
    nodes: Vec<HirNode>,
    outputs: Vec<HirValue>,
}

impl HirModule {
    /// An empty module.
    pub fn new(name: impl Into<String>) -> HirModule {
        HirModule {
            name: name.into(),
            ..Default::default()
        }
    }

    /// Module name (also the lowered graph's name).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Every value in definition order.
    pub fn nodes(&self) -> &[HirNode] {
        &self.nodes
    }

    /// The value's node.
    pub fn node(&self, v: HirValue) -> &HirNode {
        &self.nodes[v.0]
    }

    /// The value's shape.
    pub fn shape(&self, v: HirValue) -> &Shape {
        &self.nodes[v.0].shape
    }

    /// Output values.
    pub fn outputs(&self) -> &[HirValue] {
        &self.outputs
    }

    /// Sets the outputs.
    pub fn set_outputs(&mut self, outputs: Vec<HirValue>) {
        self.outputs = outputs;
    }

    /// Declares a graph input.
    pub fn input(&mut self, name: &str, shape: Shape) -> Result<HirValue, IrError> {
        self.add(name, HirDef::Input, shape)
    }

    /// Appends a block named `name`, checking its inputs' shapes.
    pub fn push(&mut self, name: &str, op: HirOp) -> Result<HirValue, IrError> {
        let shape = self.infer(name, &op)?;
        self.add(name, HirDef::Op(op), shape)
    }

    fn add(&mut self, name: &str, def: HirDef, shape: Shape) -> Result<HirValue, IrError> {
        if self.nodes.iter().any(|n| n.name == name) {
            return Err(IrError::DuplicateName {
                kind: "hir value",
                name: name.into(),
            });
        }
        self.nodes.push(HirNode {
            name: name.into(),
            def,
            shape,
        });
        Ok(HirValue(self.nodes.len() - 1))
    }

    /// The result shape of `op`, or an error naming the block and what is wrong.
    fn infer(&self, name: &str, op: &HirOp) -> Result<Shape, IrError> {
        let err =
            |reason: String| IrError::invalid(format!("hir {} \"{name}\"", op.mnemonic()), reason);
        for v in op.inputs() {
            if v.0 >= self.nodes.len() {
                return Err(err(format!(
                    "input value #{} does not exist (the module has {} values)",
                    v.0,
                    self.nodes.len()
                )));
            }
        }
        let features = |x: HirValue| -> Result<(Shape, usize), IrError> {
            let s = self.shape(x).clone();
            if !s.dtype().is_float() {
                return Err(err(format!("input {s} is not floating point")));
            }
            match s.dims().last().and_then(|d| d.as_static()) {
                Some(h) if s.rank() >= 2 || matches!(op, HirOp::Linear { .. }) => Ok((s, h)),
                _ => Err(err(format!(
                    "input {s} needs a static last (feature) axis{}",
                    if matches!(op, HirOp::Linear { .. }) {
                        ""
                    } else {
                        " and rank >= 2"
                    }
                ))),
            }
        };
        let heads_ok = |h: usize, heads: usize| {
            if heads == 0 || !h.is_multiple_of(heads) {
                Err(err(format!("{heads} heads do not divide the width {h}")))
            } else {
                Ok(())
            }
        };
        match op {
            HirOp::Linear {
                x, out_features, ..
            } => {
                let (s, _) = features(*x)?;
                let mut dims = s.dims().to_vec();
                *dims.last_mut().expect("rank checked") = (*out_features).into();
                Ok(s.with_dims(dims))
            }
            HirOp::Attention {
                x,
                heads,
                causal,
                mask,
                ..
            } => {
                let (s, h) = features(*x)?;
                heads_ok(h, *heads)?;
                if *causal && mask.is_some() {
                    return Err(err("causal attention takes no mask".into()));
                }
                Ok(s)
            }
            HirOp::EncoderBlock { x, heads, .. } | HirOp::DecoderBlock { x, heads, .. } => {
                let (s, h) = features(*x)?;
                heads_ok(h, *heads)?;
                Ok(s)
            }
            HirOp::LayerNorm { x, .. } | HirOp::RmsNorm { x, .. } | HirOp::Mlp { x, .. } => {
                Ok(features(*x)?.0)
            }
            HirOp::Add { a, b } => {
                let (sa, sb) = (self.shape(*a), self.shape(*b));
                if sa != sb {
                    return Err(err(format!("operands differ: {sa} and {sb}")));
                }
                Ok(sa.clone())
            }
        }
    }

    /// Block counts per mnemonic.
    pub fn op_counts(&self) -> std::collections::BTreeMap<&'static str, usize> {
        let mut m = std::collections::BTreeMap::new();
        for n in &self.nodes {
            if let HirDef::Op(op) = &n.def {
                *m.entry(op.mnemonic()).or_insert(0) += 1;
            }
        }
        m
    }
}
