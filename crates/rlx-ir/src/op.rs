//! The operation set: [`Op`] and its payload enums.
//!
//! Ops come in two layers (see DESIGN §2): *primitives* that every backend
//! runs, and *composites* (softmax, norms, attention, rope) that carry a
//! decomposition into primitives in [`crate::ops`]. The shape rule,
//! verification and decomposition of each family live in
//! `ops/<family>.rs`.

use crate::fft::{FftKind, FftNorm};
use crate::ops::control::{CustomFnSpec, IfSpec, ScanSpec, WhileSpec};
use crate::ops::region::region_text;
pub use crate::ops::region::{ChainOperand, ChainStep};
use crate::ops::upsample::InterpMode;
use crate::quant::QuantScheme;
use std::fmt;

/// Elementwise unary functions (activations included).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UnaryOp {
    /// `-x` (wrapping for integers).
    Neg,
    /// `|x|`.
    Abs,
    /// `e^x`.
    Exp,
    /// Natural log.
    Log,
    /// Square root.
    Sqrt,
    /// `1/sqrt(x)`.
    Rsqrt,
    /// `1/x`.
    Reciprocal,
    /// Hyperbolic tangent.
    Tanh,
    /// Logistic sigmoid.
    Sigmoid,
    /// `max(x, 0)`.
    Relu,
    /// Exact GELU, `x * Φ(x)` with the error function.
    Gelu,
    /// Tanh-approximated GELU.
    GeluApprox,
    /// `x * sigmoid(x)`.
    Silu,
    /// Sine.
    Sin,
    /// Cosine.
    Cos,
    /// Floor.
    Floor,
    /// Ceiling.
    Ceil,
    /// Round half to even (numpy `round`).
    Round,
    /// Sign (-1, 0, 1; NaN stays NaN).
    Sign,
    /// Error function.
    Erf,
    /// `log(1 + e^x)`, computed stably.
    Softplus,
    /// Logical not (Bool only).
    Not,
}

/// `Activation` is the name the seed's builder (`g.activation`) uses for an
/// elementwise unary function; it is the same enum as [`UnaryOp`].
pub type Activation = UnaryOp;

impl UnaryOp {
    /// Every unary op.
    pub const ALL: [UnaryOp; 22] = [
        UnaryOp::Neg,
        UnaryOp::Abs,
        UnaryOp::Exp,
        UnaryOp::Log,
        UnaryOp::Sqrt,
        UnaryOp::Rsqrt,
        UnaryOp::Reciprocal,
        UnaryOp::Tanh,
        UnaryOp::Sigmoid,
        UnaryOp::Relu,
        UnaryOp::Gelu,
        UnaryOp::GeluApprox,
        UnaryOp::Silu,
        UnaryOp::Sin,
        UnaryOp::Cos,
        UnaryOp::Floor,
        UnaryOp::Ceil,
        UnaryOp::Round,
        UnaryOp::Sign,
        UnaryOp::Erf,
        UnaryOp::Softplus,
        UnaryOp::Not,
    ];

    /// The textual-IR name.
    pub fn name(self) -> &'static str {
        match self {
            UnaryOp::Neg => "neg",
            UnaryOp::Abs => "abs",
            UnaryOp::Exp => "exp",
            UnaryOp::Log => "log",
            UnaryOp::Sqrt => "sqrt",
            UnaryOp::Rsqrt => "rsqrt",
            UnaryOp::Reciprocal => "reciprocal",
            UnaryOp::Tanh => "tanh",
            UnaryOp::Sigmoid => "sigmoid",
            UnaryOp::Relu => "relu",
            UnaryOp::Gelu => "gelu",
            UnaryOp::GeluApprox => "gelu_approx",
            UnaryOp::Silu => "silu",
            UnaryOp::Sin => "sin",
            UnaryOp::Cos => "cos",
            UnaryOp::Floor => "floor",
            UnaryOp::Ceil => "ceil",
            UnaryOp::Round => "round",
            UnaryOp::Sign => "sign",
            UnaryOp::Erf => "erf",
            UnaryOp::Softplus => "softplus",
            UnaryOp::Not => "not",
        }
    }

    /// True for ops defined only on floating-point (and complex) values.
    pub fn float_only(self) -> bool {
        !matches!(
            self,
            UnaryOp::Neg
                | UnaryOp::Abs
                | UnaryOp::Relu
                | UnaryOp::Sign
                | UnaryOp::Not
                | UnaryOp::Floor
                | UnaryOp::Ceil
                | UnaryOp::Round
        )
    }
}

