//! Kernels of the fused composites `Op::AddNorm` and `Op::GatedMatMul`.
//!
//! Each is built from the very kernels its unfused nodes run (the
//! elementwise add, the native layer / rms norm, the matmul, the region
//! epilogue), so the result is bit-identical to the unfused graph on this
//! backend; what fusion saves is the intermediate buffer and a pass over
//! memory (add + norm work one cache-sized block of rows at a time).

use super::{elementwise, linalg, norm, region, KernelResult, View, ViewMut};
use crate::team;
use rlx_ir::op::{BinaryOp, ChainOperand, ChainStep, UnaryOp};

/// Bytes of rows add + norm handles at once (the sum block stays in L1/L2).
const BLOCK_BYTES: usize = 32 * 1024;

/// Elements from which add + norm splits its blocks of rows over threads.
const PARALLEL_GRAIN: usize = 1 << 15;

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
        return Err(format!("add_norm: {} inputs", ins.len()));
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
        return Err(format!(
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
        return Err(format!(
            "add_norm: output {:?} {}, expected {want:?} {dtype}",
            out.dims, out.dtype
        ));
    }
    if n == 0 || row == 0 {
        return Ok(());
    }
    let rows_per_block = (BLOCK_BYTES / (row * w)).max(1);
    let (sum_part, norm_part) = if keep_sum {
        let (s, y) = out.bytes.split_at_mut(n * w);
        (Some(team::Disjoint::new(s)), team::Disjoint::new(y))
    } else {
        (None, team::Disjoint::new(&mut out.bytes[..]))
    };
    let rows = n / row;
    let parts = if n >= PARALLEL_GRAIN {
        team::threads().min(rows.div_ceil(rows_per_block))
    } else {
        1
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

/// `Op::GatedMatMul`: `act(x @ w_gate) * (x @ w_up)`; the gate product is
/// computed into the output, the up product into scratch, and the
/// activation and product run as a region epilogue over the output.
pub fn gated_matmul(act: UnaryOp, ins: &[View], out: &mut ViewMut) -> KernelResult {
    if ins.len() != 3 {
        return Err(format!("gated_matmul: {} inputs", ins.len()));
    }
    linalg::matmul(&ins[..2], out)?;
    let len = out.bytes.len();
    let mut up = scratch(len);
    let up_bytes = scratch_bytes(&mut up, len);
    linalg::matmul(
        &[ins[0], ins[2]],
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
