//! Winograd F(4x4, 3x3) for 3x3 stride-1 undilated dense f32 convs whose
//! image and output are both NCHWc-blocked (`[N][C/16][H][W][16]`, planned
//! by `nchwc_layout.rs`; whole 16-channel blocks on both sides, AVX-512).
//! On this host the direct NCHWc tile (`conv_nchwc.rs`) already runs at
//! the FMA peak, as ONNX Runtime's MLAS does, so only fewer multiplies beat
//! it: each 4x4 output tile is computed from a 6x6 input tile with 36
//! multiplies per (input, output) channel pair instead of 144.
//!
//! Transforms (Lavin & Gray 2016, interpolation points 0, 1, -1, 2, -2 and
//! infinity): the input tile `d` becomes `Bᵀ d B`, the kernel `g` becomes
//! `G g Gᵀ` (once at build, in f64, [`pack`]), the channel sums of their
//! products `m` become the output tile `Aᵀ m A`, with
//!
//! ```text
//! Bᵀ = [[4, 0,-5, 0, 1, 0],      G = [[ 1/4,    0,    0],    Aᵀ = [[1, 1, 1, 1, 1, 0],
//!       [0,-4,-4, 1, 1, 0],           [-1/6, -1/6, -1/6],          [0, 1,-1, 2,-2, 0],
//!       [0, 4,-4,-1, 1, 0],           [-1/6,  1/6, -1/6],          [0, 1, 1, 4, 4, 0],
//!       [0,-2,-1, 2, 1, 0],           [1/24, 1/12,  1/6],          [0, 1,-1, 8,-8, 1]]
//!       [0, 2,-1,-2, 1, 0],           [1/24,-1/12,  1/6],
//!       [0, 4, 0,-5, 0, 1]]           [   0,    0,    1]]
//! ```
//!
//! Their larger constants cost digits that F(2,3) (`winograd.rs`) keeps:
//! the error grows with `‖Aᵀ‖∞ ‖Bᵀ‖∞ = 19 x 10`, so a result is within
//! about `2 x 190 x 2⁻²⁴` of the sum of its products' magnitudes (the
//! tests' tolerance; tools/gen_winograd_blocked_fixtures.py measures the
//! float32 error of this scheme at 64 / 128 / 256 channels).
//!
//! The weight is stored `U[36 positions][O/16][C][16]`. A part (a run of
//! consecutive tiles of the batch's tile grids, which may span images, and
//! a range of output blocks) transforms the input tiles of its run, every
//! channel block, into a per-thread scratch `V[pos][C/16][tiles][16]`
//! (padding virtual: taps outside the image read zero, as
//! `conv_nchwc.rs`'s in-place tile reads its blocked image), then, per
//! group of up to 4 output blocks and per position, sums
//! `M[pos][block][tile] = Σ_c U[pos][block][c] V[pos][c][tile]` in the
//! NCHWc register shape (4 blocks x 6 tiles of 16 lanes: 4 weight vectors
//! and 6 broadcasts per input channel for 24 FMAs), and then
//! output-transforms each tile, adds the bias and stores the pixels that
//! lie in the map straight into the blocked output rows, on which the
//! row-chain epilogue (ReLU, residual add, SiLU, ...) runs while they are
//! in cache (`RowChain::apply_blocked`: the unfused ops' bits on this
//! conv's sums). Every part streams the whole transformed weight once, so
//! the run is sized to keep `V` in L2 ([`V_BYTES`]), except for a weight
//! past L3 (512 x 512 is 36 MiB, [`WIDE_WEIGHT_BYTES`]), which would then
//! come from memory once per few tiles: its runs take up to
//! [`WIDE_V_BYTES`] of `V` (in L3), all of ResNet-18 b8's 7x7 tiles, so
//! the weight passes once per call ([`Conv2d::winograd_blocked_wins`]).

// The vector kernels are x86-only (AVX2 / AVX-512); elsewhere the op
// never routes here, and the plans and buffers they read go unused.
#![cfg_attr(not(target_arch = "x86_64"), allow(dead_code, unused))]

use super::conv2d::Conv2d;
use super::conv_epilogue::{ConvEpilogue, RowChain};
use super::conv_nchwc::{avx512, BLOCK};
use super::KernelResult;
use crate::aligned_buf::AlignedBuf;
use crate::team;
use std::cell::Cell;
use std::ops::Range;

