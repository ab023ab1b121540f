//! Direct f32 conv over two spatial dims for convs with few channels (the
//! U-Net case: 3 to 64 channels at 32x32 to 128x128), where the GEMMs of
//! Winograd or im2col are too thin to pay (`16 x 16 x 4096`).
//!
//! The output is computed in blocks of [`OC_BLOCK`] output channels of one
//! image: the block's weights are packed `[O / 8][C][kh][kw][8]`
//! ([`pack_weights`]), the image is copied once into a zero-padded buffer
//! (for stride 2 split into even and odd columns, so every tap of an output
//! row is a contiguous run), and the AVX2 tile keeps 4 output channels x 24
//! output pixels of a row in twelve registers while it walks the input
//! channels and taps: per tap three loads of 8 pixels, four weight
//! broadcasts and twelve FMAs. A scalar row loop over the same layout runs
//! without AVX2 (and on aarch64). Each finished block of 8 output planes
//! goes through the fused epilogue before the next.

use super::conv::winograd_enabled;
use super::conv2d::Conv2d;
use super::conv_epilogue::ConvEpilogue;
use super::KernelResult;
use crate::team;
use std::cell::Cell;

/// Output channels per block (one AVX2 register of f32 lanes).
pub(crate) const OC_BLOCK: usize = 8;

/// Output pixels of a row per vector.
const LANES: usize = 8;

thread_local! {
    /// This thread's zero-padded input image, reused by the next call.
    static PADDED: Cell<Vec<f32>> = const { Cell::new(Vec::new()) };
    /// The calling thread's packed weights, reused by the next call.
    static PACKED: Cell<Vec<f32>> = const { Cell::new(Vec::new()) };
}

/// Packs OIhw weights `wt` (`o` output, `c` input channels, `taps` = kh * kw)
/// into `out` as `[o / 8][c][taps][8]`: the 8 output channels' weights of
/// one input channel and tap are one vector. `o` must be a multiple of
/// [`OC_BLOCK`]. A compile-time weight cache can call this once and pass
/// the result to the conv instead of the per-call pack.
pub(crate) fn pack_weights(wt: &[f32], o: usize, c: usize, taps: usize, out: &mut Vec<f32>) {
    debug_assert!(o.is_multiple_of(OC_BLOCK));
    out.clear();
    out.resize(o * c * taps, 0.0);
    for (ob, block) in out.chunks_exact_mut(OC_BLOCK * c * taps).enumerate() {
        for (i, wo) in wt[ob * OC_BLOCK * c * taps..][..OC_BLOCK * c * taps]
            .chunks_exact(c * taps)
            .enumerate()
        {
            for (k, &v) in wo.iter().enumerate() {
                block[k * OC_BLOCK + i] = v;
            }
        }
    }
}

/// Layout of one image's padded copy: `[c][hp][s][wq]` (row `r`, phase `q`
/// holds padded columns `q, q + s, q + 2s, ..`).
struct Padded {
    /// Stride (both dims).
    s: usize,
    /// Padded rows.
    hp: usize,
    /// Length of one phase of a row, with slack for a full last vector.
    wq: usize,
}

impl Padded {
    /// Floats per input channel.
    fn channel(&self) -> usize {
        self.hp * self.s * self.wq
    }
}

impl Conv2d {
    /// True when [`Self::direct`] computes this conv: dense (one group),
    /// output channels a multiple of 8, undilated, the same stride 1 or 2
    /// along both dims.
    pub(super) fn is_direct_shape(&self) -> bool {
        self.groups == 1
            && self.o.is_multiple_of(OC_BLOCK)
            && self.o > 0
            && self.d == (1, 1)
            && self.s.0 == self.s.1
            && (1..=2).contains(&self.s.0)
            && self.kh > 0
            && self.kw > 0
    }

