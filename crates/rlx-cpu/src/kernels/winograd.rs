//! Winograd F(2x2, 3x3) for dense / grouped 3x3 stride-1 undilated convs
//! over two spatial dims: each 2x2 output tile is computed from a 4x4 input
//! tile with 16 multiplies per (input, output) channel pair instead of 36,
//! so the products become 16 GEMMs of `[O, C] x [C, tiles]` (one per
//! position of the transformed tile) with 4/9 of the im2col GEMM's work.
//!
//! Transforms (Lavin & Gray 2016): the input tile `d` becomes `Bᵀ d B`, the
//! kernel `g` becomes `G g Gᵀ`, and the product `m` of the two, summed over
//! channels, becomes the output tile `Aᵀ m A`, with
//! `Bᵀ = [[1,0,-1,0],[0,1,1,0],[0,-1,1,0],[0,1,0,-1]]`,
//! `G = [[1,0,0],[½,½,½],[½,-½,½],[0,0,1]]`, `Aᵀ = [[1,1,1,0],[0,1,-1,-1]]`.
//! F(2,3)'s transforms only add, subtract and halve, so the result stays
//! within a few ulps of the direct sum (F(4,3) would cut the work further
//! but loses digits to its larger constants).

use super::conv2d::Conv2d;
use super::conv_epilogue::ConvEpilogue;
use super::gemm::{num_threads, GemmFloat, Strided};
use super::scalar::Pod;
use super::KernelResult;
use crate::team;
use rlx_ir::op::Window;
use std::cell::Cell;
use std::thread::LocalKey;

/// Positions of a transformed tile.
pub(crate) const TILE: usize = 16;

thread_local! {
    /// The calling thread's per-call transformed weights, reused by the
    /// next call.
    static WEIGHTS: Cell<Vec<f64>> = const { Cell::new(Vec::new()) };
    /// The calling thread's transformed input and products, reused by the
    /// next call: fresh buffers of this size (MBs) cost more in page faults
    /// and zeroing than the transforms themselves.
    static WORK: Cell<Vec<f64>> = const { Cell::new(Vec::new()) };
}

/// Runs `f` on `len` elements of this thread's buffer `cell` (contents
/// left from earlier calls: `f` writes before it reads), kept for the
/// next call.
pub(super) fn with_scratch<T: Pod, R>(
    cell: &'static LocalKey<Cell<Vec<f64>>>,
    len: usize,
    f: impl FnOnce(&mut [T]) -> R,
) -> R {
    const { assert!(std::mem::align_of::<T>() <= std::mem::align_of::<f64>()) };
    let mut buf = cell.take();
    let words = (len * std::mem::size_of::<T>()).div_ceil(std::mem::size_of::<f64>());
    if buf.len() < words {
        buf.resize(words, 0.0);
    }
    // SAFETY: the buffer holds at least `len` `T`s' bytes, f64-aligned
    // (enough for `T`), and any bytes are a value of a `Pod` `T`.
    let s = unsafe { std::slice::from_raw_parts_mut(buf.as_mut_ptr() as *mut T, len) };
    let r = f(s);
    cell.set(buf);
    r
}

impl Conv2d {
    /// True when the conv has the shape Winograd F(2,3) handles.
    pub(super) fn is_winograd_shape(&self) -> bool {
        self.kh == 3 && self.kw == 3 && self.s == (1, 1) && self.d == (1, 1)
    }

    /// True when Winograd beats im2col + GEMM: enough channels per group
    /// that the 16 GEMMs stay efficient, and enough tiles that the weight
    /// transform (per call) is small next to the products.
    pub(super) fn winograd_wins(&self, cg: usize, og: usize) -> bool {
        self.is_winograd_shape() && !self.is_depthwise() && cg >= 16 && og >= 16 && {
            let tiles = self.oh.div_ceil(2) * self.ow.div_ceil(2);
            tiles >= 64
        }
    }

    /// True when conv runs this f32 conv by Winograd (the order of
    /// `conv_real`: depthwise, then direct, then Winograd).
    pub(super) fn runs_winograd(&self) -> bool {
        let (cg, og) = (self.c / self.groups, self.o / self.groups);
        !self.is_depthwise()
            && !self.nchwc_wins()
            && !self.direct_wins()
            && super::conv::winograd_enabled()
            && self.winograd_wins(cg, og)
    }

