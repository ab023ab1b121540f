//! Dense f32 conv over two spatial dims in a channel-blocked (NCHWc)
//! layout, the form MLAS runs every conv of a CNN in: 16 channels per
//! block, one AVX-512 register of output channels.
//!
//! Per call an NCHW image is reordered into `[C/16][hp][wp][16]` (fewer
//! than 16 channels: `[hp][wp][C]`) with its zero padding (O(C*H*W),
//! small against the conv's O(C*O*k*k*H*W); the copy is made anyway, so
//! the padding costs no branch in the tile). A blocked image (below) is
//! read where it is, padding included, as MLAS reads its NCHWc input:
//! the tiles skip the kernel rows on padding rows ([`Conv2d::live_rows`])
//! and a tile whose taps reach a padding column (the first / last tile
//! of a row) takes a pointer per pixel and tap, to the held pixel or to
//! a zero block, issuing the padded copy's FMAs in its order, so the
//! sums keep its bits (U-Net's 16 -> 16 3x3 at 128x128 b8, 1 thread:
//! 14.5-19.4 -> 13.0-13.2 ms for its two calls; a flattened conv,
//! [`Conv2d::flat`], still copies). The copy and the partial-sum
//! slab live in per-thread buffers kept at their largest length
//! (`grown`): only the padding is zeroed, every other float is written
//! before it is read. The weight is packed
//! `[O/16][C/16][kh][kw][16 ic][16 oc]` (fewer than 16 input channels:
//! `[O/16][kh][kw][C][16 oc]`) ([`pack`]), once
//! when the executable is built for a constant weight
//! (`winograd_weights.rs`), per call otherwise. The register tile is
//! `FB` blocks of 16 output channels x `P` consecutive output pixels of
//! one row (4 x 6, 3 x 8, 2 x 12 or 1 x 24 accumulators): per input
//! channel and tap it loads `FB` weight vectors, broadcasts `P` input
//! values (one 64-byte line holds a pixel's 16 channels) and issues
//! `FB * P` FMAs. A part (a group of output blocks x a range of output
//! rows) runs MLAS's loop order: one chunk of input-channel blocks (<= 36
//! KiB of weight, kept in L1) over every tile of its rows, then the next
//! chunk, the partial sums in a blocked slab of the part's rows, which is
//! then transposed 16 x 16 in registers into the NCHW output rows. In
//! the last chunk each row is finished right after its tiles, while in
//! L1: the row-chain epilogue (SiLU / ReLU / residual / ...) on its
//! blocked slab row, then the transpose (the chain after it, on the NCHW
//! rows, when it reads an NCHW extra: a blocked residual is read as is,
//! an NCHW one would be gathered lane by lane); any other epilogue runs
//! per image on whole planes. Maps of at
//! most 64 pixels (ResNet's 7x7 convs) run the tile over the flattened
//! pixels of the whole batch instead ([`Conv2d::flat`]), one chunk of
//! input channels at a time over a run of tiles. A tile sums only the
//! kernel rows that read image rows for its output rows
//! ([`Conv2d::live_rows`]; a flattened tile, the hull over its pixels),
//! as MLAS does: the padding rows above and below the image cost no FMAs
//! (CRNN's 4-row maps: a sixth of the 3x3 taps). The terms skipped are
//! zero products, so the sums are those of the full loop except that a
//! padding zero times an infinite or NaN weight no longer makes a NaN and
//! a sum of only such terms keeps the bias's zero sign.
//!
//! Between consecutive NCHWc convs the executor may keep the activation
//! blocked ([`BlockedIo`], planned in `nchwc_layout.rs`): the producer
//! then sums its tiles straight into `[N][O/16][oh][ow][16]` with no
//! transpose (the row-chain epilogue run on the blocked rows; a ReLU, a
//! blocked residual add or the add then ReLU, ResNet's epilogues, applied
//! by the tile to its registers as it stores its last chunk, so the rows
//! are not read back: ResNet-18's stem 2.9-3.0 -> 2.45-2.6 ms), and the
//! consumer reads the blocked image where it is ([`Conv2d::in_place`];
//! a flattened padded conv copies whole 16-channel pixel runs into its
//! padded image instead of gathering 16 planes per pixel).
//!
//! AVX-512 only ([`Conv2d::nchwc_wins`] routes nothing elsewhere).

// The vector kernels are x86-only (AVX2 / AVX-512); elsewhere the op
// never routes here, and the plans and buffers they read go unused.
#![cfg_attr(not(target_arch = "x86_64"), allow(dead_code, unused))]

use super::conv2d::Conv2d;
use super::conv_epilogue::ConvEpilogue;
use super::{KernelResult, View};
use crate::aligned_buf::AlignedBuf;
use crate::team;
use rlx_ir::op::ChainStep;
use std::cell::Cell;

/// Channels per block (f32 lanes of one AVX-512 register).
pub(crate) const BLOCK: usize = 16;

thread_local! {
    /// The calling thread's blocked input image, reused by the next call.
    static BLOCKED: Cell<Vec<f32>> = const { Cell::new(Vec::new()) };
    /// The calling thread's per-call packed weight, reused by the next call.
    static PACKED: Cell<Vec<f32>> = const { Cell::new(Vec::new()) };
    /// The calling thread's partial sums of an NCHW output's rows.
    static SLAB: Cell<Vec<f32>> = const { Cell::new(Vec::new()) };
}

/// Most input channels of a conv that takes this kernel to write its
/// output blocked while its image is read NCHW ([`Conv2d::nchwc_wins_blocked`]).
const STEM_MAX_C: usize = 4;

/// Input-channel rows per tap of the packed weight: 16, or `c` when there
/// are fewer (the stem's 3: a tap's rows 16 x 64 bytes apart put the 7x7
/// stem's 588 weight lines in 12 of L1's 64 sets, and it ran at half speed).
fn ic_rows(c: usize) -> usize {
    c.min(BLOCK)
}

/// Floats of the packed form of an `[o, c, kh, kw]` weight.
pub(crate) fn packed_len(o: usize, c: usize, kh: usize, kw: usize) -> usize {
    o.div_ceil(BLOCK) * c.div_ceil(BLOCK) * kh * kw * ic_rows(c) * BLOCK
}

/// Packs OIhw `wt` (`[o, c, kh, kw]`) into `out` as
/// `[o/16][c/16][kh][kw][ic rows][16 oc]` ([`ic_rows`]: 16, or `c` below
/// 16), zeros past `o` and `c`.
pub(crate) fn pack(wt: &[f32], dims: (usize, usize, usize, usize), out: &mut Vec<f32>) {
    let (o, c, kh, kw) = dims;
    out.clear();
    out.resize(packed_len(o, c, kh, kw), 0.0);
    pack_into(wt, dims, out);
}

/// [`pack`] into `out`, which holds [`packed_len`] zeros (the lanes past
/// `o` and `c` are left so).
fn pack_into(wt: &[f32], (o, c, kh, kw): (usize, usize, usize, usize), out: &mut [f32]) {
    let (cb, taps, rows) = (c.div_ceil(BLOCK), kh * kw, ic_rows(c));
    for (oc, wo) in wt.chunks_exact(c * taps).take(o).enumerate() {
        for (ic, wc) in wo.chunks_exact(taps).enumerate() {
            for (t, &v) in wc.iter().enumerate() {
                let block = (oc / BLOCK * cb + ic / BLOCK) * taps + t;
                out[(block * rows + ic % BLOCK) * BLOCK + oc % BLOCK] = v;
            }
        }
    }
}

/// Which side of an NCHWc conv the executor keeps in the blocked layout
/// `[N][C/16][H][W][16]` instead of NCHW (both need a whole number of
/// 16-channel blocks, so the two layouts take the same bytes).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct BlockedIo {
    /// `x` is blocked (`[N][C/16][H][W][16]`).
    pub(crate) input: bool,
    /// `y` is written blocked (`[N][O/16][oh][ow][16]`).
    pub(crate) output: bool,
}

/// The blocked image the tile reads, `[C/16][hp][wp][ps]`: the padded
/// copy (`pad` zero), or a blocked input read where it is (`pad` the
/// conv's top / left padding, which it does not hold).
#[derive(Clone, Copy)]
struct Layout {
    /// Channel blocks.
    cb: usize,
    /// Rows / columns held (the padded ones the output reads, or the
    /// image's own).
    hp: usize,
    wp: usize,
    /// Floats per pixel: 16, or `c` when there are fewer channels (one
    /// block, no zero lanes: ResNet's 3-channel stem image is 5x smaller
    /// and its stride-2 taps share cache lines).
    ps: usize,
    /// Padding rows above / columns left of the held ones: the tap at
    /// padded row `r`, column `q` is held at `r - pad.0`, `q - pad.1`
    /// when both lie inside `hp` x `wp` (rows outside are never read,
    /// [`Conv2d::live_rows`]; columns outside read zero: an edge tile,
    /// [`Job::run`]).
    pad: (usize, usize),
}

impl Layout {
    fn block(&self) -> usize {
        self.hp * self.wp * self.ps
    }
}

impl Conv2d {
    /// True when [`Self::nchwc`] can run this conv: dense (one group),
    /// on a CPU with AVX-512 (the tile is 16 lanes wide).
    pub(super) fn is_nchwc_shape(&self) -> bool {
        self.groups == 1 && self.c > 0 && self.o > 0 && self.kh > 0 && self.kw > 0 && avx512()
    }

    /// True when conv runs this f32 conv in the NCHWc kernel, by
    /// `tests::nchwc_vs_current_paths` on this host (2-vCPU AVX-512 Xeon,
    /// 1 thread, load 4-6; NCHWc / old time): U-Net's thin 3x3 convs that
    /// ran the AVX2 direct tile (16 -> 16 at 128x128 0.59-0.66, 32 -> 32
    /// at 64x64 0.49-0.57) or Winograd with a thin product (64 -> 32 at
    /// 64x64 0.91-0.93); 3x3 stride 2 (16 -> 32 at 128x128 0.57-0.66,
    /// ResNet-18's 64 -> 128 at 56x56 0.89-0.92, 64 -> 128 at 32x32
    /// 0.93-1.05); 3x3 at 14x14, too few tiles for Winograd (256 -> 256
    /// 0.32-0.88); 3 -> 16 at 128x128 stride 1 (0.82); since the tile's
    /// channel loop runs four channels a step (cnn17, 2026-12-06, load
    /// 9-10): Winograd shapes of at most 64 x 64 channels on maps of at
    /// most 32x32 (U-Net's 32 -> 64 and 64 -> 64 at 32x32 0.88-0.91), and
    /// maps of <= 64 pixels flattened over the batch (ResNet-18's 512 ->
    /// 512 at 7x7 0.73, 256 -> 512 stride 2 to 7x7 0.79 against the
    /// packed-weight GEMM). Not: Winograd with a denser product or a
    /// larger map, `o >= 64` (64 -> 64 at 56x56 1.06, 128 -> 128 at 28x28
    /// 1.16, 128 -> 64 at 32x32 1.05: it does 2.25x fewer multiplies), 1x1
    /// stride 2 (1.27-1.37: too few FMAs per output to pay the reorder and
    /// transpose), one or two input channels (1 -> 64 2.4) and fewer than
    /// 8 at stride 2 with fewer than 64 outputs (3 -> 16 at 256x256 1.06
    /// against the direct kernel: a one-block tile loads a weight vector
    /// per 24 broadcasts). 3-channel 3x3 / 7x7 stems with whole blocks of
    /// 8 outputs run the stem kernel instead ([`Conv2d::stem_wins`]: ResNet's
    /// 3 -> 64 7x7 stride 2 took this kernel at 0.8-0.9x im2col's time, the
    /// stem kernel takes 0.83x this one's); other 3-channel 7x7 stride-2
    /// convs with >= 64 outputs stay here (4 x 6 tiles).
    pub(crate) fn nchwc_wins(&self) -> bool {
        let small_product = self.c * self.o <= 64 * 64 && self.oh * self.ow <= 32 * 32;
        let dense_winograd = super::conv::winograd_enabled()
            && self.winograd_wins(self.c, self.o)
            && self.o >= 64
            && !small_product;
        self.is_nchwc_shape()
            && self.kh * self.kw > 1
            && (self.c >= 8 || (self.c >= 3 && (self.s == (1, 1) || self.o >= 64)))
            && (self.oh * self.ow > super::conv_packed::PACKED_MAX_PIXELS || self.flat())
            && !dense_winograd
            && !self.stem_wins()
    }