    /// True when the direct kernel beats Winograd and im2col + GEMM, by
    /// `tests::direct_vs_current_paths` on this host (2-vCPU AVX2 EPYC, 1
    /// thread; direct / old time in brackets). Stride 1: few channels on
    /// one side (Winograd's GEMMs of 16 or 32 rows: 16 -> 16 at 128x128
    /// 0.13, 32 -> 32 at 64x64 0.23, 64 -> 32 0.52, 32 -> 64 at 32x32
    /// 0.85) or small planes (64 -> 128 at 16x16 0.49), while a row of
    /// all input channels stays within ~4096 floats (past that the tile
    /// drops from ~40 to ~20 GFLOP/s: ResNet-18's 64 -> 64 at 56x56 1.5);
    /// one input channel (1 -> 64: 0.7) but not 3 (3 -> 16: 1.14, im2col's
    /// 27-deep GEMM runs well). Stride 2: only the first layer (3 -> 16 at
    /// 256x256: 0.85; 16 -> 32 1.1, 32 -> 64 1.3).
    ///
    /// Where the GEMM runs AVX-512 tiles (this tile is AVX2), Winograd (its
    /// weights transformed once, its buffers reused) takes the shapes it
    /// takes whose products are dense enough, `c * o / (c + o) >= 20` (its
    /// transformed input and products, `(c + o) * 16` floats per tile,
    /// go through L2 / L3): 2-vCPU AVX-512 Xeon, 1 thread, direct /
    /// Winograd time 1.29 (64 -> 128 at 16x16) to 2.0 (64 -> 64 at 32x32),
    /// U-Net's 64 -> 32 at 64x64 1.60. Thinner ones won by 1.1-1.45 on a
    /// quiet host (16 -> 16 at 128x128, 32 -> 32 at 64x64) but lost under
    /// load 12, so they stay direct. The AVX2 rule above was measured before
    /// those Winograd changes (not re-measured: no AVX2-only host here).
    pub(super) fn direct_wins(&self) -> bool {
        let (c, o, row) = (self.c, self.o, self.c * self.ow);
        if wide_gemm() && winograd_enabled() && self.winograd_wins(c, o) && c * o >= 20 * (c + o) {
            return false;
        }
        self.is_direct_shape()
            && self.kh == 3
            && self.kw == 3
            && self.oh * self.ow >= 16 * 16
            && match self.s.0 {
                1 => {
                    (c == 1 || c >= 8)
                        && row <= 4096
                        && (c.min(o) <= 32 || (self.ow <= 16 && row <= 2048))
                }
                _ => c < 8,
            }
    }

    fn padded(&self) -> Padded {
        let s = self.s.0;
        Padded {
            s,
            hp: (self.oh - 1) * s + self.kh,
            wq: self.ow.next_multiple_of(LANES) + (self.kw - 1) / s,
        }
    }

    /// Copies image `xn` (`[c, h, w]`) into `buf` laid out as `lay`, zeros
    /// in the padding.
    fn pad_image(&self, xn: &[f32], lay: &Padded, buf: &mut Vec<f32>) {
        let s = lay.s;
        buf.clear();
        buf.resize(self.c * lay.channel(), 0.0);
        for (xc, bc) in xn
            .chunks_exact(self.h * self.w)
            .zip(buf.chunks_exact_mut(lay.channel()))
        {
            for (r, brow) in bc.chunks_exact_mut(s * lay.wq).enumerate() {
                let Some(iy) = r.checked_sub(self.p.0).filter(|&iy| iy < self.h) else {
                    continue;
                };
                let xrow = &xc[iy * self.w..][..self.w];
                for (q, phase) in brow.chunks_exact_mut(lay.wq).enumerate() {
                    // Phase column j is padded column j * s + q, input column
                    // j * s + q - p: the first j at or past the padding on.
                    let j0 = self.p.1.saturating_sub(q).div_ceil(s);
                    let ix0 = j0 * s + q - self.p.1;
                    let cols = phase[j0.min(lay.wq)..].iter_mut();
                    for (v, &xv) in cols.zip(xrow.iter().skip(ix0).step_by(s)) {
                        *v = xv;
                    }
                }
            }
        }
    }

    /// Offset of each tap `(ky, kx)` in the padded image from the start of
    /// an output row's first pixel.
    fn tap_offsets(&self, lay: &Padded) -> Vec<usize> {
        let s = lay.s;
        (0..self.kh)
            .flat_map(|ky| (0..self.kw).map(move |kx| (ky * s + kx % s) * lay.wq + kx / s))
            .collect()
    }

