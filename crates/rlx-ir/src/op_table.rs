//! The op table: one declarative [`OpInfo`] per [`OpKind`].
//!
//! An op's facts live here once — its textual-IR name, family module,
//! input count, attributes, whether it is a composite, whether its node
//! declares its own shape, and how each transform treats it (vjp, jvp,
//! vmap). The rest is derived from or checked against this table: the
//! input-count check of [`crate::ops::infer_shape`], [`OpKind::is_composite`],
//! the autodiff dispatch's errors (`rlx-autodiff` reads the [`Rule`] of an op
//! it cannot transform), the op × backend matrix in `docs/ops.md` and the
//! test matrix that runs every op on every backend.
//!
//! The table is written with [`op_table!`](crate::op_table!), which expands to an exhaustive
//! `match` over [`OpKind`]: a kind without an entry, or an entry without a
//! rule for each transform, does not compile (see the `trybuild` tests in
//! `crates/rlx-ir/tests/compile_fail/`).

use crate::op::OpKind;
use std::fmt;

/// How many inputs a node of a kind takes (a payload may narrow it further:
/// attention takes a mask input only for mask kinds that read one).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Arity {
    /// The fewest inputs.
    pub min: usize,
    /// The most inputs; `None` for variadic ops (concat, regions, control flow).
    pub max: Option<usize>,
}

impl Arity {
    /// Exactly `n` inputs.
    pub const fn exactly(n: usize) -> Arity {
        Arity {
            min: n,
            max: Some(n),
        }
    }

    /// From `min` to `max` inputs.
    pub const fn range(min: usize, max: usize) -> Arity {
        Arity {
            min,
            max: Some(max),
        }
    }

    /// `min` inputs or more.
    pub const fn at_least(min: usize) -> Arity {
        Arity { min, max: None }
    }

    /// True when `n` inputs are allowed.
    pub fn admits(self, n: usize) -> bool {
        n >= self.min && self.max.is_none_or(|m| n <= m)
    }
}

impl fmt::Display for Arity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.max {
            Some(m) if m == self.min => write!(f, "{m}"),
            Some(m) => write!(f, "{}..={m}", self.min),
            None => write!(f, "{}+", self.min),
        }
    }
}

/// One attribute of an op's payload, as the textual IR names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Attr {
    /// The name in the textual IR (`axis`, `keep_dim`, ...).
    pub name: &'static str,
    /// Its type, in Rust terms (`usize`, `Vec<usize>`, `Option<f64>`, ...).
    pub ty: &'static str,
}

/// Shorthand for an [`Attr`] in the table.
const fn attr(name: &'static str, ty: &'static str) -> Attr {
    Attr { name, ty }
}

