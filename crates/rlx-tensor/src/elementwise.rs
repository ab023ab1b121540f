//! Elementwise arithmetic, comparisons and unary functions, with numpy
//! broadcasting and JAX's dtype promotion.

use crate::error::{Result, TensorError};
use crate::scope::current_or;
use crate::tensor::{broadcast_shapes, promote_types, Tensor};
use rlx_ir::op::{BinaryOp, CmpOp, UnaryOp};
use rlx_ir::{DType, Graph, NodeId, Op, Shape};

/// An operand: a tensor, or a weakly typed scalar that takes the dtype of
/// the tensor it meets (as a Python scalar does in JAX).
#[derive(Clone, Debug)]
pub enum Arg {
    /// A tensor.
    Tensor(Tensor),
    /// A scalar literal.
    Scalar(f64),
}

impl From<&Tensor> for Arg {
    fn from(t: &Tensor) -> Arg {
        Arg::Tensor(t.clone())
    }
}
impl From<Tensor> for Arg {
    fn from(t: Tensor) -> Arg {
        Arg::Tensor(t)
    }
}
impl From<&&Tensor> for Arg {
    fn from(t: &&Tensor) -> Arg {
        Arg::Tensor((*t).clone())
    }
}
macro_rules! scalar_args {
    ($($t:ty),*) => { $( impl From<$t> for Arg {
        fn from(v: $t) -> Arg { Arg::Scalar(v as f64) }
    } )* };
}
scalar_args!(f64, f32, i32, i64, usize);

impl Arg {
    fn tensor(&self) -> Option<&Tensor> {
        match self {
            Arg::Tensor(t) => Some(t),
            Arg::Scalar(_) => None,
        }
    }
}

/// `x` converted to `dtype` inside a builder (no node when equal).
pub(crate) fn cast_node(g: &mut Graph, x: NodeId, dtype: DType, op: &str) -> Result<NodeId> {
    if g.shape(x).dtype() == dtype {
        return Ok(x);
    }
    let s = g.shape(x).with_dtype(dtype);
    g.try_node(Op::Cast, &[x], Some(s))
        .map_err(|e| TensorError::ir(op, e))
}

/// The dtype a set of operands computes in.
fn common_dtype(args: &[&Arg]) -> Result<DType> {
    let mut dt: Option<DType> = None;
    for a in args {
        if let Arg::Tensor(t) = a {
            t.check()?;
            dt = Some(match dt {
                None => t.dtype(),
                Some(d) => promote_types(d, t.dtype()),
            });
        }
    }
    let mut dt = dt.unwrap_or_else(Tensor::float_dtype);
    // A non-integral literal lifts an integer computation to float (JAX weak types).
    if !dt.is_float()
        && args
            .iter()
            .any(|a| matches!(a, Arg::Scalar(v) if v.fract() != 0.0 || !v.is_finite()))
    {
        dt = Tensor::float_dtype();
    }
    Ok(dt)
}

/// Builds `op` over operands promoted to one dtype and broadcast; `compute`
/// overrides the dtype the operands are cast to.
pub(crate) fn nary(name: &str, op: Op, args: &[&Arg], compute: Option<DType>) -> Result<Tensor> {
    let dt = match compute {
        Some(d) => d,
        None => common_dtype(args)?,
    };
    let tensors: Vec<&Tensor> = args.iter().filter_map(|a| a.tensor()).collect();
    // Shapes broadcast pairwise (the error names the first pair that fails).
    let mut acc: Option<Shape> = None;
    for t in &tensors {
        let s = t.shape();
        acc = Some(match acc {
            None => s,
            Some(a) => {
                let dims = broadcast_shapes(name, &a, &s)?;
                Shape::from_dims(dims, s.dtype())
            }
        });
    }
    if tensors.is_empty() {
        current_or(name)?;
    }
    Tensor::build(name, &tensors, |g, ids, _| {
        let mut nodes = Vec::with_capacity(args.len());
        let mut k = 0;
        for a in args {
            let n = match a {
                Arg::Tensor(_) => {
                    k += 1;
                    ids[k - 1]
                }
                Arg::Scalar(v) => g.scalar(*v, dt),
            };
            nodes.push(cast_node(g, n, dt, name)?);
        }
        g.try_node(op, &nodes, None)
            .map_err(|e| TensorError::ir(name, e))
    })
}

