//! Fused elementwise regions: the steps run tile by tile over the output,
//! so intermediates live in a few cache-sized scratch tiles instead of
//! whole buffers. Each step calls the same elementwise kernel as its
//! unfused node, on a 1-D tile, so the result is bit-identical to running
//! the steps as separate nodes.

use super::{elementwise, KernelResult, View, ViewMut};
use crate::team;
use rlx_ir::op::{ChainOperand, ChainStep};
use rlx_ir::DType;
use smallvec::SmallVec;

/// Elements per tile: small enough that a tile per step stays in L1/L2.
const TILE: usize = 1024;

/// Output elements from which a region splits over threads (a few
/// microseconds of the lightest step, against about one for a team job).
const PARALLEL_GRAIN: usize = 1 << 15;

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

    /// Moves to output element `flat` (row-major).
    fn seek(&mut self, mut flat: usize) {
        self.off = 0;
        for ax in (0..self.dims.len()).rev() {
            let d = self.dims[ax].max(1);
            self.idx[ax] = flat % d;
            flat /= d;
            self.off += self.strides[ax] * self.idx[ax] as isize;
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

/// An 8-byte aligned scratch tile, carved from the thread's [`TILES`].
struct Scratch<'a>(&'a mut [u64]);

/// Words of a scratch tile of `elems` values of `width` bytes.
fn tile_words(elems: usize, width: usize) -> usize {
    (elems * width).div_ceil(8)
}

thread_local! {
    /// [`run_tiles`]' scratch tiles, kept for the thread's next region (a
    /// tiny graph's run otherwise spent a tenth of its time allocating them).
    static TILES: std::cell::Cell<Vec<u64>> = const { std::cell::Cell::new(Vec::new()) };
}

impl Scratch<'_> {
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
enum Source<'a> {
    /// Already at the output dims: read in place.
    Direct,
    /// Broadcast: gathered per tile.
    Gather(BroadcastCursor, Scratch<'a>),
    /// Broadcast by repeating it whole (a bias row): read in place, the
    /// step kernels broadcast it over the tile's rows.
    Repeat,
    /// One value per row of the output (`[.., S, 1]` over `[.., S, H]`):
    /// the tile's rows of it read in place as `[rows, 1]`, which the step
    /// kernels broadcast along each row.
    Column,
    /// The output buffer itself (an epilogue's input): copied out per tile
    /// before the tile is overwritten.
    Output(Scratch<'a>),
}

/// Runs an `Op::ElementwiseRegion`: the elementwise `steps` over `ins`
/// (broadcast to `out`'s dims) in cache-sized tiles, writing only `out`.
///
/// # Errors
/// The steps' result dtype is not `out`'s, or a step's kernel rejects its
/// dtype.
pub fn region(steps: &[ChainStep], ins: &[View], out: &mut ViewMut) -> KernelResult {
    let ins: SmallVec<[Option<View>; 4]> = ins.iter().copied().map(Some).collect();
    run_region(steps, &ins, out)
}

/// Runs `steps` over `out` in place: region input 0 is `out`'s current
/// value (e.g. a matmul result), inputs `1..` are `extra`.
pub fn epilogue(steps: &[ChainStep], extra: &[View], out: &mut ViewMut) -> KernelResult {
    let ins: SmallVec<[Option<View>; 4]> = std::iter::once(None)
        .chain(extra.iter().copied().map(Some))
        .collect();
    run_region(steps, &ins, out)
}

/// Runs `steps` where the inputs given as `None` are `out`'s current value
/// (a buffer the memory plan lets the region overwrite in place: it has
/// the output's dims and dtype, and this is its last reader). Each tile of
/// such an input is copied out before the tile is overwritten.
pub(crate) fn in_place(
    steps: &[ChainStep],
    ins: &[Option<View>],
    out: &mut ViewMut,
) -> KernelResult {
    run_region(steps, ins, out)
}

/// The one-step region of a lone elementwise op over its inputs, if it is
/// one (a region's own steps, borrowed).
pub(crate) fn steps_of_op(
    op: &rlx_ir::Op,
    arity: usize,
) -> Option<std::borrow::Cow<'_, [ChainStep]>> {
    use rlx_ir::Op;
    let i = ChainOperand::Input;
    let step = match *op {
        Op::Unary(u) if arity == 1 => ChainStep::Unary(u, i(0)),
        Op::Binary(b) if arity == 2 => ChainStep::Binary(b, i(0), i(1)),
        Op::Compare(c) if arity == 2 => ChainStep::Compare(c, i(0), i(1)),
        Op::Select if arity == 3 => ChainStep::Select(i(0), i(1), i(2)),
        Op::ElementwiseRegion { ref steps } => return Some(steps.into()),
        _ => return None,
    };
    Some(vec![step].into())
}

fn run_region(steps: &[ChainStep], ins: &[Option<View>], out: &mut ViewMut) -> KernelResult {
    if let Some(done) = bias_epilogue(steps, ins, out) {
        return done;
    }
    // Inputs that repeat whole with one period P (bias rows, scalars) or
    // hold one value per output row of length P (`[.., S, 1]`: a softmax
    // gradient's row sums) let the tiles be [rows, P] blocks the binary
    // kernels broadcast over directly, when only binary / compare steps
    // read those inputs.
    let period = row_period(steps, ins, out.dims);
    let gathers = ins.iter().flatten().any(|v| !same_dims(v.dims, out.dims));
    if period.is_none() && gathers {
        if let Some(done) = run_per_leading_slice(steps, ins, out) {
            return done;
        }
    }
    let out_dims: SmallVec<[usize; 6]> = out.dims.into();
    let n: usize = out_dims.iter().product();
    let in_dtypes: SmallVec<[DType; 8]> = ins
        .iter()
        .map(|v| v.as_ref().map_or(out.dtype, |v| v.dtype))
        .collect();
    let mut dtypes: SmallVec<[DType; 16]> = SmallVec::with_capacity(steps.len());
    for s in steps {
        let d = step_dtype(s, &in_dtypes, &dtypes);
        dtypes.push(d);
    }
    if dtypes.last() != Some(&out.dtype) {
        return Err(fail!(
            "region result is {:?} but the output is {}",
            dtypes.last(),
            out.dtype
        ));
    }
    // A region smaller than a tile gets scratch of its own size (zeroing
    // whole tiles dominated tiny graphs).
    let tile_rows = match period {
        Some(p) => (TILE / p).max(1).min(n.div_ceil(p.max(1)).max(1)),
        None => TILE.min(n.max(1)),
    };
    let plan = Tiling {
        steps,
        period,
        tile_elems: tile_rows * period.unwrap_or(1),
        out_dims: &out_dims,
        out_dtype: out.dtype,
        in_dtypes: &in_dtypes,
        dtypes: &dtypes,
    };
    let parts = if n >= PARALLEL_GRAIN {
        team::threads().min(n / (PARALLEL_GRAIN / 2))
    } else {
        1
    };
    if parts <= 1 {
        return run_tiles(&plan, ins, out.bytes, 0..n);
    }
    let ranges = team::split(n, parts, plan.tile_elems);
    let w = out.dtype.size_bytes();
    let shared = team::Disjoint::new(out.bytes);
    team::try_parallel_for(ranges.len(), |p| {
        let r = ranges[p].clone();
        // SAFETY: the parts' element ranges are disjoint.
        let bytes = unsafe { shared.range(r.start * w..r.end * w) };
        run_tiles(&plan, ins, bytes, r)
    })
}

/// What every tile of one region run shares.
struct Tiling<'a> {
    steps: &'a [ChainStep],
    period: Option<usize>,
    tile_elems: usize,
    out_dims: &'a [usize],
    out_dtype: DType,
    in_dtypes: &'a [DType],
    dtypes: &'a [DType],
}