/// Positions of a transformed 6 x 6 tile.
pub(crate) const POS: usize = 36;
/// Output pixels per tile side.
const M: usize = 4;
/// Input pixels per tile side.
const A: usize = 6;
/// Output blocks of one register tile.
const FB: usize = 4;
/// Tiles of one register tile.
const TB: usize = 6;
/// Bytes of a part's transformed input `V` (kept in L2 with the products
/// of one block group; the whole weight streams once per part).
const V_BYTES: usize = 256 * 1024;
/// Transformed weights past this many bytes (512 x 512: 36 MiB, past L3)
/// come from memory on every pass, so a part takes up to [`WIDE_V_BYTES`]
/// of transformed input (in L3) to pass them once per call.
const WIDE_WEIGHT_BYTES: usize = 16 << 20;
/// Bytes of `V` of a part of a conv with a wide weight.
const WIDE_V_BYTES: usize = 4 << 20;
/// Fewest tiles in the batch for which a wide-weight conv takes this
/// kernel. Its transformed weight is 4x the 3x3 one (ResNet-18's three
/// 512 x 512 convs: 113 MB more, whose fresh pages were most of its build:
/// 220-490 vs 47 ms), and it saves ~0.7 ms a call at batch 1 (4 tiles),
/// ~11 at batch 8 (32): from 16 images the saving is worth the build and
/// the memory.
const WIDE_MIN_TILES: usize = 64;

/// `G` of the kernel transform (rows: positions).
const G: [[f64; 3]; A] = [
    [0.25, 0.0, 0.0],
    [-1.0 / 6.0, -1.0 / 6.0, -1.0 / 6.0],
    [-1.0 / 6.0, 1.0 / 6.0, -1.0 / 6.0],
    [1.0 / 24.0, 1.0 / 12.0, 1.0 / 6.0],
    [1.0 / 24.0, -1.0 / 12.0, 1.0 / 6.0],
    [0.0, 0.0, 1.0],
];

thread_local! {
    /// The calling thread's `V` and `M`, reused by the next call.
    static WORK: Cell<Vec<f32>> = const { Cell::new(Vec::new()) };
}

/// Floats of the transformed weight of an `o x c` 3x3 conv.
pub(crate) fn packed_len(o: usize, c: usize) -> usize {
    POS * o * c
}

/// Transforms the OIhw 3x3 weight `wt` (`[o, c, 3, 3]`, `o` and `c`
/// multiples of 16) into `out` ([`packed_len`] floats) as
/// `U[pos][o/16][c][16] = (G g Gᵀ)[pos]`, summed in f64.
///
/// Output blocks go over the team (each writes its own `[c][16]` run of
/// every position), and each (block, channel) transforms its 16 lanes at
/// once: a lane at a time, with the 36 positions' stores scattered over
/// 36 lines, was most of ResNet-18's build.
pub(crate) fn pack(wt: &[f32], o: usize, c: usize, out: &mut [f32]) {
    let blocks = o / BLOCK;
    assert!(wt.len() >= o * c * 9 && out.len() >= packed_len(o, c));
    let shared = team::Disjoint::new(out);
    team::parallel_for(blocks, |ob| {
        // SAFETY: block `ob`'s runs `[(pos * blocks + ob) * c * 16..][..c *
        // 16]` are disjoint from every other block's.
        let mut runs: Vec<&mut [f32]> = (0..POS)
            .map(|pos| unsafe {
                shared
                    .range(((pos * blocks + ob) * c) * BLOCK..((pos * blocks + ob + 1) * c) * BLOCK)
            })
            .collect();
        for ic in 0..c {
            let mut g = [[0f64; BLOCK]; 9];
            for lane in 0..BLOCK {
                let taps = &wt[((ob * BLOCK + lane) * c + ic) * 9..][..9];
                for (gk, &v) in g.iter_mut().zip(taps) {
                    gk[lane] = f64::from(v);
                }
            }
            // t = G g (6 x 3), then u = t Gᵀ (6 x 6), lane by lane.
            let mut t = [[[0f64; BLOCK]; 3]; A];
            for (ti, gi) in t.iter_mut().zip(&G) {
                for (j, tij) in ti.iter_mut().enumerate() {
                    for lane in 0..BLOCK {
                        tij[lane] =
                            gi[0] * g[j][lane] + gi[1] * g[3 + j][lane] + gi[2] * g[6 + j][lane];
                    }
                }
            }
            for (i, ti) in t.iter().enumerate() {
                for (j, gj) in G.iter().enumerate() {
                    let dst = &mut runs[i * A + j][ic * BLOCK..][..BLOCK];
                    for (lane, d) in dst.iter_mut().enumerate() {
                        *d = (ti[0][lane] * gj[0] + ti[1][lane] * gj[1] + ti[2][lane] * gj[2])
                            as f32;
                    }
                }
            }
        }
    });
}

