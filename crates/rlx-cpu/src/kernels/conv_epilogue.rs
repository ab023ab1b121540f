//! The elementwise epilogue of `Op::FusedConv` over blocks of the conv's
//! `[N, O, *sp]` output: each kernel path calls [`ConvEpilogue::apply`] on
//! a block of output channels of one image right after computing it, while
//! the block is still in cache. Extra inputs broadcast to the output, so
//! (aligned to its rank) each has 1 or N images and 1 or O channels, and
//! the part of it that meets a block is one contiguous run.
//!
//! An f32 epilogue that starts with SiLU (`x * sigmoid(x)` of the conv
//! result, the YOLO activation) runs that part as one vectorised pass
//! ([`super::fastmath::silu_in_place_f32`]) and the rest of
//! its steps as a region over that result; when the rest is a row chain
//! the SiLU is that chain's first step (the same function per element, so
//! the same bits on a tile, a row, a blocked slab or a whole block), which
//! lets every kernel apply it while the tile is in L1 and the NCHWc plan
//! keep YOLO's conv -> conv edges blocked.
//!
//! An f32 epilogue that is a chain of one-operand steps over the running
//! value (ReLU, or add / sub / mul / max / min with a scalar, a
//! per-channel value or a same-shape residual: MobileNet's ReLU6 and
//! residual add) also runs on any rectangle of channels x pixels
//! ([`ConvEpilogue::rows`]), so a kernel that produces its output in
//! pixel blocks applies it to each block while the block is in L1.
//!
//! A same-shape extra (a residual) may itself be in the NCHWc blocked
//! layout `[N][O/16][pixels][16]` ([`ConvEpilogue::with_blocked_extras`],
//! planned by `nchwc_layout.rs`): the blocked row chain then reads it at
//! the output's own blocked offsets (no copy), an NCHW row gathers its
//! channel's lanes (so the NCHWc kernel runs such a chain on its blocked
//! rows before transposing them: [`RowChain::reads_nchw_extra`]), and the
//! region path reads an NCHW copy of the block. A chain of a ReLU, an add
//! of such a blocked residual, or the add then ReLU (ResNet's) also comes
//! as a [`TileChain`] ([`RowChain::tile_form`]) that the NCHWc tile
//! applies to its registers as it stores a blocked output.

use super::region;
use super::scalar::{nan_max, nan_min, Pod};
use super::{KernelResult, View, ViewMut};
use rlx_ir::op::{BinaryOp, ChainOperand, ChainStep, UnaryOp};
use rlx_ir::DType;
use std::ops::Range;

/// Channels per block of a blocked (NCHWc) extra or output.
const BLOCKED_LANES: usize = 16;

/// One extra input with its dims aligned to the output's rank.
struct Extra<'a> {
    dims: Vec<usize>,
    dtype: DType,
    bytes: &'a [u8],
    /// Laid out `[N][O/16][pixels][16]` (dims are the output's).
    blocked: bool,
}

/// An epilogue ready to run on output blocks.
pub(crate) struct ConvEpilogue<'a> {
    /// The steps run as a region (after the SiLU pass, if any).
    steps: Vec<ChainStep>,
    /// Run SiLU over the block first (`steps` then read it as input 0).
    silu: bool,
    extras: Vec<Extra<'a>>,
    /// The output's dims.
    out: Vec<usize>,
    dtype: DType,
    /// The same epilogue as a chain of row steps, when it is one.
    rows: Option<RowChain<'a>>,
}

/// Where a row step's operand comes from.
#[derive(Clone, Copy)]
enum RowSrc<'a> {
    /// One value for every element.
    Scalar(f32),
    /// One value per output channel (`[O]`).
    Channel(&'a [f32]),
    /// A value per element: `[1 or N, O, pixels]`, with `images` images;
    /// `[1 or N][O/16][pixels][16]` when `blocked`.
    Full {
        data: &'a [f32],
        images: usize,
        blocked: bool,
    },
}

/// One step of a [`RowChain`] (`v` is the running value).
#[derive(Clone, Copy)]
enum RowStep<'a> {
    /// `v = relu(v)`.
    Relu,
    /// `v = v * sigmoid(v)` (only as the first step: the epilogue's
    /// leading SiLU, [`super::fastmath::silu_in_place_f32`]'s bits).
    Silu,
    /// `v = op(v, src)`, or `op(src, v)` when `src_first`.
    Binary {
        op: BinaryOp,
        src: RowSrc<'a>,
        src_first: bool,
    },
}

/// An f32 epilogue as steps over the running value, each on one row of
/// pixels of one channel at a time (the same per-element operations as the
/// region interpreter, so the same bits).
pub(crate) struct RowChain<'a> {
    steps: Vec<RowStep<'a>>,
    /// Output channels.
    o: usize,
    /// Output pixels per channel.
    pixels: usize,
}

/// A row chain a register tile applies to its blocked sums as it stores
/// them ([`RowChain::tile_form`]), so the output is not read back for the
/// chain: `v + r` with a same-shape blocked residual `r` read at the
/// output's own offsets, then ReLU (`v` where `v > 0` or NaN, else `+0`:
/// `row_relu`'s bits), each optional.
#[derive(Clone, Copy)]
pub(crate) struct TileChain<'a> {
    /// The residual `[1 or N][O/16][pixels][16]` and its image count.
    residual: Option<(&'a [f32], usize)>,
    /// ReLU after the add.
    pub(crate) relu: bool,
    /// Floats of one image of the output.
    image: usize,
}

