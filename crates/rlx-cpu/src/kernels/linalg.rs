//! Linear algebra family: numpy matmul and dot_general.
//!
//! Float products run [`GemmFloat::gemm`] (faer, or our GEMV for one row)
//! on strided views of the operands: batch slices, transposed and
//! dot_general-permuted operands are read in place whenever each of the
//! row / contracted / column axis groups collapses to one stride; only other
//! layouts are copied first. Products of 2 to `small_rows::MAX_ROWS` f32
//! rows run `small_rows`. Integer products keep a plain wrapping loop.

use super::gemm::{num_threads, GemmFloat, Strided, GEMM_GRAIN};
use super::gemm_bf16;
use super::scalar::{Int, Pod};
use super::small_rows;
use super::{broadcast_strides, for_each_strided, KernelResult, View, ViewMut};
use crate::team;
use crate::with_real;
use half::f16;
use rlx_ir::op::DotDims;
use rlx_ir::{contiguous_strides, DType};

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

/// The numpy broadcast of two batch shapes.
fn broadcast_batch(ba: &[usize], bb: &[usize]) -> Vec<usize> {
    let rank = ba.len().max(bb.len());
    (0..rank)
        .map(|i| {
            let da = (i + ba.len()).checked_sub(rank).map_or(1, |j| ba[j]);
            let db = (i + bb.len()).checked_sub(rank).map_or(1, |j| bb[j]);
            da.max(db)
        })
        .collect()
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
    let batch = broadcast_batch(ba, bb);
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

/// numpy `matmul` of `ins[0] @ ins[1]` into `out` (dims already inferred:
/// 1-d operands promoted, batch axes broadcast). F32 / F64 run the float
/// GEMM, F16 / BF16 compute in f32 (BF16 x BF16 through the BF16 tile where
/// the CPU has one), integers accumulate wrapping in i64 and wrap back.
///
/// # Errors
/// A dtype without a kernel (Bool, complex).
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
        DType::BF16
            if b.dtype == DType::BF16
                && matches!(out.dtype, DType::BF16 | DType::F32)
                && matmul_bf16(a, b, out) =>
        {
            Ok(())
        }
        d => with_real!(d, ins, out, |i, o| {
            matmul_float::<T>(&i[0], &i[1], o);
            Ok(())
        }; T),
    }
}

/// Copies `src` (of `dims`) permuted by `perm` into a new buffer.
pub(crate) fn permuted<T: Pod>(src: &[T], dims: &[usize], perm: &[usize]) -> Vec<T> {
    let cs = contiguous_strides(dims);
    let out_dims: Vec<usize> = perm.iter().map(|&p| dims[p]).collect();
    let strides: Vec<isize> = perm.iter().map(|&p| cs[p] as isize).collect();
    let mut out = Vec::with_capacity(src.len());
    for_each_strided(&out_dims, &strides, 0, |_, p| out.push(src[p as usize]));
    out
}

/// Free (neither batch nor contracted) axes of the lhs and the rhs.
fn free_axes(d: &DotDims, lhs_rank: usize, rhs_rank: usize) -> (Vec<usize>, Vec<usize>) {
    let free = |rank: usize, batch: &[usize], contract: &[usize]| -> Vec<usize> {
        (0..rank)
            .filter(|i| !batch.contains(i) && !contract.contains(i))
            .collect()
    };
    (
        free(lhs_rank, &d.lhs_batch, &d.lhs_contract),
        free(rhs_rank, &d.rhs_batch, &d.rhs_contract),
    )
}

/// Both operands copied into `[batch, m, k]` and `[batch, k, n]` order, with
/// `[batch, m, k, n]`.
fn canonical_copies<T: Pod>(d: &DotDims, a: &View, b: &View) -> (Vec<T>, Vec<T>, [usize; 4]) {
    let (fa, fb) = free_axes(d, a.dims.len(), b.dims.len());
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
    let sizes = [
        prod(&d.lhs_batch, a.dims),
        prod(&fa, a.dims),
        prod(&d.lhs_contract, a.dims),
        prod(&fb, b.dims),
    ];
    let ta = permuted(a.slice::<T>(), a.dims, &pa);
    let tb = permuted(b.slice::<T>(), b.dims, &pb);
    (ta, tb, sizes)
}

fn dot_general_typed<T: Pod + Default>(
    d: &DotDims,
    a: &View,
    b: &View,
    out: &mut ViewMut,
    gemm: impl Fn(&[T], &[T], &mut [T], usize, usize, usize),
) {
    let (ta, tb, [nb, m, k, n]) = canonical_copies::<T>(d, a, b);
    batched(&ta, &[nb, m, k], &tb, &[nb, k, n], out.slice::<T>(), gemm);
}

