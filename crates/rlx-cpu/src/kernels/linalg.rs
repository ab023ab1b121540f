//! Linear algebra family: numpy matmul and dot_general (reference kernels;
//! the speed work replaces the inner GEMM, not this structure).

use super::scalar::{Int, Pod, Real};
use super::{broadcast_strides, for_each_strided, KernelResult, View, ViewMut};
use crate::with_real;
use rlx_ir::op::DotDims;
use rlx_ir::{contiguous_strides, DType};

/// `c[m, n] = sum_k a[m, k] * b[k, n]` for floats.
fn gemm_real<T: Real>(a: &[T], b: &[T], c: &mut [T], m: usize, k: usize, n: usize) {
    c.iter_mut().for_each(|x| *x = T::ZERO);
    for i in 0..m {
        let crow = &mut c[i * n..(i + 1) * n];
        for p in 0..k {
            let aik = a[i * k + p];
            let brow = &b[p * n..(p + 1) * n];
            for (cv, &bv) in crow.iter_mut().zip(brow) {
                *cv = *cv + aik * bv;
            }
        }
    }
}

fn gemm_int<T: Int>(a: &[T], b: &[T], c: &mut [T], m: usize, k: usize, n: usize) {
    for i in 0..m {
        for j in 0..n {
            let mut acc = 0i64;
            for p in 0..k {
                acc = acc.wrapping_add(a[i * k + p].to_i64().wrapping_mul(b[p * n + j].to_i64()));
            }
            c[i * n + j] = T::from_i64(acc);
        }
    }
}

/// Batched matmul over broadcast batch dims. `a_dims` / `b_dims` are rank >= 2.
fn batched<T: Pod>(
    a: &[T],
    a_dims: &[usize],
    b: &[T],
    b_dims: &[usize],
    c: &mut [T],
    gemm: impl Fn(&[T], &[T], &mut [T], usize, usize, usize),
) {
    let (ra, rb) = (a_dims.len(), b_dims.len());
    let (m, k, n) = (a_dims[ra - 2], a_dims[ra - 1], b_dims[rb - 1]);
    let ba = &a_dims[..ra - 2];
    let bb = &b_dims[..rb - 2];
    let rank = ba.len().max(bb.len());
    let batch: Vec<usize> = (0..rank)
        .map(|i| {
            let da = (i + ba.len()).checked_sub(rank).map_or(1, |j| ba[j]);
            let db = (i + bb.len()).checked_sub(rank).map_or(1, |j| bb[j]);
            da.max(db)
        })
        .collect();
    let sa = broadcast_strides(ba, &batch);
    let sb = broadcast_strides(bb, &batch);
    let mut offs_b = Vec::new();
    for_each_strided(&batch, &sb, 0, |_, p| offs_b.push(p as usize));
    if m * n == 0 {
        return;
    }
    for_each_strided(&batch, &sa, 0, |i, p| {
        let (pa, pb) = (p as usize * m * k, offs_b[i] * k * n);
        gemm(
            &a[pa..pa + m * k],
            &b[pb..pb + k * n],
            &mut c[i * m * n..(i + 1) * m * n],
            m,
            k,
            n,
        );
    });
}

fn matrix_dims(dims: &[usize], lhs: bool) -> Vec<usize> {
    match (dims.len(), lhs) {
        (1, true) => vec![1, dims[0]],
        (1, false) => vec![dims[0], 1],
        _ => dims.to_vec(),
    }
}

fn matmul_typed<T: Pod>(
    a: &View,
    b: &View,
    out: &mut ViewMut,
    gemm: impl Fn(&[T], &[T], &mut [T], usize, usize, usize),
) {
    let (ad, bd) = (matrix_dims(a.dims, true), matrix_dims(b.dims, false));
    batched(
        a.slice::<T>(),
        &ad,
        b.slice::<T>(),
        &bd,
        out.slice::<T>(),
        gemm,
    );
}