impl<'a> TileChain<'a> {
    /// Image `n`'s blocked residual, laid out as that image's blocked
    /// output, when the chain adds one.
    pub(crate) fn residual(&self, n: usize) -> Option<&'a [f32]> {
        self.residual.map(|(data, images)| {
            let image = if images == 1 { 0 } else { n };
            &data[image * self.image..][..self.image]
        })
    }
}

impl<'a> ConvEpilogue<'a> {
    /// True when `dims` broadcasts to `out` (aligned at the last dim, each
    /// dim 1 or the output's).
    pub(crate) fn broadcasts(dims: &[usize], out: &[usize]) -> bool {
        dims.len() <= out.len()
            && dims
                .iter()
                .rev()
                .zip(out.iter().rev())
                .all(|(&d, &o)| d == 1 || d == o)
    }

    /// The epilogue `steps` over `extras` for an output of `out_dims`, or
    /// `None` when an extra does not broadcast to it that way (rank above
    /// the output's, or a dim that is neither 1 nor the output's).
    pub(crate) fn new(
        steps: &'a [ChainStep],
        extras: &[View<'a>],
        out_dims: &[usize],
        dtype: DType,
    ) -> Option<Self> {
        let r = out_dims.len();
        let extras = extras
            .iter()
            .map(|v| {
                let lead = r.checked_sub(v.dims.len())?;
                let dims: Vec<usize> = std::iter::repeat_n(1, lead)
                    .chain(v.dims.iter().copied())
                    .collect();
                Self::broadcasts(v.dims, out_dims).then_some(Extra {
                    dims,
                    dtype: v.dtype,
                    bytes: v.bytes,
                    blocked: false,
                })
            })
            .collect::<Option<Vec<_>>>()?;
        let peeled = (dtype == DType::F32).then(|| peel_silu(steps)).flatten();
        let rows = (dtype == DType::F32 && r >= 2)
            .then(|| match &peeled {
                Some(rest) => RowChain::new(rest, true, &extras, out_dims),
                None => RowChain::new(steps, false, &extras, out_dims),
            })
            .flatten();
        (r >= 2).then(|| ConvEpilogue {
            silu: peeled.is_some(),
            steps: peeled.unwrap_or_else(|| steps.to_vec()),
            extras,
            out: out_dims.to_vec(),
            dtype,
            rows,
        })
    }

    /// The same epilogue with the extras whose bit is set in `mask` (bit
    /// `k`: extra `k`) read in the blocked layout; `None` when such an
    /// extra is not an f32 tensor of the output's dims with whole
    /// 16-channel blocks, or the epilogue is no row chain (a blocked
    /// operand is only ever planned for a row-chain reader).
    pub(crate) fn with_blocked_extras(mut self, mask: u64) -> Option<Self> {
        if mask == 0 {
            return Some(self);
        }
        let o = *self.out.get(1)?;
        for (k, e) in self.extras.iter_mut().enumerate() {
            if mask >> k & 1 == 1 {
                let fits = e.dtype == DType::F32
                    && e.dims[1..] == self.out[1..]
                    && (e.bytes.as_ptr() as usize).is_multiple_of(4);
                if !fits || !o.is_multiple_of(BLOCKED_LANES) {
                    return None;
                }
                e.blocked = true;
            }
        }
        // `steps` are the ones after the leading SiLU, if any.
        self.rows.as_ref()?;
        self.rows = RowChain::new(&self.steps, self.silu, &self.extras, &self.out);
        self.rows.is_some().then_some(self)
    }

    /// The epilogue as a chain of row steps (f32), when it is one: a kernel
    /// may then run it on any block with [`RowChain::apply`] instead of
    /// [`Self::apply`] on whole channel planes.
    pub(crate) fn rows(&self) -> Option<&RowChain<'a>> {
        self.rows.as_ref()
    }

