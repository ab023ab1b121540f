//! Max / average pooling over the spatial dims of `[N, C, *sp]` tensors.
//!
//! Two spatial dims (every pool of the CNN set: U-Net's and CRNN's 2x2,
//! YOLO's 5x5 SPPF) run row by row: per output row and kernel tap, one pass
//! over the output columns whose tap lands inside the input, contiguous
//! (so vectorised) at stride 1, with the planes split over the thread team.
//! An f32 max at stride 1 on AVX-512 runs each plane in registers instead
//! ([`max_plane_s1_avx512`]: the same folds, 16 columns a vector).
//! Other ranks walk conv's tap table ([`super::conv`]).

use super::conv::{check_buf, check_window, for_each_index, tap_offsets, PAD};
use super::conv2d::{as_f32, as_f32_mut};
use super::scalar::{Int, Pod, Real};
use super::{KernelResult, View, ViewMut};
use crate::{team, with_real};
use rlx_ir::op::{PoolKind, Window};
use rlx_ir::ops::conv::window_out_len;
use rlx_ir::DType;
use std::ops::Range;

/// Elements read from which a pool splits its planes over the team: the
/// input, or the outputs times the window's rows + columns where that is
/// more (a 5x5 stride-1 window on a 16x16 map reads each input ~10 times;
/// YOLO's SPPF pools, 64 x 16 x 16, ran on one thread by input size alone).
const PARALLEL_GRAIN: usize = 1 << 15;

/// The window of a pool over two spatial dims.
struct Pool2d {
    h: usize,
    w: usize,
    ow: usize,
    k: (usize, usize),
    s: (usize, usize),
    d: (usize, usize),
    p: (usize, usize),
}

/// Input index of output `o`, tap `t` along one axis, if inside `0..n`.
fn source(o: usize, t: usize, s: usize, d: usize, p: usize, n: usize) -> Option<usize> {
    (o * s + t * d).checked_sub(p).filter(|&i| i < n)
}

impl Pool2d {
    /// The output columns `lo..hi` whose tap `kx` reads inside the input
    /// (a contiguous run: the source column grows with the output column).
    fn columns(&self, kx: usize) -> Range<usize> {
        let (s, d, p) = (self.s.1, self.d.1, self.p.1);
        let lo = (0..self.ow).find(|&o| source(o, kx, s, d, p, self.w).is_some());
        match lo {
            Some(lo) => {
                let hi = (lo..self.ow)
                    .find(|&o| source(o, kx, s, d, p, self.w).is_none())
                    .unwrap_or(self.ow);
                lo..hi
            }
            None => 0..0,
        }
    }

    /// Folds the in-bounds horizontal taps of input row `xr` into the
    /// output-column row `row`.
    #[inline(always)]
    fn fold_row<T: Copy>(
        &self,
        cols: &[Range<usize>],
        xr: &[T],
        row: &mut [T],
        step: &impl Fn(T, T) -> T,
    ) {
        let (sw, dw, pw) = (self.s.1, self.d.1, self.p.1);
        for (kx, c) in cols.iter().enumerate() {
            if c.is_empty() {
                continue;
            }
            // Input column of output column `c.start`; later ones step by `sw`.
            let first = c.start * sw + kx * dw - pw;
            let out = &mut row[c.clone()];
            if sw == 1 {
                for (v, &a) in out.iter_mut().zip(&xr[first..]) {
                    *v = step(*v, a);
                }
            } else if sw == 2 {
                // Pairs of a constant stride: vectorised as two-way
                // interleaved loads (ResNet's 3x3 stride-2 max-pool ran
                // 4x slower through the indexed loop below).
                let pairs = ((xr.len() - first) / 2).min(out.len());
                let (head, tail) = out.split_at_mut(pairs);
                for (v, pair) in head.iter_mut().zip(xr[first..].chunks_exact(2)) {
                    *v = step(*v, pair[0]);
                }
                if let Some(v) = tail.first_mut() {
                    *v = step(*v, xr[first + 2 * pairs]);
                }
            } else {
                // Indexed (not `step_by`, which stays a slow iterator).
                let src = &xr[first..=first + (out.len() - 1) * sw];
                for (i, v) in out.iter_mut().enumerate() {
                    *v = step(*v, src[i * sw]);
                }
            }
        }
    }