/// Elementwise binary arithmetic with numpy broadcasting.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinaryOp {
    /// `a + b` (wrapping for integers; logical or for Bool).
    Add,
    /// `a - b`.
    Sub,
    /// `a * b` (logical and for Bool).
    Mul,
    /// `a / b`; for integers numpy's floor division `//` (x // 0 = 0).
    Div,
    /// `a ** b`.
    Pow,
    /// `maximum(a, b)`, NaN-propagating.
    Max,
    /// `minimum(a, b)`, NaN-propagating.
    Min,
    /// numpy `mod`: the result has the sign of the divisor (x % 0 = 0 for integers).
    Mod,
    /// `atan2(a, b)`.
    Atan2,
    /// Logical and (Bool) / bitwise and (integers).
    And,
    /// Logical or (Bool) / bitwise or (integers).
    Or,
    /// Logical xor (Bool) / bitwise xor (integers).
    Xor,
}

impl BinaryOp {
    /// Every binary op.
    pub const ALL: [BinaryOp; 12] = [
        BinaryOp::Add,
        BinaryOp::Sub,
        BinaryOp::Mul,
        BinaryOp::Div,
        BinaryOp::Pow,
        BinaryOp::Max,
        BinaryOp::Min,
        BinaryOp::Mod,
        BinaryOp::Atan2,
        BinaryOp::And,
        BinaryOp::Or,
        BinaryOp::Xor,
    ];

    /// The textual-IR name.
    pub fn name(self) -> &'static str {
        match self {
            BinaryOp::Add => "add",
            BinaryOp::Sub => "sub",
            BinaryOp::Mul => "mul",
            BinaryOp::Div => "div",
            BinaryOp::Pow => "pow",
            BinaryOp::Max => "max",
            BinaryOp::Min => "min",
            BinaryOp::Mod => "mod",
            BinaryOp::Atan2 => "atan2",
            BinaryOp::And => "and",
            BinaryOp::Or => "or",
            BinaryOp::Xor => "xor",
        }
    }
}

/// Elementwise comparison; the result is Bool.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CmpOp {
    /// `==`.
    Eq,
    /// `!=`.
    Ne,
    /// `<`.
    Lt,
    /// `<=`.
    Le,
    /// `>`.
    Gt,
    /// `>=`.
    Ge,
}

impl CmpOp {
    /// Every comparison.
    pub const ALL: [CmpOp; 6] = [
        CmpOp::Eq,
        CmpOp::Ne,
        CmpOp::Lt,
        CmpOp::Le,
        CmpOp::Gt,
        CmpOp::Ge,
    ];

    /// The textual-IR name.
    pub fn name(self) -> &'static str {
        match self {
            CmpOp::Eq => "eq",
            CmpOp::Ne => "ne",
            CmpOp::Lt => "lt",
            CmpOp::Le => "le",
            CmpOp::Gt => "gt",
            CmpOp::Ge => "ge",
        }
    }
}

/// Reductions over a set of axes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReduceOp {
    /// Sum (Bool sums to I64).
    Sum,
    /// Arithmetic mean (integers give F32, as JAX does).
    Mean,
    /// Maximum, NaN-propagating; identity `-inf` / the type's minimum.
    Max,
    /// Minimum, NaN-propagating; identity `+inf` / the type's maximum.
    Min,
    /// Product.
    Prod,
}

impl ReduceOp {
    /// The textual-IR name.
    pub fn name(self) -> &'static str {
        match self {
            ReduceOp::Sum => "sum",
            ReduceOp::Mean => "mean",
            ReduceOp::Max => "max",
            ReduceOp::Min => "min",
            ReduceOp::Prod => "prod",
        }
    }
}

/// Index-of-extremum reductions; the result is I64.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ArgReduceOp {
    /// Index of the first maximum (a NaN counts as the maximum, as in numpy).
    ArgMax,
    /// Index of the first minimum (a NaN counts as the minimum, as in numpy).
    ArgMin,
}

