//! Fused elementwise regions: the steps run tile by tile over the output,
//! so intermediates live in a few cache-sized scratch tiles instead of
//! whole buffers. Each step calls the same elementwise kernel as its
//! unfused node, on a 1-D tile, so the result is bit-identical to running
//! the steps as separate nodes.

use super::{elementwise, KernelResult, View, ViewMut};
use rlx_ir::op::{ChainOperand, ChainStep};
use rlx_ir::DType;

/// Elements per tile: small enough that a tile per step stays in L1/L2.
const TILE: usize = 1024;

/// Walks an input broadcast to the output dims, one element at a time.
struct BroadcastCursor {
    dims: Vec<usize>,
    strides: Vec<isize>,
    idx: Vec<usize>,
    off: isize,
}

impl BroadcastCursor {
    fn new(in_dims: &[usize], out_dims: &[usize]) -> Self {
        BroadcastCursor {
            dims: out_dims.to_vec(),
            strides: super::broadcast_strides(in_dims, out_dims),
            idx: vec![0; out_dims.len()],
            off: 0,
        }
    }

    /// The current element offset, then advance.
    fn next(&mut self) -> usize {
        let here = self.off as usize;
        for ax in (0..self.dims.len()).rev() {
            self.idx[ax] += 1;
            self.off += self.strides[ax];
            if self.idx[ax] < self.dims[ax] {
                return here;
            }
            self.off -= self.strides[ax] * self.dims[ax] as isize;
            self.idx[ax] = 0;
        }
        here
    }
}

/// An 8-byte aligned scratch tile.
struct Scratch(Vec<u64>);

impl Scratch {
    /// Room for `elems` values of `width` bytes.
    fn new(elems: usize, width: usize) -> Self {
        Scratch(vec![0; (elems * width).div_ceil(8)])
    }
    fn bytes(&self, len: usize) -> &[u8] {
        // SAFETY: u64 has no padding; any byte view of it is valid.
        let all =
            unsafe { std::slice::from_raw_parts(self.0.as_ptr() as *const u8, self.0.len() * 8) };
        &all[..len]
    }
    fn bytes_mut(&mut self, len: usize) -> &mut [u8] {
        // SAFETY: as above, and the borrow is unique.
        let all = unsafe {
            std::slice::from_raw_parts_mut(self.0.as_mut_ptr() as *mut u8, self.0.len() * 8)
        };
        &mut all[..len]
    }
}

fn step_dtype(step: &ChainStep, inputs: &[DType], steps: &[DType]) -> DType {
    let of = |o: ChainOperand| match o {
        ChainOperand::Input(i) => inputs[i],
        ChainOperand::Step(j) => steps[j],
    };
    match *step {
        ChainStep::Unary(_, x) => of(x),
        ChainStep::Binary(_, a, _) => of(a),
        ChainStep::Compare(..) => DType::Bool,
        ChainStep::Select(_, a, _) => of(a),
        ChainStep::Cast(_, to) => to,
    }
}

fn run_step(step: &ChainStep, ins: &[View], out: &mut ViewMut) -> KernelResult {
    match *step {
        ChainStep::Unary(u, _) => elementwise::unary(u, ins, out),
        ChainStep::Binary(b, _, _) => elementwise::binary(b, ins, out),
        ChainStep::Compare(c, _, _) => elementwise::compare(c, ins, out),
        ChainStep::Select(..) => elementwise::select(ins, out),
        ChainStep::Cast(..) => elementwise::cast(ins, out),
    }
}

/// Where a region input's tile comes from.
enum Source {
    /// Already at the output dims: read in place.
    Direct,
    /// Broadcast: gathered per tile.
    Gather(BroadcastCursor, Scratch),
    /// Broadcast by repeating it whole (a bias row): read in place, the
    /// step kernels broadcast it over the tile's rows.
    Repeat,
    /// The output buffer itself (an epilogue's input): copied out per tile
    /// before the tile is overwritten.
    Output(Scratch),
}

/// Runs an `Op::ElementwiseRegion`.
pub fn region(steps: &[ChainStep], ins: &[View], out: &mut ViewMut) -> KernelResult {
    let ins: Vec<Option<View>> = ins.iter().copied().map(Some).collect();
    run_region(steps, &ins, out)
}

/// Runs `steps` over `out` in place: region input 0 is `out`'s current
/// value (e.g. a matmul result), inputs `1..` are `extra`.
pub fn epilogue(steps: &[ChainStep], extra: &[View], out: &mut ViewMut) -> KernelResult {
    let ins: Vec<Option<View>> = std::iter::once(None)
        .chain(extra.iter().copied().map(Some))
        .collect();
    run_region(steps, &ins, out)
}

