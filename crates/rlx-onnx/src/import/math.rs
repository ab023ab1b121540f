//! More elementwise math composed from IR primitives: inverse and
//! hyperbolic trigonometry, Shrink, BitShift, CumProd, LRN, DFT.

use super::elementwise::{cmp_scalar, select};
use super::NodeCx;
use crate::Result;
use rlx_ir::op::{BinaryOp as B, CmpOp, PadMode, UnaryOp as U};
use rlx_ir::{NodeId, Op};

op_table! {
    "Sinh" => |cx| unary(cx, sinh),
    "Cosh" => |cx| unary(cx, cosh),
    "Asin" => |cx| unary(cx, asin),
    "Acos" => |cx| unary(cx, acos),
    "Atan" => |cx| unary(cx, atan),
    "Asinh" => |cx| unary(cx, asinh),
    "Acosh" => |cx| unary(cx, acosh),
    "Atanh" => |cx| unary(cx, atanh),
    "Shrink" => shrink,
    "BitShift" => bit_shift,
    "CumProd" => cumprod,
    "LRN" => lrn,
    "DFT" => dft,
}

fn unary(cx: &mut NodeCx, f: fn(&mut NodeCx, NodeId) -> Result<NodeId>) -> Result<Vec<NodeId>> {
    let x = cx.x(0)?;
    Ok(vec![f(cx, x)?])
}

/// (e^x, e^-x).
fn exps(cx: &mut NodeCx, x: NodeId) -> Result<(NodeId, NodeId)> {
    let e = cx.un(U::Exp, x)?;
    let n = cx.un(U::Neg, x)?;
    Ok((e, cx.un(U::Exp, n)?))
}

fn sinh(cx: &mut NodeCx, x: NodeId) -> Result<NodeId> {
    let (e, en) = exps(cx, x)?;
    let d = cx.bin(B::Sub, e, en)?;
    cx.bin_scalar(B::Mul, d, 0.5)
}

fn cosh(cx: &mut NodeCx, x: NodeId) -> Result<NodeId> {
    let (e, en) = exps(cx, x)?;
    let d = cx.bin(B::Add, e, en)?;
    cx.bin_scalar(B::Mul, d, 0.5)
}

/// `sqrt(1 - x^2)`.
fn cos_of_asin(cx: &mut NodeCx, x: NodeId) -> Result<NodeId> {
    let sq = cx.bin(B::Mul, x, x)?;
    let one = cx.scalar(1.0, cx.dtype(x));
    let d = cx.bin(B::Sub, one, sq)?;
    cx.un(U::Sqrt, d)
}

fn asin(cx: &mut NodeCx, x: NodeId) -> Result<NodeId> {
    let c = cos_of_asin(cx, x)?;
    cx.bin(B::Atan2, x, c)
}

fn acos(cx: &mut NodeCx, x: NodeId) -> Result<NodeId> {
    let s = cos_of_asin(cx, x)?;
    cx.bin(B::Atan2, s, x)
}

fn atan(cx: &mut NodeCx, x: NodeId) -> Result<NodeId> {
    let one = cx.scalar(1.0, cx.dtype(x));
    cx.bin(B::Atan2, x, one)
}

/// `sign(x) * log(|x| + sqrt(x^2 + 1))` (odd, so accurate for negative x).
fn asinh(cx: &mut NodeCx, x: NodeId) -> Result<NodeId> {
    let a = cx.un(U::Abs, x)?;
    let sq = cx.bin(B::Mul, a, a)?;
    let s1 = cx.bin_scalar(B::Add, sq, 1.0)?;
    let r = cx.un(U::Sqrt, s1)?;
    let t = cx.bin(B::Add, a, r)?;
    let l = cx.un(U::Log, t)?;
    let s = cx.un(U::Sign, x)?;
    cx.bin(B::Mul, s, l)
}

fn acosh(cx: &mut NodeCx, x: NodeId) -> Result<NodeId> {
    let sq = cx.bin(B::Mul, x, x)?;
    let s1 = cx.bin_scalar(B::Sub, sq, 1.0)?;
    let r = cx.un(U::Sqrt, s1)?;
    let t = cx.bin(B::Add, x, r)?;
    cx.un(U::Log, t)
}

fn atanh(cx: &mut NodeCx, x: NodeId) -> Result<NodeId> {
    let one = cx.scalar(1.0, cx.dtype(x));
    let p = cx.bin(B::Add, one, x)?;
    let m = cx.bin(B::Sub, one, x)?;
    let q = cx.bin(B::Div, p, m)?;
    let l = cx.un(U::Log, q)?;
    cx.bin_scalar(B::Mul, l, 0.5)
}

fn shrink(cx: &mut NodeCx) -> Result<Vec<NodeId>> {
    let x = cx.x(0)?;
    let (lambd, bias) = (cx.attr_f("lambd", 0.5), cx.attr_f("bias", 0.0));
    let lo = cmp_scalar(cx, CmpOp::Lt, x, -lambd)?;
    let hi = cmp_scalar(cx, CmpOp::Gt, x, lambd)?;
    let xp = cx.bin_scalar(B::Add, x, bias)?;
    let xm = cx.bin_scalar(B::Sub, x, bias)?;
    let zero = cx.scalar(0.0, cx.dtype(x));
    let y = select(cx, hi, xm, zero)?;
    Ok(vec![select(cx, lo, xp, y)?])
}