    /// Runs the epilogue in place on `y`, the output channels `ch` of image `n`.
    pub(crate) fn apply<T: Pod>(&self, y: &mut [T], n: usize, ch: Range<usize>) -> KernelResult {
        if self.silu {
            // SAFETY: `silu` is set only for an f32 output.
            let y32 =
                unsafe { std::slice::from_raw_parts_mut(y.as_mut_ptr() as *mut f32, y.len()) };
            super::fastmath::silu_in_place_f32(y32);
            if self.steps.is_empty() {
                return Ok(());
            }
        }
        let mut dims = self.out.clone();
        dims[0] = 1;
        dims[1] = ch.len();
        let ext_dims: Vec<Vec<usize>> = self
            .extras
            .iter()
            .map(|e| {
                let mut d = e.dims.clone();
                d[0] = 1;
                if e.dims[1] != 1 {
                    d[1] = ch.len();
                }
                d
            })
            .collect();
        // Blocked extras: an NCHW copy of the channels `ch` of image `n`.
        let copies: Vec<Option<Vec<f32>>> = self
            .extras
            .iter()
            .map(|e| e.blocked.then(|| nchw_rows(e, n, ch.clone())))
            .collect();
        let views: Vec<View> = self
            .extras
            .iter()
            .zip(&ext_dims)
            .zip(&copies)
            .map(|((e, d), copy)| {
                if let Some(copy) = copy {
                    return View {
                        dims: d,
                        dtype: e.dtype,
                        bytes: f32_bytes(copy),
                    };
                }
                let inner: usize = e.dims[2..].iter().product();
                let width = e.dtype.size_bytes();
                let image = if e.dims[0] == 1 { 0 } else { n };
                let c0 = if e.dims[1] == 1 { 0 } else { ch.start };
                let start = (image * e.dims[1] + c0) * inner * width;
                let len = d.iter().product::<usize>() * width;
                View {
                    dims: d,
                    dtype: e.dtype,
                    bytes: &e.bytes[start..start + len],
                }
            })
            .collect();
        // SAFETY: `T` is plain data; the bytes cover exactly `y`.
        let bytes = unsafe {
            std::slice::from_raw_parts_mut(y.as_mut_ptr() as *mut u8, std::mem::size_of_val(y))
        };
        region::epilogue(
            &self.steps,
            &views,
            &mut ViewMut {
                dims: &dims,
                dtype: self.dtype,
                bytes,
            },
        )
    }
}

impl<'a> RowChain<'a> {
    /// `steps` as row steps (after a SiLU of the conv result when `silu`),
    /// when each reads the running value (input 0 for the first step) and
    /// at most one extra that is a scalar, a per-channel vector or a tensor
    /// of the output's pixels.
    fn new(steps: &[ChainStep], silu: bool, extras: &[Extra<'a>], out: &[usize]) -> Option<Self> {
        use ChainOperand::{Input, Step};
        let (o, pixels) = (out[1], out[2..].iter().product::<usize>());
        let src = |k: usize| -> Option<RowSrc<'a>> {
            let e = extras.get(k.checked_sub(1)?)?;
            if e.dtype != DType::F32 || !(e.bytes.as_ptr() as usize).is_multiple_of(4) {
                return None;
            }
            // SAFETY: f32-aligned bytes of an f32 tensor (checked above).
            let data = unsafe {
                std::slice::from_raw_parts(e.bytes.as_ptr() as *const f32, e.bytes.len() / 4)
            };
            let inner: usize = e.dims[2..].iter().product();
            match (e.dims[0], e.dims[1], inner) {
                (1, 1, 1) => Some(RowSrc::Scalar(*data.first()?)),
                (1, c, 1) if c == o => Some(RowSrc::Channel(data.get(..o)?)),
                (images, c, p) if c == o && p == pixels && e.dims[2..] == out[2..] => {
                    (data.len() == images * o * p).then_some(RowSrc::Full {
                        data,
                        images,
                        blocked: e.blocked,
                    })
                }
                _ => None,
            }
        };
        let mut out_steps = Vec::with_capacity(steps.len() + 1);
        if silu {
            out_steps.push(RowStep::Silu);
        }
        for (i, step) in steps.iter().enumerate() {
            let is_v = |x: &ChainOperand| match *x {
                Input(0) => i == 0,
                Step(k) => i > 0 && k == i - 1,
                _ => false,
            };
            let other = |x: &ChainOperand| match *x {
                Input(k) if k > 0 => src(k),
                _ => None,
            };
            out_steps.push(match step {
                ChainStep::Unary(UnaryOp::Relu, x) if is_v(x) => RowStep::Relu,
                ChainStep::Binary(
                    op @ (BinaryOp::Add
                    | BinaryOp::Sub
                    | BinaryOp::Mul
                    | BinaryOp::Max
                    | BinaryOp::Min),
                    a,
                    b,
                ) => {
                    let (src, src_first) = if is_v(a) {
                        (other(b)?, false)
                    } else if is_v(b) {
                        (other(a)?, true)
                    } else {
                        return None;
                    };
                    RowStep::Binary {
                        op: *op,
                        src,
                        src_first,
                    }
                }
                _ => return None,
            });
        }
        Some(RowChain {
            steps: out_steps,
            o,
            pixels,
        })
    }

    /// True when the chain is a lone ReLU, which a kernel can apply in
    /// registers as it stores: `v` where `v > 0` or `v` is NaN, else `+0`
    /// (`row_relu`'s bits).
    pub(crate) fn is_relu(&self) -> bool {
        matches!(self.steps.as_slice(), [RowStep::Relu])
    }