/// XLA `dot_general` of `ins[0]` and `ins[1]` into `out`: batch and
/// contracting axes as `d` names them, output `[batch.., lhs free..,
/// rhs free..]`. Dtypes as for [`matmul`]; also an f32 operand with an f16
/// one into f32 (an f16 -> f32 cast the executor folded into this product,
/// `widen_on_read.rs`): the f32 product of the widened operand.
///
/// # Errors
/// A dtype without a kernel (Bool, complex), or other mixed operands.
pub fn dot_general(d: &DotDims, ins: &[View], out: &mut ViewMut) -> KernelResult {
    let (a, b) = (&ins[0], &ins[1]);
    if a.dtype != b.dtype {
        return dot_general_widened(d, a, b, out);
    }
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
            dot_general_float::<T>(d, &i[0], &i[1], o);
            Ok(())
        }; T),
    }
}

/// Runs one GEMM per batch entry: entry `i` multiplies `a` at offset
/// `a_offs[i]` by `b` at `b_offs[i]` into the `i`-th `m x n` block of `c`.
/// Many small products split over threads by batch entry; large ones split
/// inside the GEMM. Products of 2 to `small_rows::MAX_ROWS` rows (a decode
/// step's attention over the KV cache) run `small_rows` where the type has
/// it: a GEMM's packing would cost about as much as their arithmetic, and
/// its sums are the same for either layout of `b`, so matmul and the
/// dot_general reading a transposed operand in place agree bit for bit.
fn gemm_batches<T: GemmFloat>(
    a: Strided<T>,
    a_offs: &[usize],
    b: Strided<T>,
    b_offs: &[usize],
    c: &mut [T],
) {
    match T::few_rows() {
        Some(product) if (2..=small_rows::MAX_ROWS).contains(&a.rows) => {
            batches_of(a, a_offs, b, b_offs, c, product)
        }
        _ => batches_of(a, a_offs, b, b_offs, c, T::gemm),
    }
}

/// [`gemm_batches`] with `product(a, b, c, threads)` for each entry.
fn batches_of<A: Sync, B: Sync, T: Pod>(
    a: Strided<A>,
    a_offs: &[usize],
    b: Strided<B>,
    b_offs: &[usize],
    c: &mut [T],
    product: impl Fn(Strided<A>, Strided<B>, &mut [T], usize) + Sync,
) {
    let mn = a.rows * b.cols;
    if mn == 0 {
        return;
    }
    let threads = num_threads();
    let one = |(i, ci): (usize, &mut [T]), threads: usize| {
        let ai = Strided {
            offset: a_offs[i],
            ..a
        };
        let bi = Strided {
            offset: b_offs[i],
            ..b
        };
        product(ai, bi, ci, threads)
    };
    let per = mn * a.cols;
    let nb = a_offs.len();
    if threads > 1 && nb > 1 && per < GEMM_GRAIN && per * nb >= GEMM_GRAIN {
        let groups = team::split(nb, threads, 1);
        let c = team::Disjoint::new(c);
        team::parallel_for(groups.len(), |p| {
            for i in groups[p].clone() {
                // SAFETY: each batch entry's block is written by one part.
                one((i, unsafe { c.range(i * mn..(i + 1) * mn) }), 1)
            }
        });
    } else {
        c.chunks_mut(mn).enumerate().for_each(|x| one(x, threads));
    }
}

/// How a numpy matmul maps onto GEMMs: one `m x k` by `k x n` product per
/// batch entry, at these element offsets of the operands. Batch dims
/// broadcast; a rhs without batch dims folds the lhs batch into the rows of
/// one GEMM.
struct MatmulPlan {
    m: usize,
    k: usize,
    n: usize,
    a_offs: Vec<usize>,
    b_offs: Vec<usize>,
}