impl Conv2d {
    /// True when this kernel can run the conv: 3x3 stride 1 undilated
    /// dense, whole 16-channel blocks on both sides, AVX-512.
    pub(crate) fn is_winograd_blocked_shape(&self) -> bool {
        self.is_winograd_shape()
            && self.groups == 1
            && self.c > 0
            && self.o > 0
            && self.c.is_multiple_of(BLOCK)
            && self.o.is_multiple_of(BLOCK)
            && avx512()
    }

    /// True when this kernel runs the conv once the layout plan keeps its
    /// image and output blocked (instead of the NCHWc direct tile). Only
    /// "same" padding of 1 is routed: the padding every 3x3 stride-1 conv
    /// of the model set has, and the one the numpy fixtures cover.
    pub(crate) fn winograd_blocked_wins(&self) -> bool {
        let tiles = self.batch * self.oh.div_ceil(M) * self.ow.div_ceil(M);
        let narrow = self.c <= 256 && self.o <= 256 && self.oh * self.ow >= 8 * 8;
        let wide = self.wide_weight() && tiles >= WIDE_MIN_TILES;
        let same_padding = self.p == (1, 1) && self.oh == self.h && self.ow == self.w;
        self.is_winograd_blocked_shape()
            && same_padding
            && super::conv::winograd_enabled()
            && (narrow || wide)
    }

    /// True when the transformed weight is past [`WIDE_WEIGHT_BYTES`].
    fn wide_weight(&self) -> bool {
        packed_len(self.o, self.c) * 4 > WIDE_WEIGHT_BYTES
    }

    /// Tiles of one part: its `V` within L2, or for a wide weight within
    /// [`WIDE_V_BYTES`] (the weight then passes once per part).
    fn tiles_per_run(&self) -> usize {
        let budget = if self.wide_weight() {
            WIDE_V_BYTES
        } else {
            V_BYTES
        };
        (budget / (POS * self.c * 4)).max(1)
    }

    /// True when `len` transformed floats fit this conv.
    pub(super) fn takes_winograd_blocked_weights(&self, len: usize) -> bool {
        self.is_winograd_blocked_shape() && len == packed_len(self.o, self.c)
    }

    /// `y = conv(x, wt) + bias`, then `epi` (a row chain, or none), with
    /// `x` and `y` blocked and `u` the weight [`pack`]ed.
    pub(super) fn winograd_blocked(
        &self,
        x: &[f32],
        u: &[f32],
        bias: Option<&[f32]>,
        y: &mut [f32],
        epi: Option<&ConvEpilogue>,
    ) -> KernelResult {
        if !self.takes_winograd_blocked_weights(u.len()) {
            return Err(fail!(
                "conv: blocked Winograd weights on a conv the blocked Winograd kernel does not take"
            ));
        }
        let chain = epi.and_then(|e| e.rows());
        if epi.is_some() && chain.is_none() {
            return Err(fail!(
                "conv: an epilogue the blocked Winograd kernel cannot run on blocked rows"
            ));
        }
        let (pin, pout) = (self.h * self.w, self.oh * self.ow);
        if x.len() != self.batch * self.c * pin || y.len() != self.batch * self.o * pout {
            return Err(fail!("conv: blocked Winograd buffers do not fit the conv"));
        }
        if pout == 0 || self.batch == 0 {
            return Ok(());
        }
        let mut b = vec![0f32; self.o];
        if let Some(bias) = bias {
            b.copy_from_slice(&bias[..self.o]);
        }
        let (th, tw) = (self.oh.div_ceil(M), self.ow.div_ceil(M));
        // Runs of tiles over the whole batch (a run may span images).
        let tiles = self.batch * th * tw;
        let runs = team::split(tiles, tiles.div_ceil(self.tiles_per_run()), 1);
        let ob = self.o / BLOCK;
        let threads = team::threads();
        let parts = runs.len();
        // Few parts (b1 on small maps): split the output blocks too, each
        // part then transforming its run's input again.
        let block_parts = if threads > 1 && parts < 2 * threads {
            (2 * threads).div_ceil(parts).min(ob.div_ceil(FB))
        } else {
            1
        };
        let blocks = team::split(ob, block_parts, FB);
        let job = Job {
            g: self,
            x,
            u,
            bias: &b,
            tw,
            per_image: th * tw,
            chain,
        };
        let out = team::Disjoint::new(y);
        // Off x86-64 no conv has this kernel's shape (checked above).
        #[cfg(target_arch = "x86_64")]
        team::parallel_for(parts * blocks.len(), |p| {
            let (r, bi) = (p / blocks.len(), p % blocks.len());
            job.part(runs[r].clone(), blocks[bi].clone(), &out);
        });
        #[cfg(not(target_arch = "x86_64"))]
        let _ = (job, out, runs, blocks, parts);
        Ok(())
    }
}