/// Attention masking.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MaskKind {
    /// Every query sees every key.
    None,
    /// Query `i` sees keys `j <= i + (Sk - Sq)` (bottom-right aligned, as for a KV cache).
    Causal,
    /// Causal, and only the last `window` keys: `i + off - window < j <= i + off`.
    SlidingWindow(usize),
    /// A Bool mask input (broadcast to `[.., Sq, Sk]`); `true` keeps the key.
    Custom,
    /// An additive float bias input (broadcast to `[.., Sq, Sk]`) added to the scores.
    Bias,
}

/// Where [`Op::Attention`]'s operands keep their heads axis.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum AttentionLayout {
    /// `q [.., H, Sq, D]`, `k [.., Hkv, Sk, D]`, `v [.., Hkv, Sk, Dv]`,
    /// output `[.., H, Sq, Dv]` (PyTorch's `scaled_dot_product_attention`).
    #[default]
    HeadsMajor,
    /// `q [.., Sq, H, D]`, `k [.., Sk, Hkv, D]`, `v [.., Sk, Hkv, Dv]`,
    /// output `[.., Sq, H, Dv]`: the heads of a `[.., S, H * D]`
    /// projection read in place, as FlashAttention and ONNX Runtime's
    /// fused attention take them; the mask still broadcasts to the scores
    /// `[.., H, Sq, Sk]`. Equal to the heads-major op between transposes of
    /// the sequence and heads axes.
    SeqMajor,
}

/// Padding modes of [`Op::Pad`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum PadMode {
    /// Fill with a constant.
    Constant(f64),
    /// Mirror without repeating the edge (numpy `reflect`).
    Reflect,
    /// Repeat the edge value (numpy `edge`).
    Edge,
}

/// Max or average pooling.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PoolKind {
    /// Maximum over the window (padding never wins).
    Max,
    /// Average over the window.
    Avg,
}

/// Which output of a top-k an [`Op::TopK`] node is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TopKOutput {
    /// The k values, sorted.
    Values,
    /// Their I64 indices along the axis.
    Indices,
}

/// Dimension numbers of [`Op::DotGeneral`] (XLA convention).
///
/// The result's dims are: batch dims, then lhs free dims, then rhs free dims.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct DotDims {
    /// Batch axes of the lhs.
    pub lhs_batch: Vec<usize>,
    /// Batch axes of the rhs (paired with `lhs_batch`).
    pub rhs_batch: Vec<usize>,
    /// Contracted axes of the lhs.
    pub lhs_contract: Vec<usize>,
    /// Contracted axes of the rhs (paired with `lhs_contract`).
    pub rhs_contract: Vec<usize>,
}

/// A strided slice along each axis: output index `i` reads input index
/// `start + i * step` (a negative step walks backwards). The output length
/// of each axis is the node's dim.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SliceSpec {
    /// First input index per axis.
    pub starts: Vec<usize>,
    /// Step per axis (non-zero).
    pub steps: Vec<i64>,
}

/// Convolution / pooling window geometry over the spatial dims.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Window {
    /// Kernel size per spatial dim (pooling only; conv takes it from the weight).
    pub kernel: Vec<usize>,
    /// Stride per spatial dim.
    pub stride: Vec<usize>,
    /// (before, after) padding per spatial dim.
    pub padding: Vec<(usize, usize)>,
    /// Dilation per spatial dim.
    pub dilation: Vec<usize>,
}

