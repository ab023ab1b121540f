//! Reduction family: reduce over axes, argmax / argmin, cumsum.

use super::scalar::{nan_max, nan_min, Int, Pod, Real};
use super::{for_each_strided, KernelResult, View, ViewMut};
use crate::with_real;
use rlx_ir::op::{ArgReduceOp, ReduceOp};
use rlx_ir::{contiguous_strides, Complex32, DType};

/// For every input element (row-major), the offset of its output element.
fn output_offsets(in_dims: &[usize], axes: &[usize]) -> (Vec<usize>, usize) {
    let kept: Vec<usize> = in_dims
        .iter()
        .enumerate()
        .map(|(i, &d)| if axes.contains(&i) { 1 } else { d })
        .collect();
    let cs = contiguous_strides(&kept);
    let strides: Vec<isize> = (0..in_dims.len())
        .map(|i| if axes.contains(&i) { 0 } else { cs[i] as isize })
        .collect();
    let mut offs = Vec::with_capacity(in_dims.iter().product());
    for_each_strided(in_dims, &strides, 0, |_, p| offs.push(p as usize));
    let count = axes.iter().map(|&a| in_dims[a]).product();
    (offs, count)
}

/// `(outer, rows, inner)` when `axes` are one run of consecutive axes:
/// each of `outer` blocks sums `rows` rows of `inner` contiguous values
/// (`inner` = 1: sums of contiguous runs). `None` for other sets.
fn split_axes(dims: &[usize], axes: &[usize]) -> Option<(usize, usize, usize)> {
    let mut sorted = axes.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let (&first, &last) = (sorted.first()?, sorted.last()?);
    if last - first + 1 != sorted.len() || last >= dims.len() {
        return None;
    }
    let numel = |d: &[usize]| d.iter().product::<usize>();
    Some((
        numel(&dims[..first]),
        numel(&dims[first..=last]),
        numel(&dims[last + 1..]),
    ))
}

/// Sum (or mean) over a run of consecutive axes without an offset table:
/// the same f64 additions in the same (row-major) order as the general
/// path, so the same bits. False for other axes.
fn sum_contiguous<T: Real>(mean: bool, axes: &[usize], x: &View, o: &mut [T]) -> bool {
    let Some((outer, rows, inner)) = split_axes(x.dims, axes) else {
        return false;
    };
    let src = &x.slice::<T>()[..outer * rows * inner];
    let div = if mean { rows as f64 } else { 1.0 };
    if inner == 1 {
        for (v, run) in o.iter_mut().zip(src.chunks_exact(rows.max(1))) {
            let a = run.iter().fold(0.0f64, |a, v| a + v.to_f64());
            *v = T::from_f64(a / div);
        }
        return true;
    }
    let mut acc = vec![0.0f64; inner];
    for (block, ob) in src
        .chunks_exact((rows * inner).max(1))
        .zip(o.chunks_exact_mut(inner))
    {
        acc.fill(0.0);
        for row in block.chunks_exact(inner) {
            acc.iter_mut().zip(row).for_each(|(a, v)| *a += v.to_f64());
        }
        ob.iter_mut()
            .zip(&acc)
            .for_each(|(v, a)| *v = T::from_f64(a / div));
    }
    true
}

fn reduce_real<T: Real>(op: ReduceOp, axes: &[usize], x: &View, out: &mut ViewMut) {
    let is_sum = matches!(op, ReduceOp::Sum | ReduceOp::Mean);
    if is_sum && x.numel() > 0 && sum_contiguous(op == ReduceOp::Mean, axes, x, out.slice::<T>()) {
        return;
    }
    let (offs, count) = output_offsets(x.dims, axes);
    let src = x.slice::<T>();
    let o = out.slice::<T>();
    match op {
        ReduceOp::Sum | ReduceOp::Mean | ReduceOp::Prod => {
            let init = if op == ReduceOp::Prod { 1.0 } else { 0.0 };
            let mut acc = vec![init; o.len()];
            for (&v, &p) in src.iter().zip(&offs) {
                if op == ReduceOp::Prod {
                    acc[p] *= v.to_f64();
                } else {
                    acc[p] += v.to_f64();
                }
            }
            let div = if op == ReduceOp::Mean {
                count as f64
            } else {
                1.0
            };
            for (ov, a) in o.iter_mut().zip(acc) {
                *ov = T::from_f64(a / div);
            }
        }
        ReduceOp::Max | ReduceOp::Min => {
            let max = op == ReduceOp::Max;
            o.iter_mut()
                .for_each(|v| *v = if max { T::NEG_INFINITY } else { T::INFINITY });
            for (&v, &p) in src.iter().zip(&offs) {
                o[p] = if max {
                    nan_max(o[p], v)
                } else {
                    nan_min(o[p], v)
                };
            }
        }
    }
}

