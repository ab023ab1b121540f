//! Cast and CastLike, including the narrow ONNX types RLX keeps in a wider
//! storage dtype (see [`crate::narrow`]): mini floats are decoded by a
//! table gather and encoded by counting rounding thresholds (round to
//! nearest even, saturating or overflowing as ONNX specifies); packed
//! integers clip and round.

use super::elementwise::{cmp_scalar, select};
use super::NodeCx;
use crate::narrow::{packed_int, storage_dtype, MiniFloat};
use crate::tensor::{dtype_of, elem_type_of};
use crate::Result;
use rlx_ir::op::{BinaryOp as B, CmpOp, ReduceOp, UnaryOp as U};
use rlx_ir::{DType, Dim, HostTensor, NodeId, Op};

op_table! {
    "Cast" => cast,
    "CastLike" => cast_like,
}

/// Decodes a narrow value (storage dtype) to a plain one: mini floats to
/// F32, packed integers stay in their (already exact) storage.
pub(super) fn decode(cx: &mut NodeCx, x: NodeId, tag: Option<i32>) -> Result<NodeId> {
    let table: Vec<f32> = match tag {
        Some(t) if crate::narrow::is_e8m0(t) => (0..256).map(crate::narrow::e8m0_decode).collect(),
        Some(t) => match MiniFloat::of(t) {
            Some(f) => (0..1u32 << f.bits()).map(|c| f.decode(c)).collect(),
            None => return Ok(x),
        },
        None => return Ok(x),
    };
    let n = table.len();
    let t = HostTensor::from_vec(table, &[n]).expect("1-d");
    let t = cx.constant(&t);
    let idx = cx.cast(x, DType::I64)?;
    cx.node(Op::Gather { axis: 0 }, &[t, idx], None)
}

/// Encodes a float value as mini-float codes (U8).
fn encode_minifloat(cx: &mut NodeCx, x: NodeId, f: MiniFloat, saturate: bool) -> Result<NodeId> {
    let x = cx.cast(x, DType::F32)?;
    let saturate = saturate || !f.has_nan; // FP4 has no overflow code
    let v = f.positive_values();
    let m = v.len() - 1; // the max code
    let a = cx.un(U::Abs, x)?;
    let a = if saturate {
        cx.bin_scalar(B::Min, a, v[m])?
    } else {
        a
    };
    // Thresholds between neighbours; a tie goes to the even code.
    let mut gt = Vec::new();
    let mut ge = Vec::new();
    let mut push = |mid: f64, upper_code: usize| {
        if upper_code.is_multiple_of(2) {
            ge.push(mid)
        } else {
            gt.push(mid)
        }
    };
    for k in 0..m {
        push((v[k] + v[k + 1]) / 2.0, k + 1);
    }
    if !saturate {
        push((v[m] + f.overflow_step()) / 2.0, m + 1);
    }
    let a64 = cx.cast(a, DType::F64)?;
    let mut dims = cx.shape(a64).dims().to_vec();
    let r = dims.len();
    dims.push(Dim::Static(1));
    let a64 = cx.reshape(a64, dims)?;
    let mut count: Option<NodeId> = None;
    for (list, op) in [(gt, CmpOp::Gt), (ge, CmpOp::Ge)] {
        if list.is_empty() {
            continue;
        }
        let n = list.len();
        let t = cx.constant(&HostTensor::from_vec(list, &[n]).expect("1-d"));
        let hit = cx.node(Op::Compare(op), &[a64, t], None)?;
        let c = cx.reduce(ReduceOp::Sum, hit, vec![r], false)?;
        let c = cx.cast(c, DType::I64)?;
        count = Some(match count {
            None => c,
            Some(p) => cx.bin(B::Add, p, c)?,
        });
    }
    let mut code = count.expect("thresholds");
    // The sign bit (negative zero included: 1/x < 0); none on zero for `uz`.
    let lt = cmp_scalar(cx, CmpOp::Lt, x, 0.0)?;
    let is_zero = cmp_scalar(cx, CmpOp::Eq, x, 0.0)?;
    let rec = cx.un(U::Reciprocal, x)?;
    let neg_zero = cmp_scalar(cx, CmpOp::Lt, rec, 0.0)?;
    let neg_zero = cx.bin(B::And, is_zero, neg_zero)?;
    let mut neg = cx.bin(B::Or, lt, neg_zero)?;
    if f.unsigned_zero {
        let nz = cmp_scalar(cx, CmpOp::Ne, code, 0.0)?;
        neg = cx.bin(B::And, neg, nz)?;
    }
    let sign = cx.scalar(f.sign_bit() as f64, DType::I64);
    let zero = cx.scalar(0.0, DType::I64);
    let sign = select(cx, neg, sign, zero)?;
    code = cx.bin(B::Or, code, sign)?;
    let nan = cx.node(Op::Compare(CmpOp::Ne), &[x, x], None)?;
    let nan_code = cx.scalar(f.nan_encoding() as f64, DType::I64);
    code = select(cx, nan, nan_code, code)?;
    cx.cast(code, DType::U8)
}

