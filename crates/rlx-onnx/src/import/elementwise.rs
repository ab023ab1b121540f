//! Elementwise ops: arithmetic, activations, comparisons, logic, casts.

use super::NodeCx;
use crate::Result;
use rlx_ir::op::{BinaryOp as B, CmpOp, UnaryOp as U};
use rlx_ir::{DType, NodeId, Op};

op_table! {
    "Add" => |cx| binary(cx, B::Add),
    "Sub" => |cx| binary(cx, B::Sub),
    "Mul" => |cx| binary(cx, B::Mul),
    "Div" => div,
    "Pow" => pow,
    "Mod" => modulo,
    "Neg" => |cx| unary(cx, U::Neg),
    "Abs" => |cx| unary(cx, U::Abs),
    "Exp" => |cx| unary(cx, U::Exp),
    "Log" => |cx| unary(cx, U::Log),
    "Sqrt" => |cx| unary(cx, U::Sqrt),
    "Reciprocal" => |cx| unary(cx, U::Reciprocal),
    "Erf" => |cx| unary(cx, U::Erf),
    "Tanh" => |cx| unary(cx, U::Tanh),
    "Sigmoid" => |cx| unary(cx, U::Sigmoid),
    "Relu" => |cx| unary(cx, U::Relu),
    "Softplus" => |cx| unary(cx, U::Softplus),
    "Sin" => |cx| unary(cx, U::Sin),
    "Cos" => |cx| unary(cx, U::Cos),
    "Floor" => |cx| unary(cx, U::Floor),
    "Ceil" => |cx| unary(cx, U::Ceil),
    "Round" => |cx| unary(cx, U::Round),
    "Sign" => |cx| unary(cx, U::Sign),
    "Not" => |cx| unary(cx, U::Not),
    "BitwiseNot" => bitwise_not,
    "Tan" => tan,
    "Gelu" => |cx| activation(cx, gelu),
    "LeakyRelu" => |cx| activation(cx, leaky_relu),
    "PRelu" => prelu,
    "Elu" => |cx| activation(cx, elu),
    "Selu" => |cx| activation(cx, selu),
    "Celu" => |cx| activation(cx, celu),
    "ThresholdedRelu" => |cx| activation(cx, thresholded_relu),
    "HardSigmoid" => |cx| activation(cx, hard_sigmoid),
    "HardSwish" => |cx| activation(cx, hard_swish),
    "Softsign" => |cx| activation(cx, softsign),
    "Mish" => |cx| activation(cx, mish),
    "Swish" => |cx| activation(cx, swish),
    "SwiGLU" => swiglu,
    "Clip" => clip,
    "Min" => |cx| variadic(cx, B::Min),
    "Max" => |cx| variadic(cx, B::Max),
    "Sum" => |cx| variadic(cx, B::Add),
    "Mean" => mean,
    "Where" => where_,
    "Equal" => |cx| compare(cx, CmpOp::Eq),
    "Less" => |cx| compare(cx, CmpOp::Lt),
    "Greater" => |cx| compare(cx, CmpOp::Gt),
    "LessOrEqual" => |cx| compare(cx, CmpOp::Le),
    "GreaterOrEqual" => |cx| compare(cx, CmpOp::Ge),
    "And" => |cx| binary(cx, B::And),
    "Or" => |cx| binary(cx, B::Or),
    "Xor" => |cx| binary(cx, B::Xor),
    "BitwiseAnd" => |cx| binary(cx, B::And),
    "BitwiseOr" => |cx| binary(cx, B::Or),
    "BitwiseXor" => |cx| binary(cx, B::Xor),
    "IsNaN" => is_nan,
    "IsInf" => is_inf,
    "Identity" => |cx| Ok(vec![cx.x(0)?]),
    "Dropout" => dropout,
}

/// An activation computed in f32 for f16 / bf16 inputs (as the reference
/// does), rounded back once at the end.
fn activation(
    cx: &mut NodeCx,
    f: fn(&mut NodeCx, NodeId) -> Result<NodeId>,
) -> Result<Vec<NodeId>> {
    let x = cx.x(0)?;
    let dt = cx.dtype(x);
    if matches!(dt, DType::F16 | DType::BF16) {
        let xw = cx.cast(x, DType::F32)?;
        let y = f(cx, xw)?;
        return Ok(vec![cx.cast(y, dt)?]);
    }
    Ok(vec![f(cx, x)?])
}

fn unary(cx: &mut NodeCx, op: U) -> Result<Vec<NodeId>> {
    let x = cx.x(0)?;
    Ok(vec![cx.un(op, x)?])
}