    /// The chain as a register tile can run it on blocked sums as it
    /// stores them ([`TileChain`]): `[relu]`, `[add r]` or `[add r, relu]`
    /// with `r` a same-shape blocked residual added as `v + r` (the
    /// chain's own operations, so its bits).
    pub(crate) fn tile_form(&self) -> Option<TileChain<'a>> {
        let residual = |step: &RowStep<'a>| match *step {
            RowStep::Binary {
                op: BinaryOp::Add,
                src:
                    RowSrc::Full {
                        data,
                        images,
                        blocked: true,
                    },
                src_first: false,
            } => Some((data, images)),
            _ => None,
        };
        let (residual, relu) = match self.steps.as_slice() {
            [RowStep::Relu] => (None, true),
            [add] => (Some(residual(add)?), false),
            [add, RowStep::Relu] => (Some(residual(add)?), true),
            _ => return None,
        };
        Some(TileChain {
            residual,
            relu,
            image: self.o * self.pixels,
        })
    }

    /// True when a step reads a same-shape extra in NCHW: on blocked rows
    /// ([`Self::apply_blocked`]) its lanes are gathered plane by plane, so
    /// a kernel with both forms at hand runs the chain on NCHW rows.
    pub(crate) fn reads_nchw_extra(&self) -> bool {
        self.steps.iter().any(|s| {
            matches!(
                s,
                RowStep::Binary {
                    src: RowSrc::Full { blocked: false, .. },
                    ..
                }
            )
        })
    }

    /// `(lo, hi)` when the chain is `min(max(v, lo), hi)` with scalar
    /// bounds (ONNX Clip, MobileNet's ReLU6; a missing bound is infinite),
    /// so a kernel can clamp in registers: `nan_min(nan_max(v, lo), hi)`
    /// per element is then exactly this chain.
    pub(crate) fn clamp(&self) -> Option<(f32, f32)> {
        let bound = |step: &RowStep, want: BinaryOp| match *step {
            RowStep::Binary {
                op,
                src: RowSrc::Scalar(v),
                src_first: false,
            } if op == want && !v.is_nan() => Some(v),
            _ => None,
        };
        match self.steps.as_slice() {
            [max, min] => Some((bound(max, BinaryOp::Max)?, bound(min, BinaryOp::Min)?)),
            [one] => bound(one, BinaryOp::Max)
                .map(|lo| (lo, f32::INFINITY))
                .or_else(|| bound(one, BinaryOp::Min).map(|hi| (f32::NEG_INFINITY, hi))),
            _ => None,
        }
    }

    /// Runs the chain in place on `y`: rows of channels `ch` of image `n`,
    /// each at `ld` elements from the last, over the pixels `px` (row `i`
    /// is `y[i * ld..][..px.len()]`).
    pub(crate) fn apply(
        &self,
        y: &mut [f32],
        ld: usize,
        n: usize,
        ch: Range<usize>,
        px: Range<usize>,
    ) {
        let len = px.len();
        let mut lanes = Vec::new();
        for (i, c) in ch.enumerate() {
            let row = &mut y[i * ld..][..len];
            for step in &self.steps {
                match *step {
                    RowStep::Relu => row_relu(row),
                    RowStep::Silu => super::fastmath::silu_in_place_f32(row),
                    RowStep::Binary { op, src, src_first } => {
                        let operand = match src {
                            RowSrc::Scalar(v) => Operand::Scalar(v),
                            RowSrc::Channel(v) => Operand::Scalar(v[c]),
                            RowSrc::Full {
                                data,
                                images,
                                blocked: false,
                            } => {
                                let image = if images == 1 { 0 } else { n };
                                let at = (image * self.o + c) * self.pixels + px.start;
                                Operand::Row(&data[at..at + len])
                            }
                            RowSrc::Full { data, images, .. } => {
                                // Channel `c`'s lane of each pixel's block.
                                let image = if images == 1 { 0 } else { n };
                                let blk = (image * self.o + c / BLOCKED_LANES * BLOCKED_LANES)
                                    * self.pixels;
                                let run =
                                    &data[blk + px.start * BLOCKED_LANES..][..len * BLOCKED_LANES];
                                lanes.clear();
                                lanes.extend(
                                    run.iter().skip(c % BLOCKED_LANES).step_by(BLOCKED_LANES),
                                );
                                Operand::Row(&lanes)
                            }
                        };
                        row_binary(row, op, operand, src_first);
                    }
                }
            }
        }
    }
}

impl RowChain<'_> {
    /// Runs the chain in place on `slab`, pixels `px` of image `n` in the
    /// blocked layout (`[px.len()][16]`, lane `i` channel `c0 + i`):
    /// each step over the whole slab, its operand laid out the same way
    /// first (the same per-element operations as [`Self::apply`], so the
    /// same bits). Lanes past `o` (a last partial block, which only an
    /// NCHW output has) get zero operands; their values are never stored.
    pub(crate) fn apply_blocked(&self, slab: &mut [f32], n: usize, c0: usize, px: Range<usize>) {
        const LANES: usize = BLOCKED_LANES;
        let live = self.o.saturating_sub(c0).min(LANES);
        let pad = [0f32; LANES];
        let mut lanes = Vec::new();
        for step in &self.steps {
            match *step {
                RowStep::Relu => row_relu(slab),
                RowStep::Silu => super::fastmath::silu_in_place_f32(slab),
                RowStep::Binary { op, src, src_first } => {
                    let operand = match src {
                        RowSrc::Scalar(v) => Operand::Scalar(v),
                        RowSrc::Channel(v) => {
                            lanes.clear();
                            for _ in px.clone() {
                                lanes.extend_from_slice(&v[c0..c0 + live]);
                                lanes.extend_from_slice(&pad[live..]);
                            }
                            Operand::Row(&lanes)
                        }
                        RowSrc::Full {
                            data,
                            images,
                            blocked: true,
                        } => {
                            // The same blocked offsets as the slab's (a
                            // blocked extra has whole blocks).
                            let image = if images == 1 { 0 } else { n };
                            let at = (image * self.o + c0) * self.pixels + px.start * LANES;
                            Operand::Row(&data[at..at + px.len() * LANES])
                        }
                        RowSrc::Full { data, images, .. } => {
                            let image = if images == 1 { 0 } else { n };
                            let planes = &data[(image * self.o + c0) * self.pixels..];
                            lanes.clear();
                            for p in px.clone() {
                                lanes.extend((0..live).map(|i| planes[i * self.pixels + p]));
                                lanes.extend_from_slice(&pad[live..]);
                            }
                            Operand::Row(&lanes)
                        }
                    };
                    row_binary(slab, op, operand, src_first);
                }
            }
        }
    }
}

