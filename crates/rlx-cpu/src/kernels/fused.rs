//! Kernels of the fused composites `Op::AddNorm` and `Op::GatedMatMul`.
//!
//! Each is built from the very kernels its unfused nodes run (the
//! elementwise add, the native layer / rms norm, the matmul, the region
//! epilogue), so the result is bit-identical to the unfused graph on this
//! backend; what fusion saves is the intermediate buffer and a pass over
//! memory (add + norm work one cache-sized block of rows at a time).

use super::gemm::{self, GemmFloat, Strided, GEMM_GRAIN};
use super::gemm_packed;
use super::{elementwise, linalg, norm, region, KernelResult, View, ViewMut};
use crate::team;
use rlx_ir::op::{BinaryOp, ChainOperand, ChainStep, UnaryOp};
use rlx_ir::{DType, Op};

/// Bytes of rows add + norm handles at once (the sum block stays in L1/L2).
const BLOCK_BYTES: usize = 32 * 1024;

/// Elements from which add + norm splits its rows over threads: a
/// `[16, 384]` add + layer norm takes ~9 us on one core here, a team job
/// about one.
const PARALLEL_GRAIN: usize = 1 << 12;

/// An 8-byte aligned scratch buffer of `len` bytes.
fn scratch(len: usize) -> Vec<u64> {
    vec![0; len.div_ceil(8)]
}

fn scratch_bytes(s: &mut [u64], len: usize) -> &mut [u8] {
    // SAFETY: u64 has no padding; any byte view of it is valid, and the borrow is unique.
    let all = unsafe { std::slice::from_raw_parts_mut(s.as_mut_ptr() as *mut u8, s.len() * 8) };
    &mut all[..len]
}

/// `Op::AddNorm`: `norm(a + b)`, or with `keep_sum` the `[2, ..]` stack of
/// the sum and the norm.
pub fn add_norm(
    axis: usize,
    eps: f64,
    rms: bool,
    keep_sum: bool,
    ins: &[View],
    out: &mut ViewMut,
) -> KernelResult {
    let ins: Vec<Option<View>> = ins.iter().copied().map(Some).collect();
    add_norm_in_place(axis, eps, rms, keep_sum, &ins, out)
}

