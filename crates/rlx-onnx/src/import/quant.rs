//! Quantisation: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear,
//! MatMulInteger, ConvInteger, QLinearMatMul, QLinearConv. Integer products
//! are exact (I32 matmul, F64 conv); requantisation rounds half to even
//! and saturates, as ONNX specifies.

use super::cast::packed_range;
use super::NodeCx;
use crate::narrow::{packed_int, storage_dtype, MiniFloat};
use crate::proto::tensor_proto::DataType;
use crate::tensor::{dtype_of, elem_type_of};
use crate::Result;
use rlx_ir::op::{BinaryOp as B, ReduceOp, UnaryOp as U};
use rlx_ir::{DType, Dim, NodeId, Op};

op_table! {
    "QuantizeLinear" => quantize_linear,
    "DequantizeLinear" => dequantize_linear,
    "DynamicQuantizeLinear" => dynamic_quantize_linear,
    "MatMulInteger" => matmul_integer,
    "ConvInteger" => conv_integer,
    "QLinearMatMul" => qlinear_matmul,
    "QLinearConv" => qlinear_conv,
}

/// The representable range of an integer dtype.
fn int_range(d: DType) -> Option<(f64, f64)> {
    Some(match d {
        DType::U8 => (0.0, 255.0),
        DType::I8 => (-128.0, 127.0),
        DType::I16 => (-32768.0, 32767.0),
        DType::I32 => (i32::MIN as f64, i32::MAX as f64),
        DType::U32 => (0.0, u32::MAX as f64),
        _ => return None,
    })
}

/// A per-tensor scalar or per-axis `[C]` parameter shaped to broadcast
/// against a rank-`rank` tensor along `axis`.
fn along_axis(cx: &mut NodeCx, p: NodeId, rank: usize, axis: usize) -> Result<NodeId> {
    let s = cx.shape(p);
    if s.rank() == 0 || s.dims() == [Dim::Static(1)] && rank != 1 {
        return cx.reshape(p, vec![]);
    }
    if s.rank() == rank && rank > 1 {
        return Ok(p); // already expanded blocks
    }
    if s.rank() != 1 || axis >= rank {
        return Err(cx.err(format!("quantisation parameter {s} for rank {rank}")));
    }
    let mut dims = vec![Dim::Static(1); rank];
    dims[axis] = s.dims()[0].clone();
    cx.reshape(p, dims)
}

/// Blocked quantisation: a parameter with `ceil(n / block)` entries along
/// `axis` repeated `block` times (cut to `n`), matching `x` in shape.
fn expand_blocks(cx: &mut NodeCx, p: NodeId, x: NodeId, axis: usize) -> Result<NodeId> {
    let block = cx.attr_i("block_size", 0);
    if block <= 0 {
        return Ok(p);
    }
    let block = block as usize;
    let xd = cx.static_dims(x, "blocked quantisation")?;
    let pd = cx.static_dims(p, "blocked quantisation parameter")?;
    if pd.len() != xd.len() || pd[axis] * block < xd[axis] {
        return Err(cx.err(format!(
            "parameter {pd:?} does not block {xd:?} by {block} on axis {axis}"
        )));
    }
    let mut inter = pd.clone();
    inter.insert(axis + 1, 1);
    let y = cx.reshape_static(p, &inter)?;
    let mut big = pd.clone();
    big.insert(axis + 1, block);
    let y = cx.broadcast(y, big.iter().map(|&n| Dim::Static(n)).collect())?;
    let mut flat = pd.clone();
    flat[axis] *= block;
    let y = cx.reshape_static(y, &flat)?;
    cx.slice_axis(y, axis, 0, xd[axis], 1)
}

/// The quantisation axis; only checked when the scale is per-axis.
fn quant_axis(cx: &NodeCx, rank: usize, scale: NodeId) -> Result<usize> {
    if cx.shape(scale).numel() == Some(1) {
        return Ok(0);
    }
    cx.axis(cx.attr_i("axis", 1), rank)
}

