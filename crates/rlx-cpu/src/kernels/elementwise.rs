//! Elementwise family: unary, binary (numpy broadcasting), compare, select, cast.

use super::scalar::{floor_div, floor_mod, nan_max, nan_min, Int, Pod, Real};
use super::{broadcast_strides, for_each_strided, KernelResult, View, ViewMut};
use crate::with_real;
use half::{bf16, f16, slice::HalfFloatSliceExt};
use rlx_ir::op::{BinaryOp, CmpOp, UnaryOp};
use rlx_ir::{Complex32, DType};

// ── unary ──

fn unary_real<T: Real>(u: UnaryOp, x: T) -> T {
    let half = T::from_f64(0.5);
    match u {
        UnaryOp::Neg => -x,
        UnaryOp::Abs => x.abs(),
        UnaryOp::Exp => x.exp(),
        UnaryOp::Log => x.ln(),
        UnaryOp::Sqrt => x.sqrt(),
        UnaryOp::Rsqrt => T::ONE / x.sqrt(),
        UnaryOp::Reciprocal => T::ONE / x,
        UnaryOp::Tanh => x.tanh(),
        UnaryOp::Sigmoid => sigmoid(x),
        UnaryOp::Relu => {
            // NaN propagates, as numpy's maximum(x, 0).
            if x.is_nan() || x > T::ZERO {
                x
            } else {
                T::ZERO
            }
        }
        UnaryOp::Gelu => {
            half * x * (T::ONE + (x * T::from_f64(std::f64::consts::FRAC_1_SQRT_2)).erf())
        }
        UnaryOp::GeluApprox => {
            let c = T::from_f64((2.0 / std::f64::consts::PI).sqrt());
            half * x * (T::ONE + (c * (x + T::from_f64(0.044715) * x * x * x)).tanh())
        }
        UnaryOp::Silu => x * sigmoid(x),
        UnaryOp::Sin => x.sin(),
        UnaryOp::Cos => x.cos(),
        UnaryOp::Floor => x.floor(),
        UnaryOp::Ceil => x.ceil(),
        UnaryOp::Round => x.round_even(),
        UnaryOp::Sign => {
            if x.is_nan() {
                x
            } else if x > T::ZERO {
                T::ONE
            } else if x < T::ZERO {
                -T::ONE
            } else {
                T::ZERO
            }
        }
        UnaryOp::Erf => x.erf(),
        UnaryOp::Softplus => {
            // max(x, 0) + log1p(exp(-|x|)): no overflow for large |x|.
            let m = if x > T::ZERO { x } else { T::ZERO };
            if x.is_nan() {
                x
            } else {
                m + (-x.abs()).exp().ln_1p()
            }
        }
        UnaryOp::Not => T::NAN,
    }
}

fn sigmoid<T: Real>(x: T) -> T {
    if x >= T::ZERO {
        T::ONE / (T::ONE + (-x).exp())
    } else {
        let e = x.exp();
        e / (T::ONE + e)
    }
}

fn unary_int<T: Int>(u: UnaryOp, x: T) -> T {
    let v = x.to_i64();
    T::from_i64(match u {
        UnaryOp::Neg => v.wrapping_neg(),
        UnaryOp::Abs => v.wrapping_abs(),
        UnaryOp::Relu => v.max(0),
        UnaryOp::Sign => v.signum(),
        UnaryOp::Not => !v,
        _ => v, // floor / ceil / round of an integer
    })
}

fn map<A: Pod, O: Pod>(x: &View, out: &mut ViewMut, f: impl Fn(A) -> O) {
    for (o, &a) in out.slice::<O>().iter_mut().zip(x.slice::<A>()) {
        *o = f(a);
    }
}

/// [`map`] of a float unary op, with the cheap common ops chosen outside
/// the loop so their loops vectorise (same arithmetic as [`unary_real`]).
fn map_real<T: Real>(u: UnaryOp, x: &View, out: &mut ViewMut) {
    match u {
        UnaryOp::Relu => map::<T, T>(x, out, |v| unary_real(UnaryOp::Relu, v)),
        UnaryOp::Neg => map::<T, T>(x, out, |v| -v),
        UnaryOp::Abs => map::<T, T>(x, out, |v| v.abs()),
        UnaryOp::Sqrt => map::<T, T>(x, out, |v| v.sqrt()),
        UnaryOp::Reciprocal => map::<T, T>(x, out, |v| T::ONE / v),
        _ => map::<T, T>(x, out, |v| unary_real(u, v)),
    }
}

