//! Dense f32 conv for CNN stems: 3 input channels (an RGB image), a 3x3
//! or 7x7 kernel, stride 1 or 2 (ResNet's 7x7 stride-2 stem,
//! MobileNetV2's and the YOLO-style net's 3x3 stride-2 stems, U-Net's
//! first 3x3), on AVX-512, NCHW in and out.
//!
//! Output pixels are in the vector lanes and output channels in
//! registers: a tile is 8 output channels x up to 3 vectors of 16 pixels
//! of one output row (24 accumulators); per (channel, tap) it loads up to
//! 3 input vectors and broadcasts 8 weights (FMA memory operands), so a
//! row lands in the NCHW planes as is. The NCHWc kernel, which ran the
//! stems before, put output channels in the lanes: with only 3 input
//! channels its reorder of the image and the 16 x 16 transpose of every
//! output row were a quarter of the stem's time, and its 1- / 2-block
//! tiles (16 / 32 outputs) load one broadcast per FMA.
//!
//! Each image is copied once per call into a zero-padded buffer (kept
//! across calls, only its padding zeroed), at stride
//! 2 split into even and odd columns (`[c][hp][s][wq]`, as the direct
//! kernel's), so every tap of an output row is a contiguous run; the
//! weight is packed `[O/8][C][kh][kw][8]` (`conv_direct`'s
//! `pack_weights`: 2-9 K floats), once when the executable is built for a
//! constant weight (`winograd_weights.rs`), per call otherwise.
//!
//! Output is NCHW, or blocked `[N][O/16][oh][ow][16]` when the layout
//! plan keeps it so for its readers (16 / 32 outputs: YOLO's 3 -> 16 for
//! its 16 -> 32 stride-2 conv, MobileNetV2's 3 -> 32 for its first
//! depthwise, U-Net's first 3x3; `Conv2d::stem_writes_blocked`): a part
//! then owns 16-channel blocks x rows, each row's two 8-channel tiles
//! transposed 8 x 16 in registers into their halves of the pixels' lanes
//! ([`store_blocked`]), which costs less than the reader's reorder of an
//! NCHW image it saves. A 64-output stem the plan keeps blocked (ResNet's
//! 3 -> 64 7x7 for its max pool) runs the NCHWc kernel instead, whose
//! 4-block tile has output channels in the lanes
//! (`Conv2d::nchwc_wins_blocked`), unless its max pool runs it in bands
//! (`stem_pool.rs`: [`Conv2d::stem_images`] pads each image, and
//! [`StemImage::blocked_row`] computes any blocked row into the band
//! buffer, as [`Conv2d::stem_packed`] does into the output). Each output row gets the row-chain
//! epilogue (ReLU, Clip, residual, a leading SiLU) right after its tiles
//! (on the blocked row when blocked); any other epilogue runs per image on
//! whole NCHW planes.

// The vector kernels are x86-only (AVX2 / AVX-512); elsewhere the op
// never routes here, and the plans and buffers they read go unused.
#![cfg_attr(not(target_arch = "x86_64"), allow(dead_code, unused))]

use super::conv2d::Conv2d;
use super::conv_direct::{pack_weights, OC_BLOCK};
use super::conv_epilogue::{ConvEpilogue, RowChain};
use super::conv_nchwc::avx512;
use super::KernelResult;
use crate::team;
use std::cell::Cell;

/// Input channels the stem kernel takes.
const STEM_C: usize = 3;

/// Output pixels per vector.
const LANES: usize = 16;

/// Most vectors of pixels per tile.
const MAX_NV: usize = 3;

thread_local! {
    /// The calling thread's padded image, reused by the next call.
    static PADDED: Cell<Vec<f32>> = const { Cell::new(Vec::new()) };
    /// The calling thread's packed weight, reused by the next call.
    static PACKED: Cell<Vec<f32>> = const { Cell::new(Vec::new()) };
}

/// The padded copy of one image: `[c][hp][s][wq]` (row `r`, phase `q`
/// holds padded columns `q, q + s, q + 2s, ..`).
#[derive(Clone, Copy)]
struct Padded {
    s: usize,
    hp: usize,
    /// One phase of a row, with slack for a tile's last full vector.
    wq: usize,
}

impl Padded {
    fn channel(&self) -> usize {
        self.hp * self.s * self.wq
    }
}