/// [`add_norm`] where an operand given as `None` is `out`'s current value
/// (the memory plan lets the node overwrite a dying operand of its shape):
/// each block of rows of it is copied out before the block is overwritten.
pub fn add_norm_in_place(
    axis: usize,
    eps: f64,
    rms: bool,
    keep_sum: bool,
    ins: &[Option<View>],
    out: &mut ViewMut,
) -> KernelResult {
    if ins.len() < 2 || ins[2..].iter().any(Option::is_none) {
        return Err(fail!("add_norm: {} inputs", ins.len()));
    }
    let given = ins[..2].iter().flatten().next();
    let (dims, dtype) = match given {
        Some(v) => (v.dims, v.dtype),
        None => (out.dims, out.dtype),
    };
    let of = |v: &Option<View>| {
        v.as_ref()
            .map_or((dims.to_vec(), dtype), |v| (v.dims.to_vec(), v.dtype))
    };
    if of(&ins[0]) != of(&ins[1]) || axis >= dims.len().max(1) || (keep_sum && given.is_none()) {
        return Err(fail!(
            "add_norm: operands {:?} and {:?}, axis {axis}",
            of(&ins[0]),
            of(&ins[1])
        ));
    }
    let params: Vec<View> = ins[2..].iter().flatten().copied().collect();
    let w = dtype.size_bytes();
    let tail = &dims[axis..];
    let row: usize = tail.iter().product();
    let n: usize = dims.iter().product();
    let mut want = if keep_sum { vec![2] } else { vec![] };
    want.extend_from_slice(dims);
    if out.dims != want.as_slice()
        || out.dtype != dtype
        || out.bytes.len() != n * w * (1 + keep_sum as usize)
    {
        return Err(fail!(
            "add_norm: output {:?} {}, expected {want:?} {dtype}",
            out.dims,
            out.dtype
        ));
    }
    if n == 0 || row == 0 {
        return Ok(());
    }
    let rows = n / row;
    let parts = if n >= PARALLEL_GRAIN {
        team::threads().min(rows)
    } else {
        1
    };
    // Blocks no taller than a part's share, so that few rows still split.
    let rows_per_block = (BLOCK_BYTES / (row * w)).clamp(1, rows.div_ceil(parts));
    let (sum_part, norm_part) = if keep_sum {
        let (s, y) = out.bytes.split_at_mut(n * w);
        (Some(team::Disjoint::new(s)), team::Disjoint::new(y))
    } else {
        (None, team::Disjoint::new(&mut out.bytes[..]))
    };
    let ranges = team::split(rows, parts, rows_per_block);
    let block = rows_per_block * row * w;
    // Each part runs its blocks of rows with its own scratch.
    team::try_parallel_for(ranges.len(), |p| {
        let mut own = if sum_part.is_none() {
            scratch(block)
        } else {
            Vec::new()
        };
        // Operands read through the output: one block copied out at a time.
        let mut from_out: Vec<Vec<u64>> = ins[..2]
            .iter()
            .map(|v| {
                if v.is_none() {
                    scratch(block)
                } else {
                    Vec::new()
                }
            })
            .collect();
        let (lo, hi) = (ranges[p].start, ranges[p].end);
        let mut r0 = lo;
        while r0 < hi {
            let nr = rows_per_block.min(hi - r0);
            let span = r0 * row * w..(r0 + nr) * row * w;
            let mut block_dims = vec![nr];
            block_dims.extend_from_slice(tail);
            // SAFETY: the parts' row ranges, and so these spans, are disjoint.
            let norm_block = unsafe { norm_part.range(span.clone()) };
            let sum: &mut [u8] = match &sum_part {
                // SAFETY: as above.
                Some(s) => unsafe { s.range(span.clone()) },
                None => scratch_bytes(&mut own, nr * row * w),
            };
            for (v, buf) in ins[..2].iter().zip(from_out.iter_mut()) {
                if v.is_none() {
                    scratch_bytes(buf, span.len()).copy_from_slice(norm_block);
                }
            }
            let operands: Vec<View> = ins[..2]
                .iter()
                .zip(from_out.iter_mut())
                .map(|(v, buf)| View {
                    dims: &block_dims,
                    dtype,
                    bytes: match v {
                        Some(v) => &v.bytes[span.clone()],
                        None => scratch_bytes(buf, span.len()),
                    },
                })
                .collect();
            elementwise::binary(
                BinaryOp::Add,
                &operands,
                &mut ViewMut {
                    dims: &block_dims,
                    dtype,
                    bytes: sum,
                },
            )?;
            let mut norm_ins = vec![View {
                dims: &block_dims,
                dtype,
                bytes: sum,
            }];
            norm_ins.extend_from_slice(&params);
            let mut y = ViewMut {
                dims: &block_dims,
                dtype,
                bytes: norm_block,
            };
            if rms {
                norm::rms_norm(eps, &norm_ins, &mut y)?;
            } else {
                norm::layer_norm(1, eps, &norm_ins, &mut y)?;
            }
            r0 += nr;
        }
        Ok(())
    })
}

/// `Op::FusedMatMul`: `x @ w` then the elementwise `epilogue` over it.
/// A tall f32 product with 2-d weights runs as blocks of rows over the
/// thread team, each block's epilogue right after its GEMM while the block
/// is still in cache; anything else runs the whole product, then the
/// epilogue over the whole output.
pub fn fused_matmul(epilogue: &[ChainStep], ins: &[View], out: &mut ViewMut) -> KernelResult {
    if ins.len() < 2 {
        return Err(fail!("fused_matmul: {} inputs", ins.len()));
    }
    if let Some(done) = fused_matmul_by_rows(epilogue, ins, None, out) {
        return done;
    }
    linalg::matmul(&ins[..2], out)?;
    region::epilogue(epilogue, &ins[2..], out)
}

/// Rows per block of [`fused_matmul_by_rows`]: its output block (up to
/// 128 x 1536 f32, 768 KiB) stays in L2 for the epilogue.
const ROW_BLOCK: usize = 128;