/// Elementwise unary op.
pub(crate) fn unary(u: UnaryOp, ins: &[View], out: &mut ViewMut) -> KernelResult {
    let x = &ins[0];
    if x.dtype == DType::F32 && out.dtype == DType::F32 {
        let fast = match u {
            UnaryOp::Gelu => Some(super::fastmath::gelu_f32 as fn(&[f32], &mut [f32])),
            UnaryOp::Tanh => Some(super::fastmath::tanh_f32 as fn(&[f32], &mut [f32])),
            UnaryOp::Sigmoid => Some(super::fastmath::sigmoid_f32 as fn(&[f32], &mut [f32])),
            // Bit-identical to the scalar path (LLM parity): `silu_exact`.
            UnaryOp::Silu => Some(super::silu_exact::silu_f32 as fn(&[f32], &mut [f32])),
            UnaryOp::Exp => Some(super::fastmath::exp_map_f32 as fn(&[f32], &mut [f32])),
            UnaryOp::Log => Some(super::fastmath::log_map_f32 as fn(&[f32], &mut [f32])),
            _ => None,
        };
        if let Some(f) = fast {
            f(x.slice::<f32>(), out.slice::<f32>());
            return Ok(());
        }
    }
    match x.dtype {
        DType::F32 | DType::F64 | DType::F16 | DType::BF16 => {
            with_real!(x.dtype, ins, out, |i, o| {
            map_real::<T>(u, &i[0], o);
            Ok(())
        }; T)
        }
        DType::I8 => {
            map::<i8, i8>(x, out, |v| unary_int(u, v));
            Ok(())
        }
        DType::I16 => {
            map::<i16, i16>(x, out, |v| unary_int(u, v));
            Ok(())
        }
        DType::I32 => {
            map::<i32, i32>(x, out, |v| unary_int(u, v));
            Ok(())
        }
        DType::I64 => {
            map::<i64, i64>(x, out, |v| unary_int(u, v));
            Ok(())
        }
        DType::U8 => {
            map::<u8, u8>(x, out, |v| unary_int(u, v));
            Ok(())
        }
        DType::U32 => {
            map::<u32, u32>(x, out, |v| unary_int(u, v));
            Ok(())
        }
        DType::Bool => {
            map::<u8, u8>(x, out, |v| (v == 0) as u8);
            Ok(())
        }
        DType::C64 => {
            map::<Complex32, Complex32>(x, out, |v| -v);
            Ok(())
        }
        d @ (DType::U16
        | DType::U64
        | DType::F8E4M3
        | DType::F8E5M2
        | DType::F8E8M0
        | DType::F8E4M3Fnuz
        | DType::F8E5M2Fnuz) => Err(super::storage_only(u.name(), d)),
    }
}

// ── broadcasting driver ──

/// Applies `f` to every output position of a broadcast binary op.
fn zip2<A: Pod, B: Pod, O: Pod>(a: &View, b: &View, out: &mut ViewMut, f: impl Fn(A, B) -> O) {
    let (xa, xb) = (a.slice::<A>(), b.slice::<B>());
    let dims = out.dims;
    let o = out.slice::<O>();
    if a.dims == dims && b.dims == dims {
        for ((o, &x), &y) in o.iter_mut().zip(xa).zip(xb) {
            *o = f(x, y);
        }
        return;
    }
    // One operand whole, the other repeating (a bias row, a scalar): rows of
    // contiguous loops instead of an index walk per element.
    if a.dims == dims {
        match repeat_period(b.dims, dims) {
            Some(1) => {
                let y = xb[0];
                o.iter_mut().zip(xa).for_each(|(o, &x)| *o = f(x, y));
                return;
            }
            Some(p) => {
                for (orow, arow) in o.chunks_exact_mut(p).zip(xa.chunks_exact(p)) {
                    for ((o, &x), &y) in orow.iter_mut().zip(arow).zip(xb) {
                        *o = f(x, y);
                    }
                }
                return;
            }
            None => {}
        }
    }
    if b.dims == dims {
        match repeat_period(a.dims, dims) {
            Some(1) => {
                let x = xa[0];
                o.iter_mut().zip(xb).for_each(|(o, &y)| *o = f(x, y));
                return;
            }
            Some(p) => {
                for (orow, brow) in o.chunks_exact_mut(p).zip(xb.chunks_exact(p)) {
                    for ((o, &x), &y) in orow.iter_mut().zip(xa).zip(brow) {
                        *o = f(x, y);
                    }
                }
                return;
            }
            None => {}
        }
    }
    // One operand whole, the other one value per block of `inner`
    // consecutive outputs (a `[.., S, 1]` mask over `[.., S, H]`).
    if a.dims == dims {
        if let Some(inner) = column_period(b.dims, dims) {
            return by_columns(o, xa, xb, inner, &f);
        }
    }
    if b.dims == dims {
        if let Some(inner) = column_period(a.dims, dims) {
            return by_columns(o, xb, xa, inner, |y, x| f(x, y));
        }
    }
    let sa = broadcast_strides(a.dims, dims);
    let sb = broadcast_strides(b.dims, dims);
    let mut offs_b = Vec::with_capacity(o.len());
    for_each_strided(dims, &sb, 0, |_, p| offs_b.push(p as usize));
    for_each_strided(dims, &sa, 0, |i, p| o[i] = f(xa[p as usize], xb[offs_b[i]]));
}