/// Runs `steps` where the inputs given as `None` are `out`'s current value
/// (a buffer the memory plan lets the region overwrite in place: it has
/// the output's dims and dtype, and this is its last reader). Each tile of
/// such an input is copied out before the tile is overwritten.
pub fn in_place(steps: &[ChainStep], ins: &[Option<View>], out: &mut ViewMut) -> KernelResult {
    run_region(steps, ins, out)
}

/// The one-step region of a lone elementwise op over its inputs, if it is one.
pub fn steps_of_op(op: &rlx_ir::Op, arity: usize) -> Option<Vec<ChainStep>> {
    use rlx_ir::Op;
    let i = ChainOperand::Input;
    let step = match *op {
        Op::Unary(u) if arity == 1 => ChainStep::Unary(u, i(0)),
        Op::Binary(b) if arity == 2 => ChainStep::Binary(b, i(0), i(1)),
        Op::Compare(c) if arity == 2 => ChainStep::Compare(c, i(0), i(1)),
        Op::Select if arity == 3 => ChainStep::Select(i(0), i(1), i(2)),
        Op::ElementwiseRegion { ref steps } => return Some(steps.clone()),
        _ => return None,
    };
    Some(vec![step])
}

fn run_region(steps: &[ChainStep], ins: &[Option<View>], out: &mut ViewMut) -> KernelResult {
    // Inputs that repeat whole with one period P (bias rows, scalars) let
    // the tiles be [rows, P] blocks the binary kernels broadcast over
    // directly, when only binary / compare steps read those inputs.
    let period = row_period(steps, ins, out.dims);
    let gathers = ins.iter().flatten().any(|v| v.dims != out.dims);
    if period.is_none() && gathers {
        if let Some(done) = run_per_leading_slice(steps, ins, out) {
            return done;
        }
    }
    let out_dims = out.dims.to_vec();
    let n: usize = out_dims.iter().product();
    let in_dtypes: Vec<DType> = ins
        .iter()
        .map(|v| v.as_ref().map_or(out.dtype, |v| v.dtype))
        .collect();
    let mut dtypes: Vec<DType> = Vec::with_capacity(steps.len());
    for s in steps {
        let d = step_dtype(s, &in_dtypes, &dtypes);
        dtypes.push(d);
    }
    if dtypes.last() != Some(&out.dtype) {
        return Err(format!(
            "region result is {:?} but the output is {}",
            dtypes.last(),
            out.dtype
        ));
    }
    let tile_rows = period.map_or(TILE, |p| (TILE / p).max(1));
    let tile_elems = tile_rows * period.unwrap_or(1);
    let mut sources: Vec<Source> = ins
        .iter()
        .map(|v| match v {
            None => Source::Output(Scratch::new(tile_elems, out.dtype.size_bytes())),
            Some(v) if v.dims == out_dims.as_slice() => Source::Direct,
            Some(_) if period.is_some() => Source::Repeat,
            Some(v) => Source::Gather(
                BroadcastCursor::new(v.dims, &out_dims),
                Scratch::new(tile_elems, v.dtype.size_bytes()),
            ),
        })
        .collect();
    let mut step_tiles: Vec<Scratch> = dtypes[..dtypes.len() - 1]
        .iter()
        .map(|d| Scratch::new(tile_elems, d.size_bytes()))
        .collect();

    let mut start = 0;
    while start < n {
        let len = tile_elems.min(n - start);
        let tile_dims: Vec<usize> = match period {
            Some(p) => vec![len / p, p],
            None => vec![len],
        };
        for (i, src) in sources.iter_mut().enumerate() {
            let w = in_dtypes[i].size_bytes();
            match src {
                Source::Direct | Source::Repeat => {}
                Source::Gather(cur, buf) => {
                    let v = ins[i].as_ref().expect("a gathered input is given");
                    gather(v, cur, buf.bytes_mut(len * w), len)
                }
                Source::Output(buf) => buf
                    .bytes_mut(len * w)
                    .copy_from_slice(&out.bytes[start * w..(start + len) * w]),
            }
        }
        for (k, step) in steps.iter().enumerate() {
            // A step reads only inputs and earlier steps, so its own tile is free to write.
            let (earlier, own) = step_tiles.split_at_mut(k);
            let operand_views: Vec<View> = step
                .operands()
                .iter()
                .map(|o| match *o {
                    ChainOperand::Input(i) => {
                        let w = in_dtypes[i].size_bytes();
                        match &sources[i] {
                            Source::Direct => {
                                let v = ins[i].as_ref().expect("a direct input is given");
                                View {
                                    dims: &tile_dims,
                                    dtype: in_dtypes[i],
                                    bytes: &v.bytes[start * w..(start + len) * w],
                                }
                            }
                            Source::Repeat => {
                                // Flattened to its period (or a scalar), which
                                // broadcasts over the [rows, P] tile.
                                let v = ins[i].as_ref().expect("a repeated input is given");
                                View {
                                    dims: if v.numel() == 1 {
                                        &[1]
                                    } else {
                                        &tile_dims[1..]
                                    },
                                    ..*v
                                }
                            }
                            Source::Gather(_, buf) | Source::Output(buf) => View {
                                dims: &tile_dims,
                                dtype: in_dtypes[i],
                                bytes: buf.bytes(len * w),
                            },
                        }
                    }
                    ChainOperand::Step(j) => View {
                        dims: &tile_dims,
                        dtype: dtypes[j],
                        bytes: earlier[j].bytes(len * dtypes[j].size_bytes()),
                    },
                })
                .collect();
            let w = dtypes[k].size_bytes();
            let bytes = match own.first_mut() {
                Some(tile) => tile.bytes_mut(len * w),
                None => &mut out.bytes[start * w..(start + len) * w],
            };
            let mut o = ViewMut {
                dims: &tile_dims,
                dtype: dtypes[k],
                bytes,
            };
            run_step(step, &operand_views, &mut o)?;
        }
        start += len;
    }
    Ok(())
}