impl Conv2d {
    /// True when [`Self::stem`] can run this conv: 3 input channels, a
    /// square 3x3 or 7x7 kernel, stride 1 or 2 on both dims, no dilation,
    /// whole blocks of 8 outputs, on AVX-512.
    pub(super) fn is_stem_shape(&self) -> bool {
        self.groups == 1
            && self.c == STEM_C
            && self.kh == self.kw
            && (self.kh == 3 || self.kh == 7)
            && self.s.0 == self.s.1
            && (1..=2).contains(&self.s.0)
            && self.d == (1, 1)
            && self.o > 0
            && self.o.is_multiple_of(OC_BLOCK)
            && avx512()
    }

    /// True when conv runs this f32 conv in the stem kernel: its shapes
    /// on maps of at least 16 x 16 output pixels, where
    /// `tests::stem_vs_current_paths` measured it faster than the NCHWc
    /// kernel (ResNet-18's 7x7, U-Net's 3x3 stride 1) and the direct AVX2
    /// kernel (3x3 stride 2): BENCHMARKS.md, branch cnn21.
    pub(crate) fn stem_wins(&self) -> bool {
        self.is_stem_shape() && self.oh * self.ow >= 16 * 16
    }

    /// True when `len` floats are this conv's packed stem weight
    /// ([`prepared_weights`]).
    pub(super) fn takes_stem_weights(&self, len: usize) -> bool {
        self.is_stem_shape() && len == self.o * STEM_C * self.kh * self.kw
    }

    fn stem_padded(&self) -> Padded {
        let s = self.s.0;
        Padded {
            s,
            hp: (self.oh - 1) * s + self.kh,
            wq: self.ow.next_multiple_of(LANES) + (self.kw - 1) / s,
        }
    }

    /// `y = conv(x, wt) + bias`, then `epi`, by the stem kernel (needs
    /// [`Self::is_stem_shape`]); `wt` is the plain OIhw weight.
    pub(super) fn stem(
        &self,
        x: &[f32],
        wt: &[f32],
        bias: Option<&[f32]>,
        y: &mut [f32],
        epi: Option<&ConvEpilogue>,
    ) -> KernelResult {
        if !self.is_stem_shape() {
            return Err(fail!("conv: the stem kernel does not take this conv"));
        }
        let mut wp = PACKED.take();
        pack_weights(wt, self.o, STEM_C, self.kh * self.kw, &mut wp);
        let r = self.stem_packed(x, &wp, bias, y, epi, false);
        PACKED.set(wp);
        r
    }

    /// True when [`Self::stem_packed`] can write this conv's output
    /// blocked (`[N][O/16][oh][ow][16]`): whole 16-channel blocks.
    pub(crate) fn stem_writes_blocked(&self) -> bool {
        self.stem_wins() && self.o.is_multiple_of(2 * OC_BLOCK)
    }

    /// [`Self::stem`] on a weight packed once ([`prepared_weights`]),
    /// `y` written blocked when `blocked` ([`Self::stem_writes_blocked`];
    /// the epilogue then has to be a row chain).
    pub(super) fn stem_packed(
        &self,
        x: &[f32],
        wp: &[f32],
        bias: Option<&[f32]>,
        y: &mut [f32],
        epi: Option<&ConvEpilogue>,
        blocked: bool,
    ) -> KernelResult {
        let chain = epi.and_then(|e| e.rows());
        if blocked && (!self.o.is_multiple_of(2 * OC_BLOCK) || epi.is_some_and(|_| chain.is_none()))
        {
            return Err(fail!(
                "conv: a blocked stem output needs whole 16-channel blocks and a row-chain epilogue"
            ));
        }
        let pout = self.oh * self.ow;
        // A part's unit: 8 output channels, or a 16-channel block (both
        // halves of each row, then its chain) for a blocked output.
        let unit = if blocked { 2 } else { 1 };
        let blocks = self.o / (unit * OC_BLOCK);
        let threads = team::threads();
        let row_parts = if blocks < 2 * threads {
            (2 * threads).div_ceil(blocks).min(self.oh)
        } else {
            1
        };
        let rows = team::split(self.oh, row_parts, 1);
        self.stem_images(x, wp, bias, chain, |img| {
            let n = img.n;
            let yn = &mut y[n * self.o * pout..][..self.o * pout];
            let out = team::Disjoint::new(&mut *yn);
            team::parallel_for(blocks * rows.len(), |part| {
                let (b, rr) = (part / rows.len(), rows[part % rows.len()].clone());
                for oy in rr {
                    if blocked {
                        let at = (b * self.oh + oy) * self.ow * 2 * OC_BLOCK;
                        // SAFETY: row `oy` of block `b`: this part's alone.
                        let row = unsafe { out.range(at..at + self.ow * 2 * OC_BLOCK) };
                        img.blocked_row(b, oy, row);
                    } else {
                        img.job.row(n, b, oy, &out, chain);
                    }
                }
            });
            match epi.filter(|_| chain.is_none()) {
                Some(epi) => epi.apply(yn, n, 0..self.o),
                None => Ok(()),
            }
        })
    }