/// The period of an operand broadcast to `out_dims` by repeating it whole:
/// its dims, leading 1s dropped, are a suffix of `out_dims` (a bias row
/// over the rows of a matrix; period 1 for a scalar). `None` when empty or
/// broadcast any other way.
pub(crate) fn repeat_period(in_dims: &[usize], out_dims: &[usize]) -> Option<usize> {
    let lead = in_dims.iter().take_while(|&&d| d == 1).count();
    let core = &in_dims[lead..];
    let n: usize = core.iter().product();
    let fits = core.len() <= out_dims.len()
        && super::region::same_dims(&out_dims[out_dims.len() - core.len()..], core);
    (fits && n > 0).then_some(n)
}

/// `o[i] = g(whole[i], each[i / inner])`: the column-broadcast loop.
#[inline(always)]
fn by_columns<W: Pod, E: Pod, O: Pod>(
    o: &mut [O],
    whole: &[W],
    each: &[E],
    inner: usize,
    g: impl Fn(W, E) -> O,
) {
    let rows = o.chunks_exact_mut(inner).zip(whole.chunks_exact(inner));
    for ((orow, wrow), &e) in rows.zip(each) {
        orow.iter_mut().zip(wrow).for_each(|(o, &w)| *o = g(w, e));
    }
}

/// The block length over which an operand broadcast to `out_dims` repeats
/// each of its values: its dims (leading 1s added up to the output's rank)
/// are the output's up to some axis and 1 after it, a block being the
/// product of the output's dims there (`[S, 1]` over `[S, H]`: `H`).
/// `None` for any other broadcast, or none at all.
pub(crate) fn column_period(in_dims: &[usize], out_dims: &[usize]) -> Option<usize> {
    let pad = out_dims.len().checked_sub(in_dims.len())?;
    let dim = |i: usize| if i < pad { 1 } else { in_dims[i - pad] };
    let ones = (0..out_dims.len())
        .rev()
        .take_while(|&i| dim(i) == 1)
        .count();
    let split = out_dims.len() - ones;
    let inner: usize = out_dims[split..].iter().product();
    let prefix_equal = (0..split).all(|i| dim(i) == out_dims[i]);
    (prefix_equal && inner > 1 && out_dims[..split].iter().product::<usize>() > 0).then_some(inner)
}

/// [`zip2`] of a float binary op, with the op chosen outside the loop so
/// each common op gets its own vectorisable loop.
fn zip2_real<T: Real>(op: BinaryOp, a: &View, b: &View, out: &mut ViewMut) {
    match op {
        BinaryOp::Add => zip2::<T, T, T>(a, b, out, |x, y| x + y),
        BinaryOp::Sub => zip2::<T, T, T>(a, b, out, |x, y| x - y),
        BinaryOp::Mul => zip2::<T, T, T>(a, b, out, |x, y| x * y),
        BinaryOp::Div => zip2::<T, T, T>(a, b, out, |x, y| x / y),
        BinaryOp::Max => zip2::<T, T, T>(a, b, out, nan_max),
        BinaryOp::Min => zip2::<T, T, T>(a, b, out, nan_min),
        _ => zip2::<T, T, T>(a, b, out, |x, y| binary_real(op, x, y)),
    }
}