    /// True when `len` transformed weights fit this conv's Winograd.
    pub(super) fn takes_winograd_weights(&self, len: usize) -> bool {
        let (cg, og) = (self.c / self.groups, self.o / self.groups);
        self.is_winograd_shape() && !self.is_depthwise() && len == self.groups * TILE * og * cg
    }

    /// `y += conv(x, wt)` by Winograd F(2,3); `y` holds the bias (or zero)
    /// on entry. Needs [`Self::is_winograd_shape`].
    pub(super) fn winograd<T: GemmFloat>(
        &self,
        x: &[T],
        wt: &[T],
        y: &mut [T],
        epi: Option<&ConvEpilogue>,
    ) -> KernelResult {
        let (cg, og) = (self.c / self.groups, self.o / self.groups);
        with_scratch(&WEIGHTS, self.groups * TILE * og * cg, |u| {
            transform_weights_into(wt, self.groups, og, cg, u);
            self.winograd_transformed(x, u, y, epi)
        })
    }

    /// [`Self::winograd`] with the weights already transformed by
    /// [`transform_weights`].
    pub(super) fn winograd_transformed<T: GemmFloat>(
        &self,
        x: &[T],
        u: &[T],
        y: &mut [T],
        epi: Option<&ConvEpilogue>,
    ) -> KernelResult {
        debug_assert!(self.is_winograd_shape());
        let (cg, og) = (self.c / self.groups, self.o / self.groups);
        let tiles = self.oh.div_ceil(2) * self.ow.div_ceil(2);
        if tiles == 0 || cg == 0 || og == 0 {
            return Ok(());
        }
        let (pin, pout) = (self.h * self.w, self.oh * self.ow);
        // v and m are written in full before they are read.
        with_scratch(&WORK, (cg + og) * TILE * tiles, |work| {
            let (v, m) = work.split_at_mut(cg * TILE * tiles);
            for n in 0..self.batch {
                for gi in 0..self.groups {
                    let xg = &x[(n * self.c + gi * cg) * pin..][..cg * pin];
                    self.transform_input(xg, cg, v);
                    let ug = &u[gi * TILE * og * cg..][..TILE * og * cg];
                    products(ug, v, m, (og, cg, tiles));
                    let yg = &mut y[(n * self.o + gi * og) * pout..][..og * pout];
                    self.transform_output(m, og, tiles, yg, (n, gi * og), epi)?;
                }
            }
            Ok(())
        })
    }

    /// `v[c, xi, t] = (Bᵀ d B)[xi]` for each channel `c` and tile `t` of
    /// the `cg` planes `xg` (zero outside the input), channels over the team.
    fn transform_input<T: GemmFloat>(&self, xg: &[T], cg: usize, v: &mut [T]) {
        let tiles = self.oh.div_ceil(2) * self.ow.div_ceil(2);
        let pin = self.h * self.w;
        let ranges = team::split(cg, team::threads(), 1);
        let shared = team::Disjoint::new(v);
        team::parallel_for(ranges.len(), |part| {
            let mut rows = Vec::new();
            for c in ranges[part].clone() {
                let xc = &xg[c * pin..][..pin];
                // SAFETY: each channel belongs to exactly one part.
                let vc = unsafe { shared.range(c * TILE * tiles..(c + 1) * TILE * tiles) };
                simd(|| self.input_channel(xc, vc, &mut rows));
            }
        });
    }