    /// Whether a max pool is cheaper in two passes (rows, then columns)
    /// than tap by tap: `kw * sh + kh` against `kh * kw` folds per output
    /// (YOLO's 5x5 SPPF: 10 against 25).
    fn separable(&self) -> bool {
        self.k.1 * self.s.0 + self.k.0 < self.k.0 * self.k.1
    }

    /// Folds windows that tile the input (kernel = stride, no padding or
    /// dilation, one or two columns: U-Net's and CRNN's 2x2 / 2x1 pools)
    /// in one pass per output row over the window's input rows, each
    /// output folded from `init` in the tap-by-tap order; false (nothing
    /// written) for any other window. The general loop made five passes
    /// over each output row for a 2x2 window.
    #[inline(always)]
    fn fold_tiled<T: Copy>(
        &self,
        x: &[T],
        y: &mut [T],
        init: T,
        step: &impl Fn(T, T) -> T,
    ) -> bool {
        let ((kh, kw), ow) = (self.k, self.ow);
        let oh = y.len() / ow.max(1);
        if self.s != self.k
            || self.d != (1, 1)
            || self.p != (0, 0)
            || !(1..=2).contains(&kw)
            || oh * kh > self.h
            || ow * kw > self.w
        {
            return false;
        }
        for (oy, row) in y.chunks_exact_mut(ow).enumerate() {
            let xr = |ky: usize| &x[(oy * kh + ky) * self.w..][..ow * kw];
            if kw == 1 {
                row.iter_mut()
                    .zip(xr(0))
                    .for_each(|(v, &a)| *v = step(init, a));
                for ky in 1..kh {
                    row.iter_mut()
                        .zip(xr(ky))
                        .for_each(|(v, &a)| *v = step(*v, a));
                }
                continue;
            }
            let pair = |v: T, p: &[T]| step(step(v, p[0]), p[1]);
            if kh == 2 {
                let rows = xr(0).chunks_exact(2).zip(xr(1).chunks_exact(2));
                for (v, (a, b)) in row.iter_mut().zip(rows) {
                    *v = pair(pair(init, a), b);
                }
                continue;
            }
            for (v, a) in row.iter_mut().zip(xr(0).chunks_exact(2)) {
                *v = pair(init, a);
            }
            for ky in 1..kh {
                for (v, a) in row.iter_mut().zip(xr(ky).chunks_exact(2)) {
                    *v = pair(*v, a);
                }
            }
        }
        true
    }

    /// A stride-1 max window (YOLO's 5x5 SPPF) in whole-plane passes: the
    /// plane padded once with `init` (a no-op tap for a max), then one
    /// pass per column tap over the padded plane as a single run and one
    /// per row tap likewise, each output folded in the two-pass path's
    /// order. Per-row passes on a 16x16 map were ~90 % loop overhead.
    /// False (nothing written) for other strides.
    #[inline(always)]
    fn fold_padded<T: Copy>(
        &self,
        x: &[T],
        y: &mut [T],
        init: T,
        step: &impl Fn(T, T) -> T,
        buf: &mut Vec<T>,
    ) -> bool {
        if self.s != (1, 1) || self.ow == 0 {
            return false;
        }
        let ((kh, kw), (dh, dw), ow) = (self.k, self.d, self.ow);
        let oh = y.len() / ow;
        let (hp, wp) = self.pad_plane(x, oh, init, buf, |hp, wp| hp * wp);
        let (padded, rows) = buf.split_at_mut(hp * wp);
        // Column taps: rows[i] folds padded[i + kx * dw]; the last
        // (kw - 1) * dw entries of each row are never read below.
        let n = hp * wp - (kw - 1) * dw;
        for kx in 0..kw {
            let src = &padded[kx * dw..][..n];
            rows[..n]
                .iter_mut()
                .zip(src)
                .for_each(|(v, &a)| *v = step(*v, a));
        }
        // Row taps, into the padded plane's first `oh` rows (no longer read).
        let m = n - (kh - 1) * dh * wp;
        let out = &mut padded[..m];
        out.fill(init);
        for ky in 0..kh {
            let src = &rows[ky * dh * wp..][..m];
            out.iter_mut().zip(src).for_each(|(v, &a)| *v = step(*v, a));
        }
        for (oy, yr) in y.chunks_exact_mut(ow).enumerate() {
            yr.copy_from_slice(&padded[oy * wp..][..ow]);
        }
        true
    }