/// Channels `ch` of image `n` of the blocked f32 extra `e` (dims the
/// output's), as NCHW rows `[ch.len()][pixels]`.
fn nchw_rows(e: &Extra, n: usize, ch: Range<usize>) -> Vec<f32> {
    // SAFETY: `with_blocked_extras` admits f32 extras only; the read stays
    // in bounds by `chunks_exact`.
    let data =
        unsafe { std::slice::from_raw_parts(e.bytes.as_ptr() as *const f32, e.bytes.len() / 4) };
    let (o, pixels) = (e.dims[1], e.dims[2..].iter().product::<usize>());
    let image = if e.dims[0] == 1 { 0 } else { n };
    let mut rows = Vec::with_capacity(ch.len() * pixels);
    for c in ch {
        let blk = (image * o + c / BLOCKED_LANES * BLOCKED_LANES) * pixels;
        let run = &data[blk..][..pixels * BLOCKED_LANES];
        rows.extend(
            run.chunks_exact(BLOCKED_LANES)
                .map(|px| px[c % BLOCKED_LANES]),
        );
    }
    rows
}

/// The bytes of `v`.
fn f32_bytes(v: &[f32]) -> &[u8] {
    // SAFETY: f32 is plain data; the bytes cover exactly `v`.
    unsafe { std::slice::from_raw_parts(v.as_ptr() as *const u8, std::mem::size_of_val(v)) }
}

/// A row step's operand, resolved for one row.
#[derive(Clone, Copy)]
enum Operand<'a> {
    Scalar(f32),
    Row(&'a [f32]),
}

/// `v = relu(v)` on a row (NaN propagates, as the elementwise kernel).
fn row_relu(row: &mut [f32]) {
    for v in row {
        *v = if v.is_nan() || *v > 0.0 { *v } else { 0.0 };
    }
}

/// `v = op(v, s)` (or `op(s, v)` when `src_first`) on a row, one
/// vectorisable loop per op and operand kind (AVX2 built in where the CPU
/// has it).
fn row_binary(row: &mut [f32], op: BinaryOp, s: Operand, src_first: bool) {
    #[inline(always)]
    fn each(row: &mut [f32], op: BinaryOp, s: Operand, src_first: bool) {
        #[inline(always)]
        fn go(row: &mut [f32], s: Operand, f: impl Fn(f32, f32) -> f32) {
            match s {
                Operand::Scalar(b) => row.iter_mut().for_each(|v| *v = f(*v, b)),
                Operand::Row(r) => row.iter_mut().zip(r).for_each(|(v, &b)| *v = f(*v, b)),
            }
        }
        match (op, src_first) {
            (BinaryOp::Add, false) => go(row, s, |v, b| v + b),
            (BinaryOp::Add, true) => go(row, s, |v, b| b + v),
            (BinaryOp::Sub, false) => go(row, s, |v, b| v - b),
            (BinaryOp::Sub, true) => go(row, s, |v, b| b - v),
            (BinaryOp::Mul, false) => go(row, s, |v, b| v * b),
            (BinaryOp::Mul, true) => go(row, s, |v, b| b * v),
            (BinaryOp::Max, false) => go(row, s, nan_max),
            (BinaryOp::Max, true) => go(row, s, |v, b| nan_max(b, v)),
            (BinaryOp::Min, false) => go(row, s, nan_min),
            (BinaryOp::Min, true) => go(row, s, |v, b| nan_min(b, v)),
            _ => unreachable!("RowChain::new admits add / sub / mul / max / min only"),
        }
    }
    #[cfg(target_arch = "x86_64")]
    {
        #[target_feature(enable = "avx2")]
        unsafe fn avx2(row: &mut [f32], op: BinaryOp, s: Operand, src_first: bool) {
            each(row, op, s, src_first)
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU has AVX2.
            return unsafe { avx2(row, op, s, src_first) };
        }
    }
    each(row, op, s, src_first)
}