/// Shifts of unsigned integers as multiplications / floor divisions by 2^y.
fn bit_shift(cx: &mut NodeCx) -> Result<Vec<NodeId>> {
    let (x, mut y) = (cx.x(0)?, cx.x(1)?);
    let dt = cx.dtype(x);
    // Arithmetic right shift of signed values: a count past width - 2 (or a
    // negative one) fills with the sign, without overflowing 2^y.
    let mut sign_fill = None;
    if dt.is_signed_int() && cx.attr_s("direction", "") == "RIGHT" {
        let top = (dt.size_bytes() * 8 - 2) as f64;
        let neg = cmp_scalar(cx, CmpOp::Lt, y, 0.0)?;
        let wide = cmp_scalar(cx, CmpOp::Gt, y, top)?;
        let bad = cx.bin(B::Or, neg, wide)?;
        let t = cx.scalar(top, cx.dtype(y));
        y = select(cx, bad, t, y)?;
        sign_fill = Some(bad);
    }
    let two = cx.scalar(2.0, cx.dtype(y));
    let p = cx.bin(B::Pow, two, y)?;
    let mut out = match cx.attr_s("direction", "").as_str() {
        "LEFT" => cx.bin(B::Mul, x, p)?,
        "RIGHT" => cx.bin(B::Div, x, p)?,
        other => return Err(cx.err(format!("unknown direction \"{other}\""))),
    };
    if let Some(bad) = sign_fill {
        let xn = cmp_scalar(cx, CmpOp::Lt, x, 0.0)?;
        let (m1, z) = (cx.scalar(-1.0, dt), cx.scalar(0.0, dt));
        let fill = select(cx, xn, m1, z)?;
        out = select(cx, bad, fill, out)?;
    }
    // UINT16 lives in I32 storage: wrap at 16 bits.
    if cx.tag(0) == Some(crate::proto::tensor_proto::DataType::Uint16 as i32) {
        out = cx.bin_scalar(B::And, out, 65535.0)?;
    }
    Ok(vec![out])
}

/// Cumulative product as a running product over the slices of the axis
/// (there is no cumulative-product IR op; one node per step).
fn cumprod(cx: &mut NodeCx) -> Result<Vec<NodeId>> {
    let x = cx.x(0)?;
    let axis = cx.const_ints(1, "axis")?;
    let axis = cx.axis(
        *axis.first().ok_or_else(|| cx.err("empty axis"))?,
        cx.rank(x),
    )?;
    let n = cx.static_dims(x, "CumProd")?[axis];
    if n > 4096 {
        return Err(cx.unsupported(format!(
            "CumProd over {n} elements needs a cumulative-product IR op"
        )));
    }
    let exclusive = cx.attr_i("exclusive", 0) != 0;
    let reverse = cx.attr_i("reverse", 0) != 0;
    let order: Vec<usize> = if reverse {
        (0..n).rev().collect()
    } else {
        (0..n).collect()
    };
    let mut parts = vec![None; n];
    let mut acc: Option<NodeId> = None;
    for &i in &order {
        let s = cx.slice_axis(x, axis, i, 1, 1)?;
        let next = match acc {
            None => s,
            Some(a) => cx.bin(B::Mul, a, s)?,
        };
        parts[i] = Some(if exclusive {
            match acc {
                Some(a) => a,
                None => {
                    let one = cx.scalar(1.0, cx.dtype(x));
                    let d = cx.shape(s).dims().to_vec();
                    cx.broadcast(one, d)?
                }
            }
        } else {
            next
        });
        acc = Some(next);
    }
    let parts: Vec<NodeId> = parts.into_iter().map(|p| p.expect("every slice")).collect();
    if parts.len() == 1 {
        return Ok(parts);
    }
    Ok(vec![cx.node(Op::Concat { axis }, &parts, None)?])
}

/// Local response normalisation across channels.
fn lrn(cx: &mut NodeCx) -> Result<Vec<NodeId>> {
    let x = cx.x(0)?;
    let size = cx.attr_i("size", 1).max(1) as usize;
    let (alpha, beta, bias) = (
        cx.attr_f("alpha", 1e-4),
        cx.attr_f("beta", 0.75),
        cx.attr_f("bias", 1.0),
    );
    let c = *cx
        .static_dims(x, "LRN")?
        .get(1)
        .ok_or_else(|| cx.err("input must have a channel axis"))?;
    let sq = cx.bin(B::Mul, x, x)?;
    let (lo, hi) = ((size - 1) / 2, size - 1 - (size - 1) / 2);
    let mut pads = vec![(0, 0); cx.rank(x)];
    pads[1] = (lo, hi);
    let padded = cx.node(
        Op::Pad {
            pads,
            mode: PadMode::Constant(0.0),
        },
        &[sq],
        None,
    )?;
    let mut sum: Option<NodeId> = None;
    for k in 0..size {
        let s = cx.slice_axis(padded, 1, k, c, 1)?;
        sum = Some(match sum {
            None => s,
            Some(a) => cx.bin(B::Add, a, s)?,
        });
    }
    let s = cx.bin_scalar(B::Mul, sum.expect("size >= 1"), alpha / size as f64)?;
    let s = cx.bin_scalar(B::Add, s, bias)?;
    let d = cx.bin_scalar(B::Pow, s, beta)?;
    Ok(vec![cx.bin(B::Div, x, d)?])
}