fn reduce_int<T: Int, O: Pod>(
    op: ReduceOp,
    axes: &[usize],
    x: &View,
    out: &mut ViewMut,
    write: impl Fn(i64, usize) -> O,
) {
    let (offs, count) = output_offsets(x.dims, axes);
    let src = x.slice::<T>();
    let n = out.numel();
    let init = match op {
        ReduceOp::Prod => 1,
        ReduceOp::Max => T::MIN.to_i64(),
        ReduceOp::Min => T::MAX.to_i64(),
        _ => 0,
    };
    let mut acc = vec![init; n];
    for (&v, &p) in src.iter().zip(&offs) {
        let v = v.to_i64();
        acc[p] = match op {
            ReduceOp::Sum | ReduceOp::Mean => acc[p].wrapping_add(v),
            ReduceOp::Prod => acc[p].wrapping_mul(v),
            ReduceOp::Max => acc[p].max(v),
            ReduceOp::Min => acc[p].min(v),
        };
    }
    for (ov, a) in out.slice::<O>().iter_mut().zip(acc) {
        *ov = write(a, count);
    }
}

fn reduce_ints<T: Int>(op: ReduceOp, axes: &[usize], x: &View, out: &mut ViewMut) {
    match out.dtype {
        DType::F32 => reduce_int::<T, f32>(op, axes, x, out, |a, c| (a as f64 / c as f64) as f32),
        _ => reduce_int::<T, T>(op, axes, x, out, |a, _| T::from_i64(a)),
    }
}

fn reduce_bool(op: ReduceOp, axes: &[usize], x: &View, out: &mut ViewMut) {
    match out.dtype {
        DType::I64 => reduce_int::<u8, i64>(op, axes, x, out, |a, _| a),
        DType::F32 => reduce_int::<u8, f32>(op, axes, x, out, |a, c| (a as f64 / c as f64) as f32),
        _ => reduce_int::<u8, u8>(op, axes, x, out, |a, _| (a != 0) as u8),
    }
}

fn reduce_complex(op: ReduceOp, axes: &[usize], x: &View, out: &mut ViewMut) {
    let (offs, count) = output_offsets(x.dims, axes);
    let src = x.slice::<Complex32>();
    let o = out.slice::<Complex32>();
    let init = if op == ReduceOp::Prod {
        Complex32::new(1.0, 0.0)
    } else {
        Complex32::new(0.0, 0.0)
    };
    o.iter_mut().for_each(|v| *v = init);
    for (&v, &p) in src.iter().zip(&offs) {
        o[p] = if op == ReduceOp::Prod {
            o[p] * v
        } else {
            o[p] + v
        };
    }
    if op == ReduceOp::Mean {
        o.iter_mut().for_each(|v| *v /= count as f32);
    }
}

/// Reduction over `axes` (sorted, unique).
pub(crate) fn reduce(
    op: ReduceOp,
    axes: &[usize],
    ins: &[View],
    out: &mut ViewMut,
) -> KernelResult {
    let x = &ins[0];
    match x.dtype {
        DType::I8 => reduce_ints::<i8>(op, axes, x, out),
        DType::I16 => reduce_ints::<i16>(op, axes, x, out),
        DType::I32 => reduce_ints::<i32>(op, axes, x, out),
        DType::I64 => reduce_ints::<i64>(op, axes, x, out),
        DType::U8 => reduce_ints::<u8>(op, axes, x, out),
        DType::U32 => reduce_ints::<u32>(op, axes, x, out),
        DType::Bool => reduce_bool(op, axes, x, out),
        DType::C64 => reduce_complex(op, axes, x, out),
        d => {
            return with_real!(d, ins, out, |i, o| {
                reduce_real::<T>(op, axes, &i[0], o);
                Ok(())
            }; T)
        }
    }
    Ok(())
}

/// (outer, axis length, inner) of a tensor split around `axis`.
pub(crate) fn split_axis(dims: &[usize], axis: usize) -> (usize, usize, usize) {
    (
        dims[..axis].iter().product(),
        dims[axis],
        dims[axis + 1..].iter().product(),
    )
}

fn arg_typed<T: Pod>(
    op: ArgReduceOp,
    axis: usize,
    x: &View,
    out: &mut ViewMut,
    key: impl Fn(T) -> f64,
) {
    let (outer, n, inner) = split_axis(x.dims, axis);
    let src = x.slice::<T>();
    let o = out.slice::<i64>();
    for a in 0..outer {
        for c in 0..inner {
            let mut best = 0usize;
            let mut bv = key(src[a * n * inner + c]);
            for i in 1..n {
                if bv.is_nan() {
                    break; // numpy: the first NaN wins
                }
                let v = key(src[(a * n + i) * inner + c]);
                let better = match op {
                    ArgReduceOp::ArgMax => v > bv || v.is_nan(),
                    ArgReduceOp::ArgMin => v < bv || v.is_nan(),
                };
                if better {
                    best = i;
                    bv = v;
                }
            }
            o[a * inner + c] = best as i64;
        }
    }
}