/// One operation. The node's output [`crate::Shape`] is stored on the node,
/// so ops whose result shape is their whole payload (reshape, broadcast,
/// cast, iota) carry none.
#[derive(Clone, Debug, PartialEq)]
pub enum Op {
    // ── leaves ──
    /// A named graph input.
    Input {
        /// The input's name.
        name: String,
    },
    /// A named parameter (weights set with `set_param`).
    Param {
        /// The param's name.
        name: String,
    },
    /// A constant; `bytes` are little-endian elements of the node's shape.
    Constant {
        /// The data, shared (cloning the op copies a handle).
        bytes: crate::ConstBytes,
    },
    // ── elementwise ──
    /// Elementwise unary function.
    Unary(UnaryOp),
    /// Elementwise binary arithmetic; both inputs have the node's dtype and broadcast.
    Binary(BinaryOp),
    /// Elementwise comparison, Bool result; inputs share a dtype and broadcast.
    Compare(CmpOp),
    /// `where(cond, a, b)` with broadcasting.
    Select,
    /// Conversion to the node's dtype (numpy `astype`).
    Cast,
    // ── linear algebra ──
    /// numpy `matmul`: batched, batch dims broadcast, rank-1 operands promoted.
    MatMul,
    /// General dot product with explicit batch / contracting dims.
    DotGeneral(DotDims),
    // ── reductions / scans ──
    /// Reduction over `axes`.
    Reduce {
        /// The reduction.
        op: ReduceOp,
        /// Axes reduced (sorted, unique).
        axes: Vec<usize>,
        /// Keep reduced axes as size 1.
        keep_dim: bool,
    },
    /// argmax / argmin along one axis; I64 result.
    ArgReduce {
        /// Which extremum.
        op: ArgReduceOp,
        /// The axis.
        axis: usize,
        /// Keep the axis as size 1.
        keep_dim: bool,
    },
    /// Cumulative sum along an axis.
    Cumsum {
        /// The axis.
        axis: usize,
        /// Exclude the current element.
        exclusive: bool,
        /// Accumulate from the end.
        reverse: bool,
    },
    // ── movement ──
    /// Reinterpret the dims (same element count, row-major order).
    Reshape,
    /// Permute the axes: output axis `i` is input axis `perm[i]`.
    Transpose {
        /// The permutation.
        perm: Vec<usize>,
    },
    /// Strided slice.
    Slice(SliceSpec),
    /// Join along an axis.
    Concat {
        /// The axis.
        axis: usize,
    },
    /// Pad each axis.
    Pad {
        /// (before, after) per axis.
        pads: Vec<(usize, usize)>,
        /// Fill mode.
        mode: PadMode,
    },
    /// numpy `broadcast_to` the node's dims.
    Broadcast,
    // ── indexing ──
    /// numpy `take(x, indices, axis)`; negative indices count from the end.
    Gather {
        /// The axis.
        axis: usize,
    },
    /// numpy `take_along_axis`.
    GatherElements {
        /// The axis.
        axis: usize,
    },
    /// `base` with `updates` added at `indices` along `axis` (torch `scatter_add`).
    ScatterAdd {
        /// The axis.
        axis: usize,
    },
    /// The `k` largest (or smallest) along an axis, sorted; ties keep the lower index.
    TopK {
        /// How many.
        k: usize,
        /// The axis.
        axis: usize,
        /// Largest (true) or smallest.
        largest: bool,
        /// Values or indices.
        output: TopKOutput,
    },
    /// `start + step * index` along `axis`, broadcast over the node's dims.
    Iota {
        /// The axis that counts.
        axis: usize,
        /// First value.
        start: f64,
        /// Increment.
        step: f64,
    },
    // ── composites (normalisation / attention) ──
    /// Softmax along an axis.
    Softmax {
        /// The axis.
        axis: usize,
    },
    /// Log-softmax along an axis.
    LogSoftmax {
        /// The axis.
        axis: usize,
    },
    /// Layer norm over the axes from `axis` to the end; inputs `x [, gamma [, beta]]`.
    LayerNorm {
        /// First normalised axis.
        axis: usize,
        /// Epsilon added to the variance.
        eps: f64,
    },
    /// RMS norm over the last axis; inputs `x [, gamma]`.
    RmsNorm {
        /// Epsilon added to the mean square.
        eps: f64,
    },
    /// Group norm of `x [N, C, ...]`; inputs `x [, gamma [C], beta [C]]`.
    GroupNorm {
        /// Number of channel groups.
        groups: usize,
        /// Epsilon added to the variance.
        eps: f64,
    },
    /// Scaled dot-product attention: inputs `q [.., Sq, D], k [.., Sk, D], v [.., Sk, Dv]`
    /// and, for `Custom` / `Bias` masks, the mask. Heads of k/v may divide q's (GQA).
    Attention {
        /// The mask.
        mask: MaskKind,
        /// Score scale; default `1/sqrt(D)`.
        scale: Option<f64>,
        /// Logit soft-capping: `scores = cap * tanh(scores / cap)`.
        softcap: Option<f64>,
        /// Where the operands keep their heads axis (rank >= 3 for
        /// [`AttentionLayout::SeqMajor`]).
        layout: AttentionLayout,
    },
    /// Rotary embedding: inputs `x [.., S, D], cos [S, D/2], sin [S, D/2]`.
    Rope {
        /// Rotate interleaved pairs (GPT-J) instead of halves (GPT-NeoX / llama).
        interleaved: bool,
    },
    // ── convolution / pooling / resampling ──
    /// N-d convolution: inputs `x [N, C, *sp], w [O, C/groups, *k] [, bias [O]]`.
    Conv {
        /// Stride / padding / dilation (kernel from the weight).
        window: Window,
        /// Channel groups.
        groups: usize,
    },
    /// N-d transposed convolution: inputs `x [N, C, *sp], w [C, O/groups, *k] [, bias [O]]`.
    ConvTranspose {
        /// Stride / padding / dilation (kernel from the weight).
        window: Window,
        /// Extra size added at the end of each spatial dim.
        output_padding: Vec<usize>,
        /// Channel groups.
        groups: usize,
    },
    /// Max / average pooling over the spatial dims of `x [N, C, *sp]`.
    Pool {
        /// Max or average.
        kind: PoolKind,
        /// Window geometry.
        window: Window,
        /// Average counts padded cells.
        count_include_pad: bool,
    },
    /// Resize the spatial dims of `x [N, C, *sp]` to the node's dims.
    Upsample {
        /// Interpolation.
        mode: InterpMode,
        /// Align corner pixels (linear only).
        align_corners: bool,
    },
    /// FFT along the last axis.
    Fft {
        /// Which transform.
        kind: FftKind,
        /// Scaling convention.
        norm: FftNorm,
    },
    // ── fused ──
    /// A fused chain of elementwise steps over broadcast inputs (see
    /// [`crate::ops::region`]); its value is the last step.
    ElementwiseRegion {
        /// The steps, in order.
        steps: Vec<ChainStep>,
    },
    /// `matmul(a, b)` followed by an elementwise epilogue computed before the
    /// result is stored; inputs `a, b, extra...` (see [`crate::ops::region`]).
    FusedMatMul {
        /// The epilogue: its input 0 is the matmul result, input `i` is extra `i - 1`.
        epilogue: Vec<ChainStep>,
    },
    /// `conv(x, w [, bias])` followed by an elementwise epilogue (activation,
    /// residual add, ...) computed while each output block is in cache;
    /// inputs `x, w, [bias,] extra...` (see [`crate::ops::fused_conv`]).
    FusedConv {
        /// Stride / padding / dilation (kernel from the weight).
        window: Window,
        /// Channel groups.
        groups: usize,
        /// Input 2 is the conv's per-output-channel bias.
        bias: bool,
        /// The epilogue: its input 0 is the conv result (bias included),
        /// input `i` is extra `i - 1`.
        epilogue: Vec<ChainStep>,
    },
    /// Residual add + norm in one pass over each row: inputs `a, b [, gamma
    /// [, beta]]` (see [`crate::ops::fused`]); the norm of `a + b`, or with
    /// `keep_sum` the `[2, ..]` stack of the sum and the norm.
    AddNorm {
        /// First normalised axis (the last for an RMS norm).
        axis: usize,
        /// Epsilon added to the variance / mean square.
        eps: f64,
        /// RMS norm instead of layer norm.
        rms: bool,
        /// Also write the sum (it has other readers).
        keep_sum: bool,
    },
    /// Gated matmul (SwiGLU with `Silu`, GeGLU with `Gelu`): inputs
    /// `x, w_gate, w_up`; `act(x @ w_gate) * (x @ w_up)`.
    GatedMatMul {
        /// The gate's activation.
        act: UnaryOp,
    },
    // ── quantized weights (ops/quant.rs) ──
    /// Block bytes (`U8`) of `scheme` -> the `F32` values they encode, with the
    /// node's declared dims.
    Dequantize {
        /// The block format of the input bytes.
        scheme: QuantScheme,
    },
    /// `y[.., N] = x[.., K] · Wᵀ` for an `[N, K]` weight stored as `scheme`'s
    /// block bytes (`U8`), or as a plain f32 / f16 / bf16 tensor when `scheme`
    /// is `None`. Composite: dequantize, transpose, matmul.
    DequantMatMul {
        /// The weight's block format; `None` for a plain float weight.
        scheme: Option<QuantScheme>,
        /// Output features (rows of `W`).
        n: usize,
        /// Input features (columns of `W`), a whole number of blocks.
        k: usize,
    },
    // ── control flow (sub-graphs; see `ops::control`) ──
    /// Runs one of two branches on the operands; a tuple of the branch's results.
    If(IfSpec),
    /// Loops a body over a carry while a condition holds; a tuple of the final carry.
    While(WhileSpec),
    /// `jax.lax.scan`; a tuple of the final carry and the stacked per-step outputs.
    Scan(ScanSpec),
    /// A user function with optional user derivative rules; a tuple of its results.
    CustomFn(CustomFnSpec),
    /// A registered op extension (`rlx_ir::custom`): its name and attributes.
    Custom(crate::custom::CustomOp),
    /// Result `index` of a tuple op: `shape` read at byte `offset` of its buffer.
    TupleGet {
        /// Which result.
        index: usize,
        /// Its byte offset in the tuple.
        offset: usize,
        /// Its shape.
        shape: crate::Shape,
    },
}