/// DFT along one axis of `x [.., n, 1|2]` (real or complex pairs) through the
/// IR's complex FFT; output `[.., m, 2]` (`[.., n, 1]` for the inverse
/// one-sided transform, numpy's `irfft`).
fn dft(cx: &mut NodeCx) -> Result<Vec<NodeId>> {
    use rlx_ir::fft::{FftKind, FftNorm};
    use rlx_ir::{Complex32, DType, HostTensor};
    let x = cx.x(0)?;
    let xd = cx.static_dims(x, "DFT")?;
    let r = xd.len();
    let inverse = cx.attr_i("inverse", 0) != 0;
    let onesided = cx.attr_i("onesided", 0) != 0;
    let axis = if cx.opset >= 20 {
        match cx.opt(2) {
            Some(_) => cx.const_ints(2, "axis")?.first().copied().unwrap_or(-2),
            None => -2,
        }
    } else {
        cx.attr_i("axis", 1)
    };
    // The axis counts over the signal dims (the trailing 1|2 excluded).
    let axis = cx.axis(if axis < 0 { axis - 1 } else { axis }, r)?;
    if axis == r - 1 {
        return Err(cx.err("the axis is the real / imaginary axis"));
    }
    let dt = cx.dtype(x);
    let xf = cx.cast(x, DType::F32)?;
    let re = cx.slice_axis(xf, r - 1, 0, 1, 1)?;
    let mut c = cx.cast(re, DType::C64)?;
    if xd[r - 1] == 2 {
        let im = cx.slice_axis(xf, r - 1, 1, 1, 1)?;
        let im = cx.cast(im, DType::C64)?;
        let i = cx.constant(&HostTensor::scalar(Complex32::new(0.0, 1.0)));
        let im = cx.bin(B::Mul, im, i)?;
        c = cx.bin(B::Add, c, im)?;
    }
    // Signal axis last: [.., 1] -> move `axis` to the end.
    let mut perm: Vec<usize> = (0..r).filter(|&a| a != axis).collect();
    perm.push(axis);
    let ct = cx.transpose(c, perm.clone())?;
    let n = xd[axis];
    // irfft's default length is the even signal the one-sided bins came from.
    let default_len = if inverse && onesided {
        2 * n.saturating_sub(1)
    } else {
        n
    };
    let len = match cx.opt(1) {
        Some(_) => cx
            .const_ints(1, "dft_length")?
            .first()
            .copied()
            .unwrap_or(default_len as i64)
            .max(1) as usize,
        None => default_len,
    }
    .max(1);
    // The irfft kernel reads exactly len/2 + 1 bins (numpy trims or zero-pads).
    let len_out = len;
    let len = if inverse && onesided {
        len / 2 + 1
    } else {
        len
    };
    let ct = if len < n {
        cx.slice_axis(ct, r - 1, 0, len, 1)?
    } else if len > n {
        let mut pads = vec![(0, 0); r];
        pads[r - 1] = (0, len - n);
        cx.node(
            Op::Pad {
                pads,
                mode: PadMode::Constant(0.0),
            },
            &[ct],
            None,
        )?
    } else {
        ct
    };
    let mut inv = vec![0; r];
    for (i, &p) in perm.iter().enumerate() {
        inv[p] = i;
    }
    if inverse && onesided {
        let mut dims = cx.static_dims(ct, "DFT")?;
        dims[r - 1] = len_out;
        let declared = rlx_ir::Shape::new(&dims, DType::F32);
        let y = cx.node(
            Op::Fft {
                kind: FftKind::Irfft,
                norm: FftNorm::Backward,
            },
            &[ct],
            Some(declared),
        )?;
        let y = cx.transpose(y, inv)?;
        return Ok(vec![cx.cast(y, dt)?]);
    }
    let kind = if inverse { FftKind::Ifft } else { FftKind::Fft };
    let mut f = cx.node(
        Op::Fft {
            kind,
            norm: FftNorm::Backward,
        },
        &[ct],
        None,
    )?;
    if onesided {
        f = cx.slice_axis(f, r - 1, 0, len / 2 + 1, 1)?;
    }
    // Back to the original axis order, then [.., m, 1] complex -> [.., m, 2].
    let f = cx.transpose(f, inv)?;
    let re = cx.cast(f, DType::F32)?;
    let mi = cx.constant(&HostTensor::scalar(Complex32::new(0.0, -1.0)));
    let fi = cx.bin(B::Mul, f, mi)?;
    let im = cx.cast(fi, DType::F32)?;
    let out = cx.node(Op::Concat { axis: r - 1 }, &[re, im], None)?;
    Ok(vec![cx.cast(out, dt)?])
}
