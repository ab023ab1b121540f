//! Max pooling and global average pooling with the NCHWc blocked layout
//! `[N][C/16][H][W][16]` on a side (planned by `nchwc_layout.rs`:
//! ResNet's stem conv -> max pool -> layer 1, and last conv -> global
//! average pool), as ONNX Runtime's NCHWc MaxPool / GlobalAveragePool: 16
//! channels in the lanes, one 16-lane max per tap (on AVX-512 separable:
//! each input row's maxima over the output columns' taps, kept while the
//! next output rows read that row, then the max over a window's rows).
//! A max pool reads its
//! image blocked or NCHW (each 16-plane block transposed into a blocked
//! scratch copy first) and writes blocked or NCHW ([`BlockedIo`]); a
//! mean reads blocked (its `[N][C][1][1]` output is the same bytes in
//! either layout). [`MaxPoolRows`] runs the max pool's separable loop on
//! a band of rows held elsewhere (`stem_pool.rs`: the stem's rows in a
//! per-thread band buffer), a band of output rows at a time.
//!
//! Same values as the NCHW kernels: the max is `pool.rs`'s step (NaN
//! sticks, padding never wins, an all-padding window is -inf); the mean
//! sums each channel's pixels in order in f64 and divides once, as
//! `reduce.rs`'s contiguous mean, so the same bits.

use super::conv_nchwc::BlockedIo;
use super::{KernelResult, View, ViewMut};
use crate::team;
use rlx_ir::op::{PoolKind, ReduceOp};
use rlx_ir::ops::conv::window_out_len;
use rlx_ir::{DType, Op};
use std::cell::Cell;

/// Channels per block.
const LANES: usize = 16;

thread_local! {
    /// The calling thread's blocked copy of one NCHW block, reused.
    static SCRATCH: Cell<Vec<f32>> = const { Cell::new(Vec::new()) };
}

/// True when [`run`] takes `op` on an f32 input of dims `x` giving `y`
/// with a blocked side: a 2-D max pool (either side blocked), or a mean
/// over both spatial axes of a 4-D tensor (read blocked), with whole
/// 16-channel blocks.
pub(crate) fn takes(op: &Op, x: &[usize], y: &[usize], dtype: DType) -> bool {
    let whole = dtype == DType::F32 && x.len() == 4 && x[1] > 0 && x[1].is_multiple_of(LANES);
    whole
        && match op {
            Op::Pool {
                kind: PoolKind::Max,
                window,
                ..
            } => window.kernel.len() == 2 && y.len() == 4 && y[..2] == x[..2],
            Op::Reduce {
                op: ReduceOp::Mean,
                axes,
                ..
            } => axes == &[2, 3] && x[2] * x[3] > 0 && y.iter().product::<usize>() == x[0] * x[1],
            _ => false,
        }
}

/// True when [`run`] can write `op`'s output blocked: a max pool it
/// [`takes`] (a mean's output is the same bytes in either layout).
pub(crate) fn writes(op: &Op, x: &[usize], y: &[usize], dtype: DType) -> bool {
    matches!(op, Op::Pool { .. }) && takes(op, x, y, dtype)
}

/// `op` ([`takes`]) on the image `ins[0]` into `out`, each in the layout
/// `io` names (at least one side blocked; a mean reads blocked).
pub(crate) fn run(op: &Op, io: BlockedIo, ins: &[View], out: &mut ViewMut) -> KernelResult {
    let [x] = ins else {
        return Err(fail!("blocked pool takes 1 input, given {}", ins.len()));
    };
    let sides_ok = match op {
        Op::Pool { .. } => io.input || io.output,
        _ => io.input && !io.output,
    };
    if !sides_ok {
        return Err(fail!(
            "blocked pool: {} with layouts {io:?} has no blocked side it can run",
            op.mnemonic()
        ));
    }
    if !takes(op, x.dims, out.dims, x.dtype) || out.dtype != DType::F32 {
        return Err(fail!(
            "blocked pool: {} of {:?} {:?} into {:?} {:?} is not a max pool or spatial mean over whole 16-channel blocks",
            op.mnemonic(),
            x.dtype,
            x.dims,
            out.dtype,
            out.dims
        ));
    }
    let y_dims = out.dims;
    let (xs, ys) = (x.slice::<f32>(), out.slice::<f32>());
    if xs.len() != x.numel() || ys.len() != y_dims.iter().product::<usize>() {
        return Err(fail!("blocked pool: buffer sizes do not match the dims"));
    }
    match op {
        Op::Pool { window, .. } => {
            let g = Geom::new(window, x.dims, y_dims)?;
            max_pool(&g, io, xs, ys);
            Ok(())
        }
        _ => {
            mean(xs, x.dims, ys);
            Ok(())
        }
    }
}