/// Runs the tiles of output elements `range`; `out` holds exactly those
/// elements' bytes.
fn run_tiles(
    plan: &Tiling,
    ins: &[Option<View>],
    out: &mut [u8],
    range: std::ops::Range<usize>,
) -> KernelResult {
    let Tiling {
        period,
        tile_elems,
        out_dims,
        dtypes,
        ..
    } = *plan;
    let out_w = plan.out_dtype.size_bytes();
    // Every scratch tile (inputs copied or gathered per tile, then every
    // intermediate step's) carved from one per-thread buffer.
    let input_words: SmallVec<[usize; 4]> = ins
        .iter()
        .map(|v| match v {
            None => tile_words(tile_elems, out_w),
            Some(v) if same_dims(v.dims, out_dims) || period.is_some() => 0,
            Some(v) => tile_words(tile_elems, v.dtype.size_bytes()),
        })
        .collect();
    let step_words: SmallVec<[usize; 16]> = dtypes[..dtypes.len() - 1]
        .iter()
        .map(|d| tile_words(tile_elems, d.size_bytes()))
        .collect();
    let mut pool = TILES.take();
    let total = input_words.iter().chain(&step_words).sum();
    if pool.len() < total {
        pool.resize(total, 0);
    }
    let mut rest = &mut pool[..];
    let mut carve = |words: usize| {
        let (tile, tail) = std::mem::take(&mut rest).split_at_mut(words);
        rest = tail;
        tile
    };
    let mut sources: SmallVec<[Source; 4]> = SmallVec::with_capacity(ins.len());
    for (v, &words) in ins.iter().zip(&input_words) {
        sources.push(match v {
            None => Source::Output(Scratch(carve(words))),
            Some(v) if same_dims(v.dims, out_dims) => Source::Direct,
            // As `row_period` classed it: repeating whole first (a scalar
            // is also one value per row of a single-row output).
            Some(v)
                if period.is_some() && elementwise::repeat_period(v.dims, out_dims).is_some() =>
            {
                Source::Repeat
            }
            Some(_) if period.is_some() => Source::Column,
            Some(v) => {
                let mut cur = BroadcastCursor::new(v.dims, out_dims);
                cur.seek(range.start);
                Source::Gather(cur, Scratch(carve(words)))
            }
        });
    }
    let mut step_tiles: SmallVec<[&mut [u64]; 16]> = step_words.iter().map(|&w| carve(w)).collect();
    let done = run_tiles_over(plan, ins, out, range, &mut sources, &mut step_tiles);
    drop((sources, step_tiles));
    TILES.set(pool);
    done
}