    /// `y += conv(x, wt)` on f32 by the direct kernel; `y` holds the bias
    /// (or zero) on entry. Needs [`Self::is_direct_shape`]. The weights are
    /// packed per call into a reused buffer.
    pub(super) fn direct(
        &self,
        x: &[f32],
        wt: &[f32],
        y: &mut [f32],
        epi: Option<&ConvEpilogue>,
    ) -> KernelResult {
        debug_assert!(self.is_direct_shape());
        let mut packed = PACKED.take();
        pack_weights(wt, self.o, self.c, self.kh * self.kw, &mut packed);
        let done = self.direct_packed(x, &packed, y, epi, use_avx2());
        PACKED.set(packed);
        done
    }

    /// [`Self::direct`] with weights already packed by [`pack_weights`];
    /// `simd` picks the AVX2 tile (the caller checked the CPU has it).
    pub(super) fn direct_packed(
        &self,
        x: &[f32],
        packed: &[f32],
        y: &mut [f32],
        epi: Option<&ConvEpilogue>,
        simd: bool,
    ) -> KernelResult {
        let (pin, pout) = (self.h * self.w, self.oh * self.ow);
        let blocks = self.o / OC_BLOCK;
        let units = self.batch * blocks;
        if pout == 0 || units == 0 {
            return Ok(());
        }
        let lay = self.padded();
        let offs = self.tap_offsets(&lay);
        let wblock = OC_BLOCK * self.c * offs.len();
        let ranges = team::split(units, team::threads(), 1);
        let shared = team::Disjoint::new(y);
        team::try_parallel_for(ranges.len(), |part| {
            let mut buf = PADDED.take();
            let mut image = usize::MAX;
            let mut result = Ok(());
            for unit in ranges[part].clone() {
                let (n, ob) = (unit / blocks, unit % blocks);
                if n != image {
                    self.pad_image(&x[n * self.c * pin..][..self.c * pin], &lay, &mut buf);
                    image = n;
                }
                let c0 = unit * OC_BLOCK;
                // SAFETY: each block of output planes belongs to one unit.
                let yb = unsafe { shared.range(c0 * pout..(c0 + OC_BLOCK) * pout) };
                let wb = &packed[ob * wblock..][..wblock];
                self.block(&buf, &lay, &offs, wb, yb, simd);
                if let Some(epi) = epi {
                    result = epi.apply(yb, n, ob * OC_BLOCK..(ob + 1) * OC_BLOCK);
                    if result.is_err() {
                        break;
                    }
                }
            }
            PADDED.set(buf);
            result
        })
    }

    /// One block of 8 output planes `yb` from the padded image `xb` and the
    /// block's packed weights `wb`.
    fn block(
        &self,
        xb: &[f32],
        lay: &Padded,
        offs: &[usize],
        wb: &[f32],
        yb: &mut [f32],
        simd: bool,
    ) {
        #[cfg(target_arch = "x86_64")]
        if simd {
            // SAFETY: the caller checked AVX2 + FMA; `pad_image` sized `xb`
            // so every vector of a row (last one included) stays inside.
            return unsafe { avx2::block(self, xb, lay, offs, wb, yb) };
        }
        let _ = simd;
        let s = lay.s;
        let pout = self.oh * self.ow;
        for oy in 0..self.oh {
            let row0 = oy * s * s * lay.wq;
            for (i, yp) in yb.chunks_exact_mut(pout).enumerate() {
                let yrow = &mut yp[oy * self.ow..][..self.ow];
                for c in 0..self.c {
                    let xc = &xb[c * lay.channel() + row0..];
                    for (t, &off) in offs.iter().enumerate() {
                        let wv = wb[(c * offs.len() + t) * OC_BLOCK + i];
                        for (yv, &xv) in yrow.iter_mut().zip(&xc[off..off + self.ow]) {
                            *yv += wv * xv;
                        }
                    }
                }
            }
        }
    }
}