/// A checked 2-D window over one plane.
struct Geom {
    h: usize,
    w: usize,
    oh: usize,
    ow: usize,
    k: (usize, usize),
    s: (usize, usize),
    d: (usize, usize),
    p: (usize, usize),
}

impl Geom {
    fn new(win: &rlx_ir::op::Window, x: &[usize], y: &[usize]) -> Result<Self, super::KernelError> {
        let two = |v: &[usize]| (v.len() == 2).then(|| (v[0], v[1]));
        let (Some(k), Some(s), Some(d)) = (two(&win.kernel), two(&win.stride), two(&win.dilation))
        else {
            return Err(fail!("blocked max pool: a 2-D window, given {win:?}"));
        };
        let &[(pt, pb), (pl, pr)] = win.padding.as_slice() else {
            return Err(fail!("blocked max pool: 2-D padding, given {win:?}"));
        };
        let (oh, ow) = (y[2], y[3]);
        if s.0 == 0
            || s.1 == 0
            || window_out_len(x[2], k.0, s.0, (pt, pb), d.0) != Some(oh)
            || window_out_len(x[3], k.1, s.1, (pl, pr), d.1) != Some(ow)
        {
            return Err(fail!(
                "blocked max pool: out {y:?} does not match x {x:?}, window {win:?}"
            ));
        }
        Ok(Geom {
            h: x[2],
            w: x[3],
            oh,
            ow,
            k,
            s,
            d,
            p: (pt, pl),
        })
    }

    /// The input rows (or columns) output `o` reads, `o * s + t * d - p`
    /// for taps `t < k`, those in `0..n` (padding never wins a max).
    fn taps(
        o: usize,
        s: usize,
        d: usize,
        p: usize,
        k: usize,
        n: usize,
    ) -> impl Iterator<Item = usize> {
        (0..k).filter_map(move |t| (o * s + t * d).checked_sub(p).filter(|&i| i < n))
    }
}

/// A 2-D max pool run a band of output rows at a time on blocked rows
/// held elsewhere (`stem_pool.rs`: the stem's rows, computed into a band
/// buffer just before): the same separable loop, so the same bits as
/// [`run`] on the whole image. AVX-512 only.
pub(crate) struct MaxPoolRows(Geom);

impl MaxPoolRows {
    /// The pool `op` of a `[N][C][h][w]` image giving `y` ([`writes`]),
    /// on a CPU with AVX-512, else `None`.
    pub(crate) fn new(op: &Op, x: &[usize], y: &[usize]) -> Option<Self> {
        let Op::Pool { window, .. } = op else {
            return None;
        };
        let avx512 = super::conv_nchwc::avx512();
        (avx512 && writes(op, x, y, DType::F32))
            .then(|| Geom::new(window, x, y).ok())
            .flatten()
            .map(MaxPoolRows)
    }

    /// Output rows `(oh, ow)`.
    pub(crate) fn out_dims(&self) -> (usize, usize) {
        (self.0.oh, self.0.ow)
    }

    /// The input rows output rows `out` read (padding rows left out).
    pub(crate) fn rows_read(&self, out: std::ops::Range<usize>) -> std::ops::Range<usize> {
        let g = &self.0;
        let span = |o| Geom::taps(o, g.s.0, g.d.0, g.p.0, g.k.0, g.h);
        let lo = out.clone().flat_map(span).min();
        let hi = out.flat_map(span).max();
        match (lo, hi) {
            (Some(lo), Some(hi)) => lo..hi + 1,
            _ => 0..0,
        }
    }