/// The one period P of the broadcast inputs when every one of them repeats
/// whole with period P or 1 (at least one with P > 1 or all scalars) and
/// only binary / compare steps, which broadcast, read them.
/// A region whose broadcast inputs repeat only within each slice of the
/// leading axis (stacked biases `[B, 1, P]` over `[B, M, P]`, as the
/// shared-input fusion makes them) runs slice by slice, so that every slice
/// takes the periodic fast path instead of gathering element by element.
/// `None` when that does not apply.
fn run_per_leading_slice(
    steps: &[ChainStep],
    ins: &[Option<View>],
    out: &mut ViewMut,
) -> Option<KernelResult> {
    let (rank, slices) = (out.dims.len(), *out.dims.first()?);
    if rank < 2 || slices < 2 {
        return None;
    }
    let inner = &out.dims[1..];
    // Per input: its slice dims and the byte step between slices (0: the
    // same data for every slice).
    let mut layout: Vec<Option<(&[usize], usize)>> = Vec::with_capacity(ins.len());
    for v in ins {
        layout.push(match v {
            None => None,
            Some(v) if v.dims.len() < rank => Some((v.dims, 0)),
            Some(v) => {
                let bytes = v.bytes.len() / v.dims[0].max(1);
                match v.dims[0] {
                    d if d == slices => Some((&v.dims[1..], bytes)),
                    1 => Some((&v.dims[1..], 0)),
                    _ => return None,
                }
            }
        });
    }
    let out_step = out.bytes.len() / slices;
    let slice_ins = |b: usize| -> Vec<Option<View>> {
        ins.iter()
            .zip(&layout)
            .map(|(v, l)| {
                let (v, (dims, step)) = (v.as_ref()?, (*l)?);
                let len = v.bytes.len() - if step == 0 { 0 } else { step * (slices - 1) };
                Some(View {
                    dims,
                    dtype: v.dtype,
                    bytes: &v.bytes[b * step..b * step + len],
                })
            })
            .collect()
    };
    row_period(steps, &slice_ins(0), inner)?;
    for b in 0..slices {
        let mut slice_out = ViewMut {
            dims: inner,
            dtype: out.dtype,
            bytes: &mut out.bytes[b * out_step..(b + 1) * out_step],
        };
        if let Err(e) = run_region(steps, &slice_ins(b), &mut slice_out) {
            return Some(Err(e));
        }
    }
    Some(Ok(()))
}

fn row_period(steps: &[ChainStep], ins: &[Option<View>], out_dims: &[usize]) -> Option<usize> {
    let mut period = None;
    for (i, v) in ins.iter().enumerate() {
        let Some(v) = v else { continue };
        if v.dims == out_dims {
            continue;
        }
        let p = elementwise::repeat_period(v.dims, out_dims)?;
        let read_elsewise = steps.iter().any(|s| {
            !matches!(s, ChainStep::Binary(..) | ChainStep::Compare(..))
                && s.operands().contains(&ChainOperand::Input(i))
        });
        if read_elsewise {
            return None;
        }
        period = match period {
            None | Some(1) => Some(p),
            Some(q) if p == 1 || p == q => Some(q),
            Some(_) => return None,
        };
    }
    period
}

fn gather(v: &View, cur: &mut BroadcastCursor, dst: &mut [u8], len: usize) {
    let w = v.dtype.size_bytes();
    for k in 0..len {
        let p = cur.next();
        dst[k * w..(k + 1) * w].copy_from_slice(&v.bytes[p * w..(p + 1) * w]);
    }
}