/// `saturate(round(v) + zp)` cast to `to` (v and zp float of one dtype).
fn requantize(cx: &mut NodeCx, v: NodeId, zp: Option<NodeId>, to: DType) -> Result<NodeId> {
    let range = int_range(to).unwrap_or((f64::NEG_INFINITY, f64::INFINITY));
    requantize_in(cx, v, zp, range, to)
}

/// `clamp(round(v) + zp, lo, hi)` cast to the storage dtype `to`.
fn requantize_in(
    cx: &mut NodeCx,
    v: NodeId,
    zp: Option<NodeId>,
    (lo, hi): (f64, f64),
    to: DType,
) -> Result<NodeId> {
    let mut y = cx.un(U::Round, v)?;
    if let Some(z) = zp {
        y = cx.bin(B::Add, y, z)?;
    }
    if lo.is_finite() {
        y = cx.bin_scalar(B::Max, y, lo)?;
        y = cx.bin_scalar(B::Min, y, hi)?;
    }
    cx.cast(y, to)
}

fn quantize_linear(cx: &mut NodeCx) -> Result<Vec<NodeId>> {
    let (x, scale) = (cx.x(0)?, cx.x(1)?);
    let zp = cx.opt(2);
    let to = match zp {
        Some(z) => cx.tag(2).unwrap_or_else(|| elem_type_of(cx.dtype(z))),
        None if cx.has_attr("output_dtype") => cx.attr_i("output_dtype", 2) as i32,
        None => DataType::Uint8 as i32,
    };
    let r = cx.rank(x);
    let axis = quant_axis(cx, r, scale)?;
    let scale = expand_blocks(cx, scale, x, axis)?;
    let zp = match zp {
        Some(z) => Some(expand_blocks(cx, z, x, axis)?),
        None => None,
    };
    let work = DType::F32;
    let xf = cx.cast(x, work)?;
    let s = cx.cast(scale, work)?;
    let s = along_axis(cx, s, r, axis)?;
    let v = cx.bin(B::Div, xf, s)?;
    let z = match zp {
        Some(z) => {
            let z = super::cast::decode(cx, z, cx.tag(2))?;
            let z = cx.cast(z, work)?;
            Some(along_axis(cx, z, r, axis)?)
        }
        None => None,
    };
    if MiniFloat::of(to).is_some() {
        let v = match z {
            Some(z) => cx.bin(B::Add, v, z)?,
            None => v,
        };
        return Ok(vec![super::cast::cast_to_elem(cx, v, to)?]);
    }
    let (range, storage) = if let Some((bits, signed)) = packed_int(to) {
        cx.out_tags = vec![Some(to)];
        (
            packed_range(bits, signed),
            storage_dtype(to).expect("packed"),
        )
    } else {
        let d = dtype_of(to, "QuantizeLinear output").map_err(|e| cx.unsupported(e.to_string()))?;
        let range = if to == DataType::Uint16 as i32 {
            (0.0, 65535.0)
        } else {
            int_range(d).ok_or_else(|| cx.unsupported(format!("quantising to {d}")))?
        };
        (range, d)
    };
    Ok(vec![requantize_in(cx, v, z, range, storage)?])
}

/// `(x - zp) * scale` in the scale's dtype, per tensor or per `axis`.
fn dequantize(
    cx: &mut NodeCx,
    x: NodeId,
    scale: NodeId,
    zp: Option<NodeId>,
    axis: usize,
) -> Result<NodeId> {
    let r = cx.rank(x);
    let dt = cx.dtype(scale);
    let work = if dt == DType::F64 {
        DType::F64
    } else {
        DType::F32
    };
    let mut v = cx.cast(x, work)?;
    if let Some(z) = zp {
        let z = cx.cast(z, work)?;
        let z = along_axis(cx, z, r, axis)?;
        v = cx.bin(B::Sub, v, z)?;
    }
    let s = cx.cast(scale, work)?;
    let s = along_axis(cx, s, r, axis)?;
    let y = cx.bin(B::Mul, v, s)?;
    cx.cast(y, dt)
}