    /// True when a conv Winograd runs takes this kernel instead once the
    /// layout plan keeps one of its sides blocked (`winograd_weights.rs`
    /// offers it to the plan): at most 128 x 128 whole channel blocks, 3x3
    /// stride 1. In ResNet-18 b1 (1 thread, cold weights, blocked
    /// neighbours; cnn24, 2026-12-06, load 3-12) layer 1's 64 -> 64 convs
    /// at 56x56 took 3.4-3.65 ms for the two plain ones against Winograd's
    /// 4.1-4.6 and 3.9-4.0 against 4.0-4.15 for the two with a residual,
    /// while run alone with NCHW on both sides this kernel takes 1.06x
    /// Winograd's time (`nchwc_wins`). Layer 2's 128 -> 128 at 28x28 tied
    /// with layer 1 still on Winograd, but with layer 1 on this kernel
    /// its Winograd took 5.8 ms instead of 5.1 (its per-thread buffers no
    /// longer warm from layer 1), this kernel 5.2-5.4. Blocked on both
    /// sides, such a conv runs the blocked Winograd F(4,3) instead where
    /// `Conv2d::winograd_blocked_wins` (`winograd_blocked.rs`, cnn47).
    ///
    /// Likewise a 1x1 stride-2 conv (ResNet-18's downsamples, which
    /// im2col + GEMM or, on <= 64 output pixels, the packed-weight GEMM
    /// run otherwise): blocked on both sides it skips the reorder and
    /// transpose that made it lose with NCHW ones (its unpadded blocked
    /// image is read in place, [`Self::in_place`]), and the stage input
    /// it shares with the next 3x3 stride-2 conv stays blocked. In
    /// ResNet-18 b1 (1 thread; cnn27, load 8) the 64 -> 128 at 56 -> 28
    /// went 0.30-0.36 -> 0.12-0.13 ms and 128 -> 256 at 28 -> 14 0.19-0.20
    /// -> 0.12, and layers 2 and 3 stay blocked from their stage input.
    ///
    /// And a stem of at most [`STEM_MAX_C`] input channels and whole
    /// groups of 64 outputs writing blocked for its reader (ResNet's 3 ->
    /// 64 7x7 for its max pool, cnn28; CRNN's 1 -> 64 3x3 at 32x128 for
    /// its 2x2 pool, which took 0.21-0.33 ms on the direct kernel and
    /// takes 0.13-0.19 here, 1-2 threads b1, 1.4-1.9 -> 0.9-1.3 at b8; its
    /// pool, blocked, costs 0.015-0.02 ms more at b1, 0.1-0.2 at b8;
    /// cnn32, load 11-15). Not 16 / 32 outputs, whose 1- / 2-block tiles
    /// and the 3-channel image's reorder lost to the stem kernel writing
    /// blocked itself (`Conv2d::stem_writes_blocked`; cnn40, b1 1 thread:
    /// YOLO's 3 -> 16 at 256 x 256 0.46 ms here against 0.37 there,
    /// MobileNetV2's 3 -> 32 0.46-0.49 against 0.41-0.44).
    pub(crate) fn nchwc_wins_blocked(&self) -> bool {
        let thin_winograd = self.runs_winograd() && self.c <= 128 && self.o <= 128;
        let strided_1x1 = self.kh * self.kw == 1 && self.s != (1, 1);
        let whole = self.c.is_multiple_of(BLOCK)
            && self.o.is_multiple_of(BLOCK)
            && (thin_winograd || strided_1x1);
        // A stem writing blocked (MLAS's NCHWc conv of an NCHW image) in
        // full 4-block tiles: ResNet's 3 -> 64 7x7 stride 2, CRNN's 1 -> 64
        // 3x3 (its one-channel image copied as is, a plane).
        let stem =
            self.c <= STEM_MAX_C && self.kh * self.kw > 1 && self.o.is_multiple_of(4 * BLOCK);
        self.is_nchwc_shape() && (whole || stem)
    }

    /// True when `len` packed floats fit this conv ([`packed_len`]).
    pub(super) fn takes_nchwc_weights(&self, len: usize) -> bool {
        self.is_nchwc_shape() && len == packed_len(self.o, self.c, self.kh, self.kw)
    }

    fn layout(&self) -> Layout {
        Layout {
            cb: self.c.div_ceil(BLOCK),
            hp: (self.oh - 1) * self.s.0 + (self.kh - 1) * self.d.0 + 1,
            wp: (self.ow - 1) * self.s.1 + (self.kw - 1) * self.d.1 + 1,
            ps: self.c.min(BLOCK),
            pad: (0, 0),
        }
    }

    /// The layout of a blocked image `x` read where it is, or `None` when
    /// it is copied. Unpadded (ResNet's 1x1 stride-2 downsamples) its
    /// `[C/16][h][w][16]` planes hold every pixel the taps read; padded,
    /// the tiles skip the kernel rows that read padding rows
    /// ([`Conv2d::live_rows`]) and the tiles whose taps reach a padding
    /// column read zero vectors there (edge tiles, [`Job::run`]), as MLAS reads its NCHWc
    /// input. A flattened conv ([`Self::flat`]) copies a padded image:
    /// its tiles cross rows, so no column range is free of edges.
    fn in_place(&self, io: BlockedIo) -> Option<Layout> {
        let padded = self.layout();
        let unpadded = self.p == (0, 0) && padded.hp <= self.h && padded.wp <= self.w;
        let readable = unpadded || !self.flat();
        (io.input && readable && self.c.is_multiple_of(BLOCK)).then_some(Layout {
            cb: self.c / BLOCK,
            hp: self.h,
            wp: self.w,
            ps: BLOCK,
            pad: self.p,
        })
    }

    /// `y = conv(x, wt) + bias`, then `epi`; `wt` is the plain OIhw weight.
    pub(super) fn nchwc(
        &self,
        x: &[f32],
        wt: &[f32],
        bias: Option<&[f32]>,
        y: &mut [f32],
        epi: Option<&ConvEpilogue>,
    ) -> KernelResult {
        let mut wp = PACKED.take();
        pack(wt, (self.o, self.c, self.kh, self.kw), &mut wp);
        let r = self.nchwc_packed(x, &wp, bias, y, epi);
        PACKED.set(wp);
        r
    }

    /// [`Self::nchwc`] on a weight already packed by [`pack`].
    pub(super) fn nchwc_packed(
        &self,
        x: &[f32],
        wp: &[f32],
        bias: Option<&[f32]>,
        y: &mut [f32],
        epi: Option<&ConvEpilogue>,
    ) -> KernelResult {
        self.nchwc_packed_io(x, wp, bias, y, epi, BlockedIo::default())
    }

    /// True when this conv can read (`io.input`) / write (`io.output`)
    /// the blocked layout: whole channel blocks on that side, and an
    /// epilogue that runs on blocked rows (none, or a row chain).
    pub(crate) fn takes_blocked(&self, io: BlockedIo, epi: Option<&ConvEpilogue>) -> bool {
        (!io.input || self.c.is_multiple_of(BLOCK))
            && (!io.output
                || (self.o.is_multiple_of(BLOCK) && epi.is_none_or(|e| e.rows().is_some())))
    }

    /// [`Self::nchwc_packed`] with `x` / `y` in the layouts `io` names.
    pub(super) fn nchwc_packed_io(
        &self,
        x: &[f32],
        wp: &[f32],
        bias: Option<&[f32]>,
        y: &mut [f32],
        epi: Option<&ConvEpilogue>,
        io: BlockedIo,
    ) -> KernelResult {
        self.nchwc_staged(x, wp, bias, y, epi, io, self.in_place(io))
    }

    /// [`Self::nchwc_packed_io`] reading a blocked `x` where it is as
    /// `in_place` ([`Self::in_place`]), or, `None`, through a padded copy
    /// (the tests compare the two paths' bits).
    #[allow(clippy::too_many_arguments)]
    fn nchwc_staged(
        &self,
        x: &[f32],
        wp: &[f32],
        bias: Option<&[f32]>,
        y: &mut [f32],
        epi: Option<&ConvEpilogue>,
        io: BlockedIo,
        in_place: Option<Layout>,
    ) -> KernelResult {
        if !self.takes_nchwc_weights(wp.len()) {
            return Err(fail!(
                "conv: the NCHWc kernel does not take this conv or weight"
            ));
        }
        if !self.takes_blocked(io, epi) {
            return Err(fail!(
                "conv: blocked layout {io:?} on a conv of {} -> {} channels or an epilogue the NCHWc kernel cannot run blocked",
                self.c,
                self.o
            ));
        }
        let (pin, pout) = (self.h * self.w, self.oh * self.ow);
        if pout == 0 || self.batch == 0 {
            return Ok(());
        }
        let lay = self.layout();
        let ob = self.o.div_ceil(BLOCK);
        let mut b = vec![0f32; ob * BLOCK];
        if let Some(bias) = bias {
            b[..self.o].copy_from_slice(&bias[..self.o]);
        }
        if let Some(lay) = in_place {
            // The blocked image is read where it is: no reorder.
            let image = lay.cb * lay.block();
            if self.flat() {
                return self.flat_images(&x[..self.batch * image], &lay, wp, &b, y, epi, io.output);
            }
            for n in 0..self.batch {
                let yn = &mut y[n * self.o * pout..][..self.o * pout];
                self.image(
                    &x[n * image..][..image],
                    &lay,
                    wp,
                    &b,
                    yn,
                    n,
                    epi,
                    io.output,
                )?;
            }
            return Ok(());
        }
        let mut buf = BLOCKED.take();
        if self.flat() {
            // Every image blocked at once: the tiles run over the pixels of
            // the whole batch, each weight group read once per call.
            let image = lay.cb * lay.block();
            let xb = grown(&mut buf, self.batch * image);
            for (n, xbn) in xb.chunks_exact_mut(image).enumerate() {
                let xn = &x[n * self.c * pin..][..self.c * pin];
                if io.input {
                    self.reorder_blocked(xn, &lay, xbn);
                } else {
                    self.reorder(xn, &lay, xbn);
                }
            }
            let result = self.flat_images(xb, &lay, wp, &b, y, epi, io.output);
            BLOCKED.set(buf);
            return result;
        }
        let xb = grown(&mut buf, lay.cb * lay.block());
        let mut result = Ok(());
        for n in 0..self.batch {
            let xn = &x[n * self.c * pin..][..self.c * pin];
            if io.input {
                self.reorder_blocked(xn, &lay, xb);
            } else {
                self.reorder(xn, &lay, xb);
            }
            let yn = &mut y[n * self.o * pout..][..self.o * pout];
            result = self.image(xb, &lay, wp, &b, yn, n, epi, io.output);
            if result.is_err() {
                break;
            }
        }
        BLOCKED.set(buf);
        result
    }

