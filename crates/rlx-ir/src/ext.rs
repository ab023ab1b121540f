//! [`GraphExt`]: shape-inferring builders with numpy dtype promotion and
//! literal operands.
//!
//! `GraphExt::constant(&self, ..)` returns an [`Operand::Literal`] instead of
//! a node, so it can sit inside the argument list of a `&mut self` builder:
//! `g.mul(x, g.constant(2.0, DType::F32))`. A literal is weakly typed (as a
//! Python scalar in numpy 2 / JAX): it takes the dtype of the node it meets.
//!
//! Builders panic with the [`crate::IrError`] message on invalid input; the
//! fallible form of every op is [`Graph::try_node`].

use crate::fft::{FftKind, FftNorm};
use crate::op::{
    ArgReduceOp, BinaryOp, CmpOp, DotDims, MaskKind, PadMode, PoolKind, ReduceOp, SliceSpec,
    TopKOutput, UnaryOp, Window,
};
use crate::ops::normalize_axis;
use crate::ops::upsample::InterpMode;
use crate::quant::QuantScheme;
use crate::{DType, Dim, Graph, NodeId, Op, Shape};

/// A builder argument: a node, or a scalar literal materialised on use.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Operand {
    /// An existing node.
    Node(NodeId),
    /// A scalar; `dtype` is used only when the other operand is a literal too.
    Literal {
        /// The value.
        value: f64,
        /// Its dtype when nothing else decides.
        dtype: DType,
    },
}

impl From<NodeId> for Operand {
    fn from(id: NodeId) -> Operand {
        Operand::Node(id)
    }
}

impl From<f64> for Operand {
    fn from(value: f64) -> Operand {
        Operand::Literal {
            value,
            dtype: DType::F32,
        }
    }
}

impl From<f32> for Operand {
    fn from(value: f32) -> Operand {
        Operand::Literal {
            value: value as f64,
            dtype: DType::F32,
        }
    }
}

fn ok<T>(r: Result<T, crate::IrError>) -> T {
    r.unwrap_or_else(|e| panic!("{e}"))
}

fn axes_of(g: &Graph, x: NodeId, axes: &[i64]) -> Vec<usize> {
    let r = g.shape(x).rank();
    let mut out: Vec<usize> = axes
        .iter()
        .map(|&a| normalize_axis(a, r).unwrap_or_else(|e| panic!("{}: {e}", g.shape(x))))
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}

fn axis_of(g: &Graph, x: NodeId, axis: i64) -> usize {
    normalize_axis(axis, g.shape(x).rank()).unwrap_or_else(|e| panic!("{}: {e}", g.shape(x)))
}

fn static_of(g: &Graph, x: NodeId) -> Vec<usize> {
    g.shape(x)
        .static_dims()
        .unwrap_or_else(|| panic!("this builder needs static dims, given {}", g.shape(x)))
}

fn window2(kernel: [usize; 2], stride: [usize; 2], padding: [usize; 2]) -> Window {
    Window {
        kernel: kernel.to_vec(),
        stride: stride.to_vec(),
        padding: padding.iter().map(|&p| (p, p)).collect(),
        dilation: vec![1, 1],
    }
}