fn matmul_plan(a_dims: &[usize], b_dims: &[usize]) -> MatmulPlan {
    let (ad, bd) = (matrix_dims(a_dims, true), matrix_dims(b_dims, false));
    let (ra, rb) = (ad.len(), bd.len());
    let (m, k, n) = (ad[ra - 2], ad[ra - 1], bd[rb - 1]);
    let (ba, bb) = (&ad[..ra - 2], &bd[..rb - 2]);
    let batch = broadcast_batch(ba, bb);
    let nb: usize = batch.iter().product();
    if bb.iter().product::<usize>() == 1 && ba.iter().product::<usize>() == nb {
        // Every lhs matrix meets the same rhs: one (nb * m) x k GEMM.
        return MatmulPlan {
            m: nb * m,
            k,
            n,
            a_offs: vec![0],
            b_offs: vec![0],
        };
    }
    let offsets = |dims: &[usize], size: usize| {
        let mut offs = Vec::with_capacity(nb);
        for_each_strided(&batch, &broadcast_strides(dims, &batch), 0, |_, p| {
            offs.push(p as usize * size)
        });
        offs
    };
    MatmulPlan {
        m,
        k,
        n,
        a_offs: offsets(ba, m * k),
        b_offs: offsets(bb, k * n),
    }
}

/// numpy matmul of floats.
fn matmul_float<T: GemmFloat>(a: &View, b: &View, out: &mut ViewMut) {
    let p = matmul_plan(a.dims, b.dims);
    let (xa, xb, c) = (a.slice::<T>(), b.slice::<T>(), out.slice::<T>());
    gemm_batches(
        Strided::row_major(xa, 0, p.m, p.k),
        &p.a_offs,
        Strided::row_major(xb, 0, p.k, p.n),
        &p.b_offs,
        c,
    );
}

/// numpy matmul of bf16 operands on the `vdpbf16ps` kernel, accumulated in
/// f32 and rounded once into a bf16 (or written to an f32) output. False,
/// with `out` untouched, when the CPU lacks AVX-512 BF16.
fn matmul_bf16(a: &View, b: &View, out: &mut ViewMut) -> bool {
    if !gemm_bf16::available() {
        return false;
    }
    let p = matmul_plan(a.dims, b.dims);
    let (xa, xb) = (a.slice::<u16>(), b.slice::<u16>());
    let mn = p.m * p.n;
    let mut acc = vec![0f32; mn * p.a_offs.len()];
    let threads = num_threads();
    for (i, ci) in acc.chunks_mut(mn.max(1)).enumerate() {
        let ai = Strided {
            offset: p.a_offs[i],
            ..Strided::row_major(xa, 0, p.m, p.k)
        };
        let bi = Strided {
            offset: p.b_offs[i],
            ..Strided::row_major(xb, 0, p.k, p.n)
        };
        gemm_bf16::gemm(ai, bi, ci, threads);
    }
    match out.dtype {
        DType::F32 => out.slice::<f32>().copy_from_slice(&acc),
        _ => out
            .slice::<half::bf16>()
            .iter_mut()
            .zip(&acc)
            .for_each(|(o, &x)| *o = half::bf16::from_f32(x)),
    }
    true
}

/// Size and stride of `axes` of a tensor (`dims`, element `strides`) read as
/// one row-major index, or `None` when they do not collapse to one stride.
fn merged_axis(axes: &[usize], dims: &[usize], strides: &[usize]) -> Option<(usize, usize)> {
    let size = axes.iter().map(|&a| dims[a]).product();
    let live: Vec<usize> = axes.iter().copied().filter(|&a| dims[a] != 1).collect();
    let collapses = live
        .windows(2)
        .all(|w| strides[w[0]] == strides[w[1]] * dims[w[1]]);
    collapses.then(|| (size, live.last().map_or(1, |&a| strides[a])))
}

/// Element offsets of each batch entry (row-major over `axes`).
fn batch_offsets(axes: &[usize], dims: &[usize], strides: &[usize]) -> Vec<usize> {
    let bdims: Vec<usize> = axes.iter().map(|&a| dims[a]).collect();
    let bstr: Vec<isize> = axes.iter().map(|&a| strides[a] as isize).collect();
    let mut offs = Vec::new();
    for_each_strided(&bdims, &bstr, 0, |_, p| offs.push(p as usize));
    offs
}

/// The two operands of one product in `a` / `b`: `shape` is `[m, lhs row
/// stride, k, lhs contraction stride, rhs contraction stride, n, rhs
/// column stride]`.
fn operands<'x, A, B>(
    a: &'x [A],
    b: &'x [B],
    shape: [usize; 7],
) -> (Strided<'x, A>, Strided<'x, B>) {
    let [m, sm, k, sak, sbk, n, sn] = shape;
    let lhs = Strided {
        data: a,
        offset: 0,
        rows: m,
        cols: k,
        row_stride: sm,
        col_stride: sak,
    };
    let rhs = Strided {
        data: b,
        offset: 0,
        rows: k,
        cols: n,
        row_stride: sbk,
        col_stride: sn,
    };
    (lhs, rhs)
}