#[cfg(test)]
mod tests {
    //! Broadcast regions against explicit index loops (the numpy broadcasting
    //! rule written out per element).
    use super::*;
    use crate::kernels::{f32_bytes, f32_bytes_mut};
    use rlx_ir::op::BinaryOp;

    fn values(n: usize, seed: usize) -> Vec<f32> {
        (0..n)
            .map(|i| ((i * 7 + seed * 13) % 23) as f32 * 0.25 - 2.0)
            .collect()
    }

    /// `(in0 * in1) + in2` over `out_dims`, inputs of the given dims.
    fn mul_add(dims: [&[usize]; 3], out_dims: &[usize]) -> Vec<f32> {
        let n = |d: &[usize]| d.iter().product::<usize>();
        let data: Vec<Vec<f32>> = (0..3).map(|i| values(n(dims[i]), i)).collect();
        let ins: Vec<View> = (0..3)
            .map(|i| View {
                dims: dims[i],
                dtype: DType::F32,
                bytes: f32_bytes(&data[i]),
            })
            .collect();
        let mut y = vec![0f32; n(out_dims)];
        let steps = [
            ChainStep::Binary(
                BinaryOp::Mul,
                ChainOperand::Input(0),
                ChainOperand::Input(1),
            ),
            ChainStep::Binary(BinaryOp::Add, ChainOperand::Step(0), ChainOperand::Input(2)),
        ];
        let mut out = ViewMut {
            dims: out_dims,
            dtype: DType::F32,
            bytes: f32_bytes_mut(&mut y),
        };
        region(&steps, &ins, &mut out).unwrap();
        y
    }

    /// Element `flat` of `out_dims` read from an input of `dims` broadcast to it.
    fn at(data: &[f32], dims: &[usize], out_dims: &[usize], flat: usize) -> f32 {
        let mut idx = vec![0; out_dims.len()];
        let mut r = flat;
        for ax in (0..out_dims.len()).rev() {
            idx[ax] = r % out_dims[ax];
            r /= out_dims[ax];
        }
        let off = out_dims.len() - dims.len();
        let mut p = 0;
        for (ax, &d) in dims.iter().enumerate() {
            p = p * d + if d == 1 { 0 } else { idx[ax + off] };
        }
        data[p]
    }

    fn check(dims: [&[usize]; 3], out_dims: &[usize]) {
        let got = mul_add(dims, out_dims);
        let data: Vec<Vec<f32>> = (0..3)
            .map(|i| values(dims[i].iter().product(), i))
            .collect();
        for (k, g) in got.iter().enumerate() {
            let [a, b, c] = [0, 1, 2].map(|i| at(&data[i], dims[i], out_dims, k));
            assert_eq!(*g, a * b + c, "element {k} of {out_dims:?} from {dims:?}");
        }
    }

    #[test]
    fn repeated_rows_scalars_and_other_broadcasts() {
        // Multi-axis repeat (period 64 over [rows, 64] tiles), larger than a tile.
        check([&[4, 2, 32], &[2, 32], &[1, 2, 32]], &[4, 2, 32]);
        check([&[3, 2048], &[2048], &[1]], &[3, 2048]);
        // Only scalars repeat.
        check([&[5, 7], &[1], &[1, 1]], &[5, 7]);
        // A column broadcast falls back to the gathered tiles.
        check([&[6, 40], &[40], &[6, 1]], &[6, 40]);
        check([&[700, 3], &[3], &[700, 3]], &[700, 3]);
        // The repeated operand on the left.
        check([&[2048], &[3, 2048], &[3, 2048]], &[3, 2048]);
        check([&[1], &[9, 5], &[5]], &[9, 5]);
    }

    #[test]
    fn per_slice_repeats_run_slice_by_slice() {
        // Stacked biases [B, 1, P] over [B, M, P] (the shared-input fusion's
        // epilogue), with a direct input, a row and a scalar alongside.
        check([&[3, 128, 40], &[3, 1, 40], &[40]], &[3, 128, 40]);
        check([&[3, 1, 40], &[3, 128, 40], &[1]], &[3, 128, 40]);
        check([&[2, 3, 1, 8], &[2, 3, 5, 8], &[2, 3, 5, 8]], &[2, 3, 5, 8]);
        // Leading axes that do not line up fall back to the gathered tiles.
        check([&[3, 6, 1], &[3, 1, 4], &[4]], &[3, 6, 4]);
        check([&[2, 1, 4], &[1, 5, 1], &[2, 5, 4]], &[2, 5, 4]);
    }
}