/// `where(cond, a, b)` (cond is cast to Bool; `a`, `b` promoted and all
/// three broadcast).
pub(crate) fn select(cond: &Arg, a: &Arg, b: &Arg) -> Result<Tensor> {
    let dt = common_dtype(&[a, b])?;
    let c = match cond {
        Arg::Tensor(t) => t.try_astype(DType::Bool)?,
        Arg::Scalar(v) => crate::creation::try_scalar(f64::from(u8::from(*v != 0.0)), DType::Bool)?,
    };
    let to_t = |x: &Arg| -> Result<Tensor> {
        match x {
            Arg::Tensor(t) => t.try_astype(dt),
            Arg::Scalar(v) => crate::creation::try_scalar(*v, dt),
        }
    };
    let (ta, tb) = (to_t(a)?, to_t(b)?);
    let ab = broadcast_shapes("where", &ta.shape(), &tb.shape())?;
    broadcast_shapes("where", &c.shape(), &Shape::from_dims(ab, dt))?;
    Tensor::op("where", Op::Select, &[&c, &ta, &tb], None)
}

fn float_only(op: UnaryOp) -> bool {
    !matches!(
        op,
        UnaryOp::Neg | UnaryOp::Abs | UnaryOp::Sign | UnaryOp::Relu | UnaryOp::Not
    )
}

impl Tensor {
    /// Any elementwise unary op (integer inputs of float functions are
    /// converted to the scope's float dtype first, as in JAX).
    pub fn try_unary(&self, op: UnaryOp) -> Result<Tensor> {
        self.check()?;
        let x = if float_only(op) && !self.dtype().is_float() {
            self.try_astype(Tensor::float_dtype())?
        } else if op == UnaryOp::Not && self.dtype() != DType::Bool {
            self.try_astype(DType::Bool)?
        } else {
            self.clone()
        };
        let name = format!("{op:?}").to_lowercase();
        Tensor::op(&name, Op::Unary(op), &[&x], None)
    }

    /// [`Tensor::try_unary`], failing softly.
    pub fn unary(&self, op: UnaryOp) -> Tensor {
        Tensor::sticky(self.try_unary(op))
    }

    /// Any elementwise binary op with broadcasting and promotion.
    pub fn try_binary(&self, op: BinaryOp, other: impl Into<Arg>) -> Result<Tensor> {
        let name = format!("{op:?}").to_lowercase();
        nary(&name, Op::Binary(op), &[&self.into(), &other.into()], None)
    }

    /// [`Tensor::try_binary`], failing softly.
    pub fn binary(&self, op: BinaryOp, other: impl Into<Arg>) -> Tensor {
        Tensor::sticky(self.try_binary(op, other))
    }

    /// Any comparison; a Bool tensor.
    pub fn try_compare(&self, op: CmpOp, other: impl Into<Arg>) -> Result<Tensor> {
        let name = format!("{op:?}").to_lowercase();
        nary(&name, Op::Compare(op), &[&self.into(), &other.into()], None)
    }

    /// `self + other`.
    pub fn try_add(&self, other: impl Into<Arg>) -> Result<Tensor> {
        self.try_binary(BinaryOp::Add, other)
    }
    /// `self - other`.
    pub fn try_sub(&self, other: impl Into<Arg>) -> Result<Tensor> {
        self.try_binary(BinaryOp::Sub, other)
    }
    /// `self * other`.
    pub fn try_mul(&self, other: impl Into<Arg>) -> Result<Tensor> {
        self.try_binary(BinaryOp::Mul, other)
    }
    /// True division `self / other` (integers divide as floats, as in JAX).
    pub fn try_div(&self, other: impl Into<Arg>) -> Result<Tensor> {
        let (a, b): (Arg, Arg) = (self.into(), other.into());
        let mut dt = common_dtype(&[&a, &b])?;
        if !dt.is_float() {
            dt = Tensor::float_dtype();
        }
        nary("div", Op::Binary(BinaryOp::Div), &[&a, &b], Some(dt))
    }

    /// `self ** other`.
    pub fn pow(&self, other: impl Into<Arg>) -> Tensor {
        self.binary(BinaryOp::Pow, other)
    }
    /// Elementwise maximum.
    pub fn maximum(&self, other: impl Into<Arg>) -> Tensor {
        self.binary(BinaryOp::Max, other)
    }
    /// Elementwise minimum.
    pub fn minimum(&self, other: impl Into<Arg>) -> Tensor {
        self.binary(BinaryOp::Min, other)
    }
    /// numpy `mod` / `remainder` (the sign of the divisor).
    pub fn remainder(&self, other: impl Into<Arg>) -> Tensor {
        self.binary(BinaryOp::Mod, other)
    }
    /// `atan2(self, other)`.
    pub fn arctan2(&self, other: impl Into<Arg>) -> Tensor {
        let x = self.float();
        x.binary(BinaryOp::Atan2, other)
    }
    /// numpy `floor_divide`.
    pub fn floor_divide(&self, other: impl Into<Arg>) -> Tensor {
        let other = other.into();
        let dt = common_dtype(&[&self.into(), &other]).unwrap_or(DType::F32);
        if dt.is_float() {
            (self / other).floor()
        } else {
            self.binary(BinaryOp::Div, other)
        }
    }