/// One call's shared state.
struct Job<'a> {
    g: &'a Conv2d,
    x: &'a [f32],
    u: &'a [f32],
    bias: &'a [f32],
    /// Tiles per tile row.
    tw: usize,
    /// Tiles per image.
    per_image: usize,
    chain: Option<&'a RowChain<'a>>,
}

#[cfg(target_arch = "x86_64")]
impl Job<'_> {
    /// Tiles `run` (row-major over the batch's tile grids), output blocks
    /// `blocks`.
    fn part(&self, run: Range<usize>, blocks: Range<usize>, out: &team::Disjoint<f32>) {
        let g = self.g;
        let (cb, ob, nt) = (g.c / BLOCK, g.o / BLOCK, run.len());
        let (v_len, m_len) = (POS * cb * nt * BLOCK, POS * FB * nt * BLOCK);
        let mut work = WORK.take();
        if work.len() < v_len + m_len {
            work.resize(v_len + m_len, 0.0);
        }
        let (v, m) = work.split_at_mut(v_len);
        let (image, plane) = (g.c * g.h * g.w, g.oh * g.ow);
        for (i, t) in run.clone().enumerate() {
            let (n, ty, tx) = self.tile(t);
            let xn = &self.x[n * image..][..image];
            let iy0 = (ty * M) as isize - g.p.0 as isize;
            let ix0 = (tx * M) as isize - g.p.1 as isize;
            for blk in 0..cb {
                let src = &xn[blk * g.h * g.w * BLOCK..][..g.h * g.w * BLOCK];
                // SAFETY: AVX-512 (`is_winograd_blocked_shape`); the reads
                // are pixels inside `g.h x g.w` of block `blk`, the stores
                // `V[pos][blk][i]` < v_len.
                unsafe {
                    simd::input_tile(
                        src,
                        (g.h, g.w),
                        (iy0, ix0),
                        v.as_mut_ptr().add((blk * nt + i) * BLOCK),
                        cb * nt * BLOCK,
                    )
                };
            }
        }
        let mut b0 = blocks.start;
        while b0 < blocks.end {
            let fb = FB.min(blocks.end - b0);
            for pos in 0..POS {
                let mut t0 = 0;
                while t0 < nt {
                    let tn = TB.min(nt - t0);
                    // SAFETY: weight blocks b0 .. b0 + fb < ob of position
                    // `pos`; `V[pos][..][t0 .. t0 + tn]`, `M[pos][..fb][t0
                    // .. t0 + tn]` inside their buffers.
                    unsafe {
                        simd::product(
                            fb,
                            tn,
                            self.u.as_ptr().add((pos * ob + b0) * g.c * BLOCK),
                            g.c * BLOCK,
                            v.as_ptr().add((pos * cb * nt + t0) * BLOCK),
                            nt * BLOCK,
                            g.c,
                            m.as_mut_ptr().add((pos * FB * nt + t0) * BLOCK),
                            nt * BLOCK,
                        )
                    };
                    t0 += tn;
                }
            }
            for f in 0..fb {
                let blk = b0 + f;
                for (i, t) in run.clone().enumerate() {
                    let (n, ty, tx) = self.tile(t);
                    let base = (n * ob + blk) * plane * BLOCK;
                    let (rows, cols) = (M.min(g.oh - ty * M), M.min(g.ow - tx * M));
                    let at = base + (ty * M * g.ow + tx * M) * BLOCK;
                    // SAFETY: `M[pos][f][i]` inside `m`; the stores are
                    // this part's tile (`rows x cols` pixels inside the
                    // map) of block `blk`, written by this part alone.
                    unsafe {
                        simd::output_tile(
                            m.as_ptr().add((f * nt + i) * BLOCK),
                            FB * nt * BLOCK,
                            &self.bias[blk * BLOCK..][..BLOCK],
                            out.as_ptr().add(at),
                            g.ow,
                            (rows, cols),
                        )
                    };
                }
                if let Some(chain) = self.chain {
                    self.finish_rows(chain, blk, run.clone(), out);
                }
            }
            b0 += fb;
        }
        WORK.set(work);
    }

    /// Image, tile row and tile column of tile `t` of the batch.
    fn tile(&self, t: usize) -> (usize, usize, usize) {
        let (n, at) = (t / self.per_image, t % self.per_image);
        (n, at / self.tw, at % self.tw)
    }

    /// Runs `chain` on the output pixels of tiles `run` in block `blk`:
    /// per output row, the columns of the run's tiles in that tile row.
    fn finish_rows(
        &self,
        chain: &RowChain,
        blk: usize,
        run: Range<usize>,
        out: &team::Disjoint<f32>,
    ) {
        let g = self.g;
        let (ob, plane) = (g.o / BLOCK, g.oh * g.ow);
        let mut t = run.start;
        while t < run.end {
            let (n, ty, tx) = self.tile(t);
            let base = (n * ob + blk) * plane * BLOCK;
            // The first tile of the next tile row (or image).
            let row_end = run.end.min(t - tx + self.tw);
            let cols = tx * M..(M * (row_end - (t - tx))).min(g.ow);
            for oy in ty * M..((ty + 1) * M).min(g.oh) {
                let px = oy * g.ow + cols.start..oy * g.ow + cols.end;
                // SAFETY: pixels of this part's tiles in block `blk`,
                // written by this part alone.
                let slab = unsafe { out.range(base + px.start * BLOCK..base + px.end * BLOCK) };
                chain.apply_blocked(slab, n, blk * BLOCK, px);
            }
            t = row_end;
        }
    }
}