    /// Copies image `xn` (`[c, h, w]`) into `xb` as `lay`, zeros in the
    /// padding and past the last channel; parts as [`reorder_parts`].
    fn reorder(&self, xn: &[f32], lay: &Layout, xb: &mut [f32]) {
        let (h, w, pt, pl) = (self.h, self.w, self.p.0, self.p.1);
        let ps = lay.ps;
        reorder_parts(lay, xb, |blk, rows, dst| {
            let cols = pl.min(lay.wp)..(pl + w).min(lay.wp);
            let chans = blk * BLOCK..self.c.min((blk + 1) * BLOCK);
            for (r, row) in rows.zip(dst.chunks_exact_mut(lay.wp * ps)) {
                let Some(ir) = r.checked_sub(pt).filter(|&ir| ir < h) else {
                    row.fill(0.0);
                    continue;
                };
                // Each branch below writes every float of `cols` (all
                // `ps` lanes of a pixel), so only the padding is zeroed.
                fill_padding(row, cols.clone(), ps);
                if ps == 1 {
                    // One channel: the row's run as is.
                    if !cols.is_empty() {
                        let src = &xn[ir * w + cols.start - pl..][..cols.len()];
                        row[cols.clone()].copy_from_slice(src);
                    }
                    continue;
                }
                if ps == BLOCK {
                    // SAFETY: AVX-512 (this kernel's routing); the runs
                    // read are row `ir` of these channels, columns
                    // `cols - pl` < w; the stores are pixels `cols` < wp.
                    unsafe { reorder_row16(xn, (h, w), chans.clone(), ir, row, cols.clone(), pl) };
                    continue;
                }
                for (i, ch) in chans.clone().enumerate() {
                    let src = &xn[(ch * h + ir) * w..][..w];
                    for q in cols.clone() {
                        row[q * ps + i] = src[q - pl];
                    }
                }
            }
        });
    }

    /// Copies the blocked image `xn` (`[c/16][h][w][16]`) into `xb` as
    /// `lay`: one contiguous run of `w * 16` floats per row and block,
    /// zeros in the padding; parts as [`reorder_parts`].
    fn reorder_blocked(&self, xn: &[f32], lay: &Layout, xb: &mut [f32]) {
        // Whole blocks (`takes_blocked`), so 16 floats per pixel.
        debug_assert_eq!(lay.ps, BLOCK);
        let (h, w, pt, pl) = (self.h, self.w, self.p.0, self.p.1);
        reorder_parts(lay, xb, |blk, rows, dst| {
            let cols = pl.min(lay.wp)..(pl + w).min(lay.wp);
            for (r, row) in rows.zip(dst.chunks_exact_mut(lay.wp * BLOCK)) {
                let Some(ir) = r.checked_sub(pt).filter(|&ir| ir < h) else {
                    row.fill(0.0);
                    continue;
                };
                fill_padding(row, cols.clone(), BLOCK);
                if !cols.is_empty() {
                    let at = ((blk * h + ir) * w + cols.start - pl) * BLOCK;
                    let run = cols.start * BLOCK..cols.end * BLOCK;
                    row[run.clone()].copy_from_slice(&xn[at..at + run.len()]);
                }
            }
        });
    }

    /// Output image `yn` from the blocked image `xb` (`yn` blocked when
    /// `blocked_out`): parts are groups of output-channel blocks x ranges
    /// of output rows.
    #[allow(clippy::too_many_arguments)]
    fn image(
        &self,
        xb: &[f32],
        lay: &Layout,
        wp: &[f32],
        bias: &[f32],
        yn: &mut [f32],
        n: usize,
        epi: Option<&ConvEpilogue>,
        blocked_out: bool,
    ) -> KernelResult {
        let ob = self.o.div_ceil(BLOCK);
        let groups: Vec<(usize, usize)> = (0..ob.div_ceil(4))
            .map(|g| (g * 4, (ob - g * 4).min(4)))
            .collect();
        let threads = team::threads();
        let row_parts = if threads > 1 {
            (2 * threads).div_ceil(groups.len()).min(self.oh)
        } else {
            1
        };
        let rows = team::split(self.oh, row_parts, 1);
        let chain = epi.and_then(|e| e.rows());
        let out = team::Disjoint::new(yn);
        let job = Job {
            g: self,
            lay: *lay,
            xb,
            wp,
            bias,
            w_block: lay.cb * self.kh * self.kw * ic_rows(self.c) * BLOCK,
            blocked_out,
        };
        team::parallel_for(groups.len() * rows.len(), |part| {
            let (b0, fb) = groups[part / rows.len()];
            job.rows_part(b0, fb, rows[part % rows.len()].clone(), &out, n, chain);
        });
        match epi.filter(|_| chain.is_none()) {
            Some(epi) => epi.apply(yn, n, 0..self.o),
            None => Ok(()),
        }
    }
}

impl Conv2d {
    /// True when the tile runs over the flattened output pixels of the
    /// whole batch ([`Self::flat_images`]) instead of along output rows:
    /// maps of at most [`FLAT_MAX_PIXELS`] pixels (ResNet's 7x7 maps: a
    /// row of 7 is one 6-pixel tile and a 1-pixel tile that loads 4
    /// weight vectors for 4 FMAs), whole 16-channel pixels.
    pub(crate) fn flat(&self) -> bool {
        self.oh * self.ow <= FLAT_MAX_PIXELS && self.c >= BLOCK
    }

    /// The kernel rows whose taps read image rows (not zero padding) for
    /// output row `oh` (none for an output row of padding only: its tiles
    /// are the bias). The tile sums only these: on CRNN's 4-row maps a
    /// third of the 3x3 taps of the top and bottom rows read padding, a
    /// sixth of all FMAs (MLAS skips them likewise).
    fn live_rows(&self, oh: usize) -> std::ops::Range<usize> {
        let (top, d) = (oh * self.s.0, self.d.0);
        // Kernel row r reads padded row top + r * d, image row top + r * d - pt.
        let lo = self.p.0.saturating_sub(top).div_ceil(d).min(self.kh);
        let hi = (self.h + self.p.0).saturating_sub(top).div_ceil(d);
        lo.min(hi)..hi.min(self.kh)
    }

    /// All images' output from the blocked images `xb` (`[N][C/16][hp][wp][16]`):
    /// parts are groups of output-channel blocks x ranges of the batch's
    /// `N * oh * ow` pixels; each part's tiles land in a blocked slab,
    /// written out (transposed into NCHW unless `blocked_out`) per image.
    #[allow(clippy::too_many_arguments)]
    fn flat_images(
        &self,
        xb: &[f32],
        lay: &Layout,
        wp: &[f32],
        bias: &[f32],
        y: &mut [f32],
        epi: Option<&ConvEpilogue>,
        blocked_out: bool,
    ) -> KernelResult {
        let ob = self.o.div_ceil(BLOCK);
        let groups: Vec<(usize, usize)> = (0..ob.div_ceil(4))
            .map(|g| (g * 4, (ob - g * 4).min(4)))
            .collect();
        let (pout, threads) = (self.oh * self.ow, team::threads());
        let total = self.batch * pout;
        let px_parts = if threads > 1 {
            (2 * threads).div_ceil(groups.len())
        } else {
            1
        };
        // Ranges of whole 6-pixel tiles where there are enough.
        let ranges = team::split(total, px_parts, 6);
        let chain = epi.and_then(|e| e.rows());
        let out = team::Disjoint::new(y);
        let job = Job {
            g: self,
            lay: *lay,
            xb,
            wp,
            bias,
            w_block: lay.cb * self.kh * self.kw * ic_rows(self.c) * BLOCK,
            blocked_out,
        };
        team::parallel_for(groups.len() * ranges.len(), |part| {
            let (b0, fb) = groups[part / ranges.len()];
            let px = ranges[part % ranges.len()].clone();
            // Slack of a block past the range: the transposes read whole
            // 16-pixel blocks.
            let ld = px.len() + BLOCK;
            let mut slab = vec![0f32; fb * ld * BLOCK];
            job.flat_part(b0, fb, px, &mut slab, ld, &out, chain);
        });
        match epi.filter(|_| chain.is_none()) {
            Some(epi) => {
                let image = self.o * pout;
                for n in 0..self.batch {
                    // SAFETY: the parts are done; this is the only writer.
                    let yn = unsafe { out.range(n * image..(n + 1) * image) };
                    epi.apply(yn, n, 0..self.o)?;
                }
                Ok(())
            }
            None => Ok(()),
        }
    }
}

/// Where a tile's pixels are: `P` consecutive pixels of output row `oh`
/// from column `ow0`, or any pixels at these offsets into the blocked
/// images ([`Conv2d::flat`]) whose taps read image rows only at these
/// kernel rows (the hull of [`Conv2d::live_rows`] over the pixels' rows).
enum Pos<'a> {
    Row { oh: usize, ow0: usize },
    Flat(&'a [usize; 24], std::ops::Range<usize>),
}

/// The zero pixel an edge tile's padding taps read ([`Job::run`]).
static ZERO_PIXEL: [f32; BLOCK] = [0.0; BLOCK];

/// Which variant of [`Job::run`] a tile takes.
#[derive(Clone, Copy)]
enum Kind {
    /// Pixels of one row, whole 16-channel pixels, every tap held.
    Row,
    /// Pixels of one row of fewer than 16 channels, every tap held.
    Thin,
    /// Pixels of one row whose taps reach columns the layout does not hold.
    Edge,
    /// Pixels anywhere in the batch ([`Conv2d::flat`]).
    Flat,
}