    /// One channel's input transform, a row of tiles at a time and each
    /// step over the whole row, so every loop is contiguous and vectorises
    /// (the per-tile form was scalar and cost about what the products
    /// do). The arithmetic is the per-tile `Bᵀ d B`, in the same order:
    /// rows combined first (`Bᵀ d` on whole padded rows, split into even
    /// and odd columns), then the columns of each tile from those halves.
    #[inline(always)]
    fn input_channel<T: GemmFloat>(&self, xc: &[T], vc: &mut [T], rows: &mut Vec<T>) {
        let (th, tw) = (self.oh.div_ceil(2), self.ow.div_ceil(2));
        let tiles = th * tw;
        // Tile `tx` reads padded columns 2tx .. 2tx + 3: even / odd halves
        // of tw + 1 entries each.
        let n = tw + 1;
        rows.clear();
        rows.resize(16 * n, T::ZERO);
        let (d, r) = rows.split_at_mut(8 * n);
        for ty in 0..th {
            // d: the 4 input rows under this row of tiles, [row][even, odd].
            for (k, half) in d.chunks_exact_mut(2 * n).enumerate() {
                let iy = (2 * ty + k).checked_sub(self.p.0).filter(|&iy| iy < self.h);
                let (ev, od) = half.split_at_mut(n);
                split_row(iy.map(|iy| &xc[iy * self.w..][..self.w]), self.p.1, ev, od);
            }
            // r: Bᵀ d, rows d0 - d2, d1 + d2, d2 - d1, d1 - d3.
            let d_at = |k: usize| &d[k * 2 * n..][..2 * n];
            let (d0, d1, d2, d3) = (d_at(0), d_at(1), d_at(2), d_at(3));
            let (r0, rest) = r.split_at_mut(2 * n);
            let (r1, rest) = rest.split_at_mut(2 * n);
            let (r2, r3) = rest.split_at_mut(2 * n);
            zip_into(r0, d0, d2, |a, b| a - b);
            zip_into(r1, d1, d2, |a, b| a + b);
            zip_into(r2, d2, d1, |a, b| a - b);
            zip_into(r3, d1, d3, |a, b| a - b);
            // Columns of each tile: t0 - t2, t1 + t2, t2 - t1, t1 - t3 with
            // t0 = e[tx], t1 = o[tx], t2 = e[tx + 1], t3 = o[tx + 1].
            let t0 = ty * tw;
            for (i, ri) in r.chunks_exact(2 * n).enumerate() {
                let (e, o) = ri.split_at(n);
                let out = |j: usize| (4 * i + j) * tiles + t0;
                zip_into(&mut vc[out(0)..][..tw], &e[..tw], &e[1..], |a, b| a - b);
                zip_into(&mut vc[out(1)..][..tw], &o[..tw], &e[1..], |a, b| a + b);
                zip_into(&mut vc[out(2)..][..tw], &e[1..], &o[..tw], |a, b| a - b);
                zip_into(&mut vc[out(3)..][..tw], &o[..tw], &o[1..], |a, b| a - b);
            }
        }
    }

    /// `yg[o] += Aᵀ m A` for each output channel `o` and tile (clipped to
    /// the output), output channels over the team. `m` is `[16, og, tiles]`.
    fn transform_output<T: GemmFloat>(
        &self,
        m: &[T],
        og: usize,
        tiles: usize,
        yg: &mut [T],
        (n, o0): (usize, usize),
        epi: Option<&ConvEpilogue>,
    ) -> KernelResult {
        let pout = self.oh * self.ow;
        let ranges = team::split(og, team::threads(), 1);
        let shared = team::Disjoint::new(yg);
        team::try_parallel_for(ranges.len(), |part| {
            let mut rows = Vec::new();
            for o in ranges[part].clone() {
                // SAFETY: each output channel belongs to exactly one part.
                let yo = unsafe { shared.range(o * pout..(o + 1) * pout) };
                simd(|| self.output_channel(m, og, tiles, o, yo, &mut rows));
                if let Some(epi) = epi {
                    epi.apply(yo, n, o0 + o..o0 + o + 1)?;
                }
            }
            Ok(())
        })
    }