/// The AVX-512 register code: products, transforms.
#[cfg(target_arch = "x86_64")]
mod simd {
    use super::{A, BLOCK, M};

    /// Dispatches [`product_tile`] on `fb` blocks x `tn` tiles.
    ///
    /// # Safety
    /// As [`product_tile`].
    #[allow(clippy::too_many_arguments)]
    pub(super) unsafe fn product(
        fb: usize,
        tn: usize,
        u: *const f32,
        u_ld: usize,
        v: *const f32,
        v_ld: usize,
        c: usize,
        m: *mut f32,
        m_ld: usize,
    ) {
        macro_rules! tiles {
            ($f:literal) => {
                match tn {
                    1 => product_tile::<$f, 1>(u, u_ld, v, v_ld, c, m, m_ld),
                    2 => product_tile::<$f, 2>(u, u_ld, v, v_ld, c, m, m_ld),
                    3 => product_tile::<$f, 3>(u, u_ld, v, v_ld, c, m, m_ld),
                    4 => product_tile::<$f, 4>(u, u_ld, v, v_ld, c, m, m_ld),
                    5 => product_tile::<$f, 5>(u, u_ld, v, v_ld, c, m, m_ld),
                    _ => product_tile::<$f, 6>(u, u_ld, v, v_ld, c, m, m_ld),
                }
            };
        }
        // SAFETY: the caller's contract.
        unsafe {
            match fb {
                1 => tiles!(1),
                2 => tiles!(2),
                3 => tiles!(3),
                _ => tiles!(4),
            }
        }
    }

    /// `m[f * m_ld + t * 16 + lane] = Σ_ch u[f * u_ld + ch * 16 + lane] *
    /// v[(ch / 16) * v_ld + t * 16 + ch % 16]` for `F` blocks x `T` tiles,
    /// the channels in order from zero.
    ///
    /// # Safety
    /// AVX-512F; every index named above in bounds for `ch < c`.
    #[target_feature(enable = "avx512f")]
    #[allow(clippy::too_many_arguments, clippy::needless_range_loop)]
    unsafe fn product_tile<const F: usize, const T: usize>(
        u: *const f32,
        u_ld: usize,
        v: *const f32,
        v_ld: usize,
        c: usize,
        m: *mut f32,
        m_ld: usize,
    ) {
        use std::arch::x86_64::*;
        let mut acc = [[_mm512_setzero_ps(); T]; F];
        // SAFETY: the caller's bounds.
        unsafe {
            for blk in 0..c / BLOCK {
                let vb = v.add(blk * v_ld);
                for lane in 0..BLOCK {
                    let ch = blk * BLOCK + lane;
                    let mut w = [_mm512_setzero_ps(); F];
                    for (f, wf) in w.iter_mut().enumerate() {
                        *wf = _mm512_loadu_ps(u.add(f * u_ld + ch * BLOCK));
                    }
                    for t in 0..T {
                        let xv = _mm512_set1_ps(*vb.add(t * BLOCK + lane));
                        for f in 0..F {
                            acc[f][t] = _mm512_fmadd_ps(w[f], xv, acc[f][t]);
                        }
                    }
                }
            }
            for (f, row) in acc.iter().enumerate() {
                for (t, &a) in row.iter().enumerate() {
                    _mm512_storeu_ps(m.add(f * m_ld + t * BLOCK), a);
                }
            }
        }
    }