    /// `self == other` (Bool).
    pub fn eq(&self, other: impl Into<Arg>) -> Tensor {
        Tensor::sticky(self.try_compare(CmpOp::Eq, other))
    }
    /// `self != other` (Bool).
    pub fn ne(&self, other: impl Into<Arg>) -> Tensor {
        Tensor::sticky(self.try_compare(CmpOp::Ne, other))
    }
    /// `self < other` (Bool).
    pub fn lt(&self, other: impl Into<Arg>) -> Tensor {
        Tensor::sticky(self.try_compare(CmpOp::Lt, other))
    }
    /// `self <= other` (Bool).
    pub fn le(&self, other: impl Into<Arg>) -> Tensor {
        Tensor::sticky(self.try_compare(CmpOp::Le, other))
    }
    /// `self > other` (Bool).
    pub fn gt(&self, other: impl Into<Arg>) -> Tensor {
        Tensor::sticky(self.try_compare(CmpOp::Gt, other))
    }
    /// `self >= other` (Bool).
    pub fn ge(&self, other: impl Into<Arg>) -> Tensor {
        Tensor::sticky(self.try_compare(CmpOp::Ge, other))
    }

    /// Logical and (Bool).
    pub fn logical_and(&self, other: impl Into<Arg>) -> Tensor {
        let (a, b) = (self.astype(DType::Bool), other.into());
        let b = bool_arg(b);
        Tensor::sticky(nary(
            "logical_and",
            Op::Binary(BinaryOp::And),
            &[&a.into(), &b],
            Some(DType::Bool),
        ))
    }
    /// Logical or (Bool).
    pub fn logical_or(&self, other: impl Into<Arg>) -> Tensor {
        let (a, b) = (self.astype(DType::Bool), other.into());
        let b = bool_arg(b);
        Tensor::sticky(nary(
            "logical_or",
            Op::Binary(BinaryOp::Or),
            &[&a.into(), &b],
            Some(DType::Bool),
        ))
    }
    /// Logical xor (Bool).
    pub fn logical_xor(&self, other: impl Into<Arg>) -> Tensor {
        let (a, b) = (self.astype(DType::Bool), other.into());
        let b = bool_arg(b);
        Tensor::sticky(nary(
            "logical_xor",
            Op::Binary(BinaryOp::Xor),
            &[&a.into(), &b],
            Some(DType::Bool),
        ))
    }
    /// Logical not (Bool).
    pub fn logical_not(&self) -> Tensor {
        self.unary(UnaryOp::Not)
    }

    /// Converts to `dtype` (numpy `astype`; no node when already that dtype).
    pub fn try_astype(&self, dtype: DType) -> Result<Tensor> {
        self.check()?;
        if self.dtype() == dtype {
            return Ok(self.clone());
        }
        let s = self.shape().with_dtype(dtype);
        Tensor::op("astype", Op::Cast, &[self], Some(s))
    }
    /// [`Tensor::try_astype`], failing softly.
    pub fn astype(&self, dtype: DType) -> Tensor {
        Tensor::sticky(self.try_astype(dtype))
    }
    /// Alias of [`Tensor::astype`].
    pub fn cast(&self, dtype: DType) -> Tensor {
        self.astype(dtype)
    }
    /// Converted to the scope's float dtype unless already float.
    pub(crate) fn float(&self) -> Tensor {
        if self.dtype().is_float() {
            self.clone()
        } else {
            self.astype(Tensor::float_dtype())
        }
    }

    /// `clip(self, lo, hi)`; either bound may be `None`.
    pub fn clip(&self, lo: Option<f64>, hi: Option<f64>) -> Tensor {
        let mut x = self.clone();
        if let Some(l) = lo {
            x = x.maximum(l);
        }
        if let Some(h) = hi {
            x = x.minimum(h);
        }
        x
    }
}

fn bool_arg(a: Arg) -> Arg {
    match a {
        Arg::Tensor(t) => Arg::Tensor(t.astype(DType::Bool)),
        s => s,
    }
}

