//! Indexing family: gather, gather_elements, scatter_add, top-k, iota.
//! Index inputs may be any integer dtype; negative indices count from the
//! end and an out-of-range index is an error, never a panic.

use super::reduce::split_axis;
use super::scalar::{Int, Pod};
use super::{for_each_strided, KernelResult, View, ViewMut};
use crate::with_real;
use half::{bf16, f16};
use rlx_ir::op::TopKOutput;
use rlx_ir::{contiguous_strides, Complex32, DType};
use std::cmp::Ordering;

/// Runs `$body` with `$T` bound to an unsigned type of the dtype's width.
macro_rules! by_width {
    ($dtype:expr, $T:ident => $body:expr) => {
        match $dtype.size_bytes() {
            1 => {
                type $T = u8;
                $body
            }
            2 => {
                type $T = u16;
                $body
            }
            4 => {
                type $T = u32;
                $body
            }
            _ => {
                type $T = u64;
                $body
            }
        }
    };
}

/// The index values as i64.
fn index_values(idx: &View) -> Result<Vec<i64>, String> {
    fn widen<T: Int>(v: &View) -> Vec<i64> {
        v.slice::<T>().iter().map(|&x| x.to_i64()).collect()
    }
    if idx.numel() == 0 {
        return Ok(Vec::new());
    }
    Ok(match idx.dtype {
        DType::I8 => widen::<i8>(idx),
        DType::I16 => widen::<i16>(idx),
        DType::I32 => widen::<i32>(idx),
        DType::I64 => widen::<i64>(idx),
        DType::U8 => widen::<u8>(idx),
        DType::U32 => widen::<u32>(idx),
        d => return Err(format!("indices must be an integer type, are {d}")),
    })
}

/// The multi-index of flat position `p` in `dims`.
fn unravel(mut p: usize, dims: &[usize]) -> Vec<usize> {
    let mut at = vec![0; dims.len()];
    for (a, &d) in at.iter_mut().zip(dims).rev() {
        *a = p % d;
        p /= d;
    }
    at
}

/// Indices wrapped into `0..n` (negative ones count from the end).
fn resolve(op: &str, idx: &View, axis: usize, n: usize) -> Result<Vec<usize>, String> {
    let n64 = n as i64;
    index_values(idx)?
        .into_iter()
        .enumerate()
        .map(|(p, v)| {
            let w = if v < 0 { v + n64 } else { v };
            if (0..n64).contains(&w) {
                Ok(w as usize)
            } else {
                Err(format!(
                    "{op}: index {v} at {:?} is out of range for axis {axis} of length {n}",
                    unravel(p, idx.dims)
                ))
            }
        })
        .collect()
}

/// For every element of `idx_dims` (row-major), the offset into `x_dims`
/// data with the coordinate on `axis` replaced by the resolved index.
fn element_offsets(x_dims: &[usize], idx_dims: &[usize], axis: usize, r: &[usize]) -> Vec<usize> {
    let xs = contiguous_strides(x_dims);
    let strides: Vec<isize> = xs
        .iter()
        .enumerate()
        .map(|(i, &s)| if i == axis { 0 } else { s as isize })
        .collect();
    let mut offs = Vec::with_capacity(r.len());
    for_each_strided(idx_dims, &strides, 0, |i, p| {
        offs.push(p as usize + r[i] * xs[axis])
    });
    offs
}

fn gather_typed<T: Pod>(axis: usize, r: &[usize], x: &View, out: &mut ViewMut) {
    let (outer, n, inner) = split_axis(x.dims, axis);
    let src = x.slice::<T>();
    let o = out.slice::<T>();
    let m = r.len();
    for a in 0..outer {
        for (j, &k) in r.iter().enumerate() {
            let (d, s) = ((a * m + j) * inner, (a * n + k) * inner);
            o[d..d + inner].copy_from_slice(&src[s..s + inner]);
        }
    }
}

/// numpy `take`.
pub fn gather(axis: usize, ins: &[View], out: &mut ViewMut) -> KernelResult {
    let (x, idx) = (&ins[0], &ins[1]);
    let r = resolve("gather", idx, axis, x.dims[axis])?;
    if out.numel() == 0 {
        return Ok(());
    }
    by_width!(x.dtype, T => gather_typed::<T>(axis, &r, x, out));
    Ok(())
}