    use std::arch::x86_64::__m512;

    /// `Bᵀ d` for one column (or row) of six vectors.
    #[target_feature(enable = "avx512f")]
    #[inline]
    fn bt(d: [__m512; A]) -> [__m512; A] {
        use std::arch::x86_64::*;
        let (four, five, two) = (
            _mm512_set1_ps(4.0),
            _mm512_set1_ps(5.0),
            _mm512_set1_ps(2.0),
        );
        // r1 / r2 = (d4 - 4 d2) ± (d3 - 4 d1), r3 / r4 = (d4 - d2) ± 2 (d3 - d1).
        let a = _mm512_fnmadd_ps(four, d[2], d[4]);
        let b = _mm512_fnmadd_ps(four, d[1], d[3]);
        let c = _mm512_sub_ps(d[4], d[2]);
        let e = _mm512_mul_ps(two, _mm512_sub_ps(d[3], d[1]));
        [
            _mm512_fmadd_ps(four, d[0], _mm512_fnmadd_ps(five, d[2], d[4])),
            _mm512_add_ps(a, b),
            _mm512_sub_ps(a, b),
            _mm512_add_ps(c, e),
            _mm512_sub_ps(c, e),
            _mm512_fmadd_ps(four, d[1], _mm512_fnmadd_ps(five, d[3], d[5])),
        ]
    }

    /// `Aᵀ m` for one column (or row) of six vectors.
    #[target_feature(enable = "avx512f")]
    #[inline]
    fn at(m: [__m512; A]) -> [__m512; M] {
        use std::arch::x86_64::*;
        let (s12, d12) = (_mm512_add_ps(m[1], m[2]), _mm512_sub_ps(m[1], m[2]));
        let (s34, d34) = (_mm512_add_ps(m[3], m[4]), _mm512_sub_ps(m[3], m[4]));
        [
            _mm512_add_ps(_mm512_add_ps(m[0], s12), s34),
            _mm512_fmadd_ps(_mm512_set1_ps(2.0), d34, d12),
            _mm512_fmadd_ps(_mm512_set1_ps(4.0), s34, s12),
            _mm512_add_ps(_mm512_fmadd_ps(_mm512_set1_ps(8.0), d34, d12), m[5]),
        ]
    }

    /// Transforms the 6x6 input tile at rows / columns from `(iy0, ix0)` of
    /// the blocked plane `src` (`[h][w][16]`; outside it zero) into
    /// `v[pos * pos_ld..][..16]`.
    ///
    /// # Safety
    /// AVX-512F; `v` holds 36 vectors at `pos_ld` floats apart.
    #[target_feature(enable = "avx512f")]
    #[allow(clippy::needless_range_loop)]
    pub(super) unsafe fn input_tile(
        src: &[f32],
        (h, w): (usize, usize),
        (iy0, ix0): (isize, isize),
        v: *mut f32,
        pos_ld: usize,
    ) {
        use std::arch::x86_64::*;
        let z = _mm512_setzero_ps();
        let mut d = [[z; A]; A];
        for (i, row) in d.iter_mut().enumerate() {
            let r = iy0 + i as isize;
            if r < 0 || r >= h as isize {
                continue;
            }
            let line = &src[r as usize * w * BLOCK..][..w * BLOCK];
            for (j, dj) in row.iter_mut().enumerate() {
                let q = ix0 + j as isize;
                if q >= 0 && q < w as isize {
                    let px = &line[q as usize * BLOCK..][..BLOCK];
                    // SAFETY: 16 floats of `px`.
                    *dj = unsafe { _mm512_loadu_ps(px.as_ptr()) };
                }
            }
        }
        // Columns first (Bᵀ d), then rows ((Bᵀ d) B).
        let mut t = [[z; A]; A];
        for j in 0..A {
            let col = bt([d[0][j], d[1][j], d[2][j], d[3][j], d[4][j], d[5][j]]);
            for i in 0..A {
                t[i][j] = col[i];
            }
        }
        for (i, ti) in t.iter().enumerate() {
            for (j, &vij) in bt(*ti).iter().enumerate() {
                // SAFETY: position `i * 6 + j` < 36 of the caller's `v`.
                unsafe { _mm512_storeu_ps(v.add((i * A + j) * pos_ld), vij) };
            }
        }
    }