    /// Output rows `out` of one 16-channel block into `dst` (those rows,
    /// `[rows][ow][16]`), reading `src`: the block's input rows
    /// [`Self::rows_read`] from `row0`, `[rows][w][16]`.
    pub(crate) fn block_rows(
        &self,
        src: &[f32],
        row0: usize,
        dst: &mut [f32],
        out: std::ops::Range<usize>,
    ) {
        let g = &self.0;
        let read = self.rows_read(out.clone());
        assert!(
            (read.is_empty() || row0 <= read.start && src.len() >= (read.end - row0) * g.w * LANES)
                && dst.len() >= out.len() * g.ow * LANES,
            "a band's rows and buffers cover its window"
        );
        #[cfg(target_arch = "x86_64")]
        // SAFETY: AVX-512 F present (`new`).
        unsafe {
            separable(g, src, row0, dst, out, true)
        }
    }
}

/// Max pool of every `[C/16]` block of every image, one part per
/// (image, block) over the team. A block's 16 channels take the same
/// range of `x` / `y` in either layout (`[16][h][w]` or `[h][w][16]`).
fn max_pool(g: &Geom, io: BlockedIo, x: &[f32], y: &mut [f32]) {
    let (pin, pout) = (g.h * g.w, g.oh * g.ow);
    let blocks = x.len() / (pin * LANES).max(1);
    let shared = team::Disjoint::new(y);
    team::parallel_for(blocks, |b| {
        let src = &x[b * pin * LANES..][..pin * LANES];
        // SAFETY: part `b` owns the 16 output channels of its block.
        let dst = unsafe { shared.range(b * LANES * pout..(b + 1) * LANES * pout) };
        if io.input {
            block_max(g, src, dst, io.output);
            return;
        }
        let mut blocked = SCRATCH.take();
        blocked.resize(pin * LANES, 0.0);
        to_blocked(src, g.h, g.w, &mut blocked);
        block_max(g, &blocked, dst, io.output);
        SCRATCH.set(blocked);
    });
}

/// The 16 planes `planes` (`[16][h][w]`) as `[h][w][16]` in `out`.
fn to_blocked(planes: &[f32], h: usize, w: usize, out: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx512f") {
        for (ir, row) in out.chunks_exact_mut(w * LANES).enumerate() {
            // SAFETY: AVX-512 F present; the runs read are row `ir` of
            // the 16 planes, the stores the `w` pixels of `row`.
            unsafe { super::conv_nchwc::reorder_row16(planes, (h, w), 0..LANES, ir, row, 0..w, 0) };
        }
        return;
    }
    for (p, px) in out.chunks_exact_mut(LANES).enumerate() {
        px.iter_mut()
            .enumerate()
            .for_each(|(l, v)| *v = planes[l * h * w + p]);
    }
}

/// One block: `src` `[h][w][16]` into `dst`, `[oh][ow][16]` when
/// `blocked_out`, else the 16 planes `[16][oh][ow]`.
fn block_max(g: &Geom, src: &[f32], dst: &mut [f32], blocked_out: bool) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx512f") {
        // SAFETY: the CPU has AVX-512 F.
        return unsafe { separable(g, src, 0, dst, 0..g.oh, blocked_out) };
    }
    body(g, src, dst, blocked_out)
}