/// Where a row tile reads ([`Job::run`]): its padded row `top` (the
/// output row's first kernel row), and `col`, the floats into a held row
/// of its first pixel (an edge tile: that pixel's padded column).
#[derive(Clone, Copy)]
struct Origin {
    top: usize,
    col: usize,
}

/// What a tile does to its sums as it stores them: in the last chunk of
/// a blocked output whose row chain it can run
/// ([`super::conv_epilogue::TileChain`]), add the residual read at the
/// store's own offsets from `residual` (the image's blocked residual at
/// the tile's `dst`), then ReLU; otherwise nothing.
#[derive(Clone, Copy)]
struct Store {
    residual: Option<*const f32>,
    relu: bool,
}

impl Store {
    /// Sums stored as they are.
    const PLAIN: Store = Store {
        residual: None,
        relu: false,
    };
}

/// Most bytes of packed weight one chunk of input-channel blocks takes
/// ([`Job::chunks`]): one 3x3 block of 4 x 16 x 16 channels (36 KiB: most
/// of the Xeon host's 48 KiB L1d, over Zen 4's 32 KiB; smaller chunks
/// measured slower on both, 16 KiB cut by kernel rows on the Xeon, 12 / 24
/// KiB on Zen 4).
const CHUNK_BYTES: usize = 36 * 1024;

/// Tiles of a flattened part that every channel chunk passes over before
/// the next run (their slab, 16 x 6 pixels x 4 blocks = 24 KiB, stays in
/// L1 / L2).
const FLAT_RUN_TILES: usize = 16;

/// Largest output map ([`Conv2d::flat`]) the NCHWc tile runs flattened.
pub(crate) const FLAT_MAX_PIXELS: usize = 64;

/// What every part of one image's conv reads.
struct Job<'a> {
    g: &'a Conv2d,
    lay: Layout,
    xb: &'a [f32],
    wp: &'a [f32],
    /// The bias, zero-padded to whole blocks.
    bias: &'a [f32],
    /// Floats of one output block's packed weight.
    w_block: usize,
    /// Store rows blocked (`[O/16][oh][ow][16]`) rather than NCHW.
    blocked_out: bool,
}