/// True when the GEMM runs AVX-512 tiles (Winograd's products are then
/// twice as wide as this kernel's AVX2 tile).
fn wide_gemm() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        use super::gemm_tile::{isa, Isa};
        matches!(isa(), Some(Isa::Avx512))
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// True when this CPU runs the AVX2 + FMA tile.
fn use_avx2() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use super::{Padded, LANES, OC_BLOCK};
    use crate::kernels::conv2d::Conv2d;
    use std::arch::x86_64::*;

    /// Output channels of one tile (half a block).
    const TILE_OC: usize = 4;

    /// Input channels per pass over the output block: a tile's input rows
    /// and weights for this many channels (~11 KB) stay in L1 while the
    /// two halves of the block read them; with all of 64 or 128 channels
    /// at once they did not, and the tile ran at half speed.
    const CHANNEL_CHUNK: usize = 16;

    /// The AVX2 form of `Conv2d::block`: in passes over chunks of input
    /// channels, each output row in tiles of 3 vectors (24 pixels), then 2
    /// or 1 for the rest; a last vector that passes the row's end is
    /// stored in part.
    ///
    /// # Safety
    /// AVX2 and FMA are present; `xb` holds `lay`'s padded image.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn block(
        g: &Conv2d,
        xb: &[f32],
        lay: &Padded,
        offs: &[usize],
        wb: &[f32],
        yb: &mut [f32],
    ) {
        let s = lay.s;
        let pout = g.oh * g.ow;
        let need = (g.c - 1) * lay.channel()
            + (g.oh - 1) * s * s * lay.wq
            + offs.iter().max().copied().unwrap_or(0)
            + g.ow.next_multiple_of(LANES);
        assert!(xb.len() >= need, "padded image too short");
        let taps = offs.len();
        for c0 in (0..g.c).step_by(CHANNEL_CHUNK) {
            let t = Tap {
                x: xb.as_ptr().add(c0 * lay.channel()),
                offs,
                cs: lay.channel(),
                c: CHANNEL_CHUNK.min(g.c - c0),
            };
            let wc = wb.as_ptr().add(c0 * taps * OC_BLOCK);
            for oy in 0..g.oh {
                let mut ox = 0;
                while ox < g.ow {
                    let left = g.ow - ox;
                    let nv = if left > 2 * LANES {
                        3
                    } else {
                        left.div_ceil(LANES)
                    };
                    for half in 0..OC_BLOCK / TILE_OC {
                        let base = oy * s * s * lay.wq + ox;
                        let w = wc.add(half * TILE_OC);
                        let yt = yb.as_mut_ptr().add(half * TILE_OC * pout + oy * g.ow + ox);
                        // SAFETY (all three): `need` bounds every read below.
                        match nv {
                            3 => tile::<3>(&t, base, w, yt, pout, left),
                            2 => tile::<2>(&t, base, w, yt, pout, left),
                            _ => tile::<1>(&t, base, w, yt, pout, left),
                        }
                    }
                    ox += nv * LANES;
                }
            }
        }
    }

    /// What every tile reads: the padded image, its tap offsets, channel
    /// stride and channel count.
    struct Tap<'a> {
        x: *const f32,
        offs: &'a [usize],
        cs: usize,
        c: usize,
    }

    /// `y[i][p] += sum_{c, tap} w[c][tap][i] * x[c][base + off(tap) + p]`
    /// for 4 output channels `i` (planes `pout` apart from `y`) and
    /// `NV * 8` pixels `p` (the first `left` of them stored).
    #[target_feature(enable = "avx2,fma")]
    #[inline]
    unsafe fn tile<const NV: usize>(
        t: &Tap,
        base: usize,
        w: *const f32,
        y: *mut f32,
        pout: usize,
        left: usize,
    ) {
        let mut acc = [[_mm256_setzero_ps(); NV]; TILE_OC];
        for (i, row) in acc.iter_mut().enumerate() {
            for (v, a) in row.iter_mut().enumerate() {
                *a = load(y.add(i * pout + v * LANES), left - v * LANES);
            }
        }
        let taps = t.offs.len();
        for c in 0..t.c {
            let xc = t.x.add(c * t.cs + base);
            let wc = w.add(c * taps * OC_BLOCK);
            for (k, &off) in t.offs.iter().enumerate() {
                let xp = xc.add(off);
                let mut xv = [_mm256_setzero_ps(); NV];
                for (v, xr) in xv.iter_mut().enumerate() {
                    *xr = _mm256_loadu_ps(xp.add(v * LANES));
                }
                let wk = wc.add(k * OC_BLOCK);
                for (i, row) in acc.iter_mut().enumerate() {
                    let wv = _mm256_broadcast_ss(&*wk.add(i));
                    for (a, &xr) in row.iter_mut().zip(&xv) {
                        *a = _mm256_fmadd_ps(wv, xr, *a);
                    }
                }
            }
        }
        for (i, row) in acc.iter().enumerate() {
            for (v, &a) in row.iter().enumerate() {
                store(y.add(i * pout + v * LANES), a, left - v * LANES);
            }
        }
    }

    /// The first `min(n, 8)` floats at `p` (zeros after).
    #[target_feature(enable = "avx2")]
    #[inline]
    unsafe fn load(p: *const f32, n: usize) -> __m256 {
        if n >= LANES {
            return _mm256_loadu_ps(p);
        }
        let mut tmp = [0f32; LANES];
        std::ptr::copy_nonoverlapping(p, tmp.as_mut_ptr(), n);
        _mm256_loadu_ps(tmp.as_ptr())
    }

    /// Stores the first `min(n, 8)` lanes of `v` at `p`.
    #[target_feature(enable = "avx2")]
    #[inline]
    unsafe fn store(p: *mut f32, v: __m256, n: usize) {
        if n >= LANES {
            return _mm256_storeu_ps(p, v);
        }
        let mut tmp = [0f32; LANES];
        _mm256_storeu_ps(tmp.as_mut_ptr(), v);
        std::ptr::copy_nonoverlapping(tmp.as_ptr(), p, n);
    }
}