fn gather_elements_typed<T: Pod>(offs: &[usize], x: &View, out: &mut ViewMut) {
    let src = x.slice::<T>();
    for (o, &p) in out.slice::<T>().iter_mut().zip(offs) {
        *o = src[p];
    }
}

/// numpy `take_along_axis`.
pub fn gather_elements(axis: usize, ins: &[View], out: &mut ViewMut) -> KernelResult {
    let (x, idx) = (&ins[0], &ins[1]);
    let r = resolve("gather_elements", idx, axis, x.dims[axis])?;
    if out.numel() == 0 {
        return Ok(());
    }
    let offs = element_offsets(x.dims, idx.dims, axis, &r);
    by_width!(x.dtype, T => gather_elements_typed::<T>(&offs, x, out));
    Ok(())
}

fn scatter_typed<T: Pod>(
    offs: &[usize],
    base: &View,
    upd: &View,
    out: &mut ViewMut,
    add: impl Fn(T, T) -> T,
) {
    let o = out.slice::<T>();
    o.copy_from_slice(base.slice::<T>());
    if offs.is_empty() {
        return;
    }
    for (&p, &u) in offs.iter().zip(upd.slice::<T>()) {
        o[p] = add(o[p], u);
    }
}

/// torch `scatter_add`.
pub fn scatter_add(axis: usize, ins: &[View], out: &mut ViewMut) -> KernelResult {
    let (base, idx) = (&ins[0], &ins[1]);
    let r = resolve("scatter_add", idx, axis, base.dims[axis])?;
    if out.numel() == 0 {
        return Ok(());
    }
    let offs = element_offsets(base.dims, idx.dims, axis, &r);
    macro_rules! int {
        ($t:ty) => {
            scatter_typed::<$t>(&offs, base, &ins[2], out, |a, b| a.wrapping_add(b))
        };
    }
    match base.dtype {
        DType::I8 => int!(i8),
        DType::I16 => int!(i16),
        DType::I32 => int!(i32),
        DType::I64 => int!(i64),
        DType::U8 => int!(u8),
        DType::U32 => int!(u32),
        DType::Bool => scatter_typed::<u8>(&offs, base, &ins[2], out, |a, b| a | b),
        DType::C64 => scatter_typed::<Complex32>(&offs, base, &ins[2], out, |a, b| a + b),
        d => {
            return with_real!(d, ins, out, |i, o| {
                scatter_typed::<T>(&offs, &i[0], &i[2], o, |a, b| a + b);
                Ok(())
            }; T)
        }
    }
    Ok(())
}

/// Total order on floats with NaN above everything (torch's top-k).
fn nan_greatest<F: PartialOrd>(a: F, b: F) -> Ordering {
    let nan = |v: &F| v.partial_cmp(v).is_none();
    a.partial_cmp(&b).unwrap_or_else(|| nan(&a).cmp(&nan(&b)))
}

/// Writes the top-k of every lane along `axis` (values or indices).
fn topk_typed<T: Pod>(
    k: usize,
    axis: usize,
    largest: bool,
    output: TopKOutput,
    x: &View,
    out: &mut ViewMut,
    cmp: impl Fn(T, T) -> Ordering,
) {
    let (outer, n, inner) = split_axis(x.dims, axis);
    let src = x.slice::<T>();
    let mut chosen = vec![0usize; outer * k * inner];
    let mut order: Vec<usize> = Vec::with_capacity(n);
    for a in 0..outer {
        for c in 0..inner {
            let at = |i: usize| src[(a * n + i) * inner + c];
            // Ties break on the index, so the unstable sorts are deterministic.
            let rank = |&i: &usize, &j: &usize| {
                let o = cmp(at(i), at(j));
                let o = if largest { o.reverse() } else { o };
                o.then(i.cmp(&j))
            };
            order.clear();
            order.extend(0..n);
            if k < n {
                order.select_nth_unstable_by(k - 1, rank);
                order.truncate(k);
            }
            order.sort_unstable_by(rank);
            for (j, &i) in order.iter().enumerate() {
                chosen[(a * k + j) * inner + c] = i;
            }
        }
    }
    let lane_src = |p: usize| {
        let (a, rest) = (p / (k * inner), p % (k * inner));
        (a * n + chosen[p]) * inner + rest % inner
    };
    match output {
        TopKOutput::Values => {
            for (p, o) in out.slice::<T>().iter_mut().enumerate() {
                *o = src[lane_src(p)];
            }
        }
        TopKOutput::Indices => {
            for (o, &i) in out.slice::<i64>().iter_mut().zip(&chosen) {
                *o = i as i64;
            }
        }
    }
}