fn dequantize_linear(cx: &mut NodeCx) -> Result<Vec<NodeId>> {
    let (x, scale) = (cx.x(0)?, cx.x(1)?);
    let r = cx.rank(x);
    let axis = quant_axis(cx, r, scale)?;
    let scale = expand_blocks(cx, scale, x, axis)?;
    let zp = match cx.opt(2) {
        Some(z) => {
            let z = super::cast::decode(cx, z, cx.tag(2))?;
            Some(expand_blocks(cx, z, x, axis)?)
        }
        None => None,
    };
    let x = super::cast::decode(cx, x, cx.tag(0))?;
    Ok(vec![dequantize(cx, x, scale, zp, axis)?])
}

fn dynamic_quantize_linear(cx: &mut NodeCx) -> Result<Vec<NodeId>> {
    let x = cx.x(0)?;
    let xf = cx.cast(x, DType::F32)?;
    let all: Vec<usize> = (0..cx.rank(xf)).collect();
    let mx = cx.reduce(ReduceOp::Max, xf, all.clone(), false)?;
    let mn = cx.reduce(ReduceOp::Min, xf, all, false)?;
    let mx = cx.bin_scalar(B::Max, mx, 0.0)?;
    let mn = cx.bin_scalar(B::Min, mn, 0.0)?;
    let range = cx.bin(B::Sub, mx, mn)?;
    let scale = cx.bin_scalar(B::Div, range, 255.0)?;
    let neg_min = cx.un(U::Neg, mn)?;
    let zf = cx.bin(B::Div, neg_min, scale)?;
    let zp = requantize(cx, zf, None, DType::U8)?;
    let v = cx.bin(B::Div, xf, scale)?;
    let zpf = cx.cast(zp, DType::F32)?;
    let y = requantize(cx, v, Some(zpf), DType::U8)?;
    Ok(vec![y, scale, zp])
}

/// `x - zp` widened to `work` (zp per tensor or along `axis`).
fn centered(
    cx: &mut NodeCx,
    x: NodeId,
    zp: Option<NodeId>,
    axis: usize,
    work: DType,
) -> Result<NodeId> {
    let v = cx.cast(x, work)?;
    let Some(z) = zp else { return Ok(v) };
    let r = cx.rank(x);
    let z = cx.cast(z, work)?;
    let z = along_axis(cx, z, r, axis)?;
    cx.bin(B::Sub, v, z)
}

fn matmul_integer(cx: &mut NodeCx) -> Result<Vec<NodeId>> {
    let (a, b) = (cx.x(0)?, cx.x(1)?);
    let (ra, rb) = (cx.rank(a), cx.rank(b));
    let (za, zb) = (cx.opt(2), cx.opt(3));
    let a = centered(cx, a, za, ra.saturating_sub(2), DType::I32)?;
    let b = centered(cx, b, zb, rb.saturating_sub(1), DType::I32)?;
    Ok(vec![cx.node(Op::MatMul, &[a, b], None)?])
}

/// The integer conv of the ONNX Conv attributes, exact in F64.
fn conv_f64(cx: &mut NodeCx, x: NodeId, w: NodeId) -> Result<NodeId> {
    let xd = cx.static_dims(x, "conv")?;
    let wd = cx.static_dims(w, "conv weight")?;
    if xd.len() < 3 || wd.len() != xd.len() {
        return Err(cx.err(format!(
            "x {xd:?} and w {wd:?} must be [N, C, *sp] and [O, C/g, *k]"
        )));
    }
    let n = xd.len() - 2;
    let stride = super::nn::per_dim(cx, "strides", n, 1)?;
    let dilation = super::nn::per_dim(cx, "dilations", n, 1)?;
    let kernel = wd[2..].to_vec();
    let padding = super::nn::resolve_pads(cx, &xd[2..], &kernel, &stride, &dilation)?;
    let groups = cx.attr_i("group", 1).max(1) as usize;
    let window = rlx_ir::op::Window {
        kernel: vec![],
        stride,
        padding,
        dilation,
    };
    cx.node(Op::Conv { window, groups }, &[x, w], None)
}