    /// Transforms the 36 products at `m[pos * pos_ld..][..16]` into a 4x4
    /// output tile, adds `bias` (16 lanes) and stores its first `rows x cols`
    /// pixels at `y` (row `i`, column `j` at `y + (i * ow + j) * 16`).
    ///
    /// # Safety
    /// AVX-512F; `m` holds 36 vectors at `pos_ld` floats apart, `y` the
    /// stored pixels.
    #[target_feature(enable = "avx512f")]
    #[allow(clippy::needless_range_loop)]
    pub(super) unsafe fn output_tile(
        m: *const f32,
        pos_ld: usize,
        bias: &[f32],
        y: *mut f32,
        ow: usize,
        (rows, cols): (usize, usize),
    ) {
        use std::arch::x86_64::*;
        let z = _mm512_setzero_ps();
        let mut p = [[z; A]; A];
        for (i, row) in p.iter_mut().enumerate() {
            for (j, pij) in row.iter_mut().enumerate() {
                // SAFETY: position `i * 6 + j` < 36 of the caller's `m`.
                *pij = unsafe { _mm512_loadu_ps(m.add((i * A + j) * pos_ld)) };
            }
        }
        // SAFETY: 16 floats of `bias`.
        let b = unsafe { _mm512_loadu_ps(bias[..BLOCK].as_ptr()) };
        let mut t = [[z; A]; M];
        for j in 0..A {
            let col = at([p[0][j], p[1][j], p[2][j], p[3][j], p[4][j], p[5][j]]);
            for i in 0..M {
                t[i][j] = col[i];
            }
        }
        for (i, ti) in t.iter().enumerate().take(rows) {
            let row = at(*ti);
            for (j, &o) in row.iter().enumerate().take(cols) {
                // SAFETY: pixel (i, j) of the caller's tile.
                unsafe { _mm512_storeu_ps(y.add((i * ow + j) * BLOCK), _mm512_add_ps(o, b)) };
            }
        }
    }
}