/// argmax / argmin along `axis` (I64 result, first occurrence).
pub(crate) fn arg_reduce(
    op: ArgReduceOp,
    axis: usize,
    ins: &[View],
    out: &mut ViewMut,
) -> KernelResult {
    let x = &ins[0];
    match x.dtype {
        DType::F32 => arg_typed::<f32>(op, axis, x, out, |v| v as f64),
        DType::F64 => arg_typed::<f64>(op, axis, x, out, |v| v),
        DType::F16 => arg_typed::<half::f16>(op, axis, x, out, |v| v.to_f64()),
        DType::BF16 => arg_typed::<half::bf16>(op, axis, x, out, |v| v.to_f64()),
        DType::I8 => arg_typed::<i8>(op, axis, x, out, |v| v as f64),
        DType::I16 => arg_typed::<i16>(op, axis, x, out, |v| v as f64),
        DType::I32 => arg_typed::<i32>(op, axis, x, out, |v| v as f64),
        DType::I64 => arg_typed::<i64>(op, axis, x, out, |v| v as f64),
        DType::U8 | DType::Bool => arg_typed::<u8>(op, axis, x, out, |v| v as f64),
        DType::U32 => arg_typed::<u32>(op, axis, x, out, |v| v as f64),
        DType::C64 => return Err("argmax of complex".into()),
        d @ (DType::U16
        | DType::U64
        | DType::F8E4M3
        | DType::F8E5M2
        | DType::F8E8M0
        | DType::F8E4M3Fnuz
        | DType::F8E5M2Fnuz) => {
            let name = match op {
                ArgReduceOp::ArgMax => "argmax",
                ArgReduceOp::ArgMin => "argmin",
            };
            return Err(super::storage_only(name, d));
        }
    }
    Ok(())
}

fn cumsum_typed<T: Pod>(
    axis: usize,
    exclusive: bool,
    reverse: bool,
    x: &View,
    out: &mut ViewMut,
    zero: T,
    add: impl Fn(T, T) -> T,
) {
    let (outer, n, inner) = split_axis(x.dims, axis);
    let src = x.slice::<T>();
    let o = out.slice::<T>();
    for a in 0..outer {
        for c in 0..inner {
            let mut acc = zero;
            for s in 0..n {
                let i = if reverse { n - 1 - s } else { s };
                let p = (a * n + i) * inner + c;
                if exclusive {
                    o[p] = acc;
                    acc = add(acc, src[p]);
                } else {
                    acc = add(acc, src[p]);
                    o[p] = acc;
                }
            }
        }
    }
}

/// Cumulative sum along `axis`.
pub(crate) fn cumsum(
    axis: usize,
    exclusive: bool,
    reverse: bool,
    ins: &[View],
    out: &mut ViewMut,
) -> KernelResult {
    let x = &ins[0];
    macro_rules! int {
        ($t:ty) => {
            cumsum_typed::<$t>(axis, exclusive, reverse, x, out, 0, |a, b| {
                a.wrapping_add(b)
            })
        };
    }
    match x.dtype {
        DType::I8 => int!(i8),
        DType::I16 => int!(i16),
        DType::I32 => int!(i32),
        DType::I64 => int!(i64),
        DType::U8 => int!(u8),
        DType::U32 => int!(u32),
        DType::C64 => cumsum_typed::<Complex32>(
            axis,
            exclusive,
            reverse,
            x,
            out,
            Complex32::new(0.0, 0.0),
            |a, b| a + b,
        ),
        d => {
            return with_real!(d, ins, out, |i, o| {
                cumsum_typed::<T>(axis, exclusive, reverse, &i[0], o, T::ZERO, |a, b| a + b);
                Ok(())
            }; T)
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::norm::tests::{data, run, view};
    use super::*;

    #[test]
    fn sums_over_a_middle_run_of_axes_add_each_output_s_inputs_in_order() {
        // [2, 3, 4, 5] summed over axes 1..=2 (and their mean), over axis 3.
        let x = data(120, 3);
        let at = |a: usize, b: usize, c: usize, d: usize| x[((a * 3 + b) * 4 + c) * 5 + d] as f64;
        let dims = [2, 3, 4, 5];
        for (op, div) in [(ReduceOp::Sum, 1.0), (ReduceOp::Mean, 12.0)] {
            let got = run::<f32>(
                DType::F32,
                &[2, 5],
                &[view(&dims, DType::F32, &x)],
                |i, o| reduce(op, &[2, 1], i, o),
            )
            .unwrap();
            let want: Vec<f32> = (0..10)
                .map(|i| {
                    let s = (0..3).flat_map(|b| (0..4).map(move |c| (b, c)));
                    (s.fold(0.0, |acc, (b, c)| acc + at(i / 5, b, c, i % 5)) / div) as f32
                })
                .collect();
            assert_eq!(got, want, "{op:?}");
        }
        let got = run::<f32>(
            DType::F32,
            &[2, 3, 4],
            &[view(&dims, DType::F32, &x)],
            |i, o| reduce(ReduceOp::Sum, &[3], i, o),
        )
        .unwrap();
        let want: Vec<f32> = (0..24)
            .map(|i| x[i * 5..i * 5 + 5].iter().map(|&v| v as f64).sum::<f64>() as f32)
            .collect();
        assert_eq!(got, want);
        assert_eq!(split_axes(&dims, &[2, 1]), Some((2, 12, 5)));
        assert_eq!(split_axes(&dims, &[0, 2]), None);
    }
}