    /// The stride-1 padded copy of plane `x` for `oh` output rows: `buf`
    /// holds `hp x wp` values of `init` with the input rows copied in,
    /// then `rest(hp, wp)` more of `init` (the passes' scratch); returns
    /// `(hp, wp)`.
    fn pad_plane<T: Copy>(
        &self,
        x: &[T],
        oh: usize,
        init: T,
        buf: &mut Vec<T>,
        rest: impl Fn(usize, usize) -> usize,
    ) -> (usize, usize) {
        let ((kh, kw), (dh, dw), (ph, pw)) = (self.k, self.d, self.p);
        let (hp, wp) = (oh + (kh - 1) * dh, self.ow + (kw - 1) * dw);
        buf.clear();
        buf.resize(hp * wp + rest(hp, wp), init);
        for (r, dst) in buf[..hp * wp].chunks_exact_mut(wp).enumerate() {
            let Some(iy) = r.checked_sub(ph).filter(|&iy| iy < self.h) else {
                continue;
            };
            // Input column c is padded column pw + c (pw + w <= wp at stride 1).
            let n = self.w.min(wp.saturating_sub(pw));
            dst[pw..pw + n].copy_from_slice(&x[iy * self.w..][..n]);
        }
        (hp, wp)
    }

    /// Folds every in-bounds tap of each window of plane `x` into `y`;
    /// with `rows` (max pooling only: reassociating sums would change
    /// them) first folds each input row horizontally into `rows`, then
    /// those rows vertically, both contiguous passes.
    #[inline(always)]
    fn fold_plane<T: Copy>(
        &self,
        cols: &[Range<usize>],
        x: &[T],
        y: &mut [T],
        init: T,
        step: &impl Fn(T, T) -> T,
        rows: Option<&mut Vec<T>>,
    ) {
        let (sh, dh, ph) = (self.s.0, self.d.0, self.p.0);
        if self.fold_tiled(x, y, init, step) {
            return;
        }
        let Some(rows) = rows else {
            for (oy, row) in y.chunks_exact_mut(self.ow).enumerate() {
                row.fill(init);
                for ky in 0..self.k.0 {
                    if let Some(iy) = source(oy, ky, sh, dh, ph, self.h) {
                        self.fold_row(cols, &x[iy * self.w..][..self.w], row, step);
                    }
                }
            }
            return;
        };
        if self.fold_padded(x, y, init, step, rows) {
            return;
        }
        rows.clear();
        rows.resize(self.h * self.ow, init);
        for (iy, hr) in rows.chunks_exact_mut(self.ow).enumerate() {
            self.fold_row(cols, &x[iy * self.w..][..self.w], hr, step);
        }
        for (oy, row) in y.chunks_exact_mut(self.ow).enumerate() {
            row.fill(init);
            for ky in 0..self.k.0 {
                if let Some(iy) = source(oy, ky, sh, dh, ph, self.h) {
                    let hr = &rows[iy * self.ow..][..self.ow];
                    row.iter_mut().zip(hr).for_each(|(v, &a)| *v = step(*v, a));
                }
            }
        }
    }
}

/// Whether [`fold_plane_avx512`] may run (AVX-512F on this CPU).
fn wide_vectors() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx512f")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// [`Pool2d::fold_plane`] built for AVX-512 (its passes inlined here): the
/// same per-element folds in the same order, 16 lanes a compare-and-select
/// instead of SSE2's 4 (YOLO's SPPF pools ~2x faster).
///
/// # Safety
/// The CPU must have AVX-512F.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx2,fma")]
unsafe fn fold_plane_avx512<T: Copy>(
    g2: &Pool2d,
    cols: &[Range<usize>],
    x: &[T],
    y: &mut [T],
    init: T,
    step: &impl Fn(T, T) -> T,
    rows: Option<&mut Vec<T>>,
) {
    g2.fold_plane(cols, x, y, init, step, rows)
}