fn binary_real<T: Real>(op: BinaryOp, a: T, b: T) -> T {
    match op {
        BinaryOp::Add => a + b,
        BinaryOp::Sub => a - b,
        BinaryOp::Mul => a * b,
        BinaryOp::Div => a / b,
        BinaryOp::Pow => a.powf(b),
        BinaryOp::Max => nan_max(a, b),
        BinaryOp::Min => nan_min(a, b),
        BinaryOp::Mod => a.rem_floor(b),
        BinaryOp::Atan2 => a.atan2(b),
        BinaryOp::And | BinaryOp::Or | BinaryOp::Xor => T::NAN,
    }
}

fn int_pow(base: i64, exp: i64) -> i64 {
    if exp < 0 {
        return match base {
            1 => 1,
            -1 => {
                if exp % 2 == 0 {
                    1
                } else {
                    -1
                }
            }
            _ => 0,
        };
    }
    let (mut acc, mut b, mut e) = (1i64, base, exp as u64);
    while e > 0 {
        if e & 1 == 1 {
            acc = acc.wrapping_mul(b);
        }
        b = b.wrapping_mul(b);
        e >>= 1;
    }
    acc
}

fn binary_int<T: Int>(op: BinaryOp, a: T, b: T) -> T {
    let (x, y) = (a.to_i64(), b.to_i64());
    T::from_i64(match op {
        BinaryOp::Add => x.wrapping_add(y),
        BinaryOp::Sub => x.wrapping_sub(y),
        BinaryOp::Mul => x.wrapping_mul(y),
        BinaryOp::Div => floor_div(x, y),
        BinaryOp::Mod => floor_mod(x, y),
        BinaryOp::Pow => int_pow(x, y),
        BinaryOp::Max => x.max(y),
        BinaryOp::Min => x.min(y),
        BinaryOp::And => x & y,
        BinaryOp::Or => x | y,
        BinaryOp::Xor => x ^ y,
        BinaryOp::Atan2 => 0,
    })
}

fn binary_bool(op: BinaryOp, a: u8, b: u8) -> u8 {
    let (x, y) = (a != 0, b != 0);
    (match op {
        BinaryOp::Add | BinaryOp::Or | BinaryOp::Max => x | y,
        BinaryOp::Mul | BinaryOp::And | BinaryOp::Min => x & y,
        BinaryOp::Xor => x ^ y,
        _ => false,
    }) as u8
}

fn binary_complex(op: BinaryOp, a: Complex32, b: Complex32) -> Complex32 {
    match op {
        BinaryOp::Add => a + b,
        BinaryOp::Sub => a - b,
        BinaryOp::Mul => a * b,
        _ => a / b,
    }
}

/// Elementwise binary op with broadcasting.
pub(crate) fn binary(op: BinaryOp, ins: &[View], out: &mut ViewMut) -> KernelResult {
    let (a, b) = (&ins[0], &ins[1]);
    match a.dtype {
        DType::F32 | DType::F64 | DType::F16 | DType::BF16 => {
            with_real!(a.dtype, ins, out, |i, o| {
            zip2_real::<T>(op, &i[0], &i[1], o);
            Ok(())
        }; T)
        }
        DType::I8 => {
            zip2::<i8, i8, i8>(a, b, out, |x, y| binary_int(op, x, y));
            Ok(())
        }
        DType::I16 => {
            zip2::<i16, i16, i16>(a, b, out, |x, y| binary_int(op, x, y));
            Ok(())
        }
        DType::I32 => {
            zip2::<i32, i32, i32>(a, b, out, |x, y| binary_int(op, x, y));
            Ok(())
        }
        DType::I64 => {
            zip2::<i64, i64, i64>(a, b, out, |x, y| binary_int(op, x, y));
            Ok(())
        }
        DType::U8 => {
            zip2::<u8, u8, u8>(a, b, out, |x, y| binary_int(op, x, y));
            Ok(())
        }
        DType::U32 => {
            zip2::<u32, u32, u32>(a, b, out, |x, y| binary_int(op, x, y));
            Ok(())
        }
        DType::Bool => {
            zip2::<u8, u8, u8>(a, b, out, |x, y| binary_bool(op, x, y));
            Ok(())
        }
        DType::C64 => {
            zip2::<Complex32, Complex32, Complex32>(a, b, out, |x, y| binary_complex(op, x, y));
            Ok(())
        }
        d @ (DType::U16
        | DType::U64
        | DType::F8E4M3
        | DType::F8E5M2
        | DType::F8E8M0
        | DType::F8E4M3Fnuz
        | DType::F8E5M2Fnuz) => Err(super::storage_only(op.name(), d)),
    }
}

