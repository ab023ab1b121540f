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
        d => return Err(fail!("indices must be an integer type, are {d}")),
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
                Err(fail!(
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
    if inner == 1 {
        // Gathering along the last axis (a nearest Resize of the width):
        // element moves, not one-element copies.
        for (orow, srow) in o.chunks_exact_mut(m).zip(src.chunks_exact(n)) {
            orow.iter_mut().zip(r).for_each(|(v, &k)| *v = srow[k]);
        }
        return;
    }
    for a in 0..outer {
        for (j, &k) in r.iter().enumerate() {
            let (d, s) = ((a * m + j) * inner, (a * n + k) * inner);
            o[d..d + inner].copy_from_slice(&src[s..s + inner]);
        }
    }
}

/// numpy `take`.
pub(crate) fn gather(axis: usize, ins: &[View], out: &mut ViewMut) -> KernelResult {
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
pub(crate) fn gather_elements(axis: usize, ins: &[View], out: &mut ViewMut) -> KernelResult {
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
pub(crate) fn scatter_add(axis: usize, ins: &[View], out: &mut ViewMut) -> KernelResult {
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
pub(crate) fn topk(
    k: usize,
    axis: usize,
    largest: bool,
    output: TopKOutput,
    ins: &[View],
    out: &mut ViewMut,
) -> KernelResult {
    let x = &ins[0];
    if k > x.dims[axis] {
        return Err(fail!(
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
        d => return Err(fail!("topk is not defined for {d}")),
    }
    Ok(())
}

/// Fills each element of `out` with `value(its index along axis)`.
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
pub(crate) fn iota(axis: usize, start: f64, step: f64, out: &mut ViewMut) -> KernelResult {
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
        d => return Err(fail!("iota of dtype {d}")),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes<T: Pod>(v: &[T]) -> &[u8] {
        // SAFETY: Pod values are plain bytes.
        unsafe { std::slice::from_raw_parts(v.as_ptr() as *const u8, std::mem::size_of_val(v)) }
    }

    fn view<'a, T: Pod>(dims: &'a [usize], dtype: DType, data: &'a [T]) -> View<'a> {
        View {
            dims,
            dtype,
            bytes: bytes(data),
        }
    }

    /// Runs `f` into a fresh zeroed output of `dims` / `dtype`.
    fn run<O: Pod + Default>(
        dims: &[usize],
        dtype: DType,
        f: impl FnOnce(&mut ViewMut) -> KernelResult,
    ) -> Result<Vec<O>, String> {
        let mut o = vec![O::default(); dims.iter().product()];
        // SAFETY: as in `bytes`; any byte pattern is a valid Pod value.
        let bytes = unsafe {
            std::slice::from_raw_parts_mut(o.as_mut_ptr() as *mut u8, std::mem::size_of_val(&o[..]))
        };
        f(&mut ViewMut { dims, dtype, bytes }).map_err(|e| e.to_string())?;
        Ok(o)
    }

    fn x34() -> Vec<f32> {
        (0..12).map(|i| i as f32 * 1.5).collect()
    }

    #[test]
    fn gather_takes_along_an_axis() {
        let x = x34();
        let idx = [3i32, -1, 0, 1];
        let ins = [
            view(&[3, 4], DType::F32, &x),
            view(&[2, 2], DType::I32, &idx),
        ];
        let got = run::<f32>(&[3, 2, 2], DType::F32, |o| gather(1, &ins, o)).unwrap();
        // np.take(np.arange(12, dtype=np.float32).reshape(3, 4) * 1.5, [[3, -1], [0, 1]], axis=1)
        assert_eq!(
            got,
            [4.5, 4.5, 0.0, 1.5, 10.5, 10.5, 6.0, 7.5, 16.5, 16.5, 12.0, 13.5]
        );

        let y: Vec<i64> = (0..24).map(|i| i - 7).collect();
        let idx = [1i8, -2, 1];
        let ins = [
            view(&[2, 3, 4], DType::I64, &y),
            view(&[3], DType::I8, &idx),
        ];
        let got = run::<i64>(&[3, 3, 4], DType::I64, |o| gather(0, &ins, o)).unwrap();
        // np.take(np.arange(24).reshape(2, 3, 4) - 7, np.int8([1, -2, 1]), axis=0)
        let want: Vec<i64> = [&y[12..], &y[..12], &y[12..]].concat();
        assert_eq!(got, want);

        // A 0-d index drops the axis: np.take(np.arange(24).reshape(2, 3, 4) - 7, -1, axis=2)
        let ins = [
            view(&[2, 3, 4], DType::I64, &y),
            view(&[], DType::I64, &[-1i64]),
        ];
        let got = run::<i64>(&[2, 3], DType::I64, |o| gather(2, &ins, o)).unwrap();
        assert_eq!(got, [-4, 0, 4, 8, 12, 16]);

        // Nearest x2 along the last axis: np.take(np.arange(24).reshape(2, 3, 4) - 7, [0, 0, 1, 1, 3, 3], axis=2)[1]
        let ins = [
            view(&[2, 3, 4], DType::I64, &y),
            view(&[6], DType::I64, &[0i64, 0, 1, 1, 3, 3]),
        ];
        let got = run::<i64>(&[2, 3, 6], DType::I64, |o| gather(2, &ins, o)).unwrap();
        assert_eq!(
            got[18..],
            [5, 5, 6, 6, 8, 8, 9, 9, 10, 10, 12, 12, 13, 13, 14, 14, 16, 16]
        );
    }

    #[test]
    fn gather_rejects_bad_indices() {
        let x = x34();
        for (bad, text) in [(4i32, "index 4 at [1]"), (-5, "index -5 at [1]")] {
            let idx = [0i32, bad];
            let ins = [view(&[3, 4], DType::F32, &x), view(&[2], DType::I32, &idx)];
            let err = run::<f32>(&[3, 2], DType::F32, |o| gather(1, &ins, o)).unwrap_err();
            assert!(
                err.contains(text) && err.contains("axis 1 of length 4"),
                "{err}"
            );
        }
        let ins = [
            view(&[3, 4], DType::F32, &x),
            view(&[1], DType::Bool, &[1u8]),
        ];
        assert!(run::<f32>(&[3, 1], DType::F32, |o| gather(1, &ins, o)).is_err());
    }

    #[test]
    fn gather_elements_reads_per_position() {
        let x = x34();
        let idx = [0i64, 3, -1, 2];
        let ins = [
            view(&[3, 4], DType::F32, &x),
            view(&[2, 2], DType::I64, &idx),
        ];
        let got = run::<f32>(&[2, 2], DType::F32, |o| gather_elements(1, &ins, o)).unwrap();
        // Indices smaller than the data off the axis (ONNX GatherElements):
        // np.take_along_axis(x[:2], [[0, 3], [-1, 2]], axis=1)
        assert_eq!(got, [0.0, 4.5, 10.5, 9.0]);

        let idx = [2u8, 0, 0, 1];
        let ins = [
            view(&[3, 4], DType::F32, &x),
            view(&[1, 4], DType::U8, &idx),
        ];
        let got = run::<f32>(&[1, 4], DType::F32, |o| gather_elements(0, &ins, o)).unwrap();
        // np.take_along_axis(x, np.uint8([[2, 0, 0, 1]]), axis=0)
        assert_eq!(got, [12.0, 1.5, 3.0, 10.5]);

        let idx = [0i64, 4];
        let ins = [
            view(&[3, 4], DType::F32, &x),
            view(&[1, 2], DType::I64, &idx),
        ];
        let err = run::<f32>(&[1, 2], DType::F32, |o| gather_elements(1, &ins, o)).unwrap_err();
        assert!(
            err.contains("index 4 at [0, 1]") && err.contains("length 4"),
            "{err}"
        );
    }

    #[test]
    fn scatter_add_accumulates() {
        let base: Vec<f32> = (0..12).map(|i| i as f32).collect();
        let idx = [0i64, 2, 3, 3, -1, 0];
        let upd = [1.5f32, 2.0, 10.0, 20.0, 0.25, -1.0];
        let ins = [
            view(&[3, 4], DType::F32, &base),
            view(&[3, 2], DType::I64, &idx),
            view(&[3, 2], DType::F32, &upd),
        ];
        let got = run::<f32>(&[3, 4], DType::F32, |o| scatter_add(1, &ins, o)).unwrap();
        // out = np.arange(12, dtype=np.float32).reshape(3, 4)
        // np.add.at(out, (np.arange(3)[:, None].repeat(2, 1), idx % 4), upd)
        assert_eq!(
            got,
            [1.5, 1.0, 4.0, 3.0, 4.0, 5.0, 6.0, 37.0, 7.0, 9.0, 10.0, 11.25]
        );

        let base = [100i8, -100, 5, 6];
        let idx = [1i32, 0, 1, 0];
        let upd = [100i8, -100, 50, -60];
        let ins = [
            view(&[2, 2], DType::I8, &base),
            view(&[2, 2], DType::I32, &idx),
            view(&[2, 2], DType::I8, &upd),
        ];
        let got = run::<i8>(&[2, 2], DType::I8, |o| scatter_add(0, &ins, o)).unwrap();
        // o = np.int8([[100, -100], [5, 6]])
        // np.add.at(o, ([[1, 0], [1, 0]], [[0, 1], [0, 1]]), np.int8([[100, -100], [50, -60]]))
        assert_eq!(got, [100, -4, -101, 6]);

        let (base, idx, upd) = ([0u8, 1, 0, 0], [2i64, 2, 0], [1u8, 0, 0]);
        let ins = [
            view(&[4], DType::Bool, &base),
            view(&[3], DType::I64, &idx),
            view(&[3], DType::Bool, &upd),
        ];
        let got = run::<u8>(&[4], DType::Bool, |o| scatter_add(0, &ins, o)).unwrap();
        // np.logical_or.at(b := np.array([0, 1, 0, 0], bool), [2, 2, 0], [True, False, False])
        assert_eq!(got, [0, 1, 1, 0]);

        let base = [1.0, 2.0, 3.0].map(f16::from_f32);
        let upd = [0.5, 0.25, 4.0].map(f16::from_f32);
        let idx = [1i64, 1, -3];
        let ins = [
            view(&[3], DType::F16, &base),
            view(&[3], DType::I64, &idx),
            view(&[3], DType::F16, &upd),
        ];
        let got = run::<f16>(&[3], DType::F16, |o| scatter_add(0, &ins, o)).unwrap();
        // np.add.at(h := np.float16([1, 2, 3]), [1, 1, -3], np.float16([0.5, 0.25, 4]))
        assert_eq!(got, [5.0, 2.75, 3.0].map(f16::from_f32));

        let idx = [3i64, 0, 0];
        let ins = [
            view(&[3], DType::F16, &base),
            view(&[3], DType::I64, &idx),
            view(&[3], DType::F16, &upd),
        ];
        let err = run::<f16>(&[3], DType::F16, |o| scatter_add(0, &ins, o)).unwrap_err();
        assert!(
            err.contains("index 3 at [0]") && err.contains("length 3"),
            "{err}"
        );
    }

    #[test]
    fn topk_sorts_with_nan_largest_and_stable_ties() {
        let nan = f32::NAN;
        let x = [3.0, 1.0, nan, 3.0, -2.0, 5.0, 0.0, -0.0, 2.0, 2.0, nan, nan];
        let ins = [view(&[2, 6], DType::F32, &x)];
        // Reference: sorted(range(6), key=(isnan first, then -v)) per row, the
        // stable order torch.topk gives; smallest puts NaN last.
        for (largest, want_i, want_v) in [
            (
                true,
                [2i64, 5, 0, 3, 4, 5, 2, 3],
                [nan, 5.0, 3.0, 3.0, nan, nan, 2.0, 2.0],
            ),
            (
                false,
                [4, 1, 0, 3, 0, 1, 2, 3],
                [-2.0, 1.0, 3.0, 3.0, 0.0, -0.0, 2.0, 2.0],
            ),
        ] {
            let got = run::<i64>(&[2, 4], DType::I64, |o| {
                topk(4, 1, largest, TopKOutput::Indices, &ins, o)
            })
            .unwrap();
            assert_eq!(got, want_i);
            let got = run::<f32>(&[2, 4], DType::F32, |o| {
                topk(4, 1, largest, TopKOutput::Values, &ins, o)
            })
            .unwrap();
            let bits = |v: &[f32]| {
                v.iter()
                    .map(|x| if x.is_nan() { u32::MAX } else { x.to_bits() })
                    .collect::<Vec<_>>()
            };
            assert_eq!(bits(&got), bits(&want_v));
        }

        // Ints compare exactly (2**53 + 1 is not an f64).
        let big = 1i64 << 53;
        let x = [big + 1, big, -5, big + 1, 7];
        let ins = [view(&[5], DType::I64, &x)];
        let got = run::<i64>(&[3], DType::I64, |o| {
            topk(3, 0, true, TopKOutput::Indices, &ins, o)
        })
        .unwrap();
        assert_eq!(got, [0, 3, 1]);
        let got = run::<i64>(&[2], DType::I64, |o| {
            topk(2, 0, false, TopKOutput::Values, &ins, o)
        })
        .unwrap();
        assert_eq!(got, [-5, 7]);

        // Along axis 0 of np.float16([[1, 9], [4, 4], [4, 0]]).
        let x = [1.0, 9.0, 4.0, 4.0, 4.0, 0.0].map(f16::from_f32);
        let ins = [view(&[3, 2], DType::F16, &x)];
        let got = run::<i64>(&[2, 2], DType::I64, |o| {
            topk(2, 0, true, TopKOutput::Indices, &ins, o)
        })
        .unwrap();
        assert_eq!(got, [1, 0, 2, 1]);
        let got = run::<f16>(&[2, 2], DType::F16, |o| {
            topk(2, 0, true, TopKOutput::Values, &ins, o)
        })
        .unwrap();
        assert_eq!(got, [4.0, 9.0, 4.0, 4.0].map(f16::from_f32));
    }

    #[test]
    fn iota_matches_arange() {
        // np.broadcast_to(np.arange(5, -1, -2), (2, 3)) and its transpose-wise twin.
        let got = run::<i64>(&[2, 3], DType::I64, |o| iota(1, 5.0, -2.0, o)).unwrap();
        assert_eq!(got, [5, 3, 1, 5, 3, 1]);
        let got = run::<i64>(&[3, 2], DType::I64, |o| iota(0, 5.0, -2.0, o)).unwrap();
        assert_eq!(got, [5, 5, 3, 3, 1, 1]);
        // np.arange(0.5, 5, 1.5, dtype=np.int32); np.arange(-2.5, 3, 1.0, dtype=np.int32)
        assert_eq!(
            run::<i32>(&[3], DType::I32, |o| iota(0, 0.5, 1.5, o)).unwrap(),
            [0, 2, 4]
        );
        assert_eq!(
            run::<i32>(&[6], DType::I32, |o| iota(0, -2.5, 1.0, o)).unwrap(),
            [-2, -1, 0, 1, 2, 3]
        );
        // np.arange(0, 300, 100, dtype=np.int8)
        assert_eq!(
            run::<i8>(&[3], DType::I8, |o| iota(0, 0.0, 100.0, o)).unwrap(),
            [0, 100, -56]
        );
        // np.arange(0.1, 2.3, 0.3, dtype=np.float32).view(np.uint32)
        let got = run::<f32>(&[8], DType::F32, |o| iota(0, 0.1, 0.3, o)).unwrap();
        let want = [
            1036831949u32,
            1053609165,
            1060320052,
            1065353216,
            1067869799,
            1070386381,
            1072902964,
            1074580685,
        ];
        assert_eq!(got.iter().map(|v| v.to_bits()).collect::<Vec<_>>(), want);
        // np.arange(0.1, 2.3, 0.3, dtype=np.float64)
        let got = run::<f64>(&[8], DType::F64, |o| iota(0, 0.1, 0.3, o)).unwrap();
        let want = [
            0.1,
            0.4,
            0.7000000000000001,
            1.0000000000000002,
            1.3000000000000003,
            1.6000000000000003,
            1.9000000000000004,
            2.2000000000000006,
        ];
        assert_eq!(got, want);
        // np.arange(0.1, 2.3, 0.3, dtype=np.float16).view(np.uint16)
        let got = run::<f16>(&[8], DType::F16, |o| iota(0, 0.1, 0.3, o)).unwrap();
        let want = [11878u16, 13926, 14745, 15360, 15667, 15974, 16281, 16486];
        assert_eq!(got.iter().map(|v| v.to_bits()).collect::<Vec<_>>(), want);
        assert!(run::<u8>(&[2], DType::Bool, |o| iota(0, 0.0, 1.0, o)).is_err());
    }
}