/// Checked geometry of a pooling call.
struct PoolGeom {
    pin: usize,
    pout: usize,
    /// The tap table (N-d path only; empty when `two_d` is set).
    taps: Vec<usize>,
    two_d: Option<Pool2d>,
}

fn pool_geom(w: &Window, ins: &[View], out: &ViewMut) -> Result<PoolGeom, super::KernelError> {
    if ins.len() != 1 {
        return Err(fail!("pool takes 1 input, given {}", ins.len()));
    }
    let x = &ins[0];
    let r = x.dims.len();
    if r < 3 || out.dims.len() != r || out.dims[..2] != x.dims[..2] {
        return Err(fail!("pool of x {:?} cannot give {:?}", x.dims, out.dims));
    }
    check_window(w, r - 2, true)?;
    let (sp_in, sp_out) = (&x.dims[2..], &out.dims[2..]);
    for ax in 0..r - 2 {
        if window_out_len(
            sp_in[ax],
            w.kernel[ax],
            w.stride[ax],
            w.padding[ax],
            w.dilation[ax],
        ) != Some(sp_out[ax])
        {
            return Err(fail!(
                "pool: out {:?} does not match x {:?}, window {w:?}",
                out.dims,
                x.dims
            ));
        }
    }
    check_buf("x", x.dims, x.dtype, x.bytes, x.dtype)?;
    check_buf("out", out.dims, out.dtype, out.bytes, x.dtype)?;
    let two_d = (r == 4).then(|| Pool2d {
        h: sp_in[0],
        w: sp_in[1],
        ow: sp_out[1],
        k: (w.kernel[0], w.kernel[1]),
        s: (w.stride[0], w.stride[1]),
        d: (w.dilation[0], w.dilation[1]),
        p: (w.padding[0].0, w.padding[1].0),
    });
    let taps = match two_d {
        Some(_) => Vec::new(),
        None => tap_offsets(sp_in, &w.kernel, sp_out, w),
    };
    let prod = |d: &[usize]| d.iter().product();
    Ok(PoolGeom {
        pin: prod(sp_in),
        pout: prod(sp_out),
        taps,
        two_d,
    })
}

/// A plane kernel that may take a whole 2-D plane instead of the generic
/// folds: `(window, x plane, y plane)`, false when it does not.
type PlaneKernel<T> = fn(&Pool2d, &[T], &mut [T]) -> bool;

/// Folds every in-bounds tap of each window into `y` with `step`, from
/// `init`; a 2-D plane goes to `fast` first when given.
fn pool_fold<T: Pod>(
    g: &PoolGeom,
    x: &[T],
    y: &mut [T],
    init: T,
    step: impl Fn(T, T) -> T + Sync,
    max: bool,
    fast: Option<PlaneKernel<T>>,
) {
    if g.pout == 0 {
        return;
    }
    if let Some(g2) = &g.two_d {
        let cols: Vec<_> = (0..g2.k.1).map(|kx| g2.columns(kx)).collect();
        let planes = y.len() / g.pout;
        let separable = max && g2.separable();
        // Indexed, not zipped: an empty input still yields all-padding windows.
        #[cfg(target_arch = "x86_64")]
        let wide = wide_vectors();
        let plane = |i: usize, yp: &mut [T], rows: &mut Vec<T>| {
            let xp = &x[i * g.pin..][..g.pin];
            if fast.is_some_and(|f| f(g2, xp, yp)) {
                return;
            }
            let rows = separable.then_some(rows);
            #[cfg(target_arch = "x86_64")]
            if wide {
                // SAFETY: `wide` says the CPU has AVX-512F.
                return unsafe { fold_plane_avx512(g2, &cols, xp, yp, init, &step, rows) };
            }
            g2.fold_plane(&cols, xp, yp, init, &step, rows);
        };
        let reads = x.len().max(y.len() * (g2.k.0 + g2.k.1));
        let parts = if reads >= PARALLEL_GRAIN && planes > 1 {
            team::threads()
        } else {
            1
        };
        if parts <= 1 {
            let mut rows = Vec::new();
            y.chunks_exact_mut(g.pout)
                .enumerate()
                .for_each(|(i, yp)| plane(i, yp, &mut rows));
            return;
        }
        let ranges = team::split(planes, parts, 1);
        let out = team::Disjoint::new(y);
        team::parallel_for(ranges.len(), |part| {
            let mut rows = Vec::new();
            for i in ranges[part].clone() {
                // SAFETY: each plane is written by one part.
                plane(
                    i,
                    unsafe { out.range(i * g.pout..(i + 1) * g.pout) },
                    &mut rows,
                );
            }
        });
        return;
    }
    for (i, yp) in y.chunks_mut(g.pout).enumerate() {
        let xp = &x[i * g.pin..][..g.pin];
        yp.fill(init);
        for taps in g.taps.chunks(g.pout) {
            for (v, &t) in yp.iter_mut().zip(taps) {
                if t != PAD {
                    *v = step(*v, xp[t]);
                }
            }
        }
    }
}