    /// Runs `per_image` on each image of `x` in turn, once the image is
    /// in the padded buffer (kept across calls) that [`StemImage`]'s rows
    /// read; `wp` is the packed weight ([`prepared_weights`]), `chain` the
    /// row chain each blocked row gets.
    pub(super) fn stem_images(
        &self,
        x: &[f32],
        wp: &[f32],
        bias: Option<&[f32]>,
        chain: Option<&RowChain>,
        mut per_image: impl FnMut(&StemImage) -> KernelResult,
    ) -> KernelResult {
        if !self.takes_stem_weights(wp.len()) {
            return Err(fail!(
                "conv: the stem kernel does not take this conv or weight"
            ));
        }
        let pin = self.h * self.w;
        if bias.is_some_and(|b| b.len() != self.o) || x.len() != self.batch * STEM_C * pin {
            return Err(fail!(
                "conv: stem bias or image sizes do not match the conv"
            ));
        }
        if self.batch == 0 {
            return Ok(());
        }
        let lay = self.stem_padded();
        // Kept at its largest length: `pad_plane` writes every float of
        // the part it uses (padding zeroed, the rest copied).
        let mut xb = PADDED.take();
        if xb.len() < STEM_C * lay.channel() {
            xb.resize(STEM_C * lay.channel(), 0.0);
        }
        let offs: Vec<usize> = (0..self.kh)
            .flat_map(|ky| {
                (0..self.kw).map(move |kx| (ky * lay.s + kx % lay.s) * lay.wq + kx / lay.s)
            })
            .collect();
        // One image at a time, so its padded copy (0.7 MB at 224 x 224)
        // stays in L2 while every block reads it.
        let mut result = Ok(());
        for n in 0..self.batch {
            let xn = &x[n * STEM_C * pin..][..STEM_C * pin];
            {
                let shared = team::Disjoint::new(&mut xb[..STEM_C * lay.channel()]);
                team::parallel_for(STEM_C, |c| {
                    // SAFETY: one part per channel plane.
                    let dst = unsafe { shared.range(c * lay.channel()..(c + 1) * lay.channel()) };
                    self.pad_plane(&xn[c * pin..][..pin], &lay, dst);
                });
            }
            let img = StemImage {
                job: Job {
                    g: self,
                    lay,
                    xb: &xb,
                    wp,
                    bias,
                    offs: &offs,
                },
                n,
                chain,
            };
            result = per_image(&img);
            if result.is_err() {
                break;
            }
        }
        PADDED.set(xb);
        result
    }

    /// Copies plane `xc` (`[h][w]`) into `dst` (`[hp][s][wq]`) at its
    /// padded position and zeroes the rest of `dst` (its padding and
    /// slack: the buffer is reused across calls, so only what is not
    /// copied is zeroed).
    fn pad_plane(&self, xc: &[f32], lay: &Padded, dst: &mut [f32]) {
        let s = lay.s;
        for (r, brow) in dst.chunks_exact_mut(s * lay.wq).enumerate() {
            let Some(iy) = r.checked_sub(self.p.0).filter(|&iy| iy < self.h) else {
                brow.fill(0.0);
                continue;
            };
            let xrow = &xc[iy * self.w..][..self.w];
            for (q, phase) in brow.chunks_exact_mut(lay.wq).enumerate() {
                // Phase column j is padded column j * s + q, input column
                // j * s + q - p: the first j at or past the padding on.
                let j0 = self.p.1.saturating_sub(q).div_ceil(s).min(lay.wq);
                let Some(src) = xrow.get((j0 * s + q).saturating_sub(self.p.1)..) else {
                    phase.fill(0.0);
                    continue;
                };
                let (left, dst) = phase.split_at_mut(j0);
                left.fill(0.0);
                let n = src.len().div_ceil(s).min(dst.len());
                if s == 1 {
                    dst[..n].copy_from_slice(&src[..n]);
                } else {
                    evens(src, &mut dst[..n]);
                }
                dst[n..].fill(0.0);
            }
        }
    }
}

/// `dst[k] = src[2 k]` (`src` holds at least `2 * dst.len() - 1` floats).
fn evens(src: &[f32], dst: &mut [f32]) {
    let mut k = 0;
    #[cfg(target_arch = "x86_64")]
    if avx512() {
        // SAFETY: AVX-512 F present; each step reads src[2k .. 2k + 32]
        // (inside: checked) and writes dst[k .. k + 16].
        unsafe { k = evens_avx512(src, dst) };
    }
    for (d, &v) in dst[k..].iter_mut().zip(src[2 * k..].iter().step_by(2)) {
        *d = v;
    }
}