/// How a transform (vjp, jvp or vmap) treats an op kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rule {
    /// A rule of its own, in `rlx-autodiff`'s `rules/<family>.rs`.
    Own,
    /// Lowered to primitives before the transform (`prepare_graph_for_ad`);
    /// the primitives' rules apply.
    Decomposed,
    /// The derivative is zero by construction: integer / Bool results
    /// (comparisons, arg-reductions) or inputs that are block bytes.
    Zero,
    /// A leaf or a node without inputs: the transform starts here.
    Leaf,
    /// A rule for some payloads; the text says which and what the others do.
    Partial(&'static str),
    /// Not differentiable by design; the text says why and what to use instead.
    NotDifferentiable(&'static str),
    /// No rule for this transform by design; the text says why.
    Unsupported(&'static str),
}

impl Rule {
    /// True when the transform can run through the op (possibly decomposed,
    /// possibly yielding a zero derivative).
    pub fn is_supported(self) -> bool {
        !matches!(self, Rule::NotDifferentiable(_) | Rule::Unsupported(_))
    }

    /// The reason a transform does not run, for an unsupported rule.
    pub fn reason(self) -> Option<&'static str> {
        match self {
            Rule::NotDifferentiable(r) | Rule::Unsupported(r) => Some(r),
            _ => None,
        }
    }

    /// A short cell for the op × transform table (`docs/ops.md`).
    pub fn cell(self) -> String {
        match self {
            Rule::Own => "rule".into(),
            Rule::Decomposed => "via decomposition".into(),
            Rule::Zero => "zero".into(),
            Rule::Leaf => "leaf".into(),
            Rule::Partial(note) => format!("partial: {note}"),
            Rule::NotDifferentiable(why) => format!("not differentiable: {why}"),
            Rule::Unsupported(why) => format!("unsupported: {why}"),
        }
    }
}

/// Everything the workspace knows about one op kind, in one place.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OpInfo {
    /// The kind this entry describes.
    pub kind: OpKind,
    /// The head of its textual-IR mnemonic (`Op::mnemonic` starts with it;
    /// `*` stands for a payload-chosen name: `exp`, `cmp.lt`, `reduce.sum`).
    pub name: &'static str,
    /// Its family: the module of `rlx_ir::ops` holding its shape rule (and
    /// decomposition), and of `rlx-autodiff::rules` / `rlx-cpu::kernels`.
    pub family: &'static str,
    /// One line on what it computes.
    pub summary: &'static str,
    /// How many inputs it takes.
    pub arity: Arity,
    /// Its payload's attributes, as the textual IR names them.
    pub attrs: &'static [Attr],
    /// A composite: it carries a decomposition into primitives
    /// ([`crate::ops::decompose`]), the reference semantics and the fallback
    /// of a backend without a native kernel.
    pub composite: bool,
    /// Its node must be built with a declared output shape
    /// ([`crate::ops::needs_declared_shape`]; for `fft`, the `irfft` kind).
    pub declared_shape: bool,
    /// Reverse mode.
    pub vjp: Rule,
    /// Forward mode.
    pub jvp: Rule,
    /// Batching.
    pub vmap: Rule,
}