macro_rules! unary_methods {
    ($($(#[$m:meta])* $name:ident => $op:ident;)*) => {
        $( $(#[$m])* fn $name(&mut self, x: NodeId) -> NodeId { self.unary(UnaryOp::$op, x) } )*
    };
}

macro_rules! binary_methods {
    ($($(#[$m:meta])* $name:ident => $op:ident;)*) => {
        $( $(#[$m])* fn $name(&mut self, a: impl Into<Operand>, b: impl Into<Operand>) -> NodeId {
            self.binary_op(BinaryOp::$op, a, b)
        } )*
    };
}

macro_rules! compare_methods {
    ($($(#[$m:meta])* $name:ident => $op:ident;)*) => {
        $( $(#[$m])* fn $name(&mut self, a: impl Into<Operand>, b: impl Into<Operand>) -> NodeId {
            self.compare_op(CmpOp::$op, a, b)
        } )*
    };
}

/// Shape-inferring graph builders. Implemented for [`Graph`].
pub trait GraphExt {
    /// The graph being built.
    fn graph(&self) -> &Graph;
    /// The graph being built, mutably.
    fn graph_mut(&mut self) -> &mut Graph;

    /// A scalar literal operand (no node until it is used).
    fn constant(&self, value: f64, dtype: DType) -> Operand {
        Operand::Literal { value, dtype }
    }

    /// Materialises an operand as a node (a literal becomes a rank-0 constant of `dtype`).
    fn operand_node(&mut self, x: impl Into<Operand>, dtype: Option<DType>) -> NodeId {
        match x.into() {
            Operand::Node(id) => id,
            Operand::Literal { value, dtype: d } => {
                self.graph_mut().scalar(value, dtype.unwrap_or(d))
            }
        }
    }

    /// Converts to `dtype` (no node when already of that dtype).
    fn cast(&mut self, x: NodeId, dtype: DType) -> NodeId {
        let g = self.graph_mut();
        if g.shape(x).dtype() == dtype {
            return x;
        }
        let s = g.shape(x).with_dtype(dtype);
        ok(g.try_node(Op::Cast, &[x], Some(s)))
    }

    /// Resolves two operands to nodes of one (numpy-promoted) dtype.
    fn promote_pair(&mut self, a: impl Into<Operand>, b: impl Into<Operand>) -> (NodeId, NodeId) {
        let (a, b) = (a.into(), b.into());
        let dt_of = |g: &Graph, o: &Operand| match o {
            Operand::Node(id) => Some(g.shape(*id).dtype()),
            Operand::Literal { .. } => None,
        };
        let (da, db) = (dt_of(self.graph(), &a), dt_of(self.graph(), &b));
        let target = match (da, db) {
            (Some(x), Some(y)) => x.promote(y),
            (Some(x), None) | (None, Some(x)) => x,
            (None, None) => match (a, b) {
                (Operand::Literal { dtype: x, .. }, Operand::Literal { dtype: y, .. }) => {
                    x.promote(y)
                }
                _ => unreachable!(),
            },
        };
        let na = self.operand_node(a, Some(target));
        let nb = self.operand_node(b, Some(target));
        (self.cast(na, target), self.cast(nb, target))
    }

    /// Any elementwise unary op.
    fn unary(&mut self, op: UnaryOp, x: NodeId) -> NodeId {
        ok(self.graph_mut().try_node(Op::Unary(op), &[x], None))
    }

    /// Any elementwise binary op, with promotion and broadcasting.
    fn binary_op(&mut self, op: BinaryOp, a: impl Into<Operand>, b: impl Into<Operand>) -> NodeId {
        let (a, b) = self.promote_pair(a, b);
        ok(self.graph_mut().try_node(Op::Binary(op), &[a, b], None))
    }

    /// Any comparison, with promotion and broadcasting; Bool result.
    fn compare_op(&mut self, op: CmpOp, a: impl Into<Operand>, b: impl Into<Operand>) -> NodeId {
        let (a, b) = self.promote_pair(a, b);
        ok(self.graph_mut().try_node(Op::Compare(op), &[a, b], None))
    }

    unary_methods! {
        /// `-x`.
        neg => Neg; /// `e^x`.
        exp => Exp; /// Natural log.
        log => Log; /// Square root.
        sqrt => Sqrt; /// `1/sqrt(x)`.
        rsqrt => Rsqrt; /// `|x|`.
        abs => Abs; /// tanh.
        tanh => Tanh; /// Logistic sigmoid.
        sigmoid => Sigmoid; /// ReLU.
        relu => Relu; /// Exact (erf) GELU.
        gelu => Gelu; /// Tanh-approximated GELU.
        gelu_approx => GeluApprox; /// SiLU / swish.
        silu => Silu; /// Sine.
        sin => Sin; /// Cosine.
        cos => Cos; /// Floor.
        floor => Floor; /// Ceiling.
        ceil => Ceil; /// Round half to even.
        round => Round; /// Sign.
        sign => Sign; /// Error function.
        erf => Erf; /// `log(1 + e^x)`.
        softplus => Softplus; /// `1/x`.
        reciprocal => Reciprocal; /// Logical not.
        logical_not => Not;
    }

    binary_methods! {
        /// `a + b`.
        add => Add; /// `a - b`.
        sub => Sub; /// `a * b`.
        mul => Mul; /// `a / b` (floor division for integers).
        div => Div; /// `a ** b`.
        pow => Pow; /// Elementwise maximum.
        maximum => Max; /// Elementwise minimum.
        minimum => Min; /// numpy `mod`.
        rem => Mod; /// `atan2(a, b)`.
        atan2 => Atan2; /// Logical / bitwise and.
        logical_and => And; /// Logical / bitwise or.
        logical_or => Or; /// Logical / bitwise xor.
        logical_xor => Xor;
    }

    compare_methods! {
        /// `a == b`.
        eq => Eq; /// `a != b`.
        ne => Ne; /// `a < b`.
        lt => Lt; /// `a <= b`.
        le => Le; /// `a > b`.
        gt => Gt; /// `a >= b`.
        ge => Ge;
    }

    /// `where(cond, a, b)`.
    fn where_(&mut self, cond: NodeId, a: impl Into<Operand>, b: impl Into<Operand>) -> NodeId {
        let (a, b) = self.promote_pair(a, b);
        ok(self.graph_mut().try_node(Op::Select, &[cond, a, b], None))
    }

    /// numpy matmul.
    fn mm(&mut self, a: NodeId, b: NodeId) -> NodeId {
        let (a, b) = self.promote_pair(a, b);
        ok(self.graph_mut().try_node(Op::MatMul, &[a, b], None))
    }

    /// General dot product (XLA dimension numbers).
    fn dot_general(&mut self, a: NodeId, b: NodeId, dims: DotDims) -> NodeId {
        ok(self
            .graph_mut()
            .try_node(Op::DotGeneral(dims), &[a, b], None))
    }

    /// Any reduction over axes (negative axes count from the end).
    fn reduce_op(&mut self, op: ReduceOp, x: NodeId, axes: &[i64], keep_dim: bool) -> NodeId {
        let axes = axes_of(self.graph(), x, axes);
        ok(self
            .graph_mut()
            .try_node(Op::Reduce { op, axes, keep_dim }, &[x], None))
    }

    /// Sum over axes.
    fn sum(&mut self, x: NodeId, axes: &[i64], keep_dim: bool) -> NodeId {
        self.reduce_op(ReduceOp::Sum, x, axes, keep_dim)
    }

    /// Mean over axes.
    fn mean(&mut self, x: NodeId, axes: &[i64], keep_dim: bool) -> NodeId {
        self.reduce_op(ReduceOp::Mean, x, axes, keep_dim)
    }

    /// Maximum over axes.
    fn reduce_max(&mut self, x: NodeId, axes: &[i64], keep_dim: bool) -> NodeId {
        self.reduce_op(ReduceOp::Max, x, axes, keep_dim)
    }

    /// Minimum over axes.
    fn reduce_min(&mut self, x: NodeId, axes: &[i64], keep_dim: bool) -> NodeId {
        self.reduce_op(ReduceOp::Min, x, axes, keep_dim)
    }

    /// Product over axes.
    fn prod(&mut self, x: NodeId, axes: &[i64], keep_dim: bool) -> NodeId {
        self.reduce_op(ReduceOp::Prod, x, axes, keep_dim)
    }

    /// Index of the maximum along an axis (I64).
    fn argmax(&mut self, x: NodeId, axis: i64, keep_dim: bool) -> NodeId {
        let axis = axis_of(self.graph(), x, axis);
        ok(self.graph_mut().try_node(
            Op::ArgReduce {
                op: ArgReduceOp::ArgMax,
                axis,
                keep_dim,
            },
            &[x],
            None,
        ))
    }

    /// Index of the minimum along an axis (I64).
    fn argmin(&mut self, x: NodeId, axis: i64, keep_dim: bool) -> NodeId {
        let axis = axis_of(self.graph(), x, axis);
        ok(self.graph_mut().try_node(
            Op::ArgReduce {
                op: ArgReduceOp::ArgMin,
                axis,
                keep_dim,
            },
            &[x],
            None,
        ))
    }

    /// Cumulative sum along an axis.
    fn cumsum(&mut self, x: NodeId, axis: i64, exclusive: bool, reverse: bool) -> NodeId {
        let axis = axis_of(self.graph(), x, axis);
        ok(self.graph_mut().try_node(
            Op::Cumsum {
                axis,
                exclusive,
                reverse,
            },
            &[x],
            None,
        ))
    }

    /// Softmax along an axis.
    fn sm(&mut self, x: NodeId, axis: i64) -> NodeId {
        let axis = axis_of(self.graph(), x, axis);
        ok(self.graph_mut().try_node(Op::Softmax { axis }, &[x], None))
    }

    /// Log-softmax along an axis.
    fn log_softmax(&mut self, x: NodeId, axis: i64) -> NodeId {
        let axis = axis_of(self.graph(), x, axis);
        ok(self
            .graph_mut()
            .try_node(Op::LogSoftmax { axis }, &[x], None))
    }

    /// Layer norm over the last axis with optional gamma / beta.
    fn ln(
        &mut self,
        x: NodeId,
        gamma: impl Into<Option<NodeId>>,
        beta: impl Into<Option<NodeId>>,
        eps: f64,
    ) -> NodeId {
        let axis = self.graph().shape(x).rank().saturating_sub(1);
        self.layer_norm_axis(x, axis as i64, gamma, beta, eps)
    }

    /// Layer norm over the axes from `axis` to the end.
    fn layer_norm_axis(
        &mut self,
        x: NodeId,
        axis: i64,
        gamma: impl Into<Option<NodeId>>,
        beta: impl Into<Option<NodeId>>,
        eps: f64,
    ) -> NodeId {
        let axis = axis_of(self.graph(), x, axis);
        let (gamma, beta) = (gamma.into(), beta.into());
        if beta.is_some() && gamma.is_none() {
            panic!("layer_norm: beta without gamma (pass a ones gamma)");
        }
        let mut inputs = vec![x];
        inputs.extend(gamma);
        inputs.extend(beta);
        ok(self
            .graph_mut()
            .try_node(Op::LayerNorm { axis, eps }, &inputs, None))
    }

    /// RMS norm over the last axis with optional gamma.
    fn rms_norm(&mut self, x: NodeId, gamma: impl Into<Option<NodeId>>, eps: f64) -> NodeId {
        let mut inputs = vec![x];
        inputs.extend(gamma.into());
        ok(self
            .graph_mut()
            .try_node(Op::RmsNorm { eps }, &inputs, None))
    }

    /// Group norm of `x [N, C, ...]` with optional gamma / beta `[C]`.
    fn group_norm(
        &mut self,
        x: NodeId,
        groups: usize,
        affine: Option<(NodeId, NodeId)>,
        eps: f64,
    ) -> NodeId {
        let mut inputs = vec![x];
        if let Some((gm, b)) = affine {
            inputs.extend([gm, b]);
        }
        ok(self
            .graph_mut()
            .try_node(Op::GroupNorm { groups, eps }, &inputs, None))
    }

    /// Reshape; one dim may be `-1` (inferred).
    fn reshape_(&mut self, x: NodeId, dims: &[i64]) -> NodeId {
        let s = self.graph().shape(x).clone();
        let total = s
            .numel()
            .unwrap_or_else(|| panic!("reshape_ of symbolic {s}: use Graph::reshape with a Shape"));
        let known: usize = dims
            .iter()
            .filter(|&&d| d >= 0)
            .map(|&d| d as usize)
            .product();
        let holes = dims.iter().filter(|&&d| d < 0).count();
        if holes > 1 || dims.iter().any(|&d| d < -1) {
            panic!("reshape_: at most one -1 and no other negative dim, given {dims:?}");
        }
        let out: Vec<usize> = dims
            .iter()
            .map(|&d| {
                if d >= 0 {
                    d as usize
                } else if known == 0 || !total.is_multiple_of(known) {
                    panic!("reshape_: cannot infer -1 reshaping {s} to {dims:?}")
                } else {
                    total / known
                }
            })
            .collect();
        ok(self
            .graph_mut()
            .try_node(Op::Reshape, &[x], Some(Shape::new(&out, s.dtype()))))
    }

    /// Axis permutation.
    fn transpose_(&mut self, x: NodeId, perm: &[usize]) -> NodeId {
        ok(self.graph_mut().try_node(
            Op::Transpose {
                perm: perm.to_vec(),
            },
            &[x],
            None,
        ))
    }

    /// Swaps two axes (PyTorch `transpose(a, b)`).
    fn swap_axes(&mut self, x: NodeId, a: i64, b: i64) -> NodeId {
        let (a, b) = (axis_of(self.graph(), x, a), axis_of(self.graph(), x, b));
        let mut perm: Vec<usize> = (0..self.graph().shape(x).rank()).collect();
        perm.swap(a, b);
        self.transpose_(x, &perm)
    }

    /// `len` elements from `start` along an axis (PyTorch `narrow`).
    fn narrow_(&mut self, x: NodeId, axis: i64, start: usize, len: usize) -> NodeId {
        let axis = axis_of(self.graph(), x, axis);
        self.slice_(x, axis as i64, start as i64, (start + len) as i64, 1)
    }

    /// numpy `x[.., start:end:step, ..]` on one axis, with Python's clamping and negative indices.
    fn slice_(&mut self, x: NodeId, axis: i64, start: i64, end: i64, step: i64) -> NodeId {
        let axis = axis_of(self.graph(), x, axis);
        let s = self.graph().shape(x).clone();
        let r = s.rank();
        let mut starts = vec![0; r];
        let mut steps = vec![1; r];
        let mut dims = s.dims().to_vec();
        let n = s
            .dim(axis)
            .unwrap_or_else(|| panic!("slice_ of a symbolic axis of {s}"));
        if step == 0 {
            panic!("slice_: step 0");
        }
        let (first, len) = python_slice(n, start, end, step);
        starts[axis] = first;
        steps[axis] = step;
        dims[axis] = Dim::Static(len);
        ok(self.graph_mut().try_node(
            Op::Slice(SliceSpec { starts, steps }),
            &[x],
            Some(s.with_dims(dims)),
        ))
    }

    /// Concatenation along an axis.
    fn concat_(&mut self, xs: &[NodeId], axis: i64) -> NodeId {
        let first = *xs.first().expect("concat_ of nothing");
        let axis = axis_of(self.graph(), first, axis);
        ok(self.graph_mut().try_node(Op::Concat { axis }, xs, None))
    }

    /// Pads each axis with (before, after).
    fn pad_(&mut self, x: NodeId, pads: &[(usize, usize)], mode: PadMode) -> NodeId {
        ok(self.graph_mut().try_node(
            Op::Pad {
                pads: pads.to_vec(),
                mode,
            },
            &[x],
            None,
        ))
    }

    /// numpy `take(x, indices, axis)`.
    fn gather_(&mut self, x: NodeId, indices: NodeId, axis: i64) -> NodeId {
        let axis = axis_of(self.graph(), x, axis);
        ok(self
            .graph_mut()
            .try_node(Op::Gather { axis }, &[x, indices], None))
    }

    /// numpy `take_along_axis`.
    fn gather_elements(&mut self, x: NodeId, indices: NodeId, axis: i64) -> NodeId {
        let axis = axis_of(self.graph(), x, axis);
        ok(self
            .graph_mut()
            .try_node(Op::GatherElements { axis }, &[x, indices], None))
    }

    /// `base` with `updates` added at `indices` along an axis.
    fn scatter_add(&mut self, base: NodeId, indices: NodeId, updates: NodeId, axis: i64) -> NodeId {
        let axis = axis_of(self.graph(), base, axis);
        ok(self
            .graph_mut()
            .try_node(Op::ScatterAdd { axis }, &[base, indices, updates], None))
    }

    /// numpy `broadcast_to(x, dims)`.
    fn expand_(&mut self, x: NodeId, dims: &[usize]) -> NodeId {
        let s = self
            .graph()
            .shape(x)
            .with_dims(dims.iter().map(|&d| Dim::Static(d)).collect());
        ok(self.graph_mut().try_node(Op::Broadcast, &[x], Some(s)))
    }

    /// Top-k along an axis: (values, I64 indices).
    fn topk(&mut self, x: NodeId, k: usize, axis: i64, largest: bool) -> (NodeId, NodeId) {
        let axis = axis_of(self.graph(), x, axis);
        let g = self.graph_mut();
        let v = ok(g.try_node(
            Op::TopK {
                k,
                axis,
                largest,
                output: TopKOutput::Values,
            },
            &[x],
            None,
        ));
        let i = ok(g.try_node(
            Op::TopK {
                k,
                axis,
                largest,
                output: TopKOutput::Indices,
            },
            &[x],
            None,
        ));
        (v, i)
    }

    /// `start + step * i` along `axis` of a new tensor of `dims`.
    fn iota(&mut self, dims: &[usize], axis: usize, start: f64, step: f64, dtype: DType) -> NodeId {
        ok(self.graph_mut().try_node(
            Op::Iota { axis, start, step },
            &[],
            Some(Shape::new(dims, dtype)),
        ))
    }

    /// numpy `arange(start, stop, step)`.
    fn arange(&mut self, start: f64, stop: f64, step: f64, dtype: DType) -> NodeId {
        let n = ((stop - start) / step).ceil().max(0.0) as usize;
        self.iota(&[n], 0, start, step, dtype)
    }

    /// Scaled dot-product attention; `mask` is the mask / bias input of `Custom` / `Bias`.
    fn attention_(
        &mut self,
        q: NodeId,
        k: NodeId,
        v: NodeId,
        kind: MaskKind,
        mask: Option<NodeId>,
    ) -> NodeId {
        self.attention_with(q, k, v, kind, mask, None, None)
    }

    /// Attention with an explicit scale and logit soft-cap.
    #[allow(clippy::too_many_arguments)]
    fn attention_with(
        &mut self,
        q: NodeId,
        k: NodeId,
        v: NodeId,
        kind: MaskKind,
        mask: Option<NodeId>,
        scale: Option<f64>,
        softcap: Option<f64>,
    ) -> NodeId {
        let mut inputs = vec![q, k, v];
        inputs.extend(mask);
        ok(self.graph_mut().try_node(
            Op::Attention {
                mask: kind,
                scale,
                softcap,
                layout: crate::op::AttentionLayout::HeadsMajor,
            },
            &inputs,
            None,
        ))
    }

    /// Rotary embedding of `x [.., S, D]` with `cos`, `sin` of `[S, D/2]` (half rotation, llama style).
    fn rope(&mut self, x: NodeId, cos: NodeId, sin: NodeId) -> NodeId {
        ok(self
            .graph_mut()
            .try_node(Op::Rope { interleaved: false }, &[x, cos, sin], None))
    }

    /// Rotary embedding on interleaved pairs (GPT-J style).
    fn rope_interleaved(&mut self, x: NodeId, cos: NodeId, sin: NodeId) -> NodeId {
        ok(self
            .graph_mut()
            .try_node(Op::Rope { interleaved: true }, &[x, cos, sin], None))
    }

    /// General N-d convolution.
    fn conv(
        &mut self,
        x: NodeId,
        w: NodeId,
        bias: Option<NodeId>,
        window: Window,
        groups: usize,
    ) -> NodeId {
        let mut inputs = vec![x, w];
        inputs.extend(bias);
        ok(self
            .graph_mut()
            .try_node(Op::Conv { window, groups }, &inputs, None))
    }

    /// 1-d convolution with symmetric padding.
    #[allow(clippy::too_many_arguments)]
    fn conv1d(
        &mut self,
        x: NodeId,
        w: NodeId,
        bias: Option<NodeId>,
        stride: usize,
        padding: usize,
        dilation: usize,
        groups: usize,
    ) -> NodeId {
        let window = Window {
            kernel: Vec::new(),
            stride: vec![stride],
            padding: vec![(padding, padding)],
            dilation: vec![dilation],
        };
        self.conv(x, w, bias, window, groups)
    }

    /// 2-d convolution with symmetric padding, no dilation, one group
    /// (on a concrete `Graph` the inherent explicit-shape `conv2d` takes
    /// precedence; call this as `GraphExt::conv2d(&mut g, ..)`).
    fn conv2d(
        &mut self,
        x: NodeId,
        w: NodeId,
        bias: Option<NodeId>,
        stride: [usize; 2],
        padding: [usize; 2],
    ) -> NodeId {
        let window = window2([0, 0], stride, padding);
        self.conv(
            x,
            w,
            bias,
            Window {
                kernel: Vec::new(),
                ..window
            },
            1,
        )
    }

    /// 2-d transposed convolution.
    #[allow(clippy::too_many_arguments)]
    fn conv_transpose2d(
        &mut self,
        x: NodeId,
        w: NodeId,
        bias: Option<NodeId>,
        stride: [usize; 2],
        padding: [usize; 2],
        output_padding: [usize; 2],
        groups: usize,
    ) -> NodeId {
        let mut inputs = vec![x, w];
        inputs.extend(bias);
        let window = Window {
            kernel: Vec::new(),
            ..window2([0, 0], stride, padding)
        };
        ok(self.graph_mut().try_node(
            Op::ConvTranspose {
                window,
                output_padding: output_padding.to_vec(),
                groups,
            },
            &inputs,
            None,
        ))
    }

    /// General pooling.
    fn pool(
        &mut self,
        x: NodeId,
        kind: PoolKind,
        window: Window,
        count_include_pad: bool,
    ) -> NodeId {
        ok(self.graph_mut().try_node(
            Op::Pool {
                kind,
                window,
                count_include_pad,
            },
            &[x],
            None,
        ))
    }

    /// 2-d max pooling.
    fn max_pool2d(
        &mut self,
        x: NodeId,
        kernel: [usize; 2],
        stride: [usize; 2],
        padding: [usize; 2],
    ) -> NodeId {
        self.pool(x, PoolKind::Max, window2(kernel, stride, padding), false)
    }

    /// 2-d average pooling (padding not counted).
    fn avg_pool2d(
        &mut self,
        x: NodeId,
        kernel: [usize; 2],
        stride: [usize; 2],
        padding: [usize; 2],
    ) -> NodeId {
        self.pool(x, PoolKind::Avg, window2(kernel, stride, padding), false)
    }

    /// Resizes the spatial dims of `x [N, C, *sp]` to `size`.
    fn upsample(
        &mut self,
        x: NodeId,
        size: &[usize],
        mode: InterpMode,
        align_corners: bool,
    ) -> NodeId {
        let mut dims = static_of(self.graph(), x)[..2].to_vec();
        dims.extend_from_slice(size);
        let s = Shape::new(&dims, self.graph().shape(x).dtype());
        ok(self.graph_mut().try_node(
            Op::Upsample {
                mode,
                align_corners,
            },
            &[x],
            Some(s),
        ))
    }

    /// Complex FFT along the last axis.
    fn fft(&mut self, x: NodeId, norm: FftNorm) -> NodeId {
        ok(self.graph_mut().try_node(
            Op::Fft {
                kind: FftKind::Fft,
                norm,
            },
            &[x],
            None,
        ))
    }

    /// Inverse complex FFT along the last axis.
    fn ifft(&mut self, x: NodeId, norm: FftNorm) -> NodeId {
        ok(self.graph_mut().try_node(
            Op::Fft {
                kind: FftKind::Ifft,
                norm,
            },
            &[x],
            None,
        ))
    }

    /// Real FFT along the last axis (f32 -> c64, `n/2+1` bins).
    fn rfft(&mut self, x: NodeId, norm: FftNorm) -> NodeId {
        ok(self.graph_mut().try_node(
            Op::Fft {
                kind: FftKind::Rfft,
                norm,
            },
            &[x],
            None,
        ))
    }

    /// Inverse real FFT to length `n` along the last axis (c64 -> f32).
    fn irfft(&mut self, x: NodeId, n: usize, norm: FftNorm) -> NodeId {
        let s = self.graph().shape(x).clone();
        let mut dims = s.dims().to_vec();
        *dims.last_mut().expect("irfft of a scalar") = Dim::Static(n);
        ok(self.graph_mut().try_node(
            Op::Fft {
                kind: FftKind::Irfft,
                norm,
            },
            &[x],
            Some(Shape::from_dims(dims, DType::F32)),
        ))
    }

    /// `x[.., K] · Wᵀ` for an `[N, K]` weight `w` held as `scheme`'s block
    /// bytes (`U8`; `None`: a plain f32 / f16 / bf16 `[N, K]` tensor).
    ///
    /// ```
    /// use rlx_ir::{quant::QuantScheme, DType, Graph, GraphExt, Shape};
    /// let mut g = Graph::new("qmm");
    /// let x = g.input("x", Shape::new(&[1, 256], DType::F32));
    /// let w = g.param("w", Shape::new(&[8 * 144], DType::U8)); // 8 rows of one Q4_K block
    /// let y = g.dequant_matmul(x, w, Some(QuantScheme::GgufQ4K), 8, 256);
    /// assert_eq!(g.shape(y), &Shape::new(&[1, 8], DType::F32));
    /// ```
    fn dequant_matmul(
        &mut self,
        x: NodeId,
        w: NodeId,
        scheme: Option<QuantScheme>,
        n: usize,
        k: usize,
    ) -> NodeId {
        ok(self
            .graph_mut()
            .try_node(Op::DequantMatMul { scheme, n, k }, &[x, w], None))
    }

    /// `jax.lax.cond`: the results of `then_branch(operands)` when the bool
    /// scalar `pred` holds, else of `else_branch(operands)` (only the taken
    /// branch runs). Fallible form: [`crate::ops::control::try_if`].
    fn if_(
        &mut self,
        pred: NodeId,
        then_branch: Graph,
        else_branch: Graph,
        operands: &[NodeId],
    ) -> Vec<NodeId> {
        let g = self.graph_mut();
        ok(crate::ops::control::try_if(
            g,
            pred,
            then_branch,
            else_branch,
            operands,
        ))
    }

    /// `jax.lax.while_loop` over the carry `init`; the final carry. More
    /// than [`crate::ops::control::DEFAULT_MAX_ITERATIONS`] steps is a
    /// run-time error.
    fn while_loop(&mut self, cond: Graph, body: Graph, init: &[NodeId]) -> Vec<NodeId> {
        let max = crate::ops::control::DEFAULT_MAX_ITERATIONS;
        ok(crate::ops::control::try_while(
            self.graph_mut(),
            cond,
            body,
            init,
            max,
        ))
    }

    /// `jax.lax.scan(body, init, xs)`: `(final carry, stacked ys)`.
    fn scan(&mut self, body: Graph, init: &[NodeId], xs: &[NodeId]) -> (Vec<NodeId>, Vec<NodeId>) {
        ok(crate::ops::control::try_scan(
            self.graph_mut(),
            body,
            init,
            xs,
            false,
        ))
    }

    /// A user function with optional user vjp / jvp rules; its results.
    fn custom_fn(
        &mut self,
        spec: crate::ops::control::CustomFnSpec,
        operands: &[NodeId],
    ) -> Vec<NodeId> {
        ok(crate::ops::control::try_custom_fn(
            self.graph_mut(),
            spec,
            operands,
        ))
    }
}

/// Python slice semantics: the first index and the length of `start:end:step` over `n`.
pub fn python_slice(n: usize, start: i64, end: i64, step: i64) -> (usize, usize) {
    let n = n as i64;
    let clamp = |v: i64, lo: i64, hi: i64| v.max(lo).min(hi);
    let norm = |v: i64| if v < 0 { v + n } else { v };
    let (s, e) = if step > 0 {
        (clamp(norm(start), 0, n), clamp(norm(end), 0, n))
    } else {
        (clamp(norm(start), -1, n - 1), clamp(norm(end), -1, n - 1))
    };
    let len = if step > 0 {
        if e > s {
            (e - s + step - 1) / step
        } else {
            0
        }
    } else if s > e {
        (s - e + (-step) - 1) / (-step)
    } else {
        0
    };
    (if len == 0 { 0 } else { s as usize }, len as usize)
}

impl GraphExt for Graph {
    fn graph(&self) -> &Graph {
        self
    }
    fn graph_mut(&mut self) -> &mut Graph {
        self
    }
}