/// The steps after a leading SiLU of input 0 (`sigmoid(in0)` then
/// `in0 * that`), renumbered to read its result as input 0; `None` when
/// `steps` does not start so, or reads input 0 or the sigmoid again.
fn peel_silu(steps: &[ChainStep]) -> Option<Vec<ChainStep>> {
    use ChainOperand::{Input, Step};
    let [ChainStep::Unary(UnaryOp::Sigmoid, Input(0)), ChainStep::Binary(BinaryOp::Mul, a, b), rest @ ..] =
        steps
    else {
        return None;
    };
    if !matches!((a, b), (Input(0), Step(0)) | (Step(0), Input(0))) {
        return None;
    }
    let map = |o: ChainOperand| match o {
        Input(0) | Step(0) => None,
        Step(1) => Some(Input(0)),
        Step(k) => Some(Step(k - 2)),
        input => Some(input),
    };
    rest.iter()
        .map(|s| {
            Some(match *s {
                ChainStep::Unary(u, x) => ChainStep::Unary(u, map(x)?),
                ChainStep::Binary(op, x, y) => ChainStep::Binary(op, map(x)?, map(y)?),
                ChainStep::Compare(c, x, y) => ChainStep::Compare(c, map(x)?, map(y)?),
                ChainStep::Select(c, x, y) => ChainStep::Select(map(c)?, map(x)?, map(y)?),
                ChainStep::Cast(x, to) => ChainStep::Cast(map(x)?, to),
            })
        })
        .collect()
}

#[cfg(test)]
pub(crate) mod tests {
    use crate::kernels::conv::conv;
    use crate::kernels::conv::{conv_packed_weights, fused_conv, tests::run_as};
    use crate::kernels::conv2d::Conv2d;
    use crate::kernels::conv_packed::{geometry, packed_copy};
    use crate::kernels::region;
    use crate::kernels::{KernelResult, View, ViewMut};
    use rlx_ir::op::{BinaryOp, ChainOperand, ChainStep, UnaryOp, Window};
    use rlx_ir::DType;
    use rlx_ir::Op;
    use serde_json::Value;

    pub(crate) fn seq(n: usize, a: usize, m: usize, scale: f32) -> Vec<f32> {
        (0..n)
            .map(|i| (((i * a) % m) as f32 - (m / 2) as f32) / scale)
            .collect()
    }

    pub(crate) fn dims(v: &Value) -> Vec<usize> {
        let list = v.as_array().expect("a list");
        list.iter()
            .map(|d| d.as_u64().expect("a dim") as usize)
            .collect()
    }

    /// An extra input: dims and data.
    pub(crate) type Tensor = (Vec<usize>, Vec<f32>);

    /// The epilogue steps of tools/gen_fused_conv_fixtures.py's `name`, with
    /// the dims and data of its extra inputs.
    pub(crate) fn epilogue(
        name: &str,
        o: usize,
        rank: usize,
        res: &[usize],
    ) -> (Vec<ChainStep>, Vec<Tensor>) {
        let (i, s) = (ChainOperand::Input, ChainOperand::Step);
        let scalar = |v: f32| (vec![1], vec![v]);
        let residual = (res.to_vec(), seq(res.iter().product(), 3, 13, 4.0));
        match name {
            "relu6" => (
                vec![
                    ChainStep::Binary(BinaryOp::Max, i(0), i(1)),
                    ChainStep::Binary(BinaryOp::Min, s(0), i(2)),
                ],
                vec![scalar(0.0), scalar(6.0)],
            ),
            // A clip whose both bounds bind on the fixtures' sums.
            "clip_half_one" => (
                vec![
                    ChainStep::Binary(BinaryOp::Max, i(0), i(1)),
                    ChainStep::Binary(BinaryOp::Min, s(0), i(2)),
                ],
                vec![scalar(-0.5), scalar(1.0)],
            ),
            "relu" => (vec![ChainStep::Unary(UnaryOp::Relu, i(0))], vec![]),
            "silu" => (
                vec![
                    ChainStep::Unary(UnaryOp::Sigmoid, i(0)),
                    ChainStep::Binary(BinaryOp::Mul, i(0), s(0)),
                ],
                vec![],
            ),
            "silu_residual" => (
                vec![
                    ChainStep::Unary(UnaryOp::Sigmoid, i(0)),
                    ChainStep::Binary(BinaryOp::Mul, i(0), s(0)),
                    ChainStep::Binary(BinaryOp::Add, i(1), s(1)),
                ],
                vec![residual],
            ),
            "residual" => (
                vec![ChainStep::Binary(BinaryOp::Add, i(0), i(1))],
                vec![residual],
            ),
            "leaky" => (
                vec![
                    ChainStep::Binary(BinaryOp::Mul, i(0), i(1)),
                    ChainStep::Binary(BinaryOp::Max, i(0), s(0)),
                ],
                vec![scalar(0.1)],
            ),
            "residual_relu" => (
                vec![
                    ChainStep::Binary(BinaryOp::Add, i(0), i(1)),
                    ChainStep::Unary(UnaryOp::Relu, s(0)),
                ],
                vec![residual],
            ),
            "scale_residual" => {
                // Per-channel scale as [O, 1, .., 1] (rank - 1 dims).
                let sd: Vec<usize> = std::iter::once(o)
                    .chain(std::iter::repeat_n(1, rank - 2))
                    .collect();
                (
                    vec![
                        ChainStep::Binary(BinaryOp::Mul, i(0), i(1)),
                        ChainStep::Binary(BinaryOp::Add, s(0), i(2)),
                    ],
                    vec![(sd, seq(o, 2, 7, 2.0)), residual],
                )
            }
            other => panic!("unknown epilogue {other}"),
        }
    }

    /// A fused conv kernel: window, groups, bias, epilogue, inputs, output.
    pub(crate) type FusedConvFn =
        dyn Fn(&Window, usize, bool, &[ChainStep], &[View], &mut ViewMut) -> KernelResult;