/// The discriminant of an [`Op`]: what a backend claims and a report counts.
/// Each variant is the kind of the [`Op`] variant of the same name.
#[allow(missing_docs)] // one-to-one with `Op`, whose variants carry the docs
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum OpKind {
    Input,
    Param,
    Constant,
    Unary,
    Binary,
    Compare,
    Select,
    Cast,
    MatMul,
    DotGeneral,
    Reduce,
    ArgReduce,
    Cumsum,
    Reshape,
    Transpose,
    Slice,
    Concat,
    Pad,
    Broadcast,
    Gather,
    GatherElements,
    ScatterAdd,
    TopK,
    Iota,
    Softmax,
    LogSoftmax,
    LayerNorm,
    RmsNorm,
    GroupNorm,
    Attention,
    Rope,
    Conv,
    ConvTranspose,
    Pool,
    Upsample,
    Fft,
    ElementwiseRegion,
    FusedMatMul,
    FusedConv,
    AddNorm,
    GatedMatMul,
    Dequantize,
    DequantMatMul,
    If,
    While,
    Scan,
    CustomFn,
    Custom,
    TupleGet,
}

impl OpKind {
    /// True for composite ops that carry a decomposition into primitives
    /// (the op table's [`crate::OpInfo::composite`]).
    pub fn is_composite(self) -> bool {
        self.info().composite
    }
}