/// Per output cell, the avg-pool divisor: in-bounds taps, or with
/// `count_include_pad` the taps inside the padded input (PyTorch). Both
/// counts are products of per-dim counts.
fn avg_divisors(
    w: &Window,
    sp_in: &[usize],
    sp_out: &[usize],
    count_include_pad: bool,
) -> Vec<usize> {
    let per_dim: Vec<Vec<usize>> = (0..sp_in.len())
        .map(|ax| {
            let (n, (lo, hi)) = (sp_in[ax], w.padding[ax]);
            let (s, d, k) = (w.stride[ax], w.dilation[ax], w.kernel[ax]);
            (0..sp_out[ax])
                .map(|o| {
                    (0..k)
                        .filter(|&kk| {
                            if count_include_pad {
                                o * s + kk * d < n + lo + hi
                            } else {
                                source(o, kk, s, d, lo, n).is_some()
                            }
                        })
                        .count()
                })
                .collect()
        })
        .collect();
    let mut n = Vec::with_capacity(sp_out.iter().product());
    for_each_index(sp_out, |i| {
        n.push(i.iter().zip(&per_dim).map(|(&o, c)| c[o]).product())
    });
    n
}

fn max_int<T: Int>(g: &PoolGeom, x: &View, out: &mut ViewMut) -> KernelResult {
    pool_fold(
        g,
        x.slice::<T>(),
        out.slice::<T>(),
        T::MIN,
        |a, b| a.max(b),
        true,
        None,
    );
    Ok(())
}

/// The running max of a window: NaN in either operand sticks (as numpy's
/// `maximum`), written as one compare-and-select that vectorises.
#[inline(always)]
fn max_step<T: Real>(acc: T, v: T) -> T {
    if acc < v || v.is_nan() {
        v
    } else {
        acc
    }
}

fn pool_real<T: Real>(kind: PoolKind, g: &PoolGeom, div: &[usize], x: &View, out: &mut ViewMut) {
    let y = out.slice::<T>();
    match kind {
        PoolKind::Max => {
            let fast: PlaneKernel<T> = max_plane_f32;
            pool_fold(
                g,
                x.slice::<T>(),
                y,
                T::NEG_INFINITY,
                max_step,
                true,
                Some(fast),
            )
        }
        PoolKind::Avg => {
            pool_fold(g, x.slice::<T>(), y, T::ZERO, |a, b| a + b, false, None);
            let div: Vec<T> = div.iter().map(|&d| T::from_f64(d as f64)).collect();
            for yp in y.chunks_mut(g.pout.max(1)) {
                yp.iter_mut().zip(&div).for_each(|(v, &d)| *v = *v / d);
            }
        }
    }
}

thread_local! {
    /// The calling thread's padded plane and column-folded rows of
    /// [`max_plane_s1_avx512`], reused by the next plane.
    static PLANE: std::cell::Cell<Vec<f32>> = const { std::cell::Cell::new(Vec::new()) };
}