fn binary(cx: &mut NodeCx, op: B) -> Result<Vec<NodeId>> {
    let (a, b) = (cx.x(0)?, cx.x(1)?);
    Ok(vec![cx.bin(op, a, b)?])
}

/// Bitwise not; UINT16 lives in I32 storage, so it flips the low 16 bits.
fn bitwise_not(cx: &mut NodeCx) -> Result<Vec<NodeId>> {
    let x = cx.x(0)?;
    if cx.tag(0) == Some(crate::proto::tensor_proto::DataType::Uint16 as i32) {
        return Ok(vec![cx.bin_scalar(B::Xor, x, 65535.0)?]);
    }
    Ok(vec![cx.un(U::Not, x)?])
}

fn compare(cx: &mut NodeCx, op: CmpOp) -> Result<Vec<NodeId>> {
    let (a, b) = (cx.x(0)?, cx.x(1)?);
    Ok(vec![cx.node(Op::Compare(op), &[a, b], None)?])
}

/// `where(cond, a, b)`.
pub(super) fn select(cx: &mut NodeCx, c: NodeId, a: NodeId, b: NodeId) -> Result<NodeId> {
    cx.node(Op::Select, &[c, a, b], None)
}

/// `x < 0` (or another comparison against a scalar of x's dtype).
pub(super) fn cmp_scalar(cx: &mut NodeCx, op: CmpOp, x: NodeId, v: f64) -> Result<NodeId> {
    let s = cx.scalar(v, cx.dtype(x));
    cx.node(Op::Compare(op), &[x, s], None)
}

fn where_(cx: &mut NodeCx) -> Result<Vec<NodeId>> {
    let (c, a, b) = (cx.x(0)?, cx.x(1)?, cx.x(2)?);
    Ok(vec![select(cx, c, a, b)?])
}

/// ONNX integer division truncates toward zero; the IR floors.
fn div(cx: &mut NodeCx) -> Result<Vec<NodeId>> {
    let (a, b) = (cx.x(0)?, cx.x(1)?);
    let q = cx.bin(B::Div, a, b)?;
    if !cx.dtype(a).is_signed_int() {
        return Ok(vec![q]);
    }
    let r = cx.bin(B::Mod, a, b)?;
    let inexact = cmp_scalar(cx, CmpOp::Ne, r, 0.0)?;
    let an = cmp_scalar(cx, CmpOp::Lt, a, 0.0)?;
    let bn = cmp_scalar(cx, CmpOp::Lt, b, 0.0)?;
    let differ = cx.bin(B::Xor, an, bn)?;
    let fix = cx.bin(B::And, inexact, differ)?;
    let q1 = cx.bin_scalar(B::Add, q, 1.0)?;
    Ok(vec![select(cx, fix, q1, q)?])
}

fn modulo(cx: &mut NodeCx) -> Result<Vec<NodeId>> {
    let (a, b) = (cx.x(0)?, cx.x(1)?);
    let r = cx.bin(B::Mod, a, b)?;
    if cx.attr_i("fmod", 0) == 0 {
        return Ok(vec![r]);
    }
    // C fmod takes the dividend's sign: numpy's mod minus b where the signs differ.
    let nz = cmp_scalar(cx, CmpOp::Ne, r, 0.0)?;
    let an = cmp_scalar(cx, CmpOp::Lt, a, 0.0)?;
    let bn = cmp_scalar(cx, CmpOp::Lt, b, 0.0)?;
    let differ = cx.bin(B::Xor, an, bn)?;
    let fix = cx.bin(B::And, nz, differ)?;
    let rb = cx.bin(B::Sub, r, b)?;
    Ok(vec![select(cx, fix, rb, r)?])
}

fn pow(cx: &mut NodeCx) -> Result<Vec<NodeId>> {
    let (a, b) = (cx.x(0)?, cx.x(1)?);
    let (da, db) = (cx.dtype(a), cx.dtype(b));
    if da == db {
        return Ok(vec![cx.bin(B::Pow, a, b)?]);
    }
    if da.is_float() {
        let b = cx.cast(b, da)?;
        return Ok(vec![cx.bin(B::Pow, a, b)?]);
    }
    // Integer base, float exponent: compute in the exponent's type, cast back.
    let af = cx.cast(a, db)?;
    let p = cx.bin(B::Pow, af, b)?;
    Ok(vec![cx.cast(p, da)?])
}

fn tan(cx: &mut NodeCx) -> Result<Vec<NodeId>> {
    let x = cx.x(0)?;
    let (s, c) = (cx.un(U::Sin, x)?, cx.un(U::Cos, x)?);
    Ok(vec![cx.bin(B::Div, s, c)?])
}