impl Op {
    /// The op's kind.
    pub fn kind(&self) -> OpKind {
        match self {
            Op::Input { .. } => OpKind::Input,
            Op::Param { .. } => OpKind::Param,
            Op::Constant { .. } => OpKind::Constant,
            Op::Unary(_) => OpKind::Unary,
            Op::Binary(_) => OpKind::Binary,
            Op::Compare(_) => OpKind::Compare,
            Op::Select => OpKind::Select,
            Op::Cast => OpKind::Cast,
            Op::MatMul => OpKind::MatMul,
            Op::DotGeneral(_) => OpKind::DotGeneral,
            Op::Reduce { .. } => OpKind::Reduce,
            Op::ArgReduce { .. } => OpKind::ArgReduce,
            Op::Cumsum { .. } => OpKind::Cumsum,
            Op::Reshape => OpKind::Reshape,
            Op::Transpose { .. } => OpKind::Transpose,
            Op::Slice(_) => OpKind::Slice,
            Op::Concat { .. } => OpKind::Concat,
            Op::Pad { .. } => OpKind::Pad,
            Op::Broadcast => OpKind::Broadcast,
            Op::Gather { .. } => OpKind::Gather,
            Op::GatherElements { .. } => OpKind::GatherElements,
            Op::ScatterAdd { .. } => OpKind::ScatterAdd,
            Op::TopK { .. } => OpKind::TopK,
            Op::Iota { .. } => OpKind::Iota,
            Op::Softmax { .. } => OpKind::Softmax,
            Op::LogSoftmax { .. } => OpKind::LogSoftmax,
            Op::LayerNorm { .. } => OpKind::LayerNorm,
            Op::RmsNorm { .. } => OpKind::RmsNorm,
            Op::GroupNorm { .. } => OpKind::GroupNorm,
            Op::Attention { .. } => OpKind::Attention,
            Op::Rope { .. } => OpKind::Rope,
            Op::Conv { .. } => OpKind::Conv,
            Op::ConvTranspose { .. } => OpKind::ConvTranspose,
            Op::Pool { .. } => OpKind::Pool,
            Op::Upsample { .. } => OpKind::Upsample,
            Op::Fft { .. } => OpKind::Fft,
            Op::ElementwiseRegion { .. } => OpKind::ElementwiseRegion,
            Op::FusedMatMul { .. } => OpKind::FusedMatMul,
            Op::FusedConv { .. } => OpKind::FusedConv,
            Op::AddNorm { .. } => OpKind::AddNorm,
            Op::GatedMatMul { .. } => OpKind::GatedMatMul,
            Op::Dequantize { .. } => OpKind::Dequantize,
            Op::DequantMatMul { .. } => OpKind::DequantMatMul,
            Op::If(_) => OpKind::If,
            Op::While(_) => OpKind::While,
            Op::Scan(_) => OpKind::Scan,
            Op::CustomFn(_) => OpKind::CustomFn,
            Op::Custom(_) => OpKind::Custom,
            Op::TupleGet { .. } => OpKind::TupleGet,
        }
    }