/// [`block_max`] of output rows `out_rows` on AVX-512, `src` holding
/// input rows `row0 ..` (those the rows read; a band of them, for
/// [`MaxPoolRows`]), `dst` those output rows when `blocked_out`, else
/// the 16 whole planes. Separable: each input row's max over every
/// output column's taps first (kept while the next output rows read that
/// row: a 3x3 stride-2 window shares a row with the next), then each
/// output's max over its rows of those. The max step keeps the first of
/// equal values and the last NaN, so any grouping of the taps in order
/// gives the row-major loop's bits; a 3x3 stride-2 pool of a 64 x 112 x
/// 112 image (ResNet's) took 0.08 ms this way against 0.14 ms tap by tap
/// (a C model of both on this host; the tap loop [`body`] took 0.38).
///
/// # Safety
/// AVX-512 F present.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn separable(
    g: &Geom,
    src: &[f32],
    row0: usize,
    dst: &mut [f32],
    out_rows: std::ops::Range<usize>,
    blocked_out: bool,
) {
    use std::arch::x86_64::*;
    // `pool.rs`'s max step: `v` when `a < v` or `v` is NaN, else `a`.
    let step = |a: __m512, v: __m512| {
        let take =
            _mm512_cmp_ps_mask::<_CMP_LT_OQ>(a, v) | _mm512_cmp_ps_mask::<_CMP_UNORD_Q>(v, v);
        _mm512_mask_mov_ps(a, take, v)
    };
    let load = |at: usize| {
        let px = &src[at * LANES..][..LANES];
        // SAFETY: `px` is 16 floats.
        unsafe { _mm512_loadu_ps(px.as_ptr()) }
    };
    let none = _mm512_set1_ps(f32::NEG_INFINITY);
    let cols: Vec<(usize, usize)> = (0..g.ow)
        .map(|ow| {
            let mut taps = Geom::taps(ow, g.s.1, g.d.1, g.p.1, g.k.1, g.w);
            let first = taps.next();
            (first.unwrap_or(0), first.map_or(0, |_| 1 + taps.count()))
        })
        .collect();
    // Up to `k.0` input rows' column maxima, each slot tagged with its row.
    let slots = g.k.0.max(1);
    let mut hmax = vec![none; slots * g.ow];
    let mut tag = vec![usize::MAX; slots];
    let mut row = vec![none; g.ow];
    // A window's input rows and their slots, reused across output rows.
    let (mut rows, mut picked) = (Vec::with_capacity(slots), Vec::with_capacity(slots));
    for oh in out_rows.clone() {
        rows.clear();
        rows.extend(Geom::taps(oh, g.s.0, g.d.0, g.p.0, g.k.0, g.h));
        picked.clear();
        for &ih in &rows {
            let slot = match tag.iter().position(|&t| t == ih) {
                Some(slot) => slot,
                None => {
                    // A slot no row of this window holds.
                    let slot = (0..slots)
                        .find(|&k| !rows.contains(&tag[k]))
                        .expect("a window reads at most k rows");
                    let at = (ih - row0) * g.w;
                    for (h, &(c0, cn)) in hmax[slot * g.ow..][..g.ow].iter_mut().zip(&cols) {
                        *h = (1..cn).fold(if cn > 0 { load(at + c0) } else { none }, |a, t| {
                            step(a, load(at + c0 + t * g.d.1))
                        });
                    }
                    tag[slot] = ih;
                    slot
                }
            };
            picked.push(slot);
        }
        for (ow, acc) in row.iter_mut().enumerate() {
            *acc = match picked.split_first() {
                Some((&first, rest)) => rest.iter().fold(hmax[first * g.ow + ow], |a, &k| {
                    step(a, hmax[k * g.ow + ow])
                }),
                None => none,
            };
        }
        if blocked_out {
            let out = &mut dst[(oh - out_rows.start) * g.ow * LANES..][..g.ow * LANES];
            for (o, v) in out.chunks_exact_mut(LANES).zip(&row) {
                // SAFETY: `o` is 16 floats.
                unsafe { _mm512_storeu_ps(o.as_mut_ptr(), *v) };
            }
            continue;
        }
        let pout = g.oh * g.ow;
        let mut lanes = [0f32; LANES];
        for (ow, v) in row.iter().enumerate() {
            // SAFETY: `lanes` is 16 floats.
            unsafe { _mm512_storeu_ps(lanes.as_mut_ptr(), *v) };
            for (l, &x) in lanes.iter().enumerate() {
                dst[l * pout + oh * g.ow + ow] = x;
            }
        }
    }
}