#[cfg(test)]
mod tests {
    use super::{pack_weights, use_avx2};
    use crate::kernels::conv::{fill_bias, fused_conv};
    use crate::kernels::conv2d::Conv2d;
    use crate::kernels::conv_epilogue::tests::check_fused_conv_fixture;
    use crate::kernels::conv_epilogue::ConvEpilogue;
    use crate::kernels::{KernelResult, View, ViewMut};
    use rlx_ir::op::{ChainStep, Window};

    const FIXTURE: &str = include_str!("../../tests/fixtures/conv_direct/cases.json");
    const CASES: usize = 8;

    /// A fused conv forced through the direct kernel (`simd`: the AVX2 tile
    /// or the scalar rows), weights packed by [`pack_weights`].
    fn direct_forced(
        simd: bool,
    ) -> impl Fn(&Window, usize, bool, &[ChainStep], &[View], &mut ViewMut) -> KernelResult {
        move |window, groups, bias, steps, ins, out| {
            let (conv_ins, extras) = ins.split_at(rlx_ir::ops::fused_conv::conv_arity(bias));
            let g = crate::kernels::conv::conv_geom(window, None, groups, conv_ins, out)?;
            let g2 = g.two_d.clone().filter(Conv2d::is_direct_shape);
            let g2 = g2.expect("a shape of the direct kernel");
            let epi = ConvEpilogue::new(steps, extras, out.dims, out.dtype);
            let epi = epi.expect("extras broadcast");
            let y = out.slice::<f32>();
            let bias = conv_ins.get(2).map(|b| b.slice::<f32>());
            fill_bias(y, bias, g2.o, g2.oh * g2.ow);
            let mut packed = Vec::new();
            pack_weights(conv_ins[1].slice(), g2.o, g2.c, g2.kh * g2.kw, &mut packed);
            g2.direct_packed(conv_ins[0].slice(), &packed, y, Some(&epi), simd)
        }
    }

    /// tools/gen_fused_conv_fixtures.py's DIRECT_CASES (numpy float64 loops)
    /// through the scalar rows: C = 3 to 40, stride 1 and 2, 3x3 and 5x5,
    /// asymmetric padding, batch 2, every epilogue, at 1 to 3 threads.
    #[test]
    fn direct_scalar_matches_numpy() {
        check_fused_conv_fixture(FIXTURE, CASES, &direct_forced(false));
    }

    /// The same cases through the AVX2 tile (full and partial vectors).
    #[test]
    fn direct_avx2_matches_numpy() {
        if !use_avx2() {
            eprintln!("no AVX2 + FMA here: the scalar test covers the kernel");
            return;
        }
        check_fused_conv_fixture(FIXTURE, CASES, &direct_forced(true));
    }

    /// The same cases through conv's own dispatch (the 32x32 one takes the
    /// direct kernel there, the rest the other paths).
    #[test]
    fn dispatch_matches_numpy() {
        assert!(geom3x3(9, 8, 32, 32, 1).direct_wins());
        check_fused_conv_fixture(FIXTURE, CASES, &fused_conv);
    }