fn conv_integer(cx: &mut NodeCx) -> Result<Vec<NodeId>> {
    let (x, w) = (cx.x(0)?, cx.x(1)?);
    let (zx, zw) = (cx.opt(2), cx.opt(3));
    let x = centered(cx, x, zx, 1, DType::F64)?;
    let w = centered(cx, w, zw, 0, DType::F64)?;
    let y = conv_f64(cx, x, w)?;
    Ok(vec![cx.cast(y, DType::I32)?])
}

/// `y = saturate(round(acc * (sa * sb / sy)) + zy)` with the scale product in
/// f32 as the reference computes it.
fn requantize_product(
    cx: &mut NodeCx,
    acc: NodeId,
    sa: NodeId,
    sb: NodeId,
    sy: NodeId,
    zy: Option<NodeId>,
    to: DType,
) -> Result<NodeId> {
    let sa = cx.cast(sa, DType::F32)?;
    let sb = cx.cast(sb, DType::F32)?;
    let sy = cx.cast(sy, DType::F32)?;
    let s = cx.bin(B::Mul, sa, sb)?;
    let s = cx.bin(B::Div, s, sy)?;
    let s = cx.cast(s, DType::F64)?;
    let accf = cx.cast(acc, DType::F64)?;
    let v = cx.bin(B::Mul, accf, s)?;
    let z = match zy {
        Some(z) => Some(cx.cast(z, DType::F64)?),
        None => None,
    };
    requantize(cx, v, z, to)
}

/// The eight leading inputs of QLinearMatMul / QLinearConv.
struct QLinear {
    a: NodeId,
    sa: NodeId,
    za: Option<NodeId>,
    b: NodeId,
    sb: NodeId,
    zb: Option<NodeId>,
    sy: NodeId,
    zy: Option<NodeId>,
}

fn qlinear_inputs(cx: &NodeCx) -> Result<QLinear> {
    Ok(QLinear {
        a: cx.x(0)?,
        sa: cx.x(1)?,
        za: cx.opt(2),
        b: cx.x(3)?,
        sb: cx.x(4)?,
        zb: cx.opt(5),
        sy: cx.x(6)?,
        zy: cx.opt(7),
    })
}

fn qlinear_matmul(cx: &mut NodeCx) -> Result<Vec<NodeId>> {
    let QLinear {
        a,
        sa,
        za,
        b,
        sb,
        zb,
        sy,
        zy,
    } = qlinear_inputs(cx)?;
    let to = zy.map_or(DType::U8, |z| cx.dtype(z));
    let (ra, rb) = (cx.rank(a), cx.rank(b));
    let ac = centered(cx, a, za, ra.saturating_sub(2), DType::I32)?;
    let bc = centered(cx, b, zb, rb.saturating_sub(1), DType::I32)?;
    let acc = cx.node(Op::MatMul, &[ac, bc], None)?;
    let r = cx.rank(acc);
    let sa = along_axis(cx, sa, r, r.saturating_sub(2))?;
    let sb = along_axis(cx, sb, r, r.saturating_sub(1))?;
    Ok(vec![requantize_product(cx, acc, sa, sb, sy, zy, to)?])
}

fn qlinear_conv(cx: &mut NodeCx) -> Result<Vec<NodeId>> {
    let QLinear {
        a: x,
        sa: sx,
        za: zx,
        b: w,
        sb: sw,
        zb: zw,
        sy,
        zy,
    } = qlinear_inputs(cx)?;
    let bias = cx.opt(8);
    let to = zy.map_or(DType::U8, |z| cx.dtype(z));
    let xc = centered(cx, x, zx, 1, DType::F64)?;
    let wc = centered(cx, w, zw, 0, DType::F64)?;
    let mut acc = conv_f64(cx, xc, wc)?;
    let r = cx.rank(acc);
    if let Some(b) = bias {
        let b = cx.cast(b, DType::F64)?;
        let b = along_axis(cx, b, r, 1)?;
        acc = cx.bin(B::Add, acc, b)?;
    }
    let sw = along_axis(cx, sw, r, 1)?;
    Ok(vec![requantize_product(cx, acc, sx, sw, sy, zy, to)?])
}