    /// Runs every case of a tools/gen_fused_conv_fixtures.py fixture `text`
    /// (`want_cases` cases) through `kernel` at 1, 2 and 3 threads, and
    /// through the packed-weight kernel at 1 and 2 threads where it takes
    /// the conv, comparing with numpy's result; returns the cases the
    /// packed kernel took.
    pub(crate) fn check_fused_conv_fixture(
        text: &str,
        want_cases: usize,
        kernel: &FusedConvFn,
    ) -> Vec<String> {
        let fixture: Value = serde_json::from_str(text).expect("fixture JSON");
        let cases = fixture["cases"].as_array().expect("cases");
        assert_eq!(cases.len(), want_cases);
        let mut packed_cases = Vec::new();
        for case in cases {
            let name = case["name"].as_str().expect("name");
            let (xd, wd, yd) = (dims(&case["x"]), dims(&case["w"]), dims(&case["y_dims"]));
            let window = case_window(case);
            let groups = case["groups"].as_u64().expect("groups") as usize;
            let bias = case["bias"].as_bool().expect("bias");
            let o = wd[0];
            let x = seq(xd.iter().product(), 7, 23, 8.0);
            let w = seq(wd.iter().product(), 5, 17, 16.0);
            let b: Vec<f32> = (0..o).map(|i| ((i % 5) as f32 - 2.0) / 4.0).collect();
            let bd = [o];
            let res = dims(&case["res_dims"]);
            let epi = case["epilogue"].as_str().expect("epilogue");
            let (steps, extras) = epilogue(epi, o, yd.len(), &res);
            let mut ins: Vec<(&[usize], &[f32])> = vec![(&xd, &x), (&wd, &w)];
            if bias {
                ins.push((&bd, &b));
            }
            ins.extend(extras.iter().map(|(d, v)| (d.as_slice(), v.as_slice())));
            let want: Vec<f64> = case["y"]
                .as_array()
                .expect("y")
                .iter()
                .map(|v| v.as_f64().expect("a number"))
                .collect();
            // The packed-weight path too, where it takes the conv.
            let packed = packed_copy(&window, groups, [&xd, &wd, &yd], &w);
            let op = Op::FusedConv {
                window: window.clone(),
                groups,
                bias,
                epilogue: steps.clone(),
            };
            let mut packed_ins = ins.clone();
            if let Some((_, pw)) = &packed {
                packed_ins[1] = (&wd, pw);
                packed_cases.push(name.to_string());
            }
            let runs = (1..=3).map(|t| (t, None)).chain(
                packed
                    .iter()
                    .flat_map(|(nr, _)| [(1, Some(*nr)), (2, Some(*nr))]),
            );
            for (threads, nr) in runs {
                let got = crate::threads::with_limit(Some(threads), || match nr {
                    None => run_as(
                        DType::F32,
                        |i, out| kernel(&window, groups, bias, &steps, i, out),
                        &ins,
                        &yd,
                        f32::NAN,
                    ),
                    Some(nr) => run_as(
                        DType::F32,
                        |i, out| conv_packed_weights(&op, nr, i, out),
                        &packed_ins,
                        &yd,
                        f32::NAN,
                    ),
                })
                .unwrap_or_else(|e| panic!("{name} (packed: {nr:?}): {e}"));
                assert_eq!(got.len(), want.len(), "{name}");
                for (k, (&g, &w)) in got.iter().zip(&want).enumerate() {
                    assert!(
                        (f64::from(g) - w).abs() <= 1e-5 * (1.0 + w.abs()),
                        "{name} at {threads} threads (packed: {nr:?}): element {k}: {g} vs numpy {w}"
                    );
                }
            }
        }
        packed_cases
    }

    /// The window of a tools/gen_fused_conv_fixtures.py case.
    pub(crate) fn case_window(case: &Value) -> Window {
        Window {
            kernel: vec![],
            stride: dims(&case["stride"]),
            padding: case["pads"]
                .as_array()
                .expect("pads")
                .iter()
                .map(|p| (dims(p)[0], dims(p)[1]))
                .collect(),
            dilation: dims(&case["dilation"]),
        }
    }