/// The vector part of [`evens`]; returns how many `dst` floats it wrote.
///
/// # Safety
/// AVX-512 F present.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn evens_avx512(src: &[f32], dst: &mut [f32]) -> usize {
    use std::arch::x86_64::*;
    let idx = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    let mut k = 0;
    while k + LANES <= dst.len() && 2 * k + 2 * LANES <= src.len() {
        let lo = unsafe { _mm512_loadu_ps(src.as_ptr().add(2 * k)) };
        let hi = unsafe { _mm512_loadu_ps(src.as_ptr().add(2 * k + LANES)) };
        let v = _mm512_permutex2var_ps(lo, idx, hi);
        unsafe { _mm512_storeu_ps(dst.as_mut_ptr().add(k), v) };
        k += LANES;
    }
    k
}

/// What every row of a call reads.
struct Job<'a> {
    g: &'a Conv2d,
    lay: Padded,
    /// The padded image.
    xb: &'a [f32],
    /// The packed weight, `[O/8][3][kh][kw][8]`.
    wp: &'a [f32],
    bias: Option<&'a [f32]>,
    /// Each tap's offset from an output row's first pixel in a channel.
    offs: &'a [usize],
}

/// One image of a stem call in the padded buffer ([`Conv2d::stem_images`]).
pub(super) struct StemImage<'a> {
    job: Job<'a>,
    /// The image's index in the batch.
    pub(super) n: usize,
    chain: Option<&'a RowChain<'a>>,
}

impl StemImage<'_> {
    /// The conv the rows are of.
    pub(super) fn conv(&self) -> &Conv2d {
        self.job.g
    }

    /// Output row `oy` of 16-channel block `cb`, blocked, into `row`
    /// (`[ow][16]`): both 8-channel halves stored into their lanes, then
    /// the row chain on the blocked row.
    pub(super) fn blocked_row(&self, cb: usize, oy: usize, row: &mut [f32]) {
        let g = self.job.g;
        let row = &mut row[..g.ow * 2 * OC_BLOCK];
        for half in 0..2 {
            // SAFETY: `row` holds the row's `ow` pixels of 16 floats;
            // this half stores lanes `half * 8 ..` of each.
            unsafe {
                let y = row.as_mut_ptr().add(half * OC_BLOCK);
                self.job.tiles::<true>(2 * cb + half, oy, y, 0);
            }
        }
        if let Some(chain) = self.chain {
            chain.apply_blocked(row, self.n, cb * 2 * OC_BLOCK, oy * g.ow..(oy + 1) * g.ow);
        }
    }
}

impl Job<'_> {
    /// Output row `oy` of channels `ob * 8 ..` of image `n` (`out` is
    /// that image), then the row chain on it.
    fn row(
        &self,
        n: usize,
        ob: usize,
        oy: usize,
        out: &team::Disjoint<f32>,
        chain: Option<&RowChain>,
    ) {
        let g = self.g;
        let pout = g.oh * g.ow;
        let oc0 = ob * OC_BLOCK;
        // SAFETY: row `oy` of the block's 8 NCHW planes: this part's alone.
        unsafe { self.tiles::<false>(ob, oy, out.as_ptr().add(oc0 * pout + oy * g.ow), pout) };
        if let Some(chain) = chain {
            for oc in oc0..oc0 + OC_BLOCK {
                let at = oc * pout + oy * g.ow;
                // SAFETY: this part's own row of plane `oc`.
                let y = unsafe { out.range(at..at + g.ow) };
                chain.apply(y, g.ow, n, oc..oc + 1, oy * g.ow..(oy + 1) * g.ow);
            }
        }
    }

    /// The tiles of output row `oy`, channels `ob * 8 ..`, stored from
    /// `y` (its first pixel, channel `ob * 8`): NCHW rows `pout` apart, or
    /// with `BLOCKED` 8 lanes of each 16-float pixel.
    ///
    /// # Safety
    /// `y` is valid for the row's stores, which no other thread touches.
    unsafe fn tiles<const BLOCKED: bool>(&self, ob: usize, oy: usize, y: *mut f32, pout: usize) {
        let oc0 = ob * OC_BLOCK;
        let mut b = [0f32; OC_BLOCK];
        if let Some(bias) = self.bias {
            b.copy_from_slice(&bias[oc0..oc0 + OC_BLOCK]);
        }
        let x = &self.xb[oy * self.lay.s * self.lay.s * self.lay.wq..];
        let w = &self.wp[ob * OC_BLOCK * STEM_C * self.offs.len()..]
            [..OC_BLOCK * STEM_C * self.offs.len()];
        let px = if BLOCKED { 2 * OC_BLOCK } else { 1 };
        let ow = self.g.ow;
        let mut ox = 0;
        while ox < ow {
            let left = ow - ox;
            let nv = left.div_ceil(LANES).min(MAX_NV);
            // SAFETY: AVX-512 (`is_stem_shape`); the tile reads `x` at
            // channel c < 3, tap offsets and `nv * 16` pixels from `ox`,
            // all inside a row's `wq` (the padded buffer's slack); it
            // writes pixels `ox .. ox + min(left, nv * 16)` of the row
            // (the caller's).
            unsafe {
                let t = Tile {
                    x: x.as_ptr().add(ox),
                    cs: self.lay.channel(),
                    offs: self.offs,
                    w: w.as_ptr(),
                    bias: &b,
                    y: y.add(ox * px),
                    pout,
                    left,
                };
                match nv {
                    3 => tile::<3, BLOCKED>(&t),
                    2 => tile::<2, BLOCKED>(&t),
                    _ => tile::<1, BLOCKED>(&t),
                }
            }
            ox += nv * LANES;
        }
    }
}