/// How a dot_general reads both operands in place: the `operands` shape
/// and each batch entry's element offsets in `a` and `b`, or `None` when an
/// axis group does not collapse to one stride.
fn in_place_plan(d: &DotDims, a: &[usize], b: &[usize]) -> Option<InPlace> {
    let (fa, fb) = free_axes(d, a.len(), b.len());
    let (sa, sb) = (contiguous_strides(a), contiguous_strides(b));
    let (m, sm) = merged_axis(&fa, a, &sa)?;
    let (k, sak) = merged_axis(&d.lhs_contract, a, &sa)?;
    let (_, sbk) = merged_axis(&d.rhs_contract, b, &sb)?;
    let (n, sn) = merged_axis(&fb, b, &sb)?;
    Some(InPlace {
        shape: [m, sm, k, sak, sbk, n, sn],
        a_offs: batch_offsets(&d.lhs_batch, a, &sa),
        b_offs: batch_offsets(&d.rhs_batch, b, &sb),
    })
}

/// See [`in_place_plan`].
struct InPlace {
    shape: [usize; 7],
    a_offs: Vec<usize>,
    b_offs: Vec<usize>,
}

/// dot_general of an f32 lhs and an f16 rhs (or the reverse) into f32: a
/// cast the CPU executor folded into this product (`widen_on_read`). A
/// product of 2 to `small_rows::MAX_ROWS` rows whose operands read in
/// place (a decode step's attention over an f16 KV cache) widens the f16
/// elements as it loads them; any other widens the f16 operand first and
/// runs the f32 product. Either way the result is the f32 product of the
/// widened operand, bit for bit.
fn dot_general_widened(d: &DotDims, a: &View, b: &View, out: &mut ViewMut) -> KernelResult {
    use DType::{F16, F32};
    let small =
        |p: &InPlace| small_rows::available() && (2..=small_rows::MAX_ROWS).contains(&p.shape[0]);
    match (a.dtype, b.dtype, out.dtype) {
        (F32, F16, F32) => {
            if let Some(p) = in_place_plan(d, a.dims, b.dims).filter(small) {
                let (lhs, rhs) = operands(a.slice::<f32>(), b.slice::<f16>(), p.shape);
                let c = out.slice::<f32>();
                batches_of(lhs, &p.a_offs, rhs, &p.b_offs, c, small_rows::product);
                return Ok(());
            }
            let wide = widened(b);
            dot_general_float::<f32>(d, a, &wide.view(b.dims), out);
            Ok(())
        }
        (F16, F32, F32) => {
            let wide = widened(a);
            dot_general_float::<f32>(d, &wide.view(a.dims), b, out);
            Ok(())
        }
        (x, y, o) => Err(fail!(
            "dot_general: operands {x:?} and {y:?} into {o:?} \
             (of mixed operands only f32 with f16 into f32 runs)"
        )),
    }
}

/// An f16 operand widened to f32.
struct Widened(Vec<f32>);

/// `v`'s f16 elements as f32.
fn widened(v: &View) -> Widened {
    Widened(super::widen_f32(v))
}

impl Widened {
    /// The values as an f32 view of `dims`.
    fn view<'a>(&'a self, dims: &'a [usize]) -> View<'a> {
        // SAFETY: f32 has no padding and u8 alignment 1.
        let bytes =
            unsafe { std::slice::from_raw_parts(self.0.as_ptr() as *const u8, self.0.len() * 4) };
        View {
            dims,
            dtype: DType::F32,
            bytes,
        }
    }
}

/// dot_general of floats, reading both operands in place when their axis
/// groups collapse (always for plain and transposed matmuls).
fn dot_general_float<T: GemmFloat>(d: &DotDims, a: &View, b: &View, out: &mut ViewMut) {
    if let Some(p) = in_place_plan(d, a.dims, b.dims) {
        let (lhs, rhs) = operands(a.slice::<T>(), b.slice::<T>(), p.shape);
        gemm_batches(lhs, &p.a_offs, rhs, &p.b_offs, out.slice::<T>());
        return;
    }
    // Scattered axes: copy into [batch, m, k] x [batch, k, n] first.
    let (ta, tb, [nb, m, k, n]) = canonical_copies::<T>(d, a, b);
    let oa: Vec<usize> = (0..nb).map(|i| i * m * k).collect();
    let ob: Vec<usize> = (0..nb).map(|i| i * k * n).collect();
    gemm_batches(
        Strided::row_major(&ta, 0, m, k),
        &oa,
        Strided::row_major(&tb, 0, k, n),
        &ob,
        out.slice::<T>(),
    );
}