/// [`run_tiles`] with its scratch tiles in place.
fn run_tiles_over(
    plan: &Tiling,
    ins: &[Option<View>],
    out: &mut [u8],
    range: std::ops::Range<usize>,
    sources: &mut [Source],
    step_tiles: &mut [&mut [u64]],
) -> KernelResult {
    let Tiling {
        steps,
        period,
        tile_elems,
        in_dtypes,
        dtypes,
        ..
    } = *plan;
    let (base, n) = (range.start, range.end);
    let mut start = base;
    while start < n {
        let len = tile_elems.min(n - start);
        let tile_shape = match period {
            Some(p) => [len / p, p],
            None => [len, 0],
        };
        let tile_dims = &tile_shape[..if period.is_some() { 2 } else { 1 }];
        let column_dims = [tile_shape[0], 1];
        for (i, src) in sources.iter_mut().enumerate() {
            let w = in_dtypes[i].size_bytes();
            match src {
                Source::Direct | Source::Repeat | Source::Column => {}
                Source::Gather(cur, buf) => {
                    let v = ins[i].as_ref().expect("a gathered input is given");
                    gather(v, cur, buf.bytes_mut(len * w), len)
                }
                Source::Output(buf) => buf
                    .bytes_mut(len * w)
                    .copy_from_slice(&out[(start - base) * w..(start - base + len) * w]),
            }
        }
        for (k, step) in steps.iter().enumerate() {
            // A step reads only inputs and earlier steps, so its own tile is free to write.
            let (earlier, own) = step_tiles.split_at_mut(k);
            let (operands, arity) = operands_of(step);
            let operand_views = operands.map(|o| match o {
                ChainOperand::Input(i) => {
                    let w = in_dtypes[i].size_bytes();
                    match &sources[i] {
                        Source::Direct => {
                            let v = ins[i].as_ref().expect("a direct input is given");
                            View {
                                dims: tile_dims,
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
                        Source::Column => {
                            let v = ins[i].as_ref().expect("a column input is given");
                            let (rows, p) = (tile_shape[0], tile_shape[1]);
                            let first = start / p;
                            View {
                                dims: &column_dims,
                                dtype: in_dtypes[i],
                                bytes: &v.bytes[first * w..(first + rows) * w],
                            }
                        }
                        Source::Gather(_, buf) | Source::Output(buf) => View {
                            dims: tile_dims,
                            dtype: in_dtypes[i],
                            bytes: buf.bytes(len * w),
                        },
                    }
                }
                ChainOperand::Step(j) => View {
                    dims: tile_dims,
                    dtype: dtypes[j],
                    bytes: &words_bytes(earlier[j])[..len * dtypes[j].size_bytes()],
                },
            });
            let w = dtypes[k].size_bytes();
            let bytes = match own.first_mut() {
                Some(tile) => &mut words_bytes_mut(tile)[..len * w],
                None => &mut out[(start - base) * w..(start - base + len) * w],
            };
            let mut o = ViewMut {
                dims: tile_dims,
                dtype: dtypes[k],
                bytes,
            };
            run_step(step, &operand_views[..arity], &mut o)?;
        }
        start += len;
    }
    Ok(())
}

/// The commonest matmul epilogues on f32, `out + b` with `b` a bias row
/// repeating over the output's rows (or of the output's own dims),
/// optionally followed by one unary op: added in place row by row and the
/// unary applied to the row while it is in L1, with no tile copies. The
/// same f32 additions and unary kernel as the general path, so the result
/// is bit-identical. `None` when the region is not of that form.
fn bias_epilogue(
    steps: &[ChainStep],
    ins: &[Option<View>],
    out: &mut ViewMut,
) -> Option<KernelResult> {
    use rlx_ir::op::BinaryOp;
    let (input, step) = (ChainOperand::Input, ChainOperand::Step);
    let unary = match steps {
        [ChainStep::Binary(BinaryOp::Add, a, b)] if (*a, *b) == (input(0), input(1)) => None,
        [ChainStep::Binary(BinaryOp::Add, a, b), ChainStep::Unary(u, x)]
            if (*a, *b, *x) == (input(0), input(1), step(0)) =>
        {
            Some(*u)
        }
        _ => return None,
    };
    let [None, Some(bias)] = ins else {
        return None;
    };
    if out.dtype != DType::F32 || bias.dtype != DType::F32 {
        return None;
    }
    let n = out.numel();
    let full = same_dims(bias.dims, out.dims);
    let period = if full {
        TILE.min(n).max(1)
    } else {
        elementwise::repeat_period(bias.dims, out.dims)?
    };
    if period == 0 || !n.is_multiple_of(period) || (!full && bias.numel() != period) {
        return None;
    }
    let b = bias.slice::<f32>();
    let rows = n / period;
    let o = team::Disjoint::new(out.slice::<f32>());
    // An activation (GELU ~1.5 ns per element, against ~0.1 for the add)
    // is worth a team job from far fewer elements: MiniLM s16's bias +
    // GELU over 16 x 1536 values took ~40 us on one thread.
    let grain = if unary.is_some() {
        PARALLEL_GRAIN / 16
    } else {
        PARALLEL_GRAIN
    };
    let parts = if n >= grain {
        team::threads().min(n / (grain / 2)).min(rows)
    } else {
        1
    };
    let ranges = team::split(rows, parts, 1);
    Some(team::try_parallel_for(ranges.len(), |p| {
        let fused = unary.and_then(super::fastmath::biased_in_place);
        let unfused = unary.filter(|_| fused.is_none());
        let mut scratch = vec![0f32; if unfused.is_some() { period } else { 0 }];
        for r in ranges[p].clone() {
            // SAFETY: the parts' row ranges are disjoint.
            let row = unsafe { o.range(r * period..(r + 1) * period) };
            let brow = if full {
                &b[r * period..(r + 1) * period]
            } else {
                b
            };
            if let Some(fused) = fused {
                fused(row, brow);
                continue;
            }
            add_assign_f32(row, brow);
            if let Some(u) = unfused {
                scratch.copy_from_slice(row);
                let dims = [period];
                elementwise::unary(
                    u,
                    &[View {
                        dims: &dims,
                        dtype: DType::F32,
                        bytes: super::f32_bytes(&scratch),
                    }],
                    &mut ViewMut {
                        dims: &dims,
                        dtype: DType::F32,
                        bytes: super::f32_bytes_mut(row),
                    },
                )?;
            }
        }
        Ok(())
    }))
}

/// `o += b`, vectorised for AVX-512 or AVX2 where present.
fn add_assign_f32(o: &mut [f32], b: &[f32]) {
    #[inline(always)]
    fn each(o: &mut [f32], b: &[f32]) {
        for (x, &y) in o.iter_mut().zip(b) {
            *x += y;
        }
    }
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f")]
    unsafe fn avx512(o: &mut [f32], b: &[f32]) {
        each(o, b)
    }
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn avx2(o: &mut [f32], b: &[f32]) {
        each(o, b)
    }
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx512f") {
        // SAFETY: the CPU has AVX-512F.
        return unsafe { avx512(o, b) };
    }
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2.
        return unsafe { avx2(o, b) };
    }
    each(o, b)
}