/// One tile's operands.
struct Tile<'a> {
    /// The image at the tile's first pixel, channel 0.
    x: *const f32,
    /// Floats per padded channel.
    cs: usize,
    offs: &'a [usize],
    /// The block's packed weight, `[3][taps][8]`.
    w: *const f32,
    bias: &'a [f32; OC_BLOCK],
    /// Output channel 0 of the block at the tile's first pixel.
    y: *mut f32,
    /// Floats between NCHW planes (not read for a blocked store).
    pout: usize,
    /// Pixels left in the row (the last vector stores `left - 16 v`).
    left: usize,
}

/// 8 output channels x `NV * 16` pixels: accumulators from the bias,
/// then per input channel and tap (in that order) `NV` input vectors, 8
/// broadcast weights and `8 * NV` FMAs; stored as NCHW rows, or with
/// `BLOCKED` as 8 lanes of each blocked pixel ([`store_blocked`]).
///
/// # Safety
/// AVX-512 F present; as at the call in [`Job::tiles`].
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[allow(clippy::needless_range_loop)]
unsafe fn tile<const NV: usize, const BLOCKED: bool>(t: &Tile) {
    use std::arch::x86_64::*;
    let mut acc = [[_mm512_setzero_ps(); NV]; OC_BLOCK];
    for (i, a) in acc.iter_mut().enumerate() {
        *a = [_mm512_set1_ps(t.bias[i]); NV];
    }
    let taps = t.offs.len();
    for c in 0..STEM_C {
        let xc = unsafe { t.x.add(c * t.cs) };
        let wc = unsafe { t.w.add(c * taps * OC_BLOCK) };
        for (k, &off) in t.offs.iter().enumerate() {
            let xp = unsafe { xc.add(off) };
            let mut xv = [_mm512_setzero_ps(); NV];
            for (v, r) in xv.iter_mut().enumerate() {
                *r = unsafe { _mm512_loadu_ps(xp.add(v * LANES)) };
            }
            let wk = unsafe { wc.add(k * OC_BLOCK) };
            for i in 0..OC_BLOCK {
                let wv = unsafe { _mm512_set1_ps(*wk.add(i)) };
                for v in 0..NV {
                    acc[i][v] = _mm512_fmadd_ps(wv, xv[v], acc[i][v]);
                }
            }
        }
    }
    if BLOCKED {
        for v in 0..NV {
            let rows: [__m512; OC_BLOCK] = std::array::from_fn(|i| acc[i][v]);
            let n = t.left.saturating_sub(v * LANES).min(LANES);
            // SAFETY: pixels `v * 16 ..` of the tile, `n` of them.
            unsafe { store_blocked(&rows, t.y.add(v * LANES * 2 * OC_BLOCK), n) };
        }
        return;
    }
    for (i, a) in acc.iter().enumerate() {
        for (v, &r) in a.iter().enumerate() {
            let n = t.left.saturating_sub(v * LANES).min(LANES);
            let mask = ((1u32 << n) - 1) as __mmask16;
            unsafe { _mm512_mask_storeu_ps(t.y.add(i * t.pout + v * LANES), mask, r) };
        }
    }
}