/// A tall f32 product with an epilogue, as blocks of [`ROW_BLOCK`] rows
/// over the thread team, each block's product on one thread (faer, or the
/// packed-weight kernel when the weight is packed in panels of `packed`
/// columns) followed by its epilogue while the block is in L2. `None` when
/// the product is not tall, or runs on one thread.
fn fused_matmul_by_rows(
    epilogue: &[ChainStep],
    ins: &[View],
    packed: Option<usize>,
    out: &mut ViewMut,
) -> Option<KernelResult> {
    let (a, b) = (&ins[0], &ins[1]);
    let f32s = [a.dtype, b.dtype, out.dtype]
        .iter()
        .all(|&d| d == DType::F32);
    if !f32s || b.dims.len() != 2 || a.dims.len() < 2 {
        return None;
    }
    let (k, n) = (b.dims[0], b.dims[1]);
    let (lead, last) = a.dims.split_at(a.dims.len() - 1);
    let m: usize = lead.iter().product();
    let threads = team::threads();
    let tall = m * n * k >= GEMM_GRAIN && gemm::splits_by_rows(m, n);
    if last != [k] || out.numel() != m * n || threads <= 1 || !tall {
        return None;
    }
    // Extra inputs either cover the output (sliced by rows) or repeat one
    // row / a scalar (read whole by every block).
    let full: Vec<bool> = ins[2..].iter().map(|v| v.dims == out.dims).collect();
    let repeats = |v: &View| v.numel() == 1 || (v.numel() == n && v.dims.last() == Some(&n));
    if ins[2..].iter().zip(&full).any(|(v, &f)| !f && !repeats(v)) {
        return None;
    }
    let (xa, xb) = (a.slice::<f32>(), b.slice::<f32>());
    let rows = ROW_BLOCK.min(m.div_ceil(threads)).max(1);
    let blocks = team::split(m, m.div_ceil(rows), 1);
    let c = team::Disjoint::new(out.slice::<f32>());
    Some(team::try_parallel_for(blocks.len(), |p| {
        let r = blocks[p].clone();
        // SAFETY: the blocks' row ranges are disjoint.
        let cb = unsafe { c.range(r.start * n..r.end * n) };
        let xr = &xa[r.start * k..r.end * k];
        match packed {
            Some(nr) => gemm_packed::matmul(xr, r.len(), k, xb, n, nr, cb, 1),
            None => f32::gemm(
                Strided::row_major(xr, 0, r.len(), k),
                Strided::row_major(xb, 0, k, n),
                cb,
                1,
            ),
        }
        let dims = [r.len(), n];
        let extra: Vec<View> = ins[2..]
            .iter()
            .zip(&full)
            .map(|(v, &f)| {
                if f {
                    let w = v.dtype.size_bytes();
                    View {
                        dims: &dims,
                        dtype: v.dtype,
                        bytes: &v.bytes[r.start * n * w..r.end * n * w],
                    }
                } else {
                    *v
                }
            })
            .collect();
        region::epilogue(
            epilogue,
            &extra,
            &mut ViewMut {
                dims: &dims,
                dtype: DType::F32,
                bytes: super::f32_bytes_mut(cb),
            },
        )
    }))
}

/// How a matmul of `x` (`[.., M, K]`) by packed weights `w` (`[.., K, N]`,
/// one packed matrix per leading index) maps onto single-matrix products:
/// `(matrices of w, M, K, N, whether x has one block per matrix)`. Either
/// `w` is one matrix (every row of `x` is a row of the product), or `x` is
/// one `[M, K]` matrix (broadcast over `w`'s stack), or both have the same
/// leading dims. `None` for any other shape, or for products of fewer than
/// [`gemm_packed::PACKED_MIN_ROWS`] rows (the weight stays unpacked).
pub(crate) fn packed_product_shape(
    x: &[usize],
    w: &[usize],
    out: &[usize],
) -> Option<(usize, usize, usize, usize, bool)> {
    if x.is_empty() || w.len() < 2 {
        return None;
    }
    let (k, n) = (w[w.len() - 2], w[w.len() - 1]);
    let batch: usize = w[..w.len() - 2].iter().product();
    if x.last() != Some(&k) || k == 0 || n == 0 {
        return None;
    }
    let rows: usize = x.iter().product::<usize>() / k;
    let (m, per_matrix) = if batch == 1 {
        (rows, false)
    } else if x.len() == 2 {
        (x[0], false)
    } else if x.len() == w.len() && x[..x.len() - 2] == w[..w.len() - 2] {
        (x[x.len() - 2], true)
    } else {
        return None;
    };
    let numel: usize = out.iter().product();
    let fits = numel == batch * m * n && out.last() == Some(&n);
    (fits && m >= gemm_packed::PACKED_MIN_ROWS).then_some((batch, m, k, n, per_matrix))
}