fn gelu(cx: &mut NodeCx, x: NodeId) -> Result<NodeId> {
    let op = match cx.attr_s("approximate", "none").as_str() {
        "none" => U::Gelu,
        "tanh" => U::GeluApprox,
        other => return Err(cx.err(format!("unknown approximate=\"{other}\""))),
    };
    cx.un(op, x)
}

fn leaky_relu(cx: &mut NodeCx, x: NodeId) -> Result<NodeId> {
    let alpha = cx.attr_f("alpha", 0.01);
    let neg = cmp_scalar(cx, CmpOp::Lt, x, 0.0)?;
    let ax = cx.bin_scalar(B::Mul, x, alpha)?;
    select(cx, neg, ax, x)
}

fn prelu(cx: &mut NodeCx) -> Result<Vec<NodeId>> {
    let (x, slope) = (cx.x(0)?, cx.x(1)?);
    let neg = cmp_scalar(cx, CmpOp::Lt, x, 0.0)?;
    let ax = cx.bin(B::Mul, x, slope)?;
    let out = select(cx, neg, ax, x)?;
    // The slope broadcasts to x (unidirectionally), never the reverse.
    let dims = cx.shape(x).dims().to_vec();
    Ok(vec![cx.broadcast(out, dims)?])
}

/// `alpha * (exp(x) - 1)`.
fn expm1_scaled(cx: &mut NodeCx, x: NodeId, alpha: f64) -> Result<NodeId> {
    let e = cx.un(U::Exp, x)?;
    let e1 = cx.bin_scalar(B::Sub, e, 1.0)?;
    cx.bin_scalar(B::Mul, e1, alpha)
}

fn elu(cx: &mut NodeCx, x: NodeId) -> Result<NodeId> {
    let alpha = cx.attr_f("alpha", 1.0);
    let neg = cmp_scalar(cx, CmpOp::Lt, x, 0.0)?;
    let e = expm1_scaled(cx, x, alpha)?;
    select(cx, neg, e, x)
}

fn selu(cx: &mut NodeCx, x: NodeId) -> Result<NodeId> {
    let alpha = cx.attr_f("alpha", 1.673_263_192_176_818_8);
    let gamma = cx.attr_f("gamma", 1.050_701_022_148_132_3);
    let neg = cmp_scalar(cx, CmpOp::Le, x, 0.0)?;
    let e = expm1_scaled(cx, x, alpha)?;
    let y = select(cx, neg, e, x)?;
    cx.bin_scalar(B::Mul, y, gamma)
}

fn celu(cx: &mut NodeCx, x: NodeId) -> Result<NodeId> {
    let alpha = cx.attr_f("alpha", 1.0);
    let xa = cx.bin_scalar(B::Div, x, alpha)?;
    let e = expm1_scaled(cx, xa, alpha)?;
    let zero = cx.scalar(0.0, cx.dtype(x));
    let lo = cx.bin(B::Min, e, zero)?;
    let hi = cx.bin(B::Max, x, zero)?;
    cx.bin(B::Add, hi, lo)
}

fn thresholded_relu(cx: &mut NodeCx, x: NodeId) -> Result<NodeId> {
    let alpha = cx.attr_f("alpha", 1.0);
    let keep = cmp_scalar(cx, CmpOp::Gt, x, alpha)?;
    let zero = cx.scalar(0.0, cx.dtype(x));
    select(cx, keep, x, zero)
}

/// `max(0, min(1, alpha * x + beta))`.
fn hard_sigmoid_of(cx: &mut NodeCx, x: NodeId, alpha: f64, beta: f64) -> Result<NodeId> {
    let ax = cx.bin_scalar(B::Mul, x, alpha)?;
    let y = cx.bin_scalar(B::Add, ax, beta)?;
    let y = cx.bin_scalar(B::Min, y, 1.0)?;
    cx.bin_scalar(B::Max, y, 0.0)
}

fn hard_sigmoid(cx: &mut NodeCx, x: NodeId) -> Result<NodeId> {
    let (alpha, beta) = (cx.attr_f("alpha", 0.2), cx.attr_f("beta", 0.5));
    hard_sigmoid_of(cx, x, alpha, beta)
}

fn hard_swish(cx: &mut NodeCx, x: NodeId) -> Result<NodeId> {
    let h = hard_sigmoid_of(cx, x, 1.0 / 6.0, 0.5)?;
    cx.bin(B::Mul, x, h)
}

fn softsign(cx: &mut NodeCx, x: NodeId) -> Result<NodeId> {
    let a = cx.un(U::Abs, x)?;
    let d = cx.bin_scalar(B::Add, a, 1.0)?;
    cx.bin(B::Div, x, d)
}