/// A step's operands without allocating: the first `arity` entries (the
/// rest repeat the first).
fn operands_of(step: &ChainStep) -> ([ChainOperand; 3], usize) {
    match *step {
        ChainStep::Unary(_, x) | ChainStep::Cast(x, _) => ([x; 3], 1),
        ChainStep::Binary(_, a, b) | ChainStep::Compare(_, a, b) => ([a, b, a], 2),
        ChainStep::Select(c, a, b) => ([c, a, b], 3),
    }
}

fn words_bytes(w: &[u64]) -> &[u8] {
    // SAFETY: u64 has no padding; any byte view of it is valid.
    unsafe { std::slice::from_raw_parts(w.as_ptr() as *const u8, w.len() * 8) }
}

fn words_bytes_mut(w: &mut [u64]) -> &mut [u8] {
    // SAFETY: as above, and the borrow is unique.
    unsafe { std::slice::from_raw_parts_mut(w.as_mut_ptr() as *mut u8, w.len() * 8) }
}

/// Dims equality without a `memcmp` call (dims are a few elements long
/// and compared many times per tiny region; LLVM turns a forward loop back
/// into `memcmp`, so this one walks from the end).
pub(crate) fn same_dims(a: &[usize], b: &[usize]) -> bool {
    a.len() == b.len() && a.iter().rev().zip(b.iter().rev()).all(|(x, y)| x == y)
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

/// The row length P of the `[rows, P]` tiles every broadcast input of a
/// region can be read in place over (see [`run_region`]), if there is one.
fn row_period(steps: &[ChainStep], ins: &[Option<View>], out_dims: &[usize]) -> Option<usize> {
    let mut period = None;
    for (i, v) in ins.iter().enumerate() {
        let Some(v) = v else { continue };
        if same_dims(v.dims, out_dims) {
            continue;
        }
        let p = match elementwise::repeat_period(v.dims, out_dims) {
            Some(p) => p,
            // One value per block of trailing axes: a per-channel
            // `[C, 1, 1]` over `[1, C, H, W]` (batch norm) is a column of
            // `[C, H * W]` rows.
            None => elementwise::column_period(v.dims, out_dims)?,
        };
        let input = ChainOperand::Input(i);
        let read_elsewise = steps.iter().any(|s| match *s {
            ChainStep::Binary(..) | ChainStep::Compare(..) => false,
            ChainStep::Unary(_, x) | ChainStep::Cast(x, _) => x == input,
            ChainStep::Select(c, a, b) => c == input || a == input || b == input,
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
        // One value per row ([.., S, 1] over [.., S, H]): read as [rows, 1]
        // beside rows, scalars and whole operands, either side, several
        // tiles, a split over the team, and more than one leading axis.
        check([&[6, 40], &[40], &[6, 1]], &[6, 40]);
        check([&[6, 1], &[6, 40], &[1]], &[6, 40]);
        check([&[700, 1], &[700, 3], &[3]], &[700, 3]);
        check([&[20_000, 1], &[2], &[20_000, 2]], &[20_000, 2]);
        check([&[2, 3, 8], &[2, 3, 1], &[8]], &[2, 3, 8]);
        // A scalar over one row repeats (it is one value per row too).
        check([&[1, 9], &[], &[1, 9]], &[1, 9]);
        check([&[1, 9], &[1, 1], &[9]], &[1, 9]);
        // A column of another row length falls back to the gathered tiles.
        check([&[4, 1, 1], &[4, 3, 5], &[5]], &[4, 3, 5]);
        check([&[700, 3], &[3], &[700, 3]], &[700, 3]);
        // Per-channel operands over NCHW (batch norm): one value per row of
        // H * W, also with rows longer than a tile, beside a scalar.
        check([&[1, 6, 5, 7], &[6, 1, 1], &[1, 6, 1, 1]], &[1, 6, 5, 7]);
        check([&[3, 40, 40], &[3, 1, 1], &[1]], &[3, 40, 40]);
        check([&[3, 1, 1], &[1, 3, 40, 40], &[]], &[1, 3, 40, 40]);
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
        // Per-channel operands over a batch of NCHW images, slice by slice.
        check([&[4, 6, 5, 7], &[6, 1, 1], &[1]], &[4, 6, 5, 7]);
        check([&[6, 1, 1], &[4, 6, 5, 7], &[1, 6, 1, 1]], &[4, 6, 5, 7]);
        // Leading axes that do not line up fall back to the gathered tiles.
        check([&[3, 6, 1], &[3, 1, 4], &[4]], &[3, 6, 4]);
        check([&[2, 1, 4], &[1, 5, 1], &[2, 5, 4]], &[2, 5, 4]);
    }
}