impl Job<'_> {
    /// Output rows `rows` of blocks `b0 .. b0 + fb` (fb <= 4) into `out`,
    /// in MLAS's loop order: one chunk of input-channel blocks
    /// ([`Self::chunks`], <= 36 KiB of weight, kept in L1) passes over
    /// every tile of the part's rows before the next chunk, the partial
    /// sums kept in the blocked output itself (`blocked_out`) or in the
    /// calling thread's slab (`[fb][rows * ow + 16][16]`), which is then
    /// transposed into the NCHW rows. In the last chunk each row is
    /// finished ([`Self::finish_row`]: row chain, transpose) right after
    /// its tiles, while it is in L1.
    fn rows_part(
        &self,
        b0: usize,
        fb: usize,
        rows: std::ops::Range<usize>,
        out: &team::Disjoint<f32>,
        n: usize,
        chain: Option<&super::conv_epilogue::RowChain>,
    ) {
        let g = self.g;
        let (p_max, plane) = (24 / fb, g.oh * g.ow);
        let mut slab = SLAB.take();
        // A blocked output's chain, when the tile can run it as it stores
        // its last chunk: the rows are then not read back for it.
        let in_tile = chain
            .filter(|_| self.blocked_out)
            .and_then(|c| c.tile_form());
        let mut residual = None;
        // Where block `f`, pixel `j` of the part's first row lands:
        // `base + (f * ld + j) * 16`.
        let (base, ld) = if self.blocked_out {
            // SAFETY: computed only; the part's rows of its blocks are
            // inside the output, written by this part alone.
            let at = (b0 * g.oh + rows.start) * g.ow * BLOCK;
            // The residual has the image's blocked layout: same offsets.
            residual = in_tile
                .and_then(|t| t.residual(n))
                .map(|r| r[at..].as_ptr());
            (unsafe { out.as_ptr().add(at) }, plane)
        } else {
            // A block of slack: the transposes read whole 16-pixel blocks.
            let ld = rows.len() * g.ow + BLOCK;
            (grown(&mut slab, fb * ld * BLOCK).as_mut_ptr(), ld)
        };
        let chunks: Vec<_> = self.chunks(fb).collect();
        for (k, blks) in chunks.iter().enumerate() {
            let last = k + 1 == chunks.len();
            for (i, oh) in rows.clone().enumerate() {
                let mut ow0 = 0;
                while ow0 < g.ow {
                    let p = p_max.min(g.ow - ow0);
                    let at = (i * g.ow + ow0) * BLOCK;
                    let store = match in_tile.filter(|_| last) {
                        // SAFETY: the residual's part rows, as `base`'s.
                        Some(t) => Store {
                            residual: residual.map(|r| unsafe { r.add(at) }),
                            relu: t.relu,
                        },
                        None => Store::PLAIN,
                    };
                    // SAFETY: the tile reads the blocked image at padded
                    // rows `oh * s + r * d` of live kernel rows (held rows
                    // `- pad.0` < hp) and padded columns `(ow0 + j) * s + q
                    // * d` (held `- pad.1` < wp, or an edge tile's zero
                    // block), channel blocks `blks` < cb, weight blocks
                    // b0 .. b0 + fb < ob, and writes `base` (reads the
                    // residual) at blocks < fb, pixels `i * ow + ow0 + j` <
                    // ld (rows of the part).
                    unsafe {
                        let dst = base.add(at);
                        let pos = Pos::Row { oh, ow0 };
                        self.tile(b0, fb, p, pos, dst, ld, blks.clone(), store)
                    };
                    ow0 += p;
                }
                if last {
                    let rows = (!self.blocked_out).then_some(base);
                    let chain = chain.filter(|_| in_tile.is_none());
                    // SAFETY: an NCHW part's `base` is its slab, `[fb][ld][16]`.
                    unsafe { self.finish_row(b0, fb, (i, oh), rows, ld, out, n, chain) };
                }
            }
        }
        SLAB.set(slab);
    }

    /// Finishes output row `oh` (the part's row `i`) of the `fb` blocks
    /// from `b0` once its last chunk is summed: blocked, the row chain on
    /// the stored rows; NCHW, each block's 16-pixel runs of the row in
    /// `slab` (`[fb][ld][16]`) transposed into the channel rows, the row
    /// chain before the transpose on the slab when it reads no NCHW extra
    /// ([`super::conv_epilogue::RowChain::apply_blocked`]: a blocked
    /// residual read as is, not gathered lane by lane), else after it on
    /// the channel rows; a lone ReLU is applied in the transposes'
    /// registers.
    ///
    /// # Safety
    /// `slab`, when given, points at the part's `[fb][ld][16]` slab
    /// (rows of `ow` pixels, a block of slack), used by no one else.
    #[allow(clippy::too_many_arguments)]
    unsafe fn finish_row(
        &self,
        b0: usize,
        fb: usize,
        (i, oh): (usize, usize),
        slab: Option<*mut f32>,
        ld: usize,
        out: &team::Disjoint<f32>,
        n: usize,
        chain: Option<&super::conv_epilogue::RowChain>,
    ) {
        let g = self.g;
        let plane = g.oh * g.ow;
        let row_px = oh * g.ow..(oh + 1) * g.ow;
        let Some(slab) = slab else {
            let Some(chain) = chain else { return };
            for f in 0..fb {
                let at = ((b0 + f) * g.oh + oh) * g.ow * BLOCK;
                // SAFETY: this part alone writes row `oh` of these blocks.
                let dst = unsafe { out.range(at..at + g.ow * BLOCK) };
                chain.apply_blocked(dst, n, (b0 + f) * BLOCK, row_px.clone());
            }
            return;
        };
        let relu = chain.is_some_and(|c| c.is_relu());
        let (before, after) = match chain.filter(|_| !relu) {
            Some(c) if c.reads_nchw_extra() => (None, Some(c)),
            c => (c, None),
        };
        for f in 0..fb {
            let oc0 = (b0 + f) * BLOCK;
            let chans = BLOCK.min(g.o - oc0);
            // SAFETY: block `f`'s row `i` and the 16 pixels after it
            // (i * ow + ow + 16 <= ld) lie in the slab (the caller's word).
            let row = unsafe {
                std::slice::from_raw_parts_mut(
                    slab.add((f * ld + i * g.ow) * BLOCK),
                    (g.ow + BLOCK) * BLOCK,
                )
            };
            if let Some(chain) = before {
                chain.apply_blocked(&mut row[..g.ow * BLOCK], n, oc0, row_px.clone());
            }
            for j0 in (0..g.ow).step_by(BLOCK) {
                let px = j0..(j0 + BLOCK).min(g.ow);
                let src = &row[j0 * BLOCK..][..BLOCK * BLOCK];
                // SAFETY: this part alone writes row `oh` of these
                // channels; each run `oc * plane + oh * ow + px` is
                // inside the output.
                unsafe {
                    let dst = out.as_ptr().add(oc0 * plane + oh * g.ow);
                    transpose_store(src, dst, plane, chans, px, relu);
                }
            }
            if let Some(chain) = after {
                for oc in oc0..oc0 + chans {
                    let at = oc * plane + oh * g.ow;
                    // SAFETY: as above, the part's own run.
                    let y = unsafe { out.range(at..at + g.ow) };
                    chain.apply(y, g.ow, n, oc..oc + 1, row_px.clone());
                }
            }
        }
    }

    /// Blocks `b0 .. b0 + fb` of the batch's flattened output pixels `px`
    /// ([`Conv2d::flat_images`]) through `slab` (`[fb][ld][16]`), then
    /// into `out` (all images), per image the pixels of `px` it holds.
    #[allow(clippy::too_many_arguments)]
    fn flat_part(
        &self,
        b0: usize,
        fb: usize,
        px: std::ops::Range<usize>,
        slab: &mut [f32],
        ld: usize,
        out: &team::Disjoint<f32>,
        chain: Option<&super::conv_epilogue::RowChain>,
    ) {
        let g = self.g;
        let pout = g.oh * g.ow;
        let (image, rs) = (self.lay.cb * self.lay.block(), self.lay.wp * BLOCK);
        let p_max = 24 / fb;
        let offs: Vec<[usize; 24]> = (px.start..px.end)
            .step_by(p_max)
            .map(|p0| {
                std::array::from_fn(|j| {
                    let (n, q) = ((p0 + j) / pout, (p0 + j) % pout);
                    let (r, c) = (q / g.ow, q % g.ow);
                    n * image + r * g.s.0 * rs + c * g.s.1 * BLOCK
                })
            })
            .collect();
        // Per tile, the kernel rows any of its pixels reads the image at
        // (the hull of their live rows: a tile inside a top or bottom
        // output row skips the padding rows).
        let live: Vec<std::ops::Range<usize>> = (px.start..px.end)
            .step_by(p_max)
            .map(|p0| {
                let rows = (p0..px.end.min(p0 + p_max)).map(|q| q % pout / g.ow);
                let (lo, hi) = rows.fold((g.kh, 0), |(lo, hi), oh| {
                    let r = g.live_rows(oh);
                    (lo.min(r.start), hi.max(r.end))
                });
                lo..hi
            })
            .collect();
        // Runs of tiles whose slab part stays in cache while every channel
        // chunk passes over them.
        for run in (0..offs.len()).step_by(FLAT_RUN_TILES) {
            let tiles = run..offs.len().min(run + FLAT_RUN_TILES);
            for blks in self.chunks(fb) {
                for t in tiles.clone() {
                    let p0 = px.start + t * p_max;
                    let p = p_max.min(px.end - p0);
                    // SAFETY: each offset of the tile's `p` pixels is a
                    // pixel of the blocked images (row `r * s` + taps < hp,
                    // column likewise < wp), weight blocks b0 .. b0 + fb <
                    // ob, and the tile reads / writes `slab` at blocks < fb,
                    // slots `t * p_max + j` < ld.
                    unsafe {
                        let dst = slab.as_mut_ptr().add(t * p_max * BLOCK);
                        let pos = Pos::Flat(&offs[t], live[t].clone());
                        self.tile(b0, fb, p, pos, dst, ld, blks.clone(), Store::PLAIN);
                    }
                }
            }
        }
        let relu = chain.is_some_and(|c| c.is_relu());
        // As in `finish_row`: an NCHW output's chain on the slab before
        // the transpose unless it reads an NCHW extra.
        let (before, after) = match chain.filter(|_| !relu) {
            Some(c) if c.reads_nchw_extra() => (None, Some(c)),
            c => (c, None),
        };
        let mut q = px.start;
        while q < px.end {
            let n = q / pout;
            let end = px.end.min((n + 1) * pout);
            let (a, e, local) = (q - n * pout, end - n * pout, q - px.start);
            for f in 0..fb {
                let oc0 = (b0 + f) * BLOCK;
                let src = &slab[(f * ld + local) * BLOCK..];
                if self.blocked_out {
                    // `[N][O/16][oh][ow][16]`: block `b` of image `n` at
                    // `(n * O + b * 16) * pout` floats.
                    let at = (n * g.o + oc0) * pout + a * BLOCK;
                    // SAFETY: this part alone writes these pixels of the block.
                    let dst = unsafe { out.range(at..at + (e - a) * BLOCK) };
                    dst.copy_from_slice(&src[..(e - a) * BLOCK]);
                    if let Some(chain) = chain {
                        chain.apply_blocked(dst, n, oc0, a..e);
                    }
                    continue;
                }
                let chans = BLOCK.min(g.o - oc0);
                let src = &mut slab[(f * ld + local) * BLOCK..];
                if let Some(chain) = before {
                    chain.apply_blocked(&mut src[..(e - a) * BLOCK], n, oc0, a..e);
                }
                for j0 in (0..e - a).step_by(BLOCK) {
                    let m = BLOCK.min(e - a - j0);
                    // SAFETY: this part alone writes these pixels of these
                    // channels; `src` has a block of slack past the range.
                    unsafe {
                        let dst = out.as_ptr().add((n * g.o + oc0) * pout + a + j0);
                        transpose_store(
                            &src[j0 * BLOCK..][..BLOCK * BLOCK],
                            dst,
                            pout,
                            chans,
                            0..m,
                            relu,
                        );
                    }
                }
                if let Some(chain) = after {
                    let at = (n * g.o + oc0) * pout + a;
                    // SAFETY: as above; rows `pout` apart, `e - a` each.
                    let y = unsafe { out.range(at..at + (chans - 1) * pout + e - a) };
                    chain.apply(y, pout, n, oc0..oc0 + chans, a..e);
                }
            }
            q = end;
        }
    }

    /// The input-channel blocks in chunks whose packed weight for `fb`
    /// output blocks is at most [`CHUNK_BYTES`] (one block of a 3x3
    /// conv): a run of tiles (a flattened part's, or every row of a row
    /// part) passes over one chunk at a time, so its weights come from L1
    /// for all but the first tile instead of streaming from L2 for each
    /// (MLAS's order). Chunks per row instead (a row is 1-10 tiles)
    /// measured 5-10 % slower than no chunking (cnn17); over a part's
    /// rows, ResNet-18's 256 -> 256 at 14x14 went 1.84-1.85 -> 1.67-1.74
    /// ms and 64 -> 64 at 56x56 1.65-1.79 -> 1.56-1.67 (1 thread, both
    /// sides blocked, weights from memory; cnn27, load 8).
    fn chunks(&self, fb: usize) -> impl Iterator<Item = std::ops::Range<usize>> {
        let g = self.g;
        let per_block = fb * g.kh * g.kw * ic_rows(g.c) * BLOCK * 4;
        let step = (CHUNK_BYTES / per_block).max(1);
        let cb = self.lay.cb;
        (0..cb).step_by(step).map(move |b| b..cb.min(b + step))
    }

    /// The tile of `fb` blocks x `p` pixels at `pos` into `dst`
    /// (`[fb][ld][16]`, pixel `j` of block `f` at `(f * ld + j) * 16`).
    ///
    /// # Safety
    /// As at the call in [`Self::row`]; AVX-512 F present.
    #[allow(clippy::too_many_arguments)]
    unsafe fn tile(
        &self,
        b0: usize,
        fb: usize,
        p: usize,
        pos: Pos,
        dst: *mut f32,
        ld: usize,
        blks: std::ops::Range<usize>,
        store: Store,
    ) {
        // Whole 16-channel pixels (every image of >= 16 channels) get the
        // strides as constants: with them in registers the tile loop's
        // address arithmetic cost U-Net's 16-channel convs ~12 %.
        let (g, lay) = (self.g, &self.lay);
        let thin = lay.ps != BLOCK;
        let (at, offs, rows, kind) = match pos {
            Pos::Row { oh, ow0 } => {
                // Padded columns of the first pixel's first tap and of the
                // last pixel's last tap: an edge tile when either is not held.
                let first = ow0 * g.s.1;
                let last = (ow0 + p - 1) * g.s.1 + (g.kw - 1) * g.d.1;
                let edge = first < lay.pad.1 || last >= lay.pad.1 + lay.wp;
                // Only a blocked image read in place has edges (whole
                // 16-channel pixels); the padded copy holds every tap.
                debug_assert!(!(edge && thin));
                let (kind, col) = match (edge, thin) {
                    (true, _) => (Kind::Edge, first),
                    (false, true) => (Kind::Thin, (first - lay.pad.1) * lay.ps),
                    (false, false) => (Kind::Row, (first - lay.pad.1) * lay.ps),
                };
                let at = Origin {
                    top: oh * g.s.0,
                    col,
                };
                (at, &[0; 24], g.live_rows(oh), kind)
            }
            Pos::Flat(offs, rows) => (Origin { top: 0, col: 0 }, offs, rows, Kind::Flat),
        };
        macro_rules! go {
            ($fb:literal, $($p:literal)*) => {
                match p {
                    $($p => unsafe {
                        match kind {
                            Kind::Flat => self.run::<$fb, $p, false, true, false>(b0, at, offs, dst, ld, blks.clone(), rows.clone(), store),
                            Kind::Thin => self.run::<$fb, $p, true, false, false>(b0, at, offs, dst, ld, blks.clone(), rows.clone(), store),
                            Kind::Row => self.run::<$fb, $p, false, false, false>(b0, at, offs, dst, ld, blks.clone(), rows.clone(), store),
                            Kind::Edge => self.run::<$fb, $p, false, false, true>(b0, at, offs, dst, ld, blks.clone(), rows.clone(), store),
                        }
                    },)*
                    _ => unreachable!("tile width {p} past {}", 24 / $fb),
                }
            };
        }
        match fb {
            4 => go!(4, 1 2 3 4 5 6),
            3 => go!(3, 1 2 3 4 5 6 7 8),
            2 => go!(2, 1 2 3 4 5 6 7 8 9 10 11 12),
            _ => go!(1, 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24),
        }
    }

    /// The `FB x P` register tile (indexed loops: the compiler unrolls
    /// them and keeps `acc` in registers); `THIN`: pixels of fewer than 16
    /// channels (`lay.ps < 16`). Kernel row `r` reads held row `at.top + r
    /// * dh - lay.pad.0` of each channel block, where pixel `j` is read at
    /// `at.col + j * stride` floats (pixels of one row), or with `FLAT` at
    /// `offs[j]` from the block (any pixels of the batch; whole 16-channel
    /// pixels). With `EDGE` (a tile whose taps reach columns the layout
    /// does not hold: the left / right padding of an image read in place)
    /// `at.col` is the first pixel's padded column and each tap of each
    /// pixel reads its held column or, outside them, a zero vector, in
    /// the same FMA order, so the sums have the padded copy's bits.
    /// Sums input-channel blocks `blks` at kernel rows `rows` (the live
    /// ones, [`Conv2d::live_rows`]) onto the bias (the first chunk) or
    /// onto what `dst` holds (a later chunk), and stores the sums through
    /// `store`.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f")]
    #[allow(clippy::needless_range_loop, clippy::too_many_arguments)]
    unsafe fn run<
        const FB: usize,
        const P: usize,
        const THIN: bool,
        const FLAT: bool,
        const EDGE: bool,
    >(
        &self,
        b0: usize,
        at: Origin,
        offs: &[usize; 24],
        dst: *mut f32,
        ld: usize,
        blks: std::ops::Range<usize>,
        rows: std::ops::Range<usize>,
        store: Store,
    ) {
        use std::arch::x86_64::*;
        let (g, lay) = (self.g, &self.lay);
        let (s, (dh, dw)) = (g.s.1, g.d);
        let (ps, wrows) = if THIN {
            (lay.ps, ic_rows(g.c))
        } else {
            (BLOCK, BLOCK)
        };
        let rs = lay.wp * ps;
        let px: [usize; P] =
            std::array::from_fn(|j| if FLAT { offs[j] } else { at.col + j * s * ps });
        // An edge tile's pixel `j` at tap `q`: its held column's first
        // float, or the zero block.
        let mut edge_px = [ZERO_PIXEL.as_ptr(); P];
        let mut acc = [[_mm512_setzero_ps(); P]; FB];
        for (f, a) in acc.iter_mut().enumerate() {
            if blks.start == 0 {
                // SAFETY: the padded bias has `ob * 16` entries.
                let bv = unsafe { _mm512_loadu_ps(self.bias.as_ptr().add((b0 + f) * BLOCK)) };
                *a = [bv; P];
            } else {
                for (j, v) in a.iter_mut().enumerate() {
                    *v = unsafe { _mm512_loadu_ps(dst.add((f * ld + j) * BLOCK)) };
                }
            }
        }
        let xb = self.xb.as_ptr();
        let wb = unsafe { self.wp.as_ptr().add(b0 * self.w_block) };
        let taps = g.kh * g.kw;
        for blk in blks {
            let cn = (g.c - blk * BLOCK).min(BLOCK);
            for r in rows.clone() {
                // A live row: `at.top + r * dh >= lay.pad.0`.
                let row = at.top + r * dh - lay.pad.0;
                let xr = unsafe { xb.add(blk * lay.block() + row * rs) };
                for q in 0..g.kw {
                    let xq = unsafe { xr.add(q * dw * ps) };
                    let wq = unsafe { wb.add((blk * taps + r * g.kw + q) * wrows * BLOCK) };
                    if EDGE {
                        for (j, e) in edge_px.iter_mut().enumerate() {
                            let col = (at.col + j * s + q * dw).wrapping_sub(lay.pad.1);
                            if col < lay.wp {
                                *e = unsafe { xr.add(col * BLOCK) };
                            } else {
                                *e = ZERO_PIXEL.as_ptr();
                            }
                        }
                    }
                    // One input channel: FB weight vectors, P broadcasts.
                    macro_rules! channel {
                        ($i:expr) => {{
                            let i = $i;
                            let mut wv = [_mm512_setzero_ps(); FB];
                            for (f, v) in wv.iter_mut().enumerate() {
                                *v = unsafe {
                                    _mm512_loadu_ps(wq.add(f * self.w_block + i * BLOCK))
                                };
                            }
                            for j in 0..P {
                                let x = if EDGE {
                                    edge_px[j]
                                } else {
                                    unsafe { xq.add(px[j]) }
                                };
                                let xv = unsafe { _mm512_set1_ps(*x.add(i)) };
                                for f in 0..FB {
                                    acc[f][j] = _mm512_fmadd_ps(xv, wv[f], acc[f][j]);
                                }
                            }
                        }};
                    }
                    if cn == BLOCK {
                        // Whole blocks four channels a step: constant
                        // offsets, a quarter of the loop's counting.
                        for i4 in (0..BLOCK).step_by(4) {
                            channel!(i4);
                            channel!(i4 + 1);
                            channel!(i4 + 2);
                            channel!(i4 + 3);
                        }
                    } else {
                        for i in 0..cn {
                            channel!(i);
                        }
                    }
                }
            }
        }
        for f in 0..FB {
            for j in 0..P {
                let at = (f * ld + j) * BLOCK;
                let mut v = acc[f][j];
                if let Some(r) = store.residual {
                    // The chain's `v + r`.
                    v = _mm512_add_ps(v, unsafe { _mm512_loadu_ps(r.add(at)) });
                }
                if store.relu {
                    // Not (v <= 0), unordered: true for v > 0 and for NaN.
                    let keep = _mm512_cmp_ps_mask::<_CMP_NLE_UQ>(v, _mm512_setzero_ps());
                    v = _mm512_maskz_mov_ps(keep, v);
                }
                unsafe { _mm512_storeu_ps(dst.add(at), v) };
            }
        }
    }

    #[cfg(not(target_arch = "x86_64"))]
    #[allow(clippy::too_many_arguments)]
    unsafe fn run<
        const FB: usize,
        const P: usize,
        const THIN: bool,
        const FLAT: bool,
        const EDGE: bool,
    >(
        &self,
        _: usize,
        _: Origin,
        _: &[usize; 24],
        _: *mut f32,
        _: usize,
        _: std::ops::Range<usize>,
        _: std::ops::Range<usize>,
        _: Store,
    ) {
        unreachable!("the NCHWc kernel is routed on AVX-512 only")
    }
}