/// Declares the op table: `kind => OpInfo { .. }` for every [`OpKind`],
/// expanding to `fn $name(kind: OpKind) -> &'static OpInfo` with an
/// exhaustive `match` (a missing kind is error E0004, a missing field of an
/// entry E0063) and to `const $all: &[OpKind]` listing the kinds in order.
#[macro_export]
macro_rules! op_table {
    (
        $(#[$meta:meta])* $vis:vis fn $name:ident;
        $(#[$all_meta:meta])* $all_vis:vis const $all:ident;
        $( $kind:ident => $info:expr ),* $(,)?
    ) => {
        $(#[$meta])*
        $vis fn $name(kind: $crate::OpKind) -> &'static $crate::op_table::OpInfo {
            match kind {
                $( $crate::OpKind::$kind => {
                    const INFO: $crate::op_table::OpInfo = $info;
                    &INFO
                } )*
            }
        }

        $(#[$all_meta])*
        $all_vis const $all: &[$crate::OpKind] = &[$( $crate::OpKind::$kind ),*];
    };
}

const NONE: &[Attr] = &[];
const AXIS: &[Attr] = &[attr("axis", "usize")];
const LEAF: &str = "leaf";
const DECOMPOSED_BEFORE_AD: Rule = Rule::Decomposed;
const WHILE_REVERSE: &str =
    "reverse mode through a while loop needs its trip count; use a scan (fixed length) or forward mode (jvp)";
const DEQUANT_BATCH: &str =
    "batched block bytes (vmap over activations, keep quantized weights unbatched)";
const DEQUANT_MATMUL: &str =
    "stored weight formats keep a rule of their own (w.r.t. x only); a plain float weight is decomposed";
const CUSTOM_RULE: &str =
    "the rule the op's extension registers; an op without one is refused, naming it";

op_table! {
    /// The table entry of `kind`.
    pub(crate) fn info_of;
    /// Every op kind, in declaration order.
    pub(crate) const ALL_KINDS;

    Input => OpInfo { kind: OpKind::Input, name: "input", family: LEAF, summary: "a named graph input",
        arity: Arity::exactly(0), attrs: &[attr("name", "String")], composite: false, declared_shape: true,
        vjp: Rule::Leaf, jvp: Rule::Leaf, vmap: Rule::Leaf },
    Param => OpInfo { kind: OpKind::Param, name: "param", family: LEAF, summary: "a named parameter (weights)",
        arity: Arity::exactly(0), attrs: &[attr("name", "String")], composite: false, declared_shape: true,
        vjp: Rule::Leaf, jvp: Rule::Leaf, vmap: Rule::Leaf },
    Constant => OpInfo { kind: OpKind::Constant, name: "constant", family: LEAF, summary: "little-endian constant data",
        arity: Arity::exactly(0), attrs: &[attr("bytes", "Vec<u8>")], composite: false, declared_shape: true,
        vjp: Rule::Leaf, jvp: Rule::Leaf, vmap: Rule::Leaf },
    Unary => OpInfo { kind: OpKind::Unary, name: "*", family: "elementwise", summary: "elementwise unary function (exp, tanh, gelu, ...)",
        arity: Arity::exactly(1), attrs: &[attr("op", "UnaryOp")], composite: false, declared_shape: false,
        vjp: Rule::Own, jvp: Rule::Own, vmap: Rule::Own },
    Binary => OpInfo { kind: OpKind::Binary, name: "*", family: "elementwise", summary: "elementwise binary arithmetic with broadcasting",
        arity: Arity::exactly(2), attrs: &[attr("op", "BinaryOp")], composite: false, declared_shape: false,
        vjp: Rule::Own, jvp: Rule::Own, vmap: Rule::Own },
    Compare => OpInfo { kind: OpKind::Compare, name: "cmp.*", family: "elementwise", summary: "elementwise comparison, Bool result",
        arity: Arity::exactly(2), attrs: &[attr("op", "CmpOp")], composite: false, declared_shape: false,
        vjp: Rule::Zero, jvp: Rule::Zero, vmap: Rule::Own },
    Select => OpInfo { kind: OpKind::Select, name: "select", family: "elementwise", summary: "where(cond, a, b)",
        arity: Arity::exactly(3), attrs: NONE, composite: false, declared_shape: false,
        vjp: Rule::Own, jvp: Rule::Own, vmap: Rule::Own },
    Cast => OpInfo { kind: OpKind::Cast, name: "cast", family: "elementwise", summary: "conversion to the node's dtype",
        arity: Arity::exactly(1), attrs: NONE, composite: false, declared_shape: true,
        vjp: Rule::Own, jvp: Rule::Own, vmap: Rule::Own },
    MatMul => OpInfo { kind: OpKind::MatMul, name: "matmul", family: "linalg", summary: "numpy matmul (batched, broadcast batch dims)",
        arity: Arity::exactly(2), attrs: NONE, composite: false, declared_shape: false,
        vjp: Rule::Own, jvp: Rule::Own, vmap: Rule::Own },
    DotGeneral => OpInfo { kind: OpKind::DotGeneral, name: "dot_general", family: "linalg", summary: "dot product over explicit batch / contracting dims",
        arity: Arity::exactly(2), attrs: &[attr("lb", "Vec<usize>"), attr("rb", "Vec<usize>"), attr("lc", "Vec<usize>"), attr("rc", "Vec<usize>")],
        composite: false, declared_shape: false,
        vjp: Rule::Own, jvp: Rule::Own, vmap: Rule::Own },
    Reduce => OpInfo { kind: OpKind::Reduce, name: "reduce.*", family: "reduce", summary: "sum / mean / max / min / prod over axes",
        arity: Arity::exactly(1), attrs: &[attr("op", "ReduceOp"), attr("axes", "Vec<usize>"), attr("keep_dim", "bool")],
        composite: false, declared_shape: false,
        vjp: Rule::Own, jvp: Rule::Own, vmap: Rule::Own },
    ArgReduce => OpInfo { kind: OpKind::ArgReduce, name: "arg*", family: "reduce", summary: "argmax / argmin along an axis (I64)",
        arity: Arity::exactly(1), attrs: &[attr("op", "ArgReduceOp"), attr("axis", "usize"), attr("keep_dim", "bool")],
        composite: false, declared_shape: false,
        vjp: Rule::Zero, jvp: Rule::Zero, vmap: Rule::Own },
    Cumsum => OpInfo { kind: OpKind::Cumsum, name: "cumsum", family: "reduce", summary: "cumulative sum along an axis",
        arity: Arity::exactly(1), attrs: &[attr("axis", "usize"), attr("exclusive", "bool"), attr("reverse", "bool")],
        composite: false, declared_shape: false,
        vjp: Rule::Own, jvp: Rule::Own, vmap: Rule::Own },
    Reshape => OpInfo { kind: OpKind::Reshape, name: "reshape", family: "movement", summary: "new dims, same row-major order",
        arity: Arity::exactly(1), attrs: NONE, composite: false, declared_shape: true,
        vjp: Rule::Own, jvp: Rule::Own, vmap: Rule::Own },
    Transpose => OpInfo { kind: OpKind::Transpose, name: "transpose", family: "movement", summary: "permute the axes",
        arity: Arity::exactly(1), attrs: &[attr("perm", "Vec<usize>")], composite: false, declared_shape: false,
        vjp: Rule::Own, jvp: Rule::Own, vmap: Rule::Own },
    Slice => OpInfo { kind: OpKind::Slice, name: "slice", family: "movement", summary: "strided slice",
        arity: Arity::exactly(1), attrs: &[attr("starts", "Vec<usize>"), attr("steps", "Vec<usize>")], composite: false, declared_shape: true,
        vjp: Rule::Own, jvp: Rule::Own, vmap: Rule::Own },
    Concat => OpInfo { kind: OpKind::Concat, name: "concat", family: "movement", summary: "join along an axis",
        arity: Arity::at_least(1), attrs: AXIS, composite: false, declared_shape: false,
        vjp: Rule::Own, jvp: Rule::Own, vmap: Rule::Own },
    Pad => OpInfo { kind: OpKind::Pad, name: "pad", family: "movement", summary: "pad each axis (constant / reflect / edge)",
        arity: Arity::exactly(1), attrs: &[attr("pads", "Vec<(usize, usize)>"), attr("mode", "PadMode")], composite: false, declared_shape: false,
        vjp: Rule::Own, jvp: Rule::Own, vmap: Rule::Own },
    Broadcast => OpInfo { kind: OpKind::Broadcast, name: "broadcast", family: "movement", summary: "numpy broadcast_to the node's dims",
        arity: Arity::exactly(1), attrs: NONE, composite: false, declared_shape: true,
        vjp: Rule::Own, jvp: Rule::Own, vmap: Rule::Own },
    Gather => OpInfo { kind: OpKind::Gather, name: "gather", family: "indexing", summary: "numpy take(x, indices, axis)",
        arity: Arity::exactly(2), attrs: AXIS, composite: false, declared_shape: false,
        vjp: Rule::Own, jvp: Rule::Own, vmap: Rule::Own },
    GatherElements => OpInfo { kind: OpKind::GatherElements, name: "gather_elements", family: "indexing", summary: "numpy take_along_axis",
        arity: Arity::exactly(2), attrs: AXIS, composite: false, declared_shape: false,
        vjp: Rule::Own, jvp: Rule::Own, vmap: Rule::Own },
    ScatterAdd => OpInfo { kind: OpKind::ScatterAdd, name: "scatter_add", family: "indexing", summary: "base with updates added at indices (torch scatter_add)",
        arity: Arity::exactly(3), attrs: AXIS, composite: false, declared_shape: false,
        vjp: Rule::Own, jvp: Rule::Own, vmap: Rule::Own },
    TopK => OpInfo { kind: OpKind::TopK, name: "topk", family: "indexing", summary: "k largest / smallest along an axis, sorted",
        arity: Arity::exactly(1), attrs: &[attr("k", "usize"), attr("axis", "usize"), attr("largest", "bool"), attr("output", "TopKOutput")],
        composite: false, declared_shape: false,
        vjp: Rule::Partial("values: a scatter of the cotangent; indices: zero"),
        jvp: Rule::Partial("values: the tangent gathered at the indices; indices: zero"),
        vmap: Rule::Own },
    Iota => OpInfo { kind: OpKind::Iota, name: "iota", family: "indexing", summary: "start + step * index along an axis",
        arity: Arity::exactly(0), attrs: &[attr("axis", "usize"), attr("start", "f64"), attr("step", "f64")], composite: false, declared_shape: true,
        vjp: Rule::Leaf, jvp: Rule::Leaf, vmap: Rule::Leaf },
    Softmax => OpInfo { kind: OpKind::Softmax, name: "softmax", family: "norm", summary: "softmax along an axis",
        arity: Arity::exactly(1), attrs: AXIS, composite: true, declared_shape: false,
        vjp: Rule::Own, jvp: Rule::Own, vmap: Rule::Own },
    LogSoftmax => OpInfo { kind: OpKind::LogSoftmax, name: "log_softmax", family: "norm", summary: "log-softmax along an axis",
        arity: Arity::exactly(1), attrs: AXIS, composite: true, declared_shape: false,
        vjp: Rule::Own, jvp: Rule::Own, vmap: Rule::Own },
    LayerNorm => OpInfo { kind: OpKind::LayerNorm, name: "layer_norm", family: "norm", summary: "layer norm over the trailing axes, optional gamma / beta",
        arity: Arity::range(1, 3), attrs: &[attr("axis", "usize"), attr("eps", "f64")], composite: true, declared_shape: false,
        vjp: Rule::Own, jvp: DECOMPOSED_BEFORE_AD, vmap: DECOMPOSED_BEFORE_AD },
    RmsNorm => OpInfo { kind: OpKind::RmsNorm, name: "rms_norm", family: "norm", summary: "RMS norm over the last axis, optional gamma",
        arity: Arity::range(1, 2), attrs: &[attr("eps", "f64")], composite: true, declared_shape: false,
        vjp: Rule::Own, jvp: DECOMPOSED_BEFORE_AD, vmap: DECOMPOSED_BEFORE_AD },
    GroupNorm => OpInfo { kind: OpKind::GroupNorm, name: "group_norm", family: "norm", summary: "group norm of [N, C, ...], optional gamma and beta",
        arity: Arity::range(1, 3), attrs: &[attr("groups", "usize"), attr("eps", "f64")], composite: true, declared_shape: false,
        vjp: DECOMPOSED_BEFORE_AD, jvp: DECOMPOSED_BEFORE_AD, vmap: DECOMPOSED_BEFORE_AD },
    Attention => OpInfo { kind: OpKind::Attention, name: "attention", family: "attention", summary: "scaled dot-product attention (masks, GQA, soft-cap, layouts)",
        arity: Arity::range(3, 4), attrs: &[attr("mask", "MaskKind"), attr("scale", "Option<f64>"), attr("softcap", "Option<f64>"), attr("layout", "AttentionLayout")],
        composite: true, declared_shape: false,
        vjp: Rule::Own, jvp: DECOMPOSED_BEFORE_AD, vmap: DECOMPOSED_BEFORE_AD },
    Rope => OpInfo { kind: OpKind::Rope, name: "rope", family: "attention", summary: "rotary position embedding",
        arity: Arity::exactly(3), attrs: &[attr("interleaved", "bool")], composite: true, declared_shape: false,
        vjp: DECOMPOSED_BEFORE_AD, jvp: DECOMPOSED_BEFORE_AD, vmap: DECOMPOSED_BEFORE_AD },
    Conv => OpInfo { kind: OpKind::Conv, name: "conv", family: "conv", summary: "N-d convolution, optional bias",
        arity: Arity::range(2, 3), attrs: &[attr("stride", "Vec<usize>"), attr("padding", "Vec<(usize, usize)>"), attr("dilation", "Vec<usize>"), attr("groups", "usize")],
        composite: false, declared_shape: false,
        vjp: Rule::Own, jvp: Rule::Own, vmap: DECOMPOSED_BEFORE_AD },
    ConvTranspose => OpInfo { kind: OpKind::ConvTranspose, name: "conv_transpose", family: "conv", summary: "N-d transposed convolution, optional bias",
        arity: Arity::range(2, 3), attrs: &[attr("stride", "Vec<usize>"), attr("padding", "Vec<(usize, usize)>"), attr("dilation", "Vec<usize>"), attr("output_padding", "Vec<usize>"), attr("groups", "usize")],
        composite: false, declared_shape: false,
        vjp: DECOMPOSED_BEFORE_AD, jvp: DECOMPOSED_BEFORE_AD, vmap: DECOMPOSED_BEFORE_AD },
    Pool => OpInfo { kind: OpKind::Pool, name: "pool.*", family: "conv", summary: "max / average pooling",
        arity: Arity::exactly(1), attrs: &[attr("kernel", "Vec<usize>"), attr("stride", "Vec<usize>"), attr("padding", "Vec<(usize, usize)>"), attr("dilation", "Vec<usize>"), attr("count_include_pad", "bool")],
        composite: false, declared_shape: false,
        vjp: DECOMPOSED_BEFORE_AD, jvp: DECOMPOSED_BEFORE_AD, vmap: DECOMPOSED_BEFORE_AD },
    Upsample => OpInfo { kind: OpKind::Upsample, name: "upsample", family: "upsample", summary: "resize the spatial dims (nearest / linear / cubic)",
        arity: Arity::exactly(1), attrs: &[attr("mode", "InterpMode"), attr("align_corners", "bool")], composite: false, declared_shape: true,
        vjp: DECOMPOSED_BEFORE_AD, jvp: DECOMPOSED_BEFORE_AD, vmap: DECOMPOSED_BEFORE_AD },
    Fft => OpInfo { kind: OpKind::Fft, name: "*fft", family: "fft", summary: "fft / ifft / rfft / irfft along the last axis",
        arity: Arity::exactly(1), attrs: &[attr("kind", "FftKind"), attr("norm", "FftNorm")], composite: false, declared_shape: true,
        vjp: Rule::Own, jvp: Rule::Own, vmap: Rule::Own },
    ElementwiseRegion => OpInfo { kind: OpKind::ElementwiseRegion, name: "region", family: "region", summary: "a fused chain of elementwise steps",
        arity: Arity::at_least(1), attrs: &[attr("steps", "Vec<ChainStep>")], composite: true, declared_shape: false,
        vjp: DECOMPOSED_BEFORE_AD, jvp: DECOMPOSED_BEFORE_AD, vmap: DECOMPOSED_BEFORE_AD },
    FusedMatMul => OpInfo { kind: OpKind::FusedMatMul, name: "matmul+epilogue", family: "region", summary: "matmul with an elementwise epilogue",
        arity: Arity::at_least(2), attrs: &[attr("epilogue", "Vec<ChainStep>")], composite: true, declared_shape: false,
        vjp: DECOMPOSED_BEFORE_AD, jvp: DECOMPOSED_BEFORE_AD, vmap: DECOMPOSED_BEFORE_AD },
    FusedConv => OpInfo { kind: OpKind::FusedConv, name: "conv+epilogue", family: "region", summary: "conv (optional bias) with an elementwise epilogue",
        arity: Arity::at_least(2), attrs: &[attr("stride", "Vec<usize>"), attr("padding", "Vec<(usize, usize)>"), attr("dilation", "Vec<usize>"), attr("groups", "usize"), attr("bias", "bool"), attr("epilogue", "Vec<ChainStep>")], composite: true, declared_shape: false,
        vjp: DECOMPOSED_BEFORE_AD, jvp: DECOMPOSED_BEFORE_AD, vmap: DECOMPOSED_BEFORE_AD },
    AddNorm => OpInfo { kind: OpKind::AddNorm, name: "add+*", family: "fused", summary: "residual add + layer / RMS norm in one pass",
        arity: Arity::range(2, 4), attrs: &[attr("axis", "usize"), attr("eps", "f64"), attr("rms", "bool"), attr("keep_sum", "bool")],
        composite: true, declared_shape: false,
        vjp: DECOMPOSED_BEFORE_AD, jvp: DECOMPOSED_BEFORE_AD, vmap: DECOMPOSED_BEFORE_AD },
    GatedMatMul => OpInfo { kind: OpKind::GatedMatMul, name: "gated_matmul", family: "fused", summary: "act(x @ w_gate) * (x @ w_up) (SwiGLU / GeGLU)",
        arity: Arity::exactly(3), attrs: &[attr("act", "UnaryOp")], composite: true, declared_shape: false,
        vjp: DECOMPOSED_BEFORE_AD, jvp: DECOMPOSED_BEFORE_AD, vmap: DECOMPOSED_BEFORE_AD },
    Dequantize => OpInfo { kind: OpKind::Dequantize, name: "dequantize", family: "quant", summary: "GGUF block bytes -> the F32 values they encode",
        arity: Arity::exactly(1), attrs: &[attr("scheme", "QuantScheme")], composite: false, declared_shape: true,
        vjp: Rule::Zero, jvp: Rule::Zero, vmap: Rule::Unsupported(DEQUANT_BATCH) },
    DequantMatMul => OpInfo { kind: OpKind::DequantMatMul, name: "dequant_matmul", family: "quant", summary: "x @ W^T for a block-quantized (or plain) [N, K] weight",
        arity: Arity::exactly(2), attrs: &[attr("scheme", "Option<QuantScheme>"), attr("n", "usize"), attr("k", "usize")], composite: true, declared_shape: false,
        vjp: Rule::Partial(DEQUANT_MATMUL), jvp: Rule::Partial(DEQUANT_MATMUL), vmap: Rule::Partial(DEQUANT_MATMUL) },
    If => OpInfo { kind: OpKind::If, name: "if", family: "control", summary: "run one of two branch sub-graphs",
        arity: Arity::at_least(1), attrs: &[attr("then_branch", "Graph"), attr("else_branch", "Graph")], composite: false, declared_shape: false,
        vjp: Rule::Own, jvp: Rule::Own, vmap: Rule::Own },
    While => OpInfo { kind: OpKind::While, name: "while", family: "control", summary: "loop a body over a carry while a condition holds",
        arity: Arity::at_least(0), attrs: &[attr("max_iterations", "usize"), attr("cond", "Graph"), attr("body", "Graph")], composite: false, declared_shape: false,
        vjp: Rule::NotDifferentiable(WHILE_REVERSE), jvp: Rule::Own, vmap: Rule::Own },
    Scan => OpInfo { kind: OpKind::Scan, name: "scan", family: "control", summary: "jax.lax.scan over a body sub-graph",
        arity: Arity::at_least(0), attrs: &[attr("num_carry", "usize"), attr("length", "usize"), attr("reverse", "bool"), attr("checkpoint", "Option<usize>"), attr("body", "Graph")],
        composite: false, declared_shape: false,
        vjp: Rule::Own, jvp: Rule::Own, vmap: Rule::Own },
    CustomFn => OpInfo { kind: OpKind::CustomFn, name: "custom_fn", family: "control", summary: "a user function with optional user vjp / jvp sub-graphs",
        arity: Arity::at_least(0), attrs: &[attr("name", "String"), attr("body", "Graph"), attr("vjp", "Option<Graph>"), attr("jvp", "Option<Graph>")],
        composite: false, declared_shape: false,
        vjp: Rule::Own, jvp: Rule::Own, vmap: Rule::Own },
    Custom => OpInfo { kind: OpKind::Custom, name: "custom.*", family: "custom", summary: "a registered op extension (rlx_ir::custom): its own shape rule, kernels and rules",
        arity: Arity::at_least(0), attrs: &[attr("name", "String"), attr("attrs", "CustomAttrs")], composite: false, declared_shape: false,
        vjp: Rule::Partial(CUSTOM_RULE), jvp: Rule::Partial(CUSTOM_RULE), vmap: Rule::Partial(CUSTOM_RULE) },
    TupleGet => OpInfo { kind: OpKind::TupleGet, name: "tuple_get", family: "control", summary: "one result of a control-flow tuple",
        arity: Arity::exactly(1), attrs: &[attr("index", "usize"), attr("offset", "usize"), attr("shape", "Shape")], composite: false, declared_shape: false,
        vjp: Rule::Own, jvp: Rule::Own, vmap: Rule::Own },
}

impl OpKind {
    /// Every op kind, in declaration order.
    pub const ALL: &'static [OpKind] = ALL_KINDS;

    /// This kind's entry of the op table.
    pub fn info(self) -> &'static OpInfo {
        info_of(self)
    }
}