// ── compare ──

fn cmp<T: PartialOrd>(op: CmpOp, a: T, b: T) -> u8 {
    (match op {
        CmpOp::Eq => a == b,
        CmpOp::Ne => a != b,
        CmpOp::Lt => a < b,
        CmpOp::Le => a <= b,
        CmpOp::Gt => a > b,
        CmpOp::Ge => a >= b,
    }) as u8
}

/// Elementwise comparison (Bool result) with broadcasting.
pub(crate) fn compare(op: CmpOp, ins: &[View], out: &mut ViewMut) -> KernelResult {
    let (a, b) = (&ins[0], &ins[1]);
    match a.dtype {
        DType::F32 => zip2::<f32, f32, u8>(a, b, out, |x, y| cmp(op, x, y)),
        DType::F64 => zip2::<f64, f64, u8>(a, b, out, |x, y| cmp(op, x, y)),
        DType::F16 => zip2::<f16, f16, u8>(a, b, out, |x, y| cmp(op, x.to_f32(), y.to_f32())),
        DType::BF16 => zip2::<bf16, bf16, u8>(a, b, out, |x, y| cmp(op, x.to_f32(), y.to_f32())),
        DType::I8 => zip2::<i8, i8, u8>(a, b, out, |x, y| cmp(op, x, y)),
        DType::I16 => zip2::<i16, i16, u8>(a, b, out, |x, y| cmp(op, x, y)),
        DType::I32 => zip2::<i32, i32, u8>(a, b, out, |x, y| cmp(op, x, y)),
        DType::I64 => zip2::<i64, i64, u8>(a, b, out, |x, y| cmp(op, x, y)),
        DType::U8 | DType::Bool => zip2::<u8, u8, u8>(a, b, out, |x, y| cmp(op, x, y)),
        DType::U32 => zip2::<u32, u32, u8>(a, b, out, |x, y| cmp(op, x, y)),
        DType::C64 => zip2::<Complex32, Complex32, u8>(a, b, out, |x, y| match op {
            CmpOp::Eq => (x == y) as u8,
            _ => (x != y) as u8,
        }),
        d @ (DType::U16
        | DType::U64
        | DType::F8E4M3
        | DType::F8E5M2
        | DType::F8E8M0
        | DType::F8E4M3Fnuz
        | DType::F8E5M2Fnuz) => return Err(super::storage_only(op.name(), d)),
    }
    Ok(())
}

// ── select ──

fn select_typed<T: Pod>(c: &View, a: &View, b: &View, out: &mut ViewMut) {
    let dims = out.dims;
    let (xc, xa, xb) = (c.slice::<u8>(), a.slice::<T>(), b.slice::<T>());
    let mut oc = Vec::with_capacity(out.numel());
    for_each_strided(dims, &broadcast_strides(c.dims, dims), 0, |_, p| {
        oc.push(p as usize)
    });
    let mut ob = Vec::with_capacity(out.numel());
    for_each_strided(dims, &broadcast_strides(b.dims, dims), 0, |_, p| {
        ob.push(p as usize)
    });
    let o = out.slice::<T>();
    for_each_strided(dims, &broadcast_strides(a.dims, dims), 0, |i, p| {
        o[i] = if xc[oc[i]] != 0 {
            xa[p as usize]
        } else {
            xb[ob[i]]
        };
    });
}

/// `where(cond, a, b)` with broadcasting (any dtype).
pub(crate) fn select(ins: &[View], out: &mut ViewMut) -> KernelResult {
    let (c, a, b) = (&ins[0], &ins[1], &ins[2]);
    match a.dtype.size_bytes() {
        1 => select_typed::<u8>(c, a, b, out),
        2 => select_typed::<u16>(c, a, b, out),
        4 => select_typed::<u32>(c, a, b, out),
        _ => select_typed::<u64>(c, a, b, out),
    }
    Ok(())
}

// ── cast ──