/// [`block_max`]'s loops where the CPU lacks AVX-512 (16-lane arrays: one
/// vector max per tap; the taps of each output clipped to the image once,
/// so no padding test).
fn body(g: &Geom, src: &[f32], dst: &mut [f32], blocked_out: bool) {
    let pout = g.oh * g.ow;
    let range = |o: usize, s: usize, d: usize, p: usize, k: usize, n: usize| {
        let mut taps = Geom::taps(o, s, d, p, k, n);
        let first = taps.next();
        (first, first.map_or(0, |_| 1 + taps.count()))
    };
    let cols: Vec<_> = (0..g.ow)
        .map(|ow| range(ow, g.s.1, g.d.1, g.p.1, g.k.1, g.w))
        .collect();
    let mut row = vec![[0f32; LANES]; g.ow];
    for oh in 0..g.oh {
        let (r0, rn) = range(oh, g.s.0, g.d.0, g.p.0, g.k.0, g.h);
        for (acc, &(c0, cn)) in row.iter_mut().zip(&cols) {
            let mut a = [f32::NEG_INFINITY; LANES];
            if let (Some(r0), Some(c0)) = (r0, c0) {
                for ih in (0..rn).map(|t| r0 + t * g.d.0) {
                    for iw in (0..cn).map(|t| c0 + t * g.d.1) {
                        let at = (ih * g.w + iw) * LANES;
                        let px = &src[at..at + LANES];
                        for l in 0..LANES {
                            // `pool.rs`'s max step: NaN sticks.
                            let v = px[l];
                            a[l] = if (a[l] < v) | v.is_nan() { v } else { a[l] };
                        }
                    }
                }
            }
            *acc = a;
        }
        if blocked_out {
            let out = &mut dst[oh * g.ow * LANES..][..g.ow * LANES];
            out.chunks_exact_mut(LANES)
                .zip(&row)
                .for_each(|(o, acc)| o.copy_from_slice(acc));
            continue;
        }
        for (l, plane) in dst.chunks_exact_mut(pout).enumerate() {
            let out = &mut plane[oh * g.ow..][..g.ow];
            out.iter_mut().zip(&row).for_each(|(o, acc)| *o = acc[l]);
        }
    }
}