/// Stores `rows` (8 channels x 16 pixels) as the first `n` pixels of a
/// blocked row from `y`: pixel `p`'s 8 channels at `y + 16 p`. An 8 x 16
/// transpose in registers: pairs of rows interleaved by floats, then by
/// float pairs (each 128-bit lane `k` of `u[j]` / `u[4 + j]` holds pixel
/// `4k + j`'s channels 0-3 / 4-7), then two lanes of both halves per
/// vector, whose 256-bit halves are two pixels.
///
/// # Safety
/// AVX-512 F present; `y` valid for those stores.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn store_blocked(rows: &[std::arch::x86_64::__m512; OC_BLOCK], y: *mut f32, n: usize) {
    use std::arch::x86_64::*;
    let mut t = [_mm512_setzero_ps(); OC_BLOCK];
    for p in 0..OC_BLOCK / 2 {
        t[2 * p] = _mm512_unpacklo_ps(rows[2 * p], rows[2 * p + 1]);
        t[2 * p + 1] = _mm512_unpackhi_ps(rows[2 * p], rows[2 * p + 1]);
    }
    let pd = _mm512_castps_pd;
    let mut u = [_mm512_setzero_ps(); OC_BLOCK];
    for h in 0..2 {
        let (a, b) = (4 * h, 4 * h + 2);
        u[4 * h] = _mm512_castpd_ps(_mm512_unpacklo_pd(pd(t[a]), pd(t[b])));
        u[4 * h + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(pd(t[a]), pd(t[b])));
        u[4 * h + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(pd(t[a + 1]), pd(t[b + 1])));
        u[4 * h + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(pd(t[a + 1]), pd(t[b + 1])));
    }
    // Lanes 0 / 1 of u[j] and u[4 + j]: pixels j and 4 + j; lanes 2 / 3:
    // 8 + j and 12 + j.
    let lo = _mm512_setr_epi32(0, 1, 2, 3, 16, 17, 18, 19, 4, 5, 6, 7, 20, 21, 22, 23);
    let hi = _mm512_setr_epi32(8, 9, 10, 11, 24, 25, 26, 27, 12, 13, 14, 15, 28, 29, 30, 31);
    for j in 0..4 {
        for (q, idx) in [lo, hi].into_iter().enumerate() {
            let v = _mm512_permutex2var_ps(u[j], idx, u[4 + j]);
            let p = 8 * q + j;
            // SAFETY: pixels p and p + 4 (< n) of the caller's row.
            unsafe {
                if p < n {
                    _mm512_mask_storeu_ps(y.add(p * 2 * OC_BLOCK), 0x00ff, v);
                }
                if p + 4 < n {
                    // Lanes 8..16 land at pixel p + 4's first 8 floats.
                    _mm512_mask_storeu_ps(y.add((p + 4) * 2 * OC_BLOCK - OC_BLOCK), 0xff00, v);
                }
            }
        }
    }
}

#[cfg(not(target_arch = "x86_64"))]
unsafe fn tile<const NV: usize, const BLOCKED: bool>(_: &Tile) {
    unreachable!("the stem kernel is routed on AVX-512 only")
}

/// The packed weight (`[O/8][3][kh][kw][8]`) of a conv the stem kernel
/// runs ([`Conv2d::stem_wins`]), for the executor to prepare once (`x`,
/// `w`, `out`: static dims), or `None`.
pub(crate) fn prepared_weights(
    win: &rlx_ir::op::Window,
    groups: usize,
    (x, w, out): (&[usize], &[usize], &[usize]),
    wt: &[f32],
) -> Option<Vec<f32>> {
    let g2 = super::conv_packed::geometry(win, groups, x, w, out)?;
    let valid = wt.len() == w.iter().product::<usize>() && w.get(1) == Some(&g2.c);
    (valid && g2.stem_wins()).then(|| {
        let mut wp = Vec::new();
        pack_weights(wt, g2.o, STEM_C, g2.kh * g2.kw, &mut wp);
        wp
    })
}

#[cfg(test)]
mod tests {
    use crate::kernels::conv2d::Conv2d;
    use crate::kernels::conv_nchwc::{self, BlockedIo};

    fn geom(c: usize, o: usize, (h, w): (usize, usize), k: usize, s: usize) -> Conv2d {
        let out = |len: usize| (len + 2 * (k / 2) - k) / s + 1;
        Conv2d {
            batch: 1,
            c,
            o,
            groups: 1,
            h,
            w,
            oh: out(h),
            ow: out(w),
            kh: k,
            kw: k,
            s: (s, s),
            d: (1, 1),
            p: (k / 2, k / 2),
        }
    }

    use crate::kernels::conv::{conv_geom, fused_conv};
    use crate::kernels::conv_direct::pack_weights;
    use crate::kernels::conv_epilogue::tests::check_fused_conv_fixture;
    use crate::kernels::conv_epilogue::ConvEpilogue;
    use crate::kernels::{KernelResult, View, ViewMut};
    use rlx_ir::op::{ChainStep, Window};