macro_rules! unary_methods {
    ($($(#[$m:meta])* $name:ident => $op:ident;)*) => {
        impl Tensor {
            $( $(#[$m])* pub fn $name(&self) -> Tensor { self.unary(UnaryOp::$op) } )*
        }
    };
}

unary_methods! {
    /// `-x`.
    negative => Neg;
    /// `|x|`.
    abs => Abs;
    /// `e^x`.
    exp => Exp;
    /// Natural logarithm.
    log => Log;
    /// Square root.
    sqrt => Sqrt;
    /// `1 / sqrt(x)`.
    rsqrt => Rsqrt;
    /// `1 / x`.
    reciprocal => Reciprocal;
    /// Hyperbolic tangent.
    tanh => Tanh;
    /// Logistic sigmoid.
    sigmoid => Sigmoid;
    /// `max(x, 0)`.
    relu => Relu;
    /// Exact (erf) GELU.
    gelu => Gelu;
    /// Tanh-approximated GELU.
    gelu_tanh => GeluApprox;
    /// SiLU / swish `x * sigmoid(x)`.
    silu => Silu;
    /// Sine.
    sin => Sin;
    /// Cosine.
    cos => Cos;
    /// Floor.
    floor => Floor;
    /// Ceiling.
    ceil => Ceil;
    /// Round half to even (numpy `round` / `rint`).
    round => Round;
    /// Sign (-1, 0, 1).
    sign => Sign;
    /// Error function.
    erf => Erf;
    /// `log(1 + e^x)`.
    softplus => Softplus;
}

impl Tensor {
    /// `x * x`.
    pub fn square(&self) -> Tensor {
        self * self
    }
    /// `2^x`.
    pub fn exp2(&self) -> Tensor {
        (self.float() * std::f64::consts::LN_2).exp()
    }
    /// `e^x - 1`.
    pub fn expm1(&self) -> Tensor {
        self.exp() - 1.0
    }
    /// Base-2 logarithm.
    pub fn log2(&self) -> Tensor {
        self.log() / std::f64::consts::LN_2
    }
    /// Base-10 logarithm.
    pub fn log10(&self) -> Tensor {
        self.log() / std::f64::consts::LN_10
    }
    /// `log(1 + x)`.
    pub fn log1p(&self) -> Tensor {
        (self.float() + 1.0).log()
    }
    /// Cube root (real, odd).
    pub fn cbrt(&self) -> Tensor {
        self.sign() * self.abs().float().pow(1.0 / 3.0)
    }
    /// Tangent.
    pub fn tan(&self) -> Tensor {
        self.sin() / self.cos()
    }
    /// Hyperbolic sine.
    pub fn sinh(&self) -> Tensor {
        (self.exp() - (-self).exp()) * 0.5
    }
    /// Hyperbolic cosine.
    pub fn cosh(&self) -> Tensor {
        (self.exp() + (-self).exp()) * 0.5
    }
    /// Inverse sine.
    pub fn arcsin(&self) -> Tensor {
        let x = self.float();
        x.arctan2((1.0 - x.square()).sqrt())
    }
    /// Inverse cosine.
    pub fn arccos(&self) -> Tensor {
        let x = self.float();
        (1.0 - x.square()).sqrt().arctan2(&x)
    }
    /// Inverse tangent.
    pub fn arctan(&self) -> Tensor {
        let x = self.float();
        let one = crate::creation::ones_like(&x);
        x.arctan2(&one)
    }
    /// Inverse hyperbolic sine.
    pub fn arcsinh(&self) -> Tensor {
        let x = self.float();
        x.sign() * (x.abs() + (x.square() + 1.0).sqrt()).log()
    }
    /// Inverse hyperbolic cosine.
    pub fn arccosh(&self) -> Tensor {
        let x = self.float();
        (&x + (x.square() - 1.0).sqrt()).log()
    }
    /// Inverse hyperbolic tangent.
    pub fn arctanh(&self) -> Tensor {
        let x = self.float();
        ((1.0 + &x) / (1.0 - &x)).log() * 0.5
    }
    /// Round toward zero.
    pub fn trunc(&self) -> Tensor {
        if !self.dtype().is_float() {
            return self.clone();
        }
        self.sign() * self.abs().floor()
    }
    /// `x != x` (Bool).
    pub fn isnan(&self) -> Tensor {
        self.ne(self)
    }
    /// `|x| == inf` (Bool).
    pub fn isinf(&self) -> Tensor {
        self.abs().eq(f64::INFINITY)
    }
    /// Neither NaN nor infinite (Bool).
    pub fn isfinite(&self) -> Tensor {
        self.abs().lt(f64::INFINITY)
    }
    /// `sqrt(x² + y²)`.
    pub fn hypot(&self, other: impl Into<Arg>) -> Tensor {
        (self.square() + square_arg(other.into())).sqrt()
    }
    /// `log(e^x + e^y)`, stable.
    pub fn logaddexp(&self, other: impl Into<Arg>) -> Tensor {
        let y = arg_tensor_like(other.into(), self);
        let m = self.maximum(&y);
        let d = (self - &y).abs();
        m + (-d).exp().log1p()
    }
    /// `log2(2^x + 2^y)`, stable.
    pub fn logaddexp2(&self, other: impl Into<Arg>) -> Tensor {
        let ln2 = std::f64::consts::LN_2;
        let y = arg_tensor_like(other.into(), self);
        (self.float() * ln2).logaddexp(y.float() * ln2) / ln2
    }
    /// Degrees to radians.
    pub fn deg2rad(&self) -> Tensor {
        self.float() * (std::f64::consts::PI / 180.0)
    }
    /// Radians to degrees.
    pub fn rad2deg(&self) -> Tensor {
        self.float() * (180.0 / std::f64::consts::PI)
    }
    /// Normalised sinc `sin(pi x) / (pi x)` (1 at 0).
    pub fn sinc(&self) -> Tensor {
        let x = self.float();
        let px = &x * std::f64::consts::PI;
        let zero = x.eq(0.0);
        let safe = crate::np::where_(&zero, 1.0, &px);
        crate::np::where_(&zero, 1.0, safe.sin() / &safe)
    }
    /// Heaviside step with `h0` at 0.
    pub fn heaviside(&self, h0: impl Into<Arg>) -> Tensor {
        let pos = crate::np::where_(&self.gt(0.0), 1.0, 0.0).astype(self.dtype());
        crate::np::where_(&self.eq(0.0), h0, pos)
    }
    /// `|x|` with the sign of `other`.
    pub fn copysign(&self, other: impl Into<Arg>) -> Tensor {
        let y = arg_tensor_like(other.into(), self);
        let neg = y
            .lt(0.0)
            .logical_or(y.eq(0.0).logical_and((1.0 / y.float()).lt(0.0)));
        let a = self.abs();
        crate::np::where_(&neg, -&a, &a)
    }
    /// C `fmod`: the remainder with the sign of the dividend.
    pub fn fmod(&self, other: impl Into<Arg>) -> Tensor {
        let y = arg_tensor_like(other.into(), self);
        if self.dtype().is_float() || y.dtype().is_float() {
            let q = (self / &y).trunc();
            self - q * &y
        } else {
            let r = self.remainder(&y);
            let fix = r.ne(0).logical_and(self.lt(0).logical_xor(y.lt(0)));
            crate::np::where_(&fix, &r - &y, &r)
        }
    }
    /// Sign bit set (Bool; true for -0.0).
    pub fn signbit(&self) -> Tensor {
        let x = self.float();
        x.lt(0.0)
            .logical_or(x.eq(0.0).logical_and((1.0 / &x).lt(0.0)))
    }
    /// `+x` (a copy).
    pub fn positive(&self) -> Tensor {
        self.clone()
    }
    /// NaN to `nan`, +inf to `posinf`, -inf to `neginf`.
    pub fn nan_to_num(&self, nan: f64, posinf: f64, neginf: f64) -> Tensor {
        let x = crate::np::where_(&self.isnan(), nan, self);
        let x = crate::np::where_(&x.eq(f64::INFINITY), posinf, &x);
        crate::np::where_(&x.eq(f64::NEG_INFINITY), neginf, &x)
    }
    /// numpy `isclose` (Bool): `|a - b| <= atol + rtol * |b|`.
    pub fn isclose(&self, other: impl Into<Arg>, rtol: f64, atol: f64) -> Tensor {
        let y = arg_tensor_like(other.into(), self);
        (self - &y).abs().le(y.abs() * rtol + atol)
    }
}

fn square_arg(a: Arg) -> Arg {
    match a {
        Arg::Tensor(t) => Arg::Tensor(t.square()),
        Arg::Scalar(v) => Arg::Scalar(v * v),
    }
}

/// A scalar argument made a rank-0 tensor of `like`'s dtype.
pub(crate) fn arg_tensor_like(a: Arg, like: &Tensor) -> Tensor {
    match a {
        Arg::Tensor(t) => t,
        Arg::Scalar(v) => crate::creation::scalar(v, like.dtype()),
    }
}