    /// For each case of fixture `text`: `taken` holds for its geometry (the
    /// kernel under test computes it), and the fused conv gives the bits
    /// of the conv followed by the region epilogue (what the unfused graph
    /// runs) at 1 and 2 threads, also with NaNs and a -0 in the input.
    pub(crate) fn check_fused_bits(text: &str, taken: impl Fn(&Conv2d) -> bool) {
        let fixture: Value = serde_json::from_str(text).expect("fixture JSON");
        for case in fixture["cases"].as_array().expect("cases") {
            let name = case["name"].as_str().expect("name");
            let (xd, wd, yd) = (dims(&case["x"]), dims(&case["w"]), dims(&case["y_dims"]));
            let window = case_window(case);
            let groups = case["groups"].as_u64().expect("groups") as usize;
            let g2 = geometry(&window, groups, &xd, &wd, &yd).expect("a 2-D conv");
            assert!(taken(&g2), "{name} is not taken");
            let mut x = seq(xd.iter().product(), 7, 23, 8.0);
            let w = seq(wd.iter().product(), 5, 17, 16.0);
            let b: Vec<f32> = (0..wd[0]).map(|i| ((i % 7) as f32 - 3.0) / 8.0).collect();
            let bd = [wd[0]];
            let res = dims(&case["res_dims"]);
            let (steps, extras) =
                epilogue(case["epilogue"].as_str().expect("epilogue"), wd[0], 4, &res);
            for nan in [false, true] {
                if nan {
                    let n = x.len();
                    // A NaN with a payload: the epilogue's max / min make it
                    // the canonical NaN, which a kernel's clamp must match.
                    x[n / 3] = f32::from_bits(0xffc0_0001);
                    x[n - 1] = f32::NAN;
                    x[n / 2] = -0.0;
                }
                let mut ins: Vec<(&[usize], &[f32])> = vec![(&xd, &x), (&wd, &w), (&bd, &b)];
                ins.extend(extras.iter().map(|(d, v)| (d.as_slice(), v.as_slice())));
                for threads in [1, 2] {
                    crate::threads::with_limit(Some(threads), || {
                        let fused = run_as(
                            DType::F32,
                            |i, o| fused_conv(&window, groups, true, &steps, i, o),
                            &ins,
                            &yd,
                            f32::NAN,
                        )
                        .expect("fused conv");
                        let mut plain = run_as(
                            DType::F32,
                            |i, o| conv(&window, groups, i, o),
                            &ins[..3],
                            &yd,
                            f32::NAN,
                        )
                        .expect("conv");
                        let views: Vec<_> = ins[3..]
                            .iter()
                            .map(|&(d, v)| View {
                                dims: d,
                                dtype: DType::F32,
                                // SAFETY: f32 has no padding.
                                bytes: unsafe {
                                    std::slice::from_raw_parts(v.as_ptr() as *const u8, v.len() * 4)
                                },
                            })
                            .collect();
                        let bytes = unsafe {
                            // SAFETY: as above, and any bit pattern is an f32.
                            std::slice::from_raw_parts_mut(
                                plain.as_mut_ptr() as *mut u8,
                                plain.len() * 4,
                            )
                        };
                        region::epilogue(
                            &steps,
                            &views,
                            &mut ViewMut {
                                dims: &yd,
                                dtype: DType::F32,
                                bytes,
                            },
                        )
                        .expect("epilogue");
                        // A NaN's payload / sign is unspecified (the optimiser may
                        // reorder a NaN-producing op's operands): any NaN matches.
                        let differ = fused.iter().zip(&plain).position(|(a, b)| {
                            a.to_bits() != b.to_bits() && !(a.is_nan() && b.is_nan())
                        });
                        assert!(
                            differ.is_none(),
                            "{name} at {threads} threads (NaN input: {nan}): fused and unfused \
                             bits differ at {differ:?}"
                        );
                    });
                }
            }
        }
    }

    /// Every case of tools/gen_fused_conv_fixtures.py (numpy): each conv
    /// path (depthwise, 1x1, im2col in one and in two tiles, Winograd,
    /// grouped, 1-D) with an
    /// epilogue applied block by block, at 1, 2 and 3 threads.
    #[test]
    fn fused_conv_paths_match_numpy() {
        let text = include_str!("../../tests/fixtures/fused_conv/cases.json");
        let packed_cases = check_fused_conv_fixture(text, 10, &fused_conv);
        if crate::kernels::gemm_packed::panel_width().is_some() {
            for want in [
                "pointwise_1x1_bias_relu6_batch2",
                "dense_3x3_two_row_tiles_relu6",
            ] {
                assert!(
                    packed_cases.iter().any(|c| c == want),
                    "{want} not packed: {packed_cases:?}"
                );
            }
        }
    }

    /// An extra that does not broadcast to the output, and too few inputs,
    /// are errors naming what is wrong.
    #[test]
    fn bad_fused_conv_inputs_are_errors() {
        let window = Window {
            kernel: vec![],
            stride: vec![1, 1],
            padding: vec![(0, 0), (0, 0)],
            dilation: vec![1, 1],
        };
        let (xd, wd, yd, bad) = ([1, 2, 3, 3], [2, 2, 1, 1], [1, 2, 3, 3], [5]);
        let (x, w, e) = (vec![1.0f32; 18], vec![1.0f32; 4], vec![1.0f32; 5]);
        let add = [ChainStep::Binary(
            BinaryOp::Add,
            ChainOperand::Input(0),
            ChainOperand::Input(1),
        )];
        let err = run_as(
            DType::F32,
            |i, out| fused_conv(&window, 1, false, &add, i, out),
            &[(&xd[..], &x[..]), (&wd, &w), (&bad, &e)],
            &yd,
            0.0,
        )
        .expect_err("a [5] extra does not broadcast to [1, 2, 3, 3]");
        assert!(err.contains("[5] does not broadcast"), "{err}");
        let err = run_as(
            DType::F32,
            |i, out| fused_conv(&window, 1, true, &add, i, out),
            &[(&xd[..], &x[..]), (&wd, &w)],
            &yd,
            0.0,
        )
        .expect_err("bias missing");
        assert!(err.contains("fused conv takes x, w, bias"), "{err}");
    }
}