/// Stores the 16 x 16 block `src` (16 pixels x 16 channels) transposed:
/// channel `i < chans` to `dst[i * ld ..]` over the pixels `px` (run
/// `px.start - j0`.. of the block's 16, `px.len()` of them), through a
/// ReLU when `relu` (`v` where `v > 0` or NaN, else `+0`: the row chain's
/// ReLU bits).
///
/// # Safety
/// AVX-512 F present; each run `dst + i * ld + px` is writable and no one
/// else's.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn transpose_store(
    src: &[f32],
    dst: *mut f32,
    ld: usize,
    chans: usize,
    px: std::ops::Range<usize>,
    relu: bool,
) {
    use std::arch::x86_64::*;
    let r: [__m512; 16] =
        std::array::from_fn(|k| unsafe { _mm512_loadu_ps(src[k * BLOCK..].as_ptr()) });
    let v = super::transpose16::transpose16(&r);
    let mask = ((1u32 << px.len()) - 1) as __mmask16;
    for (i, c) in v.iter().enumerate().take(chans) {
        let c = if relu {
            // Not (v <= 0), unordered: true for v > 0 and for NaN.
            let keep = _mm512_cmp_ps_mask::<_CMP_NLE_UQ>(*c, _mm512_setzero_ps());
            _mm512_maskz_mov_ps(keep, *c)
        } else {
            *c
        };
        unsafe { _mm512_mask_storeu_ps(dst.add(i * ld + px.start), mask, c) };
    }
}

#[cfg(not(target_arch = "x86_64"))]
unsafe fn transpose_store(
    _: &[f32],
    _: *mut f32,
    _: usize,
    _: usize,
    _: std::ops::Range<usize>,
    _: bool,
) {
    unreachable!("the NCHWc kernel is routed on AVX-512 only")
}

/// Row `ir` of channels `chans` (at most 16) of image `xn` (`[c][h][w]`)
/// into `row` (`[wp][16]`, zero lanes past `chans`) at the padded columns
/// `cols` (input column `q - pl`): 16 pixels at a time, 16 channel runs
/// loaded and transposed in registers (the scalar gather this replaced
/// took ~5-20 % of a stride-2 conv's time).
///
/// # Safety
/// AVX-512 F present; `cols.end <= pl + w`, `cols.end * 16 <= row.len()`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
pub(super) unsafe fn reorder_row16(
    xn: &[f32],
    (h, w): (usize, usize),
    chans: std::ops::Range<usize>,
    ir: usize,
    row: &mut [f32],
    cols: std::ops::Range<usize>,
    pl: usize,
) {
    use std::arch::x86_64::*;
    let mut q0 = cols.start;
    while q0 < cols.end {
        let m = BLOCK.min(cols.end - q0);
        let mask = ((1u32 << m) - 1) as __mmask16;
        let r: [__m512; 16] = std::array::from_fn(|i| {
            if i < chans.len() {
                let at = ((chans.start + i) * h + ir) * w + q0 - pl;
                // SAFETY: lanes < m read `at .. at + m`, inside row `ir`.
                unsafe { _mm512_maskz_loadu_ps(mask, xn.as_ptr().add(at)) }
            } else {
                _mm512_setzero_ps()
            }
        });
        let v = super::transpose16::transpose16(&r);
        for (k, vk) in v.iter().enumerate().take(m) {
            // SAFETY: pixel q0 + k < cols.end, inside `row`.
            unsafe { _mm512_storeu_ps(row.as_mut_ptr().add((q0 + k) * BLOCK), *vk) };
        }
        q0 += m;
    }
}

#[cfg(not(target_arch = "x86_64"))]
unsafe fn reorder_row16(
    _: &[f32],
    _: (usize, usize),
    _: std::ops::Range<usize>,
    _: usize,
    _: &mut [f32],
    _: std::ops::Range<usize>,
    _: usize,
) {
    unreachable!("the NCHWc kernel is routed on AVX-512 only")
}