fn decode_f64(v: &View) -> Vec<f64> {
    match v.dtype {
        DType::F32 => v.slice::<f32>().iter().map(|&x| x as f64).collect(),
        DType::F64 => v.slice::<f64>().to_vec(),
        DType::F16 => v.slice::<f16>().iter().map(|x| x.to_f64()).collect(),
        DType::BF16 => v.slice::<bf16>().iter().map(|x| x.to_f64()).collect(),
        DType::C64 => v.slice::<Complex32>().iter().map(|c| c.re as f64).collect(),
        DType::U64 => v.slice::<u64>().iter().map(|&x| x as f64).collect(),
        d if d.is_f8() => v
            .slice::<u8>()
            .iter()
            .map(|&b| f64::from(rlx_ir::f8::decode(d, b).expect("an 8-bit float")))
            .collect(),
        _ => decode_i64(v).into_iter().map(|x| x as f64).collect(),
    }
}

fn decode_i64(v: &View) -> Vec<i64> {
    match v.dtype {
        DType::I8 => v.slice::<i8>().iter().map(|&x| x as i64).collect(),
        DType::I16 => v.slice::<i16>().iter().map(|&x| x as i64).collect(),
        DType::I32 => v.slice::<i32>().iter().map(|&x| x as i64).collect(),
        DType::I64 => v.slice::<i64>().to_vec(),
        DType::U8 | DType::Bool => v.slice::<u8>().iter().map(|&x| x as i64).collect(),
        DType::U32 => v.slice::<u32>().iter().map(|&x| x as i64).collect(),
        DType::U16 => v.slice::<u16>().iter().map(|&x| x as i64).collect(),
        // Past i64::MAX wraps, as numpy's astype.
        DType::U64 => v.slice::<u64>().iter().map(|&x| x as i64).collect(),
        // float -> int truncates toward zero (numpy astype); NaN gives 0 here.
        _ => decode_f64(v).into_iter().map(|x| x as i64).collect(),
    }
}

fn encode_int<T: Int>(out: &mut ViewMut, v: &[i64]) {
    for (o, &x) in out.slice::<T>().iter_mut().zip(v) {
        *o = T::from_i64(x);
    }
}

/// numpy `astype` between any two dtypes (complex -> real keeps the real part).
pub(crate) fn cast(ins: &[View], out: &mut ViewMut) -> KernelResult {
    let x = &ins[0];
    if x.dtype == out.dtype {
        out.bytes.copy_from_slice(x.bytes);
        return Ok(());
    }
    // A mask to f32 (ReLU's backward: `dy * cast(x > 0)`) and f32 <-> f64:
    // one typed loop, without the f64 / i64 staging vectors (same values).
    match (x.dtype, out.dtype) {
        (DType::Bool | DType::U8, DType::F32) => {
            return map_direct(x.slice::<u8>(), out.slice::<f32>(), f32::from)
        }
        (DType::F32, DType::F64) => {
            return map_direct(x.slice::<f32>(), out.slice::<f64>(), f64::from)
        }
        (DType::F64, DType::F32) => {
            return map_direct(x.slice::<f64>(), out.slice::<f32>(), |v| v as f32)
        }
        // An f16 KV cache widened every decode step: `half`'s slice
        // conversions (F16C where the CPU has it), same values.
        (DType::F16, DType::F32) => {
            x.slice::<f16>().convert_to_f32_slice(out.slice::<f32>());
            return Ok(());
        }
        (DType::F32, DType::F16) => {
            out.slice::<f16>().convert_from_f32_slice(x.slice::<f32>());
            return Ok(());
        }
        _ => {}
    }
    match out.dtype {
        DType::Bool => {
            let truth: Vec<u8> = if x.dtype == DType::C64 {
                x.slice::<Complex32>()
                    .iter()
                    .map(|c| (c.re != 0.0 || c.im != 0.0) as u8)
                    .collect()
            } else if x.dtype.is_float() {
                decode_f64(x).iter().map(|&v| (v != 0.0) as u8).collect()
            } else {
                decode_i64(x).iter().map(|&v| (v != 0) as u8).collect()
            };
            out.slice::<u8>().copy_from_slice(&truth);
        }
        DType::C64 => {
            let re = decode_f64(x);
            for (o, r) in out.slice::<Complex32>().iter_mut().zip(re) {
                *o = Complex32::new(r as f32, 0.0);
            }
        }
        DType::F32 => map_f64(x, out.slice::<f32>(), |v| v as f32),
        DType::F64 => map_f64(x, out.slice::<f64>(), |v| v),
        DType::F16 => map_f64(x, out.slice::<f16>(), f16::from_f64),
        DType::BF16 => map_f64(x, out.slice::<bf16>(), bf16::from_f64),
        DType::I8 => encode_int::<i8>(out, &decode_i64(x)),
        DType::I16 => encode_int::<i16>(out, &decode_i64(x)),
        DType::I32 => encode_int::<i32>(out, &decode_i64(x)),
        DType::I64 => encode_int::<i64>(out, &decode_i64(x)),
        DType::U8 => encode_int::<u8>(out, &decode_i64(x)),
        DType::U32 => encode_int::<u32>(out, &decode_i64(x)),
        DType::U16 => encode_int::<u16>(out, &decode_i64(x)),
        // A float past i64::MAX still fits u64: convert floats directly
        // (saturating, NaN -> 0), integers through i64 (wrapping, as numpy).
        DType::U64 if x.dtype.is_float() || x.dtype.is_f8() => {
            map_f64(x, out.slice::<u64>(), |v| v as u64)
        }
        DType::U64 => encode_int::<u64>(out, &decode_i64(x)),
        // Rounded once from the exact value (ml_dtypes' astype; F8E8M0
        // through f32, as its rule is defined there).
        d @ (DType::F8E4M3
        | DType::F8E5M2
        | DType::F8E8M0
        | DType::F8E4M3Fnuz
        | DType::F8E5M2Fnuz) => map_f64(x, out.slice::<u8>(), |v| {
            rlx_ir::f8::encode(d, v).expect("an 8-bit float")
        }),
    }
    Ok(())
}