    const FIXTURE: &str = include_str!("../../tests/fixtures/conv_stem/cases.json");

    /// A fused conv forced through the stem kernel.
    fn forced(
        window: &Window,
        groups: usize,
        bias: bool,
        steps: &[ChainStep],
        ins: &[View],
        out: &mut ViewMut,
    ) -> KernelResult {
        let (conv_ins, extras) = ins.split_at(rlx_ir::ops::fused_conv::conv_arity(bias));
        let g = conv_geom(window, None, groups, conv_ins, out)?;
        let g2 = g.two_d.clone().filter(Conv2d::is_stem_shape);
        let g2 = g2.expect("a shape of the stem kernel");
        let epi = ConvEpilogue::new(steps, extras, out.dims, out.dtype);
        let epi = epi.expect("extras broadcast");
        let bias = conv_ins.get(2).map(|b| b.slice::<f32>());
        g2.stem(
            conv_ins[0].slice(),
            conv_ins[1].slice(),
            bias,
            out.slice(),
            Some(&epi),
        )
    }

    /// tools/gen_fused_conv_fixtures.py's STEM_CASES (numpy float64
    /// loops) forced through the stem kernel and through conv's own
    /// dispatch, at 1 to 3 threads: 3x3 stride 1 / 2 and 7x7 stride 2
    /// (padding 3, asymmetric padding), 16 / 24 / 32 / 64 outputs, rows
    /// with a 48-pixel tile and a partial vector, ReLU6 / ReLU / residual
    /// / scale + residual / SiLU epilogues, no bias, batch 2 / 3, a 16-output
    /// stride-1 3x3 on odd 11 x 19 images.
    #[test]
    fn stem_matches_numpy() {
        if !crate::kernels::conv_nchwc::avx512() {
            eprintln!("no AVX-512 here: the kernel is not routed");
            return;
        }
        check_fused_conv_fixture(FIXTURE, 7, &forced);
        check_fused_conv_fixture(FIXTURE, 7, &fused_conv);
    }

    /// A fused conv forced through the stem kernel writing blocked
    /// output (16-channel multiples; others as [`forced`]), transposed
    /// back to NCHW here.
    fn forced_blocked(
        window: &Window,
        groups: usize,
        bias: bool,
        steps: &[ChainStep],
        ins: &[View],
        out: &mut ViewMut,
    ) -> KernelResult {
        let (conv_ins, extras) = ins.split_at(rlx_ir::ops::fused_conv::conv_arity(bias));
        let g = conv_geom(window, None, groups, conv_ins, out)?;
        let g2 = g.two_d.clone().filter(Conv2d::stem_writes_blocked);
        let Some(g2) = g2 else {
            return forced(window, groups, bias, steps, ins, out);
        };
        let epi = ConvEpilogue::new(steps, extras, out.dims, out.dtype);
        let epi = epi.expect("extras broadcast");
        let bias = conv_ins.get(2).map(|b| b.slice::<f32>());
        let mut wp = Vec::new();
        pack_weights(conv_ins[1].slice(), g2.o, 3, g2.kh * g2.kw, &mut wp);
        let y = out.slice::<f32>();
        let mut blocked = vec![f32::NAN; y.len()];
        g2.stem_packed(
            conv_ins[0].slice(),
            &wp,
            bias,
            &mut blocked,
            Some(&epi),
            true,
        )?;
        let (o, pout) = (g2.o, g2.oh * g2.ow);
        for (i, v) in y.iter_mut().enumerate() {
            let (n, c, p) = (i / (o * pout), i / pout % o, i % pout);
            *v = blocked[(n * o + c / 16 * 16) * pout + p * 16 + c % 16];
        }
        Ok(())
    }

    /// The fixture's 16- / 32- / 64-output cases with the stem kernel
    /// writing blocked rows (8-channel tiles transposed into their lanes,
    /// the row chain on blocked rows), 1 to 3 threads.
    #[test]
    fn stem_blocked_output_matches_numpy() {
        if !crate::kernels::conv_nchwc::avx512() {
            return;
        }
        check_fused_conv_fixture(FIXTURE, 7, &forced_blocked);
    }

    /// The padded-image buffer is kept across calls and only its padding
    /// zeroed: poisoned with NaN first (and then holding each case's image
    /// for the next, of other sizes and strides), every case still
    /// matches numpy, so no padding float is left unwritten.
    #[test]
    fn stale_padded_buffer_matches_numpy() {
        if !crate::kernels::conv_nchwc::avx512() {
            return;
        }
        super::PADDED.set(vec![f32::NAN; 1 << 20]);
        check_fused_conv_fixture(FIXTURE, 7, &forced);
    }