/// numpy matmul.
pub fn matmul(ins: &[View], out: &mut ViewMut) -> KernelResult {
    let (a, b) = (&ins[0], &ins[1]);
    match a.dtype {
        DType::I8 => {
            matmul_typed::<i8>(a, b, out, gemm_int);
            Ok(())
        }
        DType::I16 => {
            matmul_typed::<i16>(a, b, out, gemm_int);
            Ok(())
        }
        DType::I32 => {
            matmul_typed::<i32>(a, b, out, gemm_int);
            Ok(())
        }
        DType::I64 => {
            matmul_typed::<i64>(a, b, out, gemm_int);
            Ok(())
        }
        DType::U8 => {
            matmul_typed::<u8>(a, b, out, gemm_int);
            Ok(())
        }
        DType::U32 => {
            matmul_typed::<u32>(a, b, out, gemm_int);
            Ok(())
        }
        d => with_real!(d, ins, out, |i, o| {
            matmul_typed::<T>(&i[0], &i[1], o, gemm_real::<T>);
            Ok(())
        }; T),
    }
}

/// Copies `src` (of `dims`) permuted by `perm` into a new buffer.
pub fn permuted<T: Pod>(src: &[T], dims: &[usize], perm: &[usize]) -> Vec<T> {
    let cs = contiguous_strides(dims);
    let out_dims: Vec<usize> = perm.iter().map(|&p| dims[p]).collect();
    let strides: Vec<isize> = perm.iter().map(|&p| cs[p] as isize).collect();
    let mut out = Vec::with_capacity(src.len());
    for_each_strided(&out_dims, &strides, 0, |_, p| out.push(src[p as usize]));
    out
}

fn dot_general_typed<T: Pod + Default>(
    d: &DotDims,
    a: &View,
    b: &View,
    out: &mut ViewMut,
    gemm: impl Fn(&[T], &[T], &mut [T], usize, usize, usize),
) {
    let free = |rank: usize, batch: &[usize], contract: &[usize]| -> Vec<usize> {
        (0..rank)
            .filter(|i| !batch.contains(i) && !contract.contains(i))
            .collect()
    };
    let fa = free(a.dims.len(), &d.lhs_batch, &d.lhs_contract);
    let fb = free(b.dims.len(), &d.rhs_batch, &d.rhs_contract);
    let pa: Vec<usize> = d
        .lhs_batch
        .iter()
        .chain(&fa)
        .chain(&d.lhs_contract)
        .copied()
        .collect();
    let pb: Vec<usize> = d
        .rhs_batch
        .iter()
        .chain(&d.rhs_contract)
        .chain(&fb)
        .copied()
        .collect();
    let prod = |ax: &[usize], dims: &[usize]| ax.iter().map(|&i| dims[i]).product::<usize>();
    let nb = prod(&d.lhs_batch, a.dims);
    let (m, k, n) = (
        prod(&fa, a.dims),
        prod(&d.lhs_contract, a.dims),
        prod(&fb, b.dims),
    );
    let ta = permuted(a.slice::<T>(), a.dims, &pa);
    let tb = permuted(b.slice::<T>(), b.dims, &pb);
    batched(&ta, &[nb, m, k], &tb, &[nb, k, n], out.slice::<T>(), gemm);
}

/// General dot product (XLA dimension numbers).
pub fn dot_general(d: &DotDims, ins: &[View], out: &mut ViewMut) -> KernelResult {
    let (a, b) = (&ins[0], &ins[1]);
    match a.dtype {
        DType::I8 => {
            dot_general_typed::<i8>(d, a, b, out, gemm_int);
            Ok(())
        }
        DType::I16 => {
            dot_general_typed::<i16>(d, a, b, out, gemm_int);
            Ok(())
        }
        DType::I32 => {
            dot_general_typed::<i32>(d, a, b, out, gemm_int);
            Ok(())
        }
        DType::I64 => {
            dot_general_typed::<i64>(d, a, b, out, gemm_int);
            Ok(())
        }
        DType::U8 => {
            dot_general_typed::<u8>(d, a, b, out, gemm_int);
            Ok(())
        }
        DType::U32 => {
            dot_general_typed::<u32>(d, a, b, out, gemm_int);
            Ok(())
        }
        dt => with_real!(dt, ins, out, |i, o| {
            dot_general_typed::<T>(d, &i[0], &i[1], o, gemm_real::<T>);
            Ok(())
        }; T),
    }
}