    /// The conv of `(c, o, h, w, stride)` (3x3, pad 1, batch 1) as a
    /// [`Conv2d`].
    fn geom3x3(c: usize, o: usize, h: usize, w: usize, s: usize) -> Conv2d {
        let (oh, ow) = ((h + 2 - 3) / s + 1, (w + 2 - 3) / s + 1);
        Conv2d {
            batch: 1,
            c,
            o,
            groups: 1,
            h,
            w,
            oh,
            ow,
            kh: 3,
            kw: 3,
            s: (s, s),
            d: (1, 1),
            p: (1, 1),
        }
    }

    /// Median seconds of 7 runs of `f`.
    fn median_secs(mut f: impl FnMut()) -> f64 {
        f();
        let mut t: Vec<f64> = (0..7)
            .map(|_| {
                let start = std::time::Instant::now();
                f();
                start.elapsed().as_secs_f64()
            })
            .collect();
        t.sort_by(f64::total_cmp);
        t[3]
    }

    /// Prints GFLOP/s of the direct kernel next to the path conv took
    /// before it (Winograd where it wins, else im2col + GEMM) on the 3x3
    /// convs of the CNN set (U-Net, YOLO, CRNN, ResNet-18), 1 thread: the
    /// measurement behind `Conv2d::direct_wins`. Run with
    /// `cargo test --release -p rlx-cpu --lib direct_vs_current_paths -- --ignored --nocapture`.
    #[test]
    #[ignore = "timing; prints, asserts nothing"]
    fn direct_vs_current_paths() {
        let shapes = [
            (3, 16, 128, 128, 1),
            (16, 16, 128, 128, 1),
            (32, 16, 128, 128, 1),
            (16, 32, 64, 64, 1),
            (32, 32, 64, 64, 1),
            (64, 32, 64, 64, 1),
            (32, 64, 32, 32, 1),
            (64, 64, 32, 32, 1),
            (128, 64, 32, 32, 1),
            (64, 128, 16, 16, 1),
            (128, 128, 16, 16, 1),
            (16, 16, 64, 64, 1),
            (3, 16, 256, 256, 2),
            (16, 32, 128, 128, 2),
            (32, 64, 64, 64, 2),
            (64, 128, 32, 32, 2),
            (1, 64, 32, 128, 1),
            (64, 128, 16, 64, 1),
            (128, 256, 8, 32, 1),
            (64, 64, 56, 56, 1),
            (128, 128, 28, 28, 1),
        ];
        crate::threads::with_limit(Some(1), || {
            for (c, o, h, w, s) in shapes {
                let g = geom3x3(c, o, h, w, s);
                let x: Vec<f32> = (0..c * h * w).map(|i| (i % 13) as f32 / 13.0).collect();
                let wt: Vec<f32> = (0..o * c * 9).map(|i| (i % 7) as f32 / 7.0).collect();
                let mut y = vec![0f32; o * g.oh * g.ow];
                let flops = 2.0 * (c * o * 9 * g.oh * g.ow) as f64;
                let direct = median_secs(|| g.direct(&x, &wt, &mut y, None).expect("direct"));
                let wino = g.winograd_wins(c, o);
                let current = median_secs(|| {
                    if wino {
                        g.winograd(&x, &wt, &mut y, None).expect("winograd")
                    } else {
                        g.im2col_gemm(&x, &wt, &mut y, None).expect("im2col")
                    }
                });
                println!(
                    "c {c:4} o {o:4} {h:3}x{w:<3} s{s}: direct {:6.1} GFLOP/s, {} {:6.1} GFLOP/s, direct / current time {:.2}{}",
                    flops / direct / 1e9,
                    if wino { "winograd" } else { "im2col  " },
                    flops / current / 1e9,
                    direct / current,
                    if g.direct_wins() { "  (dispatch: direct)" } else { "" }
                );
            }
        });
    }

    /// Packing puts output channel `i` of block `b`, input `c`, tap `t` at
    /// `[b][c][t][i]`.
    #[test]
    fn pack_layout() {
        let (o, c, taps) = (16, 3, 2);
        let wt: Vec<f32> = (0..o * c * taps).map(|v| v as f32).collect();
        let mut packed = Vec::new();
        pack_weights(&wt, o, c, taps, &mut packed);
        for oc in 0..o {
            for ci in 0..c {
                for t in 0..taps {
                    let at = (((oc / 8) * c + ci) * taps + t) * 8 + oc % 8;
                    assert_eq!(packed[at], wt[(oc * c + ci) * taps + t]);
                }
            }
        }
    }
}