    /// One output channel's transform, a row of tiles at a time over the
    /// whole row (as [`Self::input_channel`]): `s = Aᵀ m` (rows m0 + m1 +
    /// m2 and m1 - m2 - m3), then each output row's even columns
    /// s0 + s1 + s2 and odd columns s1 - s2 - s3, added into `yo`.
    #[inline(always)]
    fn output_channel<T: GemmFloat>(
        &self,
        m: &[T],
        og: usize,
        tiles: usize,
        o: usize,
        yo: &mut [T],
        rows: &mut Vec<T>,
    ) {
        let tw = self.ow.div_ceil(2);
        rows.clear();
        rows.resize(10 * tw, T::ZERO);
        let (s, eo) = rows.split_at_mut(8 * tw);
        let (ev, od) = eo.split_at_mut(tw);
        for ty in 0..self.oh.div_ceil(2) {
            let mrow = |xi: usize| &m[(xi * og + o) * tiles + ty * tw..][..tw];
            // s[2j + r]: column j of row r of Aᵀ m.
            for j in 0..4 {
                let (m0, m1, m2, m3) = (mrow(j), mrow(4 + j), mrow(8 + j), mrow(12 + j));
                let (s0, s1) = s[2 * j * tw..][..2 * tw].split_at_mut(tw);
                for (((sv, &a), &b), &c) in s0.iter_mut().zip(m0).zip(m1).zip(m2) {
                    *sv = a + b + c;
                }
                for (((sv, &a), &b), &c) in s1.iter_mut().zip(m1).zip(m2).zip(m3) {
                    *sv = a - b - c;
                }
            }
            for r in 0..2.min(self.oh - 2 * ty) {
                let sr = |j: usize| &s[(2 * j + r) * tw..][..tw];
                let (s0, s1, s2, s3) = (sr(0), sr(1), sr(2), sr(3));
                for (((e, &a), &b), &c) in ev.iter_mut().zip(s0).zip(s1).zip(s2) {
                    *e = a + b + c;
                }
                for (((e, &a), &b), &c) in od.iter_mut().zip(s1).zip(s2).zip(s3) {
                    *e = a - b - c;
                }
                let yrow = &mut yo[(2 * ty + r) * self.ow..][..self.ow];
                let mut pairs = yrow.chunks_exact_mut(2);
                for ((pair, &e), &d) in (&mut pairs).zip(&*ev).zip(&*od) {
                    pair[0] = pair[0] + e;
                    pair[1] = pair[1] + d;
                }
                if let [last] = pairs.into_remainder() {
                    *last = *last + ev[tw - 1];
                }
            }
        }
    }
}

/// The 16 products `m[xi] = U[xi] V[xi]` of one group: `ug` is
/// `[16, og, cg]`, `v` is `[cg, 16, tiles]`, `m` is `[16, og, tiles]`.
fn products<T: GemmFloat>(ug: &[T], v: &[T], m: &mut [T], (og, cg, tiles): (usize, usize, usize)) {
    for (xi, mx) in m.chunks_exact_mut(og * tiles).enumerate() {
        // U[o, c] at position xi: ug[(xi * og + o) * cg + c].
        let a = Strided::row_major(ug, xi * og * cg, og, cg);
        // V[c, t] at position xi: v[(c * 16 + xi) * tiles + t].
        let b = Strided {
            data: v,
            offset: xi * tiles,
            rows: cg,
            cols: tiles,
            row_stride: TILE * tiles,
            col_stride: 1,
        };
        T::gemm(a, b, mx, num_threads());
    }
}

/// Splits one input row into the even (`ev`) and odd (`od`) columns of
/// its zero-padded copy (`pad` zeros on the left, zeros past the end);
/// `None`: a row of padding.
#[inline(always)]
fn split_row<T: GemmFloat>(x: Option<&[T]>, pad: usize, ev: &mut [T], od: &mut [T]) {
    ev.fill(T::ZERO);
    od.fill(T::ZERO);
    let Some(x) = x else { return };
    // Input column j is padded column j + pad: it lands at (j + pad) / 2,
    // in `ev` when j + pad is even.
    let (from_even, from_odd) = if pad.is_multiple_of(2) {
        (ev, od)
    } else {
        (od, ev)
    };
    if let Some(dst) = from_even.get_mut(pad / 2..) {
        for (d, pair) in dst.iter_mut().zip(x.chunks(2)) {
            *d = pair[0];
        }
    }
    if let Some(dst) = from_odd.get_mut(pad.div_ceil(2)..) {
        for (d, pair) in dst.iter_mut().zip(x.get(1..).unwrap_or(&[]).chunks(2)) {
            *d = pair[0];
        }
    }
}