    /// The CNN set's stems route here, and nothing else does.
    #[test]
    fn stem_routing() {
        if !crate::kernels::conv_nchwc::avx512() {
            return;
        }
        for (c, o, hw, k, s) in [
            (3, 64, (224, 224), 7, 2),
            (3, 32, (224, 224), 3, 2),
            (3, 16, (256, 256), 3, 2),
            (3, 16, (128, 128), 3, 1),
            (3, 32, (32, 32), 3, 2),
        ] {
            let g = geom(c, o, hw, k, s);
            assert!(g.stem_wins() && !g.nchwc_wins(), "{c} -> {o} k{k} s{s}");
        }
        // Not 3 channels, not whole blocks of 8, a 5x5 or 1x1 kernel, a
        // map under 16 x 16, stride 3.
        for (c, o, hw, k, s) in [
            (1, 64, (32, 128), 3, 1),
            (4, 32, (224, 224), 3, 2),
            (3, 20, (224, 224), 3, 2),
            (3, 32, (224, 224), 5, 2),
            (3, 32, (224, 224), 1, 2),
            (3, 32, (30, 30), 3, 2),
            (3, 32, (224, 224), 3, 3),
        ] {
            assert!(!geom(c, o, hw, k, s).stem_wins(), "{c} -> {o} k{k} s{s}");
        }
        let mut g = geom(3, 32, (224, 224), 3, 2);
        g.d = (2, 2);
        assert!(!g.stem_wins());
    }

    fn median_secs(mut f: impl FnMut()) -> f64 {
        f();
        let mut t: Vec<f64> = (0..21)
            .map(|_| {
                let start = std::time::Instant::now();
                f();
                start.elapsed().as_secs_f64()
            })
            .collect();
        t.sort_by(f64::total_cmp);
        t[10]
    }

    /// GFLOP/s of the CNN set's stems through this kernel next to the
    /// NCHWc kernel (weight packed once; NCHW and blocked output) and the
    /// direct AVX2 kernel, the paths they took before, 1 thread, median of
    /// 21 warm calls: the measurement behind [`Conv2d::stem_wins`]. Run with `chrt -f 10
    /// cargo test --release -p rlx-cpu --lib stem_vs_current_paths --
    /// --ignored --nocapture`.
    #[test]
    #[ignore = "timing; prints, asserts nothing"]
    fn stem_vs_current_paths() {
        if !crate::kernels::conv_nchwc::avx512() {
            return;
        }
        #[rustfmt::skip]
        let shapes = [
            (1, 3, 64, (224, 224), 7, 2), (1, 3, 32, (224, 224), 3, 2),
            (1, 3, 16, (256, 256), 3, 2), (1, 3, 16, (128, 128), 3, 1),
            (8, 3, 64, (224, 224), 7, 2), (8, 3, 32, (224, 224), 3, 2),
        ];
        crate::threads::with_limit(Some(1), || {
            for (n, c, o, hw, k, s) in shapes {
                let mut g = geom(c, o, hw, k, s);
                g.batch = n;
                let x: Vec<f32> = (0..n * c * hw.0 * hw.1)
                    .map(|i| (i % 13) as f32 / 13.0)
                    .collect();
                let wt: Vec<f32> = (0..o * c * k * k).map(|i| (i % 7) as f32 / 7.0).collect();
                let mut y = vec![0f32; n * o * g.oh * g.ow];
                let mut wp = Vec::new();
                conv_nchwc::pack(&wt, (o, c, k, k), &mut wp);
                let flops = 2.0 * (n * c * o * k * k * g.oh * g.ow) as f64;
                let stem = median_secs(|| g.stem(&x, &wt, None, &mut y, None).unwrap());
                let nchwc = median_secs(|| g.nchwc_packed(&x, &wp, None, &mut y, None).unwrap());
                let direct = median_secs(|| g.direct(&x, &wt, &mut y, None).unwrap());
                // Output blocked (the layout plan's stem -> max pool).
                let out = BlockedIo {
                    input: false,
                    output: true,
                };
                let nchwc_blocked =
                    median_secs(|| g.nchwc_packed_io(&x, &wp, None, &mut y, None, out).unwrap());
                println!(
                    "b{n} {c} -> {o} {}x{} k{k} s{s}: stem {:.3} ms ({:.1} GFLOP/s), nchwc {:.3} ms, direct {:.3} ms, nchwc writing blocked {:.3} ms",
                    hw.0,
                    hw.1,
                    stem * 1e3,
                    flops / stem / 1e9,
                    nchwc * 1e3,
                    direct * 1e3,
                    nchwc_blocked * 1e3,
                );
            }
        });
    }
}