/// `x @ w` where `w` (f32) is packed in panels of `packed` columns
/// ([`gemm_packed`], shapes as [`packed_product_shape`]), or a plain matmul
/// when `packed` is `None`.
fn product(x: &View, w: &View, packed: Option<usize>, out: &mut ViewMut) -> KernelResult {
    let Some(nr) = packed else {
        return linalg::matmul(&[*x, *w], out);
    };
    let f32s = [x.dtype, w.dtype, out.dtype]
        .iter()
        .all(|&d| d == DType::F32);
    let shape = packed_product_shape(x.dims, w.dims, out.dims).filter(|_| f32s);
    let Some((batch, m, k, n, per_matrix)) = shape else {
        return Err(fail!(
            "packed matmul: {:?} {} @ {:?} {} -> {:?} {}",
            x.dims,
            x.dtype,
            w.dims,
            w.dtype,
            out.dims,
            out.dtype
        ));
    };
    let (xs, ws, os) = (x.slice::<f32>(), w.slice::<f32>(), out.slice::<f32>());
    if !per_matrix {
        // One `x` for every matrix of the stack (stacked q / k / v).
        gemm_packed::matmul_stacked(xs, m, k, ws, batch, n, nr, os, team::threads());
        return Ok(());
    }
    let blocks = xs.chunks_exact(m * k).zip(ws.chunks_exact(k * n));
    for ((xg, wg), og) in blocks.zip(os.chunks_exact_mut(m * n)) {
        gemm_packed::matmul(xg, m, k, wg, n, nr, og, team::threads());
    }
    Ok(())
}

/// `Op::MatMul`, `Op::FusedMatMul` or `Op::GatedMatMul` whose weight
/// operands are params the executor packed in panels of `nr` columns
/// ([`gemm_packed`]); the same epilogues as the unpacked kernels.
pub(crate) fn matmul_packed_weights(
    op: &Op,
    nr: usize,
    ins: &[View],
    out: &mut ViewMut,
) -> KernelResult {
    if ins.len() < 2 {
        return Err(fail!("{}: {} inputs", op.mnemonic(), ins.len()));
    }
    match op {
        Op::MatMul => product(&ins[0], &ins[1], Some(nr), out),
        Op::FusedMatMul { epilogue } => {
            if let Some(done) = fused_matmul_by_rows(epilogue, ins, Some(nr), out) {
                return done;
            }
            product(&ins[0], &ins[1], Some(nr), out)?;
            region::epilogue(epilogue, &ins[2..], out)
        }
        Op::GatedMatMul { act } => gated(*act, ins, Some(nr), out),
        _ => Err(fail!("{} has no packed weights", op.mnemonic())),
    }
}

/// `Op::GatedMatMul`: `act(x @ w_gate) * (x @ w_up)`; the gate product is
/// computed into the output, the up product into scratch, and the
/// activation and product run as a region epilogue over the output.
pub(crate) fn gated_matmul(act: UnaryOp, ins: &[View], out: &mut ViewMut) -> KernelResult {
    gated(act, ins, None, out)
}

fn gated(act: UnaryOp, ins: &[View], packed: Option<usize>, out: &mut ViewMut) -> KernelResult {
    if ins.len() != 3 {
        return Err(fail!("gated_matmul: {} inputs", ins.len()));
    }
    product(&ins[0], &ins[1], packed, out)?;
    let len = out.bytes.len();
    let mut up = scratch(len);
    let up_bytes = scratch_bytes(&mut up, len);
    product(
        &ins[0],
        &ins[2],
        packed,
        &mut ViewMut {
            dims: out.dims,
            dtype: out.dtype,
            bytes: up_bytes,
        },
    )?;
    let up_view = View {
        dims: out.dims,
        dtype: out.dtype,
        bytes: up_bytes,
    };
    let steps = [
        ChainStep::Unary(act, ChainOperand::Input(0)),
        ChainStep::Binary(BinaryOp::Mul, ChainOperand::Step(0), ChainOperand::Input(1)),
    ];
    region::epilogue(&steps, &[up_view], out)
}