/// Encodes as E8M0 codes (U8) with `round_mode` up / down / nearest;
/// past `2^127` saturates to the largest code or gives NaN (255).
fn encode_e8m0(cx: &mut NodeCx, x: NodeId) -> Result<NodeId> {
    let x = cx.cast(x, DType::F32)?;
    let v: Vec<f64> = (0..255).map(|c| 2f64.powi(c - 127)).collect();
    let (thresholds, op): (Vec<f64>, CmpOp) = match cx.attr_s("round_mode", "up").as_str() {
        "up" => (v[..254].to_vec(), CmpOp::Gt),
        "down" => (v[1..].to_vec(), CmpOp::Ge),
        "nearest" => (
            v.windows(2).map(|w| (w[0] + w[1]) / 2.0).collect(),
            CmpOp::Ge,
        ),
        other => return Err(cx.err(format!("unknown round_mode \"{other}\""))),
    };
    let x64 = cx.cast(x, DType::F64)?;
    let mut dims = cx.shape(x64).dims().to_vec();
    let r = dims.len();
    dims.push(Dim::Static(1));
    let xe = cx.reshape(x64, dims)?;
    let n = thresholds.len();
    let t = cx.constant(&HostTensor::from_vec(thresholds, &[n]).expect("1-d"));
    let hit = cx.node(Op::Compare(op), &[xe, t], None)?;
    let code = cx.reduce(ReduceOp::Sum, hit, vec![r], false)?;
    let mut code = cx.cast(code, DType::I64)?;
    let bad_code = cx.scalar(255.0, DType::I64);
    if cx.attr_i("saturate", 1) == 0 {
        let over = cmp_scalar(cx, CmpOp::Gt, x64, v[254])?;
        code = select(cx, over, bad_code, code)?;
    }
    let nan = cx.node(Op::Compare(CmpOp::Ne), &[x, x], None)?;
    code = select(cx, nan, bad_code, code)?;
    cx.cast(code, DType::U8)
}

/// The value range of a packed integer type.
pub(super) fn packed_range(bits: u32, signed: bool) -> (f64, f64) {
    if signed {
        (
            -(1i64 << (bits - 1)) as f64,
            ((1i64 << (bits - 1)) - 1) as f64,
        )
    } else {
        (0.0, ((1i64 << bits) - 1) as f64)
    }
}

/// Casts `x` (a plain value) to the ONNX element type `to`; sets the
/// output tag when `to` is narrow.
pub(super) fn cast_to_elem(cx: &mut NodeCx, x: NodeId, to: i32) -> Result<NodeId> {
    if crate::narrow::is_e8m0(to) {
        cx.out_tags = vec![Some(to)];
        return encode_e8m0(cx, x);
    }
    if let Some(f) = MiniFloat::of(to) {
        let saturate = cx.attr_i("saturate", 1) != 0;
        cx.out_tags = vec![Some(to)];
        return encode_minifloat(cx, x, f, saturate);
    }
    if let Some((bits, signed)) = packed_int(to) {
        cx.out_tags = vec![Some(to)];
        let storage = storage_dtype(to).expect("packed");
        // Rounded values outside the type's range become 0, as onnx's
        // reference writes them.
        let (lo, hi) = packed_range(bits, signed);
        let mut y = x;
        if cx.dtype(y).is_float() {
            y = cx.un(U::Round, y)?;
        }
        let below = cmp_scalar(cx, CmpOp::Lt, y, lo)?;
        let above = cmp_scalar(cx, CmpOp::Gt, y, hi)?;
        let out = cx.bin(B::Or, below, above)?;
        let zero = cx.scalar(0.0, cx.dtype(y));
        y = select(cx, out, zero, y)?;
        return cx.cast(y, storage);
    }
    let d = dtype_of(to, "Cast to").map_err(|e| cx.unsupported(e.to_string()))?;
    if crate::narrow::is_tracked(to) {
        cx.out_tags = vec![Some(to)];
    }
    super::elementwise::cast_to(cx, x, d)
}

fn cast(cx: &mut NodeCx) -> Result<Vec<NodeId>> {
    let x = cx.x(0)?;
    let x = decode(cx, x, cx.tag(0))?;
    let to = cx.attr_i("to", 0) as i32;
    Ok(vec![cast_to_elem(cx, x, to)?])
}

fn cast_like(cx: &mut NodeCx) -> Result<Vec<NodeId>> {
    let (x, like) = (cx.x(0)?, cx.x(1)?);
    let x = decode(cx, x, cx.tag(0))?;
    let to = cx.tag(1).unwrap_or_else(|| elem_type_of(cx.dtype(like)));
    Ok(vec![cast_to_elem(cx, x, to)?])
}