/// `out[i] = f(x[i])`.
fn map_direct<I: Pod, O: Pod>(x: &[I], out: &mut [O], f: impl Fn(I) -> O) -> KernelResult {
    out.iter_mut().zip(x).for_each(|(o, &v)| *o = f(v));
    Ok(())
}

fn map_f64<O: Pod>(x: &View, out: &mut [O], f: impl Fn(f64) -> O) {
    // Integers go through i64 first so that i64 -> f64 rounding happens once.
    for (o, v) in out.iter_mut().zip(decode_f64(x)) {
        *o = f(v);
    }
}

#[cfg(test)]
mod tests {
    use super::super::norm::tests::{data, run, view};
    use super::*;

    #[test]
    fn a_column_broadcast_repeats_each_value_over_its_block() {
        // [2, 3, 4] with one value per row of 4 ([2, 3, 1], and [3, 1]
        // which is not a column broadcast of [2, 3, 4] on its own).
        let x = data(24, 1);
        let col = data(6, 2);
        let out = [2, 3, 4];
        let got = run::<f32>(
            DType::F32,
            &out,
            &[
                view(&out, DType::F32, &x),
                view(&[2, 3, 1], DType::F32, &col),
            ],
            |i, o| binary(BinaryOp::Sub, i, o),
        )
        .unwrap();
        let want: Vec<f32> = (0..24).map(|i| x[i] - col[i / 4]).collect();
        assert_eq!(got, want);
        let got = run::<f32>(
            DType::F32,
            &out,
            &[
                view(&[2, 3, 1], DType::F32, &col),
                view(&out, DType::F32, &x),
            ],
            |i, o| binary(BinaryOp::Sub, i, o),
        )
        .unwrap();
        let want: Vec<f32> = (0..24).map(|i| col[i / 4] - x[i]).collect();
        assert_eq!(got, want);
        let got = run::<f32>(
            DType::F32,
            &out,
            &[
                view(&out, DType::F32, &x),
                view(&[3, 1], DType::F32, &col[..3]),
            ],
            |i, o| binary(BinaryOp::Mul, i, o),
        )
        .unwrap();
        let want: Vec<f32> = (0..24).map(|i| x[i] * col[(i / 4) % 3]).collect();
        assert_eq!(got, want);
        assert_eq!(column_period(&[1, 5, 1, 1], &[2, 5, 3, 2]), None);
        assert_eq!(column_period(&[2, 5, 1, 1], &[2, 5, 3, 2]), Some(6));
        assert_eq!(column_period(&[5, 1], &[1, 5, 3]), Some(3));
        assert_eq!(column_period(&[2, 1], &[2, 0]), None);
    }
}