/// The transformed weight of a conv that runs this kernel once its image
/// and output are blocked (`x`, `w`, `out`: static dims), for the executor
/// to prepare once, or `None`.
pub(crate) fn prepared_weights(
    win: &rlx_ir::op::Window,
    groups: usize,
    (x, w, out): (&[usize], &[usize], &[usize]),
    wt: &[f32],
) -> Option<AlignedBuf> {
    let g2 = super::conv_packed::geometry(win, groups, x, w, out)?;
    let valid = wt.len() == w.iter().product::<usize>() && w.get(1) == Some(&g2.c);
    (valid && g2.winograd_blocked_wins()).then(|| {
        let mut u = AlignedBuf::zeroed_f32(packed_len(g2.o, g2.c));
        pack(wt, g2.o, g2.c, u.f32s_mut());
        u
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::conv_epilogue::tests::{epilogue, seq};
    use crate::kernels::conv_nchwc::reblock;
    use crate::kernels::{f32_bytes, View};
    use rlx_ir::DType;
    use serde_json::Value;

    const FIXTURE: &str = include_str!("../../tests/fixtures/winograd_blocked/cases.json");

    /// F(4,3)'s float32 error bound relative to a result's magnitude (the
    /// sum of its products' and added terms' absolute values):
    /// `2 ‖Aᵀ‖∞ ‖Bᵀ‖∞ 2⁻²⁴` (module doc).
    const TOL: f64 = 2.0 * 190.0 / (1u64 << 24) as f64;

    /// tools/gen_winograd_blocked_fixtures.py (direct float64 loops):
    /// maps off the 4x4 tile (13x11, 7x9, 5x3, 9x13) and on it (8x8), 16 /
    /// 32 / 48 / 256 input channels (256: several runs of tiles a part), 16
    /// / 32 / 80 outputs (80: a group of 4 blocks and one of 1), runs of
    /// tiles spanning both images (7x9, 5x3 at batch 2), a weight past
    /// 16 MiB transformed (512 -> 256: one run over the batch), bias +
    /// residual + ReLU, bias + ReLU, neither; batch 1 and 2; the residual
    /// read NCHW and blocked; 1 to 3 threads.
    #[test]
    fn blocked_winograd_matches_numpy() {
        if !avx512() {
            return;
        }
        let fixture: Value = serde_json::from_str(FIXTURE).expect("fixture JSON");
        let cases = fixture["cases"].as_array().expect("cases");
        assert_eq!(cases.len(), 7);
        for case in cases {
            let name = case["name"].as_str().expect("name");
            let int = |k: &str| case[k].as_u64().expect("a size") as usize;
            let flag = |k: &str| case[k].as_bool().expect("a flag");
            let (n, c, o, h, w) = (int("n"), int("c"), int("o"), int("h"), int("w"));
            let g = Conv2d {
                batch: n,
                c,
                o,
                groups: 1,
                h,
                w,
                oh: h,
                ow: w,
                kh: 3,
                kw: 3,
                s: (1, 1),
                d: (1, 1),
                p: (1, 1),
            };
            let x = reblock(&seq(n * c * h * w, 7, 23, 8.0), c, h * w, true);
            let mut u = vec![0f32; packed_len(o, c)];
            pack(&seq(o * c * 9, 5, 17, 16.0), o, c, &mut u);
            let b: Vec<f32> = (0..o).map(|i| ((i % 5) as f32 - 2.0) / 4.0).collect();
            let bias = flag("bias").then_some(&b[..]);
            let yd = [n, o, h, w];
            let chain = match (flag("residual"), flag("relu")) {
                (true, _) => Some("residual_relu"),
                (false, true) => Some("relu"),
                (false, false) => None,
            };
            let (steps, extras) = chain.map_or_else(Default::default, |e| epilogue(e, o, 4, &yd));
            let want: Vec<f64> = case["y"]
                .as_array()
                .expect("y")
                .iter()
                .map(|v| v.as_f64().expect("a number"))
                .collect();
            let tol = TOL * case["mag"].as_f64().expect("mag");
            for blocked_extra in [false, true].into_iter().take(1 + extras.len()) {
                let data: Vec<Vec<f32>> = extras
                    .iter()
                    .map(|(_, v)| match blocked_extra {
                        true => reblock(v, o, h * w, true),
                        false => v.clone(),
                    })
                    .collect();
                let views: Vec<View> = extras
                    .iter()
                    .zip(&data)
                    .map(|((d, _), v)| View {
                        dims: d,
                        dtype: DType::F32,
                        bytes: f32_bytes(v),
                    })
                    .collect();
                let epi = chain.map(|_| {
                    let e = ConvEpilogue::new(&steps, &views, &yd, DType::F32).expect("extras");
                    match blocked_extra {
                        true => e.with_blocked_extras(1).expect("a blocked residual"),
                        false => e,
                    }
                });
                for threads in 1..=3 {
                    let mut y = vec![f32::NAN; n * o * h * w];
                    crate::threads::with_limit(Some(threads), || {
                        g.winograd_blocked(&x, &u, bias, &mut y, epi.as_ref())
                    })
                    .unwrap_or_else(|e| panic!("{name}: {e}"));
                    let y = reblock(&y, o, h * w, false);
                    for (k, (&got, &want)) in y.iter().zip(&want).enumerate() {
                        assert!(
                            (f64::from(got) - want).abs() <= tol,
                            "{name}, {threads} threads, blocked residual {blocked_extra}: \
                             element {k}: {got} vs numpy {want} (tolerance {tol:.2e})"
                        );
                    }
                }
            }
        }
    }

    /// A weight of the wrong length, an epilogue that is no row chain and
    /// buffers that do not fit are errors, not panics.
    #[test]
    fn bad_input_is_an_error() {
        let g = Conv2d {
            batch: 1,
            c: 16,
            o: 16,
            groups: 1,
            h: 5,
            w: 5,
            oh: 5,
            ow: 5,
            kh: 3,
            kw: 3,
            s: (1, 1),
            d: (1, 1),
            p: (1, 1),
        };
        let (x, mut y) = (vec![0f32; 16 * 25], vec![0f32; 16 * 25]);
        assert!(g
            .winograd_blocked(&x, &[0.0; 7], None, &mut y, None)
            .is_err());
        let u = vec![0f32; packed_len(16, 16)];
        assert!(g.winograd_blocked(&x[1..], &u, None, &mut y, None).is_err());
    }
}