/// Mean over each channel's pixels of the blocked `x` (dims `[n, c, h,
/// w]`) into `y` `[n][c]`: per lane an f64 sum in pixel order, then one
/// divide (`reduce.rs`'s order).
fn mean(x: &[f32], dims: &[usize], y: &mut [f32]) {
    let pixels = dims[2] * dims[3];
    let div = pixels as f64;
    for (src, out) in x
        .chunks_exact((pixels * LANES).max(1))
        .zip(y.chunks_exact_mut(LANES))
    {
        let mut acc = [0f64; LANES];
        for px in src.chunks_exact(LANES) {
            acc.iter_mut().zip(px).for_each(|(a, &v)| *a += v as f64);
        }
        out.iter_mut()
            .zip(&acc)
            .for_each(|(o, &a)| *o = (a / div) as f32);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::cnn_fixtures;
    use crate::kernels::conv_nchwc::reblock;
    use rlx_ir::op::Window;

    fn max_op(k: usize, s: usize, p: usize) -> Op {
        Op::Pool {
            kind: PoolKind::Max,
            window: Window {
                kernel: vec![k; 2],
                stride: vec![s; 2],
                padding: vec![(p, p); 2],
                dilation: vec![1; 2],
            },
            count_include_pad: false,
        }
    }

    fn run_on(op: &Op, x: &[usize], y: &[usize]) -> KernelResult {
        let xs = vec![0f32; x.iter().product()];
        let mut ys = vec![0f32; y.iter().product()];
        // SAFETY: f32 is plain data.
        let xb = unsafe { std::slice::from_raw_parts(xs.as_ptr() as *const u8, xs.len() * 4) };
        let yb =
            unsafe { std::slice::from_raw_parts_mut(ys.as_mut_ptr() as *mut u8, ys.len() * 4) };
        let ins = [View {
            dims: x,
            dtype: DType::F32,
            bytes: xb,
        }];
        let io = BlockedIo {
            input: true,
            output: false,
        };
        run(
            op,
            io,
            &ins,
            &mut ViewMut {
                dims: y,
                dtype: DType::F32,
                bytes: yb,
            },
        )
    }

    /// Every max case of whole 16-channel blocks in
    /// tools/gen_cnn_ops_fixtures.py's pools (numpy, float64 loops; ResNet's
    /// 3x3 stride 2 on odd planes with NaNs, dilated asymmetric windows,
    /// SPPF's 5x5 stride 1 (two sizes), 2x2 stride 2 (two sizes), a 4-block
    /// batch) through [`run`]
    /// with the input, the output or both blocked, at 1-3 threads.
    #[test]
    fn blocked_max_pool_matches_numpy() {
        let cases = cnn_fixtures::cases(include_str!("../../tests/fixtures/cnn_ops/pool.json"));
        let mut ran = 0;
        for case in &cases {
            let (xd, yd) = (
                cnn_fixtures::dims(&case["x"]),
                cnn_fixtures::dims(&case["y_dims"]),
            );
            if case["kind"] != "max" || xd[1] % LANES != 0 {
                continue;
            }
            ran += 1;
            let op = Op::Pool {
                kind: PoolKind::Max,
                window: cnn_fixtures::window(case),
                count_include_pad: false,
            };
            let x = cnn_fixtures::input(case);
            let (c, pin, pout) = (xd[1], xd[2] * xd[3], yd[2] * yd[3]);
            for (input, output) in [(true, true), (false, true), (true, false)] {
                let xs = if input {
                    reblock(&x, c, pin, true)
                } else {
                    x.clone()
                };
                for threads in 1..=3 {
                    let mut ys = vec![0f32; yd.iter().product()];
                    let io = BlockedIo { input, output };
                    crate::threads::with_limit(Some(threads), || {
                        run(
                            &op,
                            io,
                            &[f32_view(&xd, &xs)],
                            &mut f32_view_mut(&yd, &mut ys),
                        )
                    })
                    .unwrap();
                    let y = if output {
                        reblock(&ys, c, pout, false)
                    } else {
                        ys
                    };
                    cnn_fixtures::check(case, &y);
                }
            }
        }
        assert_eq!(ran, 7);
    }

    fn f32_view<'a>(dims: &'a [usize], v: &'a [f32]) -> View<'a> {
        // SAFETY: f32 is plain data.
        let bytes = unsafe { std::slice::from_raw_parts(v.as_ptr() as *const u8, v.len() * 4) };
        View {
            dims,
            dtype: DType::F32,
            bytes,
        }
    }

    fn f32_view_mut<'a>(dims: &'a [usize], v: &'a mut [f32]) -> ViewMut<'a> {
        // SAFETY: f32 is plain data.
        let bytes =
            unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr() as *mut u8, v.len() * 4) };
        ViewMut {
            dims,
            dtype: DType::F32,
            bytes,
        }
    }

    /// Shapes the kernel cannot take are typed errors naming them.
    #[test]
    fn bad_blocked_pool_inputs_are_errors() {
        let op = max_op(3, 2, 1);
        assert!(run_on(&op, &[1, 16, 9, 9], &[1, 16, 5, 5]).is_ok());
        // 24 channels: not whole blocks.
        let e = run_on(&op, &[1, 24, 9, 9], &[1, 24, 5, 5]).unwrap_err();
        assert!(format!("{e:?}").contains("[1, 24, 9, 9]"), "{e:?}");
        // An output size the window does not give.
        let e = run_on(&op, &[1, 16, 9, 9], &[1, 16, 4, 5]).unwrap_err();
        assert!(format!("{e:?}").contains("does not match"), "{e:?}");
        // Average pooling is not taken blocked.
        let avg = Op::Pool {
            kind: PoolKind::Avg,
            window: Window {
                kernel: vec![2; 2],
                stride: vec![2; 2],
                padding: vec![(0, 0); 2],
                dilation: vec![1; 2],
            },
            count_include_pad: false,
        };
        assert!(run_on(&avg, &[1, 16, 8, 8], &[1, 16, 4, 4]).is_err());
    }
}