/// True when this CPU's GEMM runs AVX-512 tiles (so `RLX_CPU_GEMM_ISA=avx2`
/// turns this kernel off too).
pub(super) fn avx512() -> bool {
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

/// The packed weight of a conv that runs in this kernel, for the
/// executor to prepare once (`x`, `w`, `out`: static dims), or `None`.
/// It is a fresh zeroed buffer ([`AlignedBuf::zeroed_f32`]: huge pages
/// when large), so only the weights are written: ResNet-18 packs 40 MB.
pub(crate) fn prepared_weights(
    win: &rlx_ir::op::Window,
    groups: usize,
    dims: (&[usize], &[usize], &[usize]),
    wt: &[f32],
) -> Option<AlignedBuf> {
    packs(win, groups, dims, wt.len(), Conv2d::nchwc_wins).map(|g2| packed(&g2, wt))
}

/// True when a conv that runs Winograd or the packed-weight GEMM takes the
/// NCHWc kernel instead if the layout plan keeps a side of it blocked
/// ([`Conv2d::nchwc_wins_blocked`]; `w_len`: the weight's floats). Its
/// weight is then [`prepared_weights_blocked`].
pub(crate) fn runs_blocked(
    win: &rlx_ir::op::Window,
    groups: usize,
    dims: (&[usize], &[usize], &[usize]),
    w_len: usize,
) -> bool {
    packs(win, groups, dims, w_len, Conv2d::nchwc_wins_blocked).is_some()
}

/// The packed weight ([`pack`]) of a conv that [`runs_blocked`].
pub(crate) fn prepared_weights_blocked(
    win: &rlx_ir::op::Window,
    groups: usize,
    dims: (&[usize], &[usize], &[usize]),
    wt: &[f32],
) -> Option<AlignedBuf> {
    packs(win, groups, dims, wt.len(), Conv2d::nchwc_wins_blocked).map(|g2| packed(&g2, wt))
}

/// The conv's geometry when a weight of `w_len` floats fits it and `runs`
/// holds for it.
fn packs(
    win: &rlx_ir::op::Window,
    groups: usize,
    (x, w, out): (&[usize], &[usize], &[usize]),
    w_len: usize,
    runs: fn(&Conv2d) -> bool,
) -> Option<Conv2d> {
    let g2 = super::conv_packed::geometry(win, groups, x, w, out)?;
    let valid = w_len == w.iter().product::<usize>() && w.get(1) == Some(&g2.c);
    (valid && runs(&g2)).then_some(g2)
}

/// `wt` packed ([`pack`]) for the conv `g2` into a fresh buffer.
fn packed(g2: &Conv2d, wt: &[f32]) -> AlignedBuf {
    let dims = (g2.o, g2.c, g2.kh, g2.kw);
    let mut wp = AlignedBuf::zeroed_f32(packed_len(g2.o, g2.c, g2.kh, g2.kw));
    pack_into(wt, dims, wp.f32s_mut());
    wp
}

/// True when the f32 epilogue `steps` over `extras`, for an output of
/// `out` dims, runs on blocked rows (it is a row chain).
pub(crate) fn epilogue_runs_blocked(steps: &[ChainStep], extras: &[View], out: &[usize]) -> bool {
    ConvEpilogue::new(steps, extras, out, rlx_ir::DType::F32).is_some_and(|e| e.rows().is_some())
}

/// The first `len` floats of `buf`, grown (zero-filled) only past its
/// largest length so far: the convs of a net alternate between image and
/// slab sizes, and zero-filling each growth again (floats the reorder then
/// overwrote) took 1.4 % of U-Net b1's samples. Every float a caller reads
/// it has written first in this call.
fn grown(buf: &mut Vec<f32>, len: usize) -> &mut [f32] {
    if buf.len() < len {
        buf.resize(len, 0.0);
    }
    &mut buf[..len]
}

/// Zeros the padding columns of one padded row (`ps` floats a pixel):
/// the pixels before and after the image's columns `cols`.
fn fill_padding(row: &mut [f32], cols: std::ops::Range<usize>, ps: usize) {
    let (lo, hi) = (cols.start * ps, (cols.end * ps).max(cols.start * ps));
    row[..lo].fill(0.0);
    row[hi..].fill(0.0);
}

/// Runs `part(blk, rows, dst)` over the team for every channel block of
/// the blocked image `xb` and a range of its padded rows (`dst`: those
/// rows, `wp * 16` floats each). A part is a whole block, unless there are
/// fewer blocks than threads (a 3- or 16-channel image: one block, the
/// whole reorder on one thread): then each block's rows are split until
/// every thread has a part. With as many blocks as threads a part stays a
/// whole block (what it was before the thin case was split).
fn reorder_parts(
    lay: &Layout,
    xb: &mut [f32],
    part: impl Fn(usize, std::ops::Range<usize>, &mut [f32]) + Sync,
) {
    let threads = team::threads();
    let chunks = if lay.cb < threads {
        threads.div_ceil(lay.cb.max(1)).min(lay.hp.max(1))
    } else {
        1
    };
    let rows = team::split(lay.hp, chunks, 1);
    let run = lay.wp * lay.ps;
    let shared = team::Disjoint::new(xb);
    team::parallel_for(lay.cb * rows.len(), |p| {
        let (blk, rs) = (p / rows.len(), rows[p % rows.len()].clone());
        let at = blk * lay.block();
        // SAFETY: one part per (block, row range), disjoint ranges.
        let dst = unsafe { shared.range(at + rs.start * run..at + rs.end * run) };
        part(blk, rs, dst);
    });
}

/// `v` `[n][c][p]` as `[n][c/16][p][16]`, or back (`c` a multiple of
/// 16): the tests' layout change.
#[cfg(test)]
pub(crate) fn reblock(v: &[f32], c: usize, p: usize, to_blocked: bool) -> Vec<f32> {
    let mut out = vec![0f32; v.len()];
    for (i, &x) in v.iter().enumerate() {
        let (n, ch, q) = (i / (c * p), i / p % c, i % p);
        let b = ((n * c + ch / BLOCK * BLOCK) * p + q * BLOCK) + ch % BLOCK;
        if to_blocked {
            out[b] = x;
        } else {
            out[i] = v[b];
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::conv::{conv_geom, conv_prepared, fused_conv, Prepared};
    use crate::kernels::conv_epilogue::tests::check_fused_conv_fixture;
    use crate::kernels::{View, ViewMut};
    use rlx_ir::op::{ChainStep, Window};
    use rlx_ir::Op;

    const FIXTURE: &str = include_str!("../../tests/fixtures/conv_nchwc/cases.json");
    const CASES: usize = 21;
    const FIXTURE_IN_PLACE: &str =
        include_str!("../../tests/fixtures/conv_nchwc/in_place_cases.json");
    const IN_PLACE_CASES: usize = 9;

    /// A fused conv forced through this kernel, its weight packed per call.
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
        let g2 = g.two_d.clone().filter(Conv2d::is_nchwc_shape);
        let g2 = g2.expect("a shape of the NCHWc kernel");
        let epi = ConvEpilogue::new(steps, extras, out.dims, out.dtype);
        let epi = epi.expect("extras broadcast");
        let bias = conv_ins.get(2).map(|b| b.slice::<f32>());
        g2.nchwc(
            conv_ins[0].slice(),
            conv_ins[1].slice(),
            bias,
            out.slice(),
            Some(&epi),
        )
    }

    /// tools/gen_fused_conv_fixtures.py's NCHWC_CASES (numpy float64
    /// loops) through this kernel at 1 to 3 threads: C and O off a multiple
    /// of 16, tile remainders, stride 2, asymmetric padding, 5x5 dilated,
    /// 1x1 and 7x7 stride 2 (with 8 and with 3 input channels: ResNet's
    /// stem class), row-chain (ReLU, residual) and whole-plane (SiLU,
    /// leaky) epilogues, batch 2; maps of <= 64 pixels flattened over the
    /// batch (7x7, 8x8, 5x5 x 4 images, stride 2 to 7x6, 3 / 4 / 1-block
    /// groups, several channel chunks); rows of 17 whose parts pass four
    /// channel chunks over every tile (batch 2, residual + ReLU); maps whose
    /// top / bottom rows skip the kernel rows that read padding
    /// ([`Conv2d::live_rows`]): CRNN's 4x32 with 256 input channels, 3 rows
    /// of 25, output rows that read padding only, a dilated 2-row map.
    #[test]
    fn nchwc_matches_numpy() {
        if !avx512() {
            eprintln!("no AVX-512 here: the kernel is not routed");
            return;
        }
        check_fused_conv_fixture(FIXTURE, CASES, &forced);
    }

    /// The per-thread image and slab buffers are reused at their largest
    /// length, not zeroed again: with both full of NaN from an earlier
    /// call, every fixture conv (padding on every side, images of 3 to 256
    /// channels, 1 to 3 threads: the reorder's row parts write this
    /// thread's image) still matches numpy, so each padding float is
    /// zeroed and every float read is written first. Fails with the right
    /// padding left unzeroed (`fill_padding`).
    #[test]
    fn stale_buffers_match_numpy() {
        if !avx512() {
            eprintln!("no AVX-512 here: the kernel is not routed");
            return;
        }
        let poison = || vec![f32::NAN; 1 << 20];
        BLOCKED.set(poison());
        SLAB.set(poison());
        check_fused_conv_fixture(FIXTURE, CASES, &forced);
    }

    /// The same cases through conv's own dispatch, and the one conv routes
    /// here (24 -> 16 at 12x12) through the weight the executor packs once
    /// (`Prepared::Nchwc`), at 1 and 2 threads.
    #[test]
    fn dispatch_and_prepared_weights_match_numpy() {
        check_fused_conv_fixture(FIXTURE, CASES, &fused_conv);
        if !avx512() {
            return;
        }
        let g = geom(24, 16, (12, 12), 3, 1);
        assert!(
            g.nchwc_wins(),
            "24 -> 16 at 12x12 is routed to the NCHWc kernel"
        );
        assert!(!geom(3, 16, (256, 256), 3, 2).nchwc_wins());
        // ResNet-18's stem runs the stem kernel (`conv_stem.rs`) now; a
        // 3-channel 7x7 with outputs off a block of 8 still comes here.
        assert!(!geom(3, 64, (224, 224), 7, 2).nchwc_wins());
        assert!(geom(3, 64, (224, 224), 7, 2).stem_wins());
        assert!(geom(3, 68, (224, 224), 7, 2).nchwc_wins());
        assert!(!geom(3, 32, (224, 224), 7, 2).nchwc_wins());
        // The CNN set's shapes it measured faster on take it (U-Net 16 ->
        // 16 at 128x128, YOLO 16 -> 32 stride 2, ResNet-18 256 -> 256 at
        // 14x14); dense Winograd and 7x7 maps keep theirs.
        for (c, o, hw, s) in [(16, 16, 128, 1), (16, 32, 128, 2), (256, 256, 14, 1)] {
            assert!(
                geom(c, o, (hw, hw), 3, s).nchwc_wins(),
                "{c} -> {o} at {hw}"
            );
        }
        let winograd_off = !crate::kernels::conv::winograd_enabled();
        assert_eq!(geom(64, 64, (56, 56), 3, 1).nchwc_wins(), winograd_off);
        // ResNet's 7x7 maps run flattened (the packed-weight GEMM before);
        // their 1x1 stride-2 downsample keeps the GEMM.
        for (c, hw, s) in [(512, 7, 1), (256, 14, 2)] {
            let g = geom(c, 512, (hw, hw), 3, s);
            assert!(g.nchwc_wins() && g.flat(), "{c} -> 512 at {hw} s{s}");
        }
        assert!(!geom(256, 512, (14, 14), 1, 2).nchwc_wins());
        assert!(!geom(256, 256, (14, 14), 3, 1).flat());
        let prepared = |window: &Window,
                        groups,
                        bias,
                        steps: &[ChainStep],
                        ins: &[View],
                        out: &mut ViewMut| {
            let dims = (ins[0].dims, ins[1].dims, out.dims);
            let wp = prepared_weights(window, groups, dims, ins[1].slice::<f32>());
            let Some(wp) = wp else {
                return fused_conv(window, groups, bias, steps, ins, out);
            };
            let op = Op::FusedConv {
                window: window.clone(),
                groups,
                bias,
                epilogue: steps.to_vec(),
            };
            conv_prepared(
                &op,
                Prepared::Nchwc(wp.f32s(), BlockedIo::default()),
                ins,
                out,
            )
        };
        check_fused_conv_fixture(FIXTURE, CASES, &prepared);
    }

    /// The fixture's cases with every side that has whole 16-channel
    /// blocks in the blocked layout (`[N][C/16][H][W][16]`: the image
    /// reordered by the test, the output read back from it), the weight
    /// packed once, at 1 to 3 threads: the row and the flattened paths'
    /// blocked reads and writes against numpy.
    #[test]
    fn blocked_sides_match_numpy() {
        if !avx512() {
            return;
        }
        let blocked = |window: &Window,
                       groups: usize,
                       bias: bool,
                       steps: &[ChainStep],
                       ins: &[View],
                       out: &mut ViewMut| {
            blocked_conv(window, groups, bias, steps, ins, out, false)
        };
        check_fused_conv_fixture(FIXTURE, CASES, &blocked);
    }

    /// A fixture conv with every side of whole 16-channel blocks in the
    /// blocked layout (the image reordered here, the output read back),
    /// the weight packed once; with `compare_copy` the blocked image is
    /// also run through the padded copy (`Conv2d::nchwc_staged` with no
    /// in-place layout), which must give the in-place read's bits, on
    /// these inputs and on poisoned ones: infinite and NaN weights (a
    /// padding tap's zero times an infinity is a NaN in the copy, so the
    /// edge tiles must issue those FMAs too), a -0 bias and -0 / NaN
    /// pixels.
    fn blocked_conv(
        window: &Window,
        groups: usize,
        bias: bool,
        steps: &[ChainStep],
        ins: &[View],
        out: &mut ViewMut,
        compare_copy: bool,
    ) -> KernelResult {
        let (conv_ins, extras) = ins.split_at(rlx_ir::ops::fused_conv::conv_arity(bias));
        let g = conv_geom(window, None, groups, conv_ins, out)?;
        let g2 = g.two_d.clone().filter(Conv2d::is_nchwc_shape);
        let g2 = g2.expect("a shape of the NCHWc kernel");
        let epi = ConvEpilogue::new(steps, extras, out.dims, out.dtype);
        let epi = epi.expect("extras broadcast");
        let io = BlockedIo {
            input: g2.c % BLOCK == 0,
            output: g2.o % BLOCK == 0 && epi.rows().is_some(),
        };
        let wt: &[f32] = conv_ins[1].slice();
        let mut wp = Vec::new();
        pack(wt, (g2.o, g2.c, g2.kh, g2.kw), &mut wp);
        let x: &[f32] = conv_ins[0].slice();
        let (pin, pout) = (g2.h * g2.w, g2.oh * g2.ow);
        let x = if io.input {
            reblock(x, g2.c, pin, true)
        } else {
            x.to_vec()
        };
        let mut y = vec![0f32; out.slice::<f32>().len()];
        let bias = conv_ins.get(2).map(|b| b.slice::<f32>());
        g2.nchwc_packed_io(&x, &wp, bias, &mut y, Some(&epi), io)?;
        if compare_copy {
            let in_place = g2.in_place(io).expect("a blocked image read in place");
            let len = y.len();
            let run = |x: &[f32], wp: &[f32], bias: Option<&[f32]>, lay| {
                let mut y = vec![0f32; len];
                g2.nchwc_staged(x, wp, bias, &mut y, Some(&epi), io, lay)
                    .map(|()| y)
            };
            let bits = |v: Vec<f32>| v.into_iter().map(f32::to_bits).collect::<Vec<_>>();
            let copied = run(&x, &wp, bias, None)?;
            assert_eq!(bits(copied), bits(y.clone()), "in place vs the padded copy");
            let mut wt = wt.to_vec();
            let n = wt.len();
            (wt[0], wt[n / 2], wt[n - 1]) = (f32::INFINITY, f32::NEG_INFINITY, f32::NAN);
            pack(&wt, (g2.o, g2.c, g2.kh, g2.kw), &mut wp);
            let mut x = x.clone();
            let m = x.len();
            (x[1], x[m / 3], x[m - 2]) = (-0.0, f32::NAN, -0.0);
            let neg_zero = vec![-0.0f32; g2.o];
            let poisoned = run(&x, &wp, Some(&neg_zero), Some(in_place))?;
            let copied = run(&x, &wp, Some(&neg_zero), None)?;
            assert_eq!(
                bits(copied),
                bits(poisoned),
                "poisoned: in place vs the padded copy"
            );
        }
        if io.output {
            y = reblock(&y, g2.o, pout, false);
        }
        out.slice::<f32>().copy_from_slice(&y);
        Ok(())
    }

    /// tools/gen_fused_conv_fixtures.py's IN_PLACE_CASES (numpy float64
    /// loops), the image blocked and read where it is (padding 0 / 1 / 2,
    /// asymmetric, left or right edge only, stride 2, 5x5, dilated, a map
    /// narrower than a tile and one of a single column, 16 / 32 / 48
    /// channels, batch 2) at 1 to 3 threads, each also through the padded
    /// copy, which must give the same bits (also with infinite / NaN
    /// weights, a -0 bias and -0 / NaN pixels). Fails with an edge tile's
    /// last held column off by one (`col < lay.wp` as `<=`: it reads the
    /// next row's first pixel) or with its padding taps skipped instead
    /// of multiplied by zero (the poisoned bits).
    #[test]
    fn in_place_matches_numpy_and_the_padded_copy() {
        if !avx512() {
            return;
        }
        let in_place = |window: &Window,
                        groups: usize,
                        bias: bool,
                        steps: &[ChainStep],
                        ins: &[View],
                        out: &mut ViewMut| {
            blocked_conv(window, groups, bias, steps, ins, out, true)
        };
        check_fused_conv_fixture(FIXTURE_IN_PLACE, IN_PLACE_CASES, &in_place);
    }

    /// A packed weight of the wrong size is an error naming the kernel.
    #[test]
    fn wrong_packed_weight_is_an_error() {
        let g = geom(24, 16, (12, 12), 3, 1);
        let (x, mut y) = (vec![0f32; 24 * 144], vec![0f32; 16 * 144]);
        let err = g
            .nchwc_packed(&x, &[0.0; 7], None, &mut y, None)
            .unwrap_err();
        assert!(err.to_string().contains("NCHWc"), "{err}");
    }

    /// A blocked side on a conv without whole 16-channel blocks there is
    /// an error naming the layout, not a misread buffer.
    #[test]
    fn blocked_layout_off_a_block_is_an_error() {
        let g = geom(24, 16, (12, 12), 3, 1);
        let mut wp = Vec::new();
        pack(&vec![0f32; 16 * 24 * 9], (16, 24, 3, 3), &mut wp);
        let (x, mut y) = (vec![0f32; 24 * 144], vec![0f32; 16 * 144]);
        let io = BlockedIo {
            input: true,
            output: false,
        };
        let err = g
            .nchwc_packed_io(&x, &wp, None, &mut y, None, io)
            .unwrap_err();
        assert!(err.to_string().contains("blocked layout"), "{err}");
        let io = BlockedIo {
            input: false,
            output: true,
        };
        assert!(g.nchwc_packed_io(&x, &wp, None, &mut y, None, io).is_ok());
    }

    /// Packing puts output channel `oc`, input `ic`, tap `t` at
    /// `[oc/16][ic/16][t][ic%16][oc%16]`, zeros past `o` and `c`.
    #[test]
    fn pack_layout() {
        let (o, c, kh, kw) = (20, 18, 2, 3);
        let wt: Vec<f32> = (1..=o * c * kh * kw).map(|v| v as f32).collect();
        let mut p = Vec::new();
        pack(&wt, (o, c, kh, kw), &mut p);
        assert_eq!(p.len(), 2 * 2 * 6 * 256);
        let mut seen = 0;
        for oc in 0..o {
            for ic in 0..c {
                for t in 0..kh * kw {
                    let at = (((oc / 16 * 2 + ic / 16) * 6 + t) * 16 + ic % 16) * 16 + oc % 16;
                    assert_eq!(p[at], wt[(oc * c + ic) * 6 + t]);
                    seen += 1;
                }
            }
        }
        assert_eq!(p.iter().filter(|&&v| v != 0.0).count(), seen);
    }

    /// A `k x k` conv, stride `s`, padding `k / 2`, one image.
    fn geom(c: usize, o: usize, (h, w): (usize, usize), k: usize, s: usize) -> Conv2d {
        let out = |n: usize| (n + 2 * (k / 2) - k) / s + 1;
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

    /// Prints GFLOP/s of this kernel (weight packed once, as the executor
    /// does for a constant) next to the path conv takes without it (direct,
    /// Winograd with its weight transformed once, the packed-weight GEMM
    /// at <= 64 pixels, else im2col + GEMM) on the dense convs of the CNN
    /// set, 1 thread: the measurement behind [`Conv2d::nchwc_wins`]. Run
    /// with `cargo test --release -p rlx-cpu --lib nchwc_vs_current_paths
    /// -- --ignored --nocapture`.
    #[test]
    #[ignore = "timing; prints, asserts nothing"]
    fn nchwc_vs_current_paths() {
        if !avx512() {
            return;
        }
        #[rustfmt::skip]
        let shapes = [
            // ResNet-18
            (3, 64, (224, 224), 7, 2), (64, 64, (56, 56), 3, 1), (64, 128, (56, 56), 3, 2),
            (128, 128, (28, 28), 3, 1), (128, 256, (28, 28), 3, 2), (256, 256, (14, 14), 3, 1),
            (256, 512, (14, 14), 3, 2), (512, 512, (7, 7), 3, 1), (64, 128, (56, 56), 1, 2),
            (128, 256, (28, 28), 1, 2), (256, 512, (14, 14), 1, 2),
            // U-Net
            (3, 16, (128, 128), 3, 1), (16, 16, (128, 128), 3, 1), (32, 16, (128, 128), 3, 1),
            (16, 32, (64, 64), 3, 1), (32, 32, (64, 64), 3, 1), (64, 32, (64, 64), 3, 1),
            (32, 64, (32, 32), 3, 1), (64, 64, (32, 32), 3, 1), (128, 64, (32, 32), 3, 1),
            (64, 128, (16, 16), 3, 1), (128, 128, (16, 16), 3, 1),
            // YOLO-style, CRNN
            (3, 16, (256, 256), 3, 2), (16, 32, (128, 128), 3, 2), (32, 64, (64, 64), 3, 2),
            (64, 128, (32, 32), 3, 2), (1, 64, (32, 128), 3, 1), (64, 128, (16, 64), 3, 1),
            (128, 256, (8, 32), 3, 1),
            // MobileNetV2's stem
            (3, 32, (224, 224), 3, 2),
        ];
        crate::threads::with_limit(Some(1), || {
            for (c, o, hw, k, s) in shapes {
                let g = geom(c, o, hw, k, s);
                let x: Vec<f32> = (0..c * hw.0 * hw.1)
                    .map(|i| (i % 13) as f32 / 13.0)
                    .collect();
                let wt: Vec<f32> = (0..o * c * k * k).map(|i| (i % 7) as f32 / 7.0).collect();
                let mut y = vec![0f32; o * g.oh * g.ow];
                let flops = 2.0 * (c * o * k * k * g.oh * g.ow) as f64;
                let mut wp = Vec::new();
                pack(&wt, (o, c, k, k), &mut wp);
                let t_new = median_secs(|| g.nchwc_packed(&x, &wp, None, &mut y, None).unwrap());
                let (name, t_old) = if g.direct_wins() {
                    (
                        "direct",
                        median_secs(|| g.direct(&x, &wt, &mut y, None).unwrap()),
                    )
                } else if g.winograd_wins(c, o) {
                    let u = super::super::winograd::transform_weights(&wt, 1, o, c);
                    let t = median_secs(|| g.winograd_transformed(&x, &u, &mut y, None).unwrap());
                    ("winograd", t)
                } else if g.is_pointwise() {
                    (
                        "pointwise",
                        median_secs(|| g.pointwise_nchw(&x, &wt, None, &mut y, None).unwrap()),
                    )
                } else if g.oh * g.ow <= 64 {
                    let dims = [&[1, c, hw.0, hw.1][..], &[o, c, k, k], &[1, o, g.oh, g.ow]];
                    let win = rlx_ir::op::Window {
                        kernel: vec![],
                        stride: vec![s, s],
                        padding: vec![(k / 2, k / 2); 2],
                        dilation: vec![1, 1],
                    };
                    let (nr, p) =
                        super::super::conv_packed::packed_copy(&win, 1, dims, &wt).unwrap();
                    (
                        "packed",
                        median_secs(|| g.packed_gemm(&x, &p, nr, &mut y, None).unwrap()),
                    )
                } else {
                    (
                        "im2col",
                        median_secs(|| g.im2col_gemm(&x, &wt, &mut y, None).unwrap()),
                    )
                };
                println!(
                    "c {c:4} o {o:4} {:3}x{:<3} k{k} s{s}: nchwc {:6.1} GFLOP/s, {name:9} {:6.1} GFLOP/s, nchwc / old time {:.2}{}",
                    hw.0,
                    hw.1,
                    flops / t_new / 1e9,
                    flops / t_old / 1e9,
                    t_new / t_old,
                    if g.nchwc_wins() { "  (dispatch: nchwc)" } else { "" }
                );
            }
        });
    }
}