/// A stride-1 f32 max window (YOLO's 5x5 SPPF) on one plane in AVX-512
/// registers ([`max_plane_s1_avx512`]); false (nothing written) for
/// another type, stride or CPU.
fn max_plane_f32<T: Real>(g2: &Pool2d, x: &[T], y: &mut [T]) -> bool {
    let (Some(x), Some(y)) = (as_f32(x), as_f32_mut(y)) else {
        return false;
    };
    if g2.s != (1, 1) || g2.ow == 0 || !wide_vectors() {
        return false;
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (x, y);
    #[cfg(target_arch = "x86_64")]
    {
        let mut buf = PLANE.take();
        // SAFETY: `wide_vectors` says the CPU has AVX-512F.
        unsafe { max_plane_s1_avx512(g2, x, y, &mut buf) };
        PLANE.set(buf);
    }
    true
}

/// [`Pool2d::fold_padded`]'s passes for an f32 max at stride 1, 16
/// output columns a vector: the plane padded once with -inf, each padded
/// row folded over the column taps into a row of output columns, then
/// each output row over the row taps, in the same order with
/// [`max_step`]'s compare-and-select (so the same bits; a NaN sticks).
/// The compiler's loops over these runs spent most of their time in
/// scalar remainders (3 SPPF pools of 64 x 16 x 16: 0.15 ms per run
/// against ONNX Runtime's 0.05).
///
/// # Safety
/// The CPU must have AVX-512F; `g2.s` is (1, 1); `y` holds whole rows of
/// `g2.ow` outputs.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn max_plane_s1_avx512(g2: &Pool2d, x: &[f32], y: &mut [f32], buf: &mut Vec<f32>) {
    use std::arch::x86_64::*;
    let ((kh, kw), (dh, dw), ow) = (g2.k, g2.d, g2.ow);
    let oh = y.len() / ow;
    let (hp, wp) = g2.pad_plane(x, oh, f32::NEG_INFINITY, buf, |hp, _| hp * ow);
    let (padded, rows) = buf.split_at_mut(hp * wp);
    #[inline(always)]
    fn step(acc: __m512, v: __m512) -> __m512 {
        // SAFETY (of the intrinsics): AVX-512F, the caller's target.
        unsafe {
            let take =
                _mm512_cmp_ps_mask::<_CMP_LT_OQ>(acc, v) | _mm512_cmp_ps_mask::<_CMP_UNORD_Q>(v, v);
            _mm512_mask_mov_ps(acc, take, v)
        }
    }
    // Output columns in vectors of 16, the last one masked.
    let chunks = || {
        (0..ow)
            .step_by(16)
            .map(move |c| (c, ((1u32 << (ow - c).min(16)) - 1) as __mmask16))
    };
    // Column taps: rows[r][c] folds padded[r][c + kx * dw] (c + kx * dw < wp).
    for r in 0..hp {
        let src = padded[r * wp..].as_ptr();
        let dst = rows[r * ow..].as_mut_ptr();
        for (c, m) in chunks() {
            // SAFETY: masked lanes c + j < ow, so every read is inside
            // padded row r and every write inside rows row r.
            unsafe {
                let mut acc = _mm512_maskz_loadu_ps(m, src.add(c));
                for kx in 1..kw {
                    acc = step(acc, _mm512_maskz_loadu_ps(m, src.add(c + kx * dw)));
                }
                _mm512_mask_storeu_ps(dst.add(c), m, acc);
            }
        }
    }
    // Row taps: y[oy][c] folds rows[oy + ky * dh][c] (oy + ky * dh < hp).
    for oy in 0..oh {
        let dst = y[oy * ow..].as_mut_ptr();
        for (c, m) in chunks() {
            // SAFETY: as above, rows `oy + ky * dh` < hp of `ow` columns.
            unsafe {
                let mut acc = _mm512_maskz_loadu_ps(m, rows[oy * ow + c..].as_ptr());
                for ky in 1..kh {
                    let src = rows[(oy + ky * dh) * ow + c..].as_ptr();
                    acc = step(acc, _mm512_maskz_loadu_ps(m, src));
                }
                _mm512_mask_storeu_ps(dst.add(c), m, acc);
            }
        }
    }
}