/// top-k values or indices.
pub fn topk(
    k: usize,
    axis: usize,
    largest: bool,
    output: TopKOutput,
    ins: &[View],
    out: &mut ViewMut,
) -> KernelResult {
    let x = &ins[0];
    if k > x.dims[axis] {
        return Err(format!(
            "topk: k = {k} exceeds the axis length {}",
            x.dims[axis]
        ));
    }
    if out.numel() == 0 {
        return Ok(());
    }
    macro_rules! go {
        ($t:ty, $cmp:expr) => {
            topk_typed::<$t>(k, axis, largest, output, x, out, $cmp)
        };
    }
    match x.dtype {
        DType::F32 => go!(f32, nan_greatest),
        DType::F64 => go!(f64, nan_greatest),
        DType::F16 => go!(f16, nan_greatest),
        DType::BF16 => go!(bf16, nan_greatest),
        DType::I8 => go!(i8, |a, b| a.cmp(&b)),
        DType::I16 => go!(i16, |a, b| a.cmp(&b)),
        DType::I32 => go!(i32, |a, b| a.cmp(&b)),
        DType::I64 => go!(i64, |a, b| a.cmp(&b)),
        DType::U8 => go!(u8, |a, b| a.cmp(&b)),
        DType::U32 => go!(u32, |a, b| a.cmp(&b)),
        d => return Err(format!("topk is not defined for {d}")),
    }
    Ok(())
}

/// Fills `out` with `vals[index along axis]`.
fn fill_along<T: Pod>(axis: usize, out: &mut ViewMut, value: impl Fn(usize) -> T) {
    let (outer, n, inner) = split_axis(out.dims, axis);
    let vals: Vec<T> = (0..n).map(value).collect();
    let o = out.slice::<T>();
    for (row, &v) in o
        .chunks_exact_mut(inner)
        .zip(vals.iter().cycle().take(outer * n))
    {
        row.fill(v);
    }
}

/// iota, valued as numpy `arange(start, .., step, dtype)`: the first two
/// values are rounded to the dtype and their difference is the step taken
/// (in f64 for F64, f32 for the narrower floats, wrapping i64 for ints).
pub fn iota(axis: usize, start: f64, step: f64, out: &mut ViewMut) -> KernelResult {
    if out.numel() == 0 {
        return Ok(());
    }
    let second = start + step;
    macro_rules! int {
        ($t:ty) => {{
            let first = start as i64;
            let delta = (second as i64).wrapping_sub(first);
            fill_along::<$t>(axis, out, |i| {
                <$t>::from_i64(first.wrapping_add((i as i64).wrapping_mul(delta)))
            })
        }};
    }
    macro_rules! half {
        ($t:ty) => {{
            let first = <$t>::from_f64(start).to_f32();
            let delta = <$t>::from_f64(second).to_f32() - first;
            fill_along::<$t>(axis, out, |i| <$t>::from_f32(first + i as f32 * delta))
        }};
    }
    match out.dtype {
        DType::F64 => fill_along::<f64>(axis, out, |i| start + i as f64 * (second - start)),
        DType::F32 => {
            let first = start as f32;
            let delta = second as f32 - first;
            fill_along::<f32>(axis, out, |i| first + i as f32 * delta)
        }
        DType::F16 => half!(f16),
        DType::BF16 => half!(bf16),
        DType::I8 => int!(i8),
        DType::I16 => int!(i16),
        DType::I32 => int!(i32),
        DType::I64 => int!(i64),
        DType::U8 => int!(u8),
        DType::U32 => int!(u32),
        d => return Err(format!("iota of dtype {d}")),
    }
    Ok(())
}