    /// True for graph leaves (input, param, constant).
    pub fn is_leaf(&self) -> bool {
        matches!(
            self,
            Op::Input { .. } | Op::Param { .. } | Op::Constant { .. }
        )
    }

    /// The textual-IR mnemonic with its payload, e.g. `reduce.sum{axes=[1]}`.
    pub fn mnemonic(&self) -> String {
        match self {
            Op::Input { name } => format!("input {name:?}"),
            Op::Param { name } => format!("param {name:?}"),
            Op::Constant { bytes } => format!("constant<{} bytes>", bytes.len()),
            Op::Unary(u) => u.name().to_string(),
            Op::Binary(b) => b.name().to_string(),
            Op::Compare(c) => format!("cmp.{}", c.name()),
            Op::Select => "select".into(),
            Op::Cast => "cast".into(),
            Op::MatMul => "matmul".into(),
            Op::DotGeneral(d) => format!(
                "dot_general{{lb={:?}, rb={:?}, lc={:?}, rc={:?}}}",
                d.lhs_batch, d.rhs_batch, d.lhs_contract, d.rhs_contract
            ),
            Op::Reduce { op, axes, keep_dim } => {
                format!("reduce.{}{{axes={axes:?}, keep_dim={keep_dim}}}", op.name())
            }
            Op::ArgReduce { op, axis, keep_dim } => format!(
                "{}{{axis={axis}, keep_dim={keep_dim}}}",
                match op {
                    ArgReduceOp::ArgMax => "argmax",
                    ArgReduceOp::ArgMin => "argmin",
                }
            ),
            Op::Cumsum {
                axis,
                exclusive,
                reverse,
            } => format!("cumsum{{axis={axis}, exclusive={exclusive}, reverse={reverse}}}"),
            Op::Reshape => "reshape".into(),
            Op::Transpose { perm } => format!("transpose{{perm={perm:?}}}"),
            Op::Slice(s) => format!("slice{{starts={:?}, steps={:?}}}", s.starts, s.steps),
            Op::Concat { axis } => format!("concat{{axis={axis}}}"),
            Op::Pad { pads, mode } => format!("pad{{pads={pads:?}, mode={mode:?}}}"),
            Op::Broadcast => "broadcast".into(),
            Op::Gather { axis } => format!("gather{{axis={axis}}}"),
            Op::GatherElements { axis } => format!("gather_elements{{axis={axis}}}"),
            Op::ScatterAdd { axis } => format!("scatter_add{{axis={axis}}}"),
            Op::TopK {
                k,
                axis,
                largest,
                output,
            } => format!("topk{{k={k}, axis={axis}, largest={largest}, output={output:?}}}"),
            Op::Iota { axis, start, step } => {
                format!("iota{{axis={axis}, start={start}, step={step}}}")
            }
            Op::Softmax { axis } => format!("softmax{{axis={axis}}}"),
            Op::LogSoftmax { axis } => format!("log_softmax{{axis={axis}}}"),
            Op::LayerNorm { axis, eps } => format!("layer_norm{{axis={axis}, eps={eps:e}}}"),
            Op::RmsNorm { eps } => format!("rms_norm{{eps={eps:e}}}"),
            Op::GroupNorm { groups, eps } => format!("group_norm{{groups={groups}, eps={eps:e}}}"),
            Op::Attention {
                mask,
                scale,
                softcap,
                layout,
            } => {
                let layout = match layout {
                    AttentionLayout::HeadsMajor => "",
                    AttentionLayout::SeqMajor => ", layout=seq_major",
                };
                format!("attention{{mask={mask:?}, scale={scale:?}, softcap={softcap:?}{layout}}}")
            }
            Op::Rope { interleaved } => format!("rope{{interleaved={interleaved}}}"),
            Op::Conv { window, groups } => format!(
                "conv{{{}stride={:?}, padding={:?}, dilation={:?}, groups={groups}}}",
                conv_kernel_text(window),
                window.stride,
                window.padding,
                window.dilation
            ),
            Op::ConvTranspose {
                window,
                output_padding,
                groups,
            } => format!(
                "conv_transpose{{{}stride={:?}, padding={:?}, dilation={:?}, output_padding={output_padding:?}, groups={groups}}}",
                conv_kernel_text(window),
                window.stride,
                window.padding,
                window.dilation
            ),
            Op::Pool {
                kind,
                window,
                count_include_pad,
            } => format!(
                "pool.{}{{kernel={:?}, stride={:?}, padding={:?}, dilation={:?}, count_include_pad={count_include_pad}}}",
                match kind {
                    PoolKind::Max => "max",
                    PoolKind::Avg => "avg",
                },
                window.kernel,
                window.stride,
                window.padding,
                window.dilation
            ),
            Op::Upsample {
                mode,
                align_corners,
            } => format!("upsample{{mode={mode:?}, align_corners={align_corners}}}"),
            Op::Fft { kind, norm } => format!("{kind:?}{{norm={norm:?}}}").to_lowercase(),
            Op::ElementwiseRegion { steps } => format!("region{}", region_text(steps)),
            Op::FusedMatMul { epilogue } => format!("matmul+epilogue{}", region_text(epilogue)),
            Op::FusedConv {
                window,
                groups,
                bias,
                epilogue,
            } => format!(
                "conv+epilogue{{{}stride={:?}, padding={:?}, dilation={:?}, groups={groups}, bias={bias}}}{}",
                conv_kernel_text(window),
                window.stride,
                window.padding,
                window.dilation,
                region_text(epilogue)
            ),
            Op::AddNorm {
                axis,
                eps,
                rms,
                keep_sum,
            } => format!(
                "add+{}{{axis={axis}, eps={eps:e}, keep_sum={keep_sum}}}",
                if *rms { "rms_norm" } else { "layer_norm" }
            ),
            Op::GatedMatMul { act } => format!("gated_matmul{{act={}}}", act.name()),
            Op::Dequantize { scheme } => format!("dequantize{{scheme={scheme}}}"),
            Op::DequantMatMul { scheme, n, k } => format!(
                "dequant_matmul{{scheme={}, n={n}, k={k}}}",
                scheme.map_or("none", QuantScheme::name)
            ),
            Op::Custom(c) => c.to_string(),
            Op::If(_)
            | Op::While(_)
            | Op::Scan(_)
            | Op::CustomFn(_)
            | Op::TupleGet { .. } => crate::ops::control::mnemonic(self),
        }
    }
}

/// A conv takes its kernel from the weight, so the payload usually has none;
/// one that does prints it (the text must say everything the op holds).
fn conv_kernel_text(w: &Window) -> String {
    if w.kernel.is_empty() {
        String::new()
    } else {
        format!("kernel={:?}, ", w.kernel)
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.mnemonic())
    }
}