/// `out[i] = f(a[i], b[i])` over `out`'s length.
#[inline(always)]
fn zip_into<T: Copy>(out: &mut [T], a: &[T], b: &[T], f: impl Fn(T, T) -> T) {
    let n = out.len();
    for ((o, &x), &y) in out.iter_mut().zip(&a[..n]).zip(&b[..n]) {
        *o = f(x, y);
    }
}

/// Runs `f` compiled for AVX-512 or AVX2 where the CPU has them (the
/// transforms only add and subtract: the same results on every path).
#[inline(always)]
fn simd<R>(f: impl FnOnce() -> R) -> R {
    #[cfg(target_arch = "x86_64")]
    {
        #[target_feature(enable = "avx512f,avx2")]
        unsafe fn avx512<R>(f: impl FnOnce() -> R) -> R {
            f()
        }
        #[target_feature(enable = "avx2")]
        unsafe fn avx2<R>(f: impl FnOnce() -> R) -> R {
            f()
        }
        if std::arch::is_x86_feature_detected!("avx512f") {
            // SAFETY: the CPU has AVX-512F (and so AVX2).
            return unsafe { avx512(f) };
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU has AVX2.
            return unsafe { avx2(f) };
        }
    }
    f()
}

/// The f32 weight `wt` of a conv with these static dims transformed once
/// for Winograd, when conv runs it by Winograd (`None`: it does not).
pub(crate) fn prepared_weights(
    win: &Window,
    groups: usize,
    (x, w, out): (&[usize], &[usize], &[usize]),
    wt: &[f32],
) -> Option<Vec<f32>> {
    let g2 = super::conv_packed::geometry(win, groups, x, w, out)?;
    let valid = groups > 0
        && g2.c.is_multiple_of(groups)
        && g2.o.is_multiple_of(groups)
        && wt.len() == w.iter().product::<usize>()
        && w.get(1) == Some(&(g2.c / groups));
    (valid && g2.runs_winograd())
        .then(|| transform_weights(wt, groups, g2.o / groups, g2.c / groups))
}

/// `G g Gᵀ` of every `[3, 3]` kernel of `wt` (`[groups * og, cg, 3, 3]`):
/// the result is `[groups, 16, og, cg]`, so each group's product at one
/// tile position reads a dense `[og, cg]` matrix.
pub(crate) fn transform_weights<T: GemmFloat>(
    wt: &[T],
    groups: usize,
    og: usize,
    cg: usize,
) -> Vec<T> {
    let mut u = vec![T::ZERO; groups * TILE * og * cg];
    transform_weights_into(wt, groups, og, cg, &mut u);
    u
}