/// Max / average pooling (padding never wins a max; NaN propagates).
pub(crate) fn pool(
    kind: PoolKind,
    w: &Window,
    count_include_pad: bool,
    ins: &[View],
    out: &mut ViewMut,
) -> KernelResult {
    let g = pool_geom(w, ins, out)?;
    let x = &ins[0];
    match (kind, x.dtype) {
        (PoolKind::Max, DType::I8) => max_int::<i8>(&g, x, out),
        (PoolKind::Max, DType::I16) => max_int::<i16>(&g, x, out),
        (PoolKind::Max, DType::I32) => max_int::<i32>(&g, x, out),
        (PoolKind::Max, DType::I64) => max_int::<i64>(&g, x, out),
        (PoolKind::Max, DType::U8) => max_int::<u8>(&g, x, out),
        (PoolKind::Max, DType::U32) => max_int::<u32>(&g, x, out),
        (_, dt) => {
            let div = match kind {
                PoolKind::Avg => avg_divisors(w, &x.dims[2..], &out.dims[2..], count_include_pad),
                PoolKind::Max => Vec::new(),
            };
            with_real!(dt, ins, out, |i, o| {
                pool_real::<T>(kind, &g, &div, &i[0], o);
                Ok(())
            }; T)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::cnn_fixtures;
    use crate::kernels::conv::tests::{close, run, run_as, seq, win, Ins};

    fn pool_case(case: &serde_json::Value) -> Vec<f32> {
        let kind = match case["kind"].as_str() {
            Some("max") => PoolKind::Max,
            _ => PoolKind::Avg,
        };
        let cip = case["count_include_pad"]
            .as_bool()
            .expect("count_include_pad");
        let (xd, yd) = (
            cnn_fixtures::dims(&case["x"]),
            cnn_fixtures::dims(&case["y_dims"]),
        );
        let w = cnn_fixtures::window(case);
        let x = cnn_fixtures::input(case);
        run(|i, o| pool(kind, &w, cip, i, o), &[(&xd, &x)], &yd).unwrap()
    }

    /// Every case of tools/gen_cnn_ops_fixtures.py's pools (numpy, float64
    /// loops): the CNN set's windows (5x5 SPPF, 2x2, 2x1), strides,
    /// dilations, asymmetric padding, NaN, avg with and without padding
    /// counted, max in two passes (5x5, 3x3 stride 1), windows that tile
    /// the input (2x2 / 3x2 / 3x1, odd sizes, NaNs; a ceil-mode pad taking
    /// the general path; whole 16-channel blocks, which `pool_blocked.rs`
    /// also runs); the large ones (a small SPPF map split by its window's
    /// reads) at 1, 2 and 3 threads (planes split).
    #[test]
    fn pool2d_matches_numpy() {
        let cases = cnn_fixtures::cases(include_str!("../../tests/fixtures/cnn_ops/pool.json"));
        assert_eq!(cases.len(), 25);
        for case in &cases {
            cnn_fixtures::check(case, &pool_case(case));
            if case.get("sum").is_some() {
                for threads in [2, 3] {
                    let y = crate::threads::with_limit(Some(threads), || pool_case(case));
                    cnn_fixtures::check(case, &y);
                }
            }
        }
    }

    // Pool reference (explicit loops); values printed as round(v, 7):
    //   def pool(x, kind, k, s, pad, dil, cip):
    //       sd = x.ndim - 2; sp = x.shape[2:]
    //       osp = [(sp[i] + pad[i][0] + pad[i][1] - dil[i]*(k[i]-1) - 1) // s[i] + 1 for i in range(sd)]
    //       y = np.zeros(x.shape[:2] + tuple(osp))
    //       for nc in np.ndindex(*x.shape[:2]):
    //           for p in np.ndindex(*osp):
    //               vals, padded = [], 0
    //               for kk in np.ndindex(*k):
    //                   q = [p[i]*s[i] + kk[i]*dil[i] - pad[i][0] for i in range(sd)]
    //                   if all(0 <= q[i] < sp[i] for i in range(sd)): vals.append(x[nc + tuple(q)])
    //                   elif all(q[i] < sp[i] + pad[i][1] for i in range(sd)): padded += 1
    //               y[nc + p] = max(vals) if kind == 'max' else sum(vals) / (len(vals) + (padded if cip else 0))
    //       return y

    #[test]
    fn max_avg_pool2d_padding() {
        // x = seq(50,5,11).reshape(1,2,5,5) - 3 (all negative: padding must not win the max)
        // pool(x, kind, [3,2], [2,2], [(1,1),(1,0)], [1,1], cip)
        let want_max = [
            -3.5, -1.75, -2.0, -2.0, -2.25, -1.75, -2.0, -2.25, -1.75, -2.5, -2.0, -2.25, -1.75,
            -2.0, -2.25, -3.0, -1.75, -2.0,
        ];
        let want_avg = [
            -3.875, -2.6875, -2.9375, -2.75, -3.1666667, -2.9583333, -3.0, -3.1875, -2.75, -2.875,
            -3.0625, -3.3125, -2.6666667, -3.0833333, -3.3333333, -3.375, -2.875, -3.125,
        ];
        let want_avg_pad = [
            -1.2916667, -1.7916667, -1.9583333, -1.375, -3.1666667, -2.9583333, -1.0, -2.125,
            -1.8333333, -0.9583333, -2.0416667, -2.2083333, -1.3333333, -3.0833333, -3.3333333,
            -1.125, -1.9166667, -2.0833333,
        ];
        let x: Vec<f32> = seq(50, 5, 11).iter().map(|v| v - 3.0).collect();
        let win = win(&[3, 2], &[2, 2], &[(1, 1), (1, 0)], &[1, 1]);
        let ins: &Ins = &[(&[1, 2, 5, 5], &x)];
        let cases = [
            (PoolKind::Max, false, &want_max),
            (PoolKind::Avg, false, &want_avg),
            (PoolKind::Avg, true, &want_avg_pad),
        ];
        for (kind, cip, want) in cases {
            close(
                &run(|i, o| pool(kind, &win, cip, i, o), ins, &[1, 2, 3, 3]).unwrap(),
                want,
            );
        }
    }

    #[test]
    fn max_pool1d_dilation_int_and_nan() {
        // pool(((np.arange(12) * 5) % 11 - 5).astype(np.int32).reshape(1,1,12), 'max', [3], [2], [(2,1)], [2], False)
        //   -> [5, 5, 5, 4, 3, 2]
        let x: Vec<i32> = (0..12).map(|i| (i * 5) % 11 - 5).collect();
        let win = win(&[3], &[2], &[(2, 1)], &[2]);
        let ins: &[(&[usize], &[i32])] = &[(&[1, 1, 12], &x)];
        let y = run_as(
            DType::I32,
            |i, o| pool(PoolKind::Max, &win, false, i, o),
            ins,
            &[1, 1, 6],
            0,
        )
        .unwrap();
        assert_eq!(y, [5, 5, 5, 4, 3, 2]);
        assert!(run_as(
            DType::I32,
            |i, o| pool(PoolKind::Avg, &win, false, i, o),
            ins,
            &[1, 1, 6],
            0
        )
        .is_err());
        // NaN wins every window holding it, and only those.
        let mut xf: Vec<f32> = x.iter().map(|&v| v as f32).collect();
        xf[4] = f32::NAN;
        let y = run(
            |i, o| pool(PoolKind::Max, &win, false, i, o),
            &[(&[1, 1, 12], &xf)],
            &[1, 1, 6],
        )
        .unwrap();
        assert!(
            y[0] == 5.0 && y[1..4].iter().all(|v| v.is_nan()) && y[4] == 3.0 && y[5] == 2.0,
            "{y:?}"
        );
        // An empty input leaves only padding: max is -inf, not a panic.
        let empty = self::win(&[3], &[1], &[(2, 2)], &[1]);
        let y = run(
            |i, o| pool(PoolKind::Max, &empty, false, i, o),
            &[(&[1, 1, 0], &[])],
            &[1, 1, 2],
        )
        .unwrap();
        assert_eq!(y, [f32::NEG_INFINITY; 2]);
    }
}