/// `x * sigmoid(alpha * x)`.
fn swish(cx: &mut NodeCx, x: NodeId) -> Result<NodeId> {
    let alpha = cx.attr_f("alpha", 1.0);
    let ax = cx.bin_scalar(B::Mul, x, alpha)?;
    let s = cx.un(U::Sigmoid, ax)?;
    cx.bin(B::Mul, x, s)
}

/// `swish(a) * b`, in f32 for half inputs.
fn swiglu(cx: &mut NodeCx) -> Result<Vec<NodeId>> {
    let g = activation(cx, swish)?[0];
    let b = cx.x(1)?;
    Ok(vec![cx.bin(B::Mul, g, b)?])
}

fn mish(cx: &mut NodeCx, x: NodeId) -> Result<NodeId> {
    let sp = cx.un(U::Softplus, x)?;
    let t = cx.un(U::Tanh, sp)?;
    cx.bin(B::Mul, x, t)
}

fn clip(cx: &mut NodeCx) -> Result<Vec<NodeId>> {
    let mut y = cx.x(0)?;
    let dt = cx.dtype(y);
    let (lo, hi) = if cx.opset < 11 {
        let lo = cx.has_attr("min").then(|| cx.attr_f("min", 0.0));
        let hi = cx.has_attr("max").then(|| cx.attr_f("max", 0.0));
        (lo.map(|v| cx.scalar(v, dt)), hi.map(|v| cx.scalar(v, dt)))
    } else {
        (cx.opt(1), cx.opt(2))
    };
    if let Some(lo) = lo {
        y = cx.bin(B::Max, y, lo)?;
    }
    if let Some(hi) = hi {
        y = cx.bin(B::Min, y, hi)?;
    }
    Ok(vec![y])
}

fn variadic(cx: &mut NodeCx, op: B) -> Result<Vec<NodeId>> {
    let mut acc = cx.x(0)?;
    for i in 1..cx.n_inputs() {
        let x = cx.x(i)?;
        acc = cx.bin(op, acc, x)?;
    }
    Ok(vec![acc])
}

fn mean(cx: &mut NodeCx) -> Result<Vec<NodeId>> {
    let s = variadic(cx, B::Add)?[0];
    let n = cx.n_inputs() as f64;
    Ok(vec![cx.bin_scalar(B::Div, s, n)?])
}

fn is_nan(cx: &mut NodeCx) -> Result<Vec<NodeId>> {
    let x = cx.x(0)?;
    Ok(vec![cx.node(Op::Compare(CmpOp::Ne), &[x, x], None)?])
}

fn is_inf(cx: &mut NodeCx) -> Result<Vec<NodeId>> {
    let x = cx.x(0)?;
    let (pos, neg) = (
        cx.attr_i("detect_positive", 1),
        cx.attr_i("detect_negative", 1),
    );
    let p = cmp_scalar(cx, CmpOp::Eq, x, f64::INFINITY)?;
    let n = cmp_scalar(cx, CmpOp::Eq, x, f64::NEG_INFINITY)?;
    let out = match (pos != 0, neg != 0) {
        (true, true) => cx.bin(B::Or, p, n)?,
        (true, false) => p,
        (false, true) => n,
        (false, false) => cx.bin(B::And, p, n)?,
    };
    Ok(vec![out])
}

/// Cast with ONNX semantics where they differ from a plain convert:
/// float -> bool is `x != 0` (NaN is true).
pub(super) fn cast_to(cx: &mut NodeCx, x: NodeId, to: DType) -> Result<NodeId> {
    if to == DType::Bool && cx.dtype(x) != DType::Bool {
        return cmp_scalar(cx, CmpOp::Ne, x, 0.0);
    }
    cx.cast(x, to)
}

fn dropout(cx: &mut NodeCx) -> Result<Vec<NodeId>> {
    let x = cx.x(0)?;
    // Training with ratio 0 keeps everything: deterministic.
    let ratio = match cx.opt(1) {
        Some(_) => cx.const_f64s(1, "ratio")?.first().copied().unwrap_or(0.5),
        None => 0.5,
    };
    if let Some(t) = cx.konst(2) {
        if t.to_f64_lossy().first().copied().unwrap_or(0.0) != 0.0 && ratio != 0.0 {
            return Err(
                cx.unsupported("training_mode=true (random masks) is not supported at inference")
            );
        }
    } else if cx.opt(2).is_some() {
        cx.const_ints(2, "training_mode")?;
    }
    let mut outs = vec![x];
    if cx.wants_output(1) {
        let t = cx.scalar(1.0, DType::Bool);
        let dims = cx.shape(x).dims().to_vec();
        outs.push(cx.broadcast(t, dims)?);
    }
    Ok(outs)
}