/// [`transform_weights`] into `u` (every entry written).
fn transform_weights_into<T: GemmFloat>(
    wt: &[T],
    groups: usize,
    og: usize,
    cg: usize,
    u: &mut [T],
) {
    let half = T::from_f64(0.5);
    for gi in 0..groups {
        let ugrp = &mut u[gi * TILE * og * cg..][..TILE * og * cg];
        for ol in 0..og {
            let wo = &wt[(gi * og + ol) * cg * 9..][..cg * 9];
            for (c, g) in wo.chunks_exact(9).enumerate() {
                // Rows: t = G g (4 x 3).
                let mut t = [T::ZERO; 12];
                for col in 0..3 {
                    let (g0, g1, g2) = (g[col], g[3 + col], g[6 + col]);
                    t[col] = g0;
                    t[3 + col] = (g0 + g1 + g2) * half;
                    t[6 + col] = (g0 - g1 + g2) * half;
                    t[9 + col] = g2;
                }
                // Columns: t Gᵀ (4 x 4), stored at [xi][ol][c].
                let at = ol * cg + c;
                for r in 0..4 {
                    let (t0, t1, t2) = (t[3 * r], t[3 * r + 1], t[3 * r + 2]);
                    let row = [t0, (t0 + t1 + t2) * half, (t0 - t1 + t2) * half, t2];
                    for (j, val) in row.into_iter().enumerate() {
                        ugrp[(4 * r + j) * og * cg + at] = val;
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Conv2d;

    fn geom(c: usize, o: usize, groups: usize, hw: (usize, usize), k: usize, s: usize) -> Conv2d {
        Conv2d {
            batch: 1,
            c,
            o,
            groups,
            h: hw.0,
            w: hw.1,
            oh: hw.0,
            ow: hw.1,
            kh: k,
            kw: k,
            s: (s, s),
            d: (1, 1),
            p: (1, 1),
        }
    }

    /// conv picks Winograd for the fixture case that checks it through
    /// conv (`winograd_3x3_s1_picked_by_conv`) and for ResNet-style
    /// layers, and leaves small, strided, depthwise and 1x1 convs alone.
    #[test]
    fn winograd_is_picked_where_it_wins() {
        assert!(geom(16, 16, 1, (16, 17), 3, 1).winograd_wins(16, 16));
        assert!(geom(64, 64, 1, (56, 56), 3, 1).winograd_wins(64, 64));
        assert!(!geom(3, 4, 1, (7, 9), 3, 1).winograd_wins(3, 4));
        assert!(!geom(64, 64, 1, (56, 56), 3, 2).winograd_wins(64, 64));
        assert!(!geom(64, 64, 64, (56, 56), 3, 1).winograd_wins(1, 1));
        assert!(!geom(64, 64, 1, (56, 56), 1, 1).winograd_wins(64, 64));
        assert!(!geom(512, 512, 1, (7, 7), 3, 1).winograd_wins(512, 512));
    }

    /// Milliseconds per call of each Winograd phase (weight transform,
    /// input transform, the 16 GEMMs, output transform) on the 3x3
    /// stride-1 layers of ResNet-18, U-Net and CRNN, 1 thread, median of 7.
    /// Run with `cargo test --release -p rlx-cpu --lib winograd_phases --
    /// --ignored --nocapture`.
    #[test]
    #[ignore = "timing; prints, asserts nothing"]
    fn winograd_phases() {
        use super::{products, transform_weights, TILE};
        let median_ms = |f: &mut dyn FnMut()| {
            f();
            let mut t: Vec<f64> = (0..7)
                .map(|_| {
                    let start = std::time::Instant::now();
                    f();
                    start.elapsed().as_secs_f64() * 1e3
                })
                .collect();
            t.sort_by(f64::total_cmp);
            t[3]
        };
        let shapes = [
            (64, 64, 56),
            (128, 128, 28),
            (64, 64, 32),
            (128, 64, 32),
            (64, 128, 32),
        ];
        crate::threads::with_limit(Some(1), || {
            for (c, o, hw) in shapes {
                let g = geom(c, o, 1, (hw, hw), 3, 1);
                let tiles = (hw / 2) * (hw / 2);
                let x: Vec<f32> = (0..c * hw * hw).map(|i| (i % 13) as f32 / 13.0).collect();
                let wt: Vec<f32> = (0..o * c * 9).map(|i| (i % 7) as f32 / 7.0).collect();
                let u = transform_weights(&wt, 1, o, c);
                let mut v = vec![0f32; c * TILE * tiles];
                let mut m = vec![0f32; TILE * o * tiles];
                let mut y = vec![0f32; o * hw * hw];
                let tw = median_ms(&mut || drop(transform_weights(&wt, 1, o, c)));
                let ti = median_ms(&mut || g.transform_input(&x, c, &mut v));
                let tp = median_ms(&mut || products(&u, &v, &mut m, (o, c, tiles)));
                let to = median_ms(&mut || {
                    g.transform_output(&m, o, tiles, &mut y, (0, 0), None)
                        .expect("output transform")
                });
                let all = median_ms(&mut || g.winograd(&x, &wt, &mut y, None).expect("winograd"));
                let gflop = 2.0 * (c * o * 9 * hw * hw) as f64 / 1e9;
                println!(
                    "c {c:4} o {o:4} {hw:3}x{hw:<3}: weights {tw:6.3} input {ti:6.3} \
                     products {tp:6.3} output {to:6.3} ms; whole {all:6.3} ms = {:5.1} GFLOP/s direct-equivalent",
                    gflop / all * 1e3
                );
            }
        });
    }
}
