//! The quantized matmul's AArch64 NEON paths: the plane kernels (weights
//! dotted straight from their GGUF block bytes, as `planes` does on x86)
//! and the decoded-row dot (`dot`'s `row_dot`).
//!
//! Two ways to form a lane of four `i8 x i8` products:
//! - `sdot` (FEAT_DotProd, Armv8.2+; [`QuantIsa::NeonDot`]): one
//!   instruction per 16 bytes. Rust's `vdotq_s32` is still unstable, so it
//!   is issued by inline assembly from functions compiled with `dotprod`;
//! - `smull` + two pairwise adds on any Armv8 core ([`QuantIsa::Neon`]):
//!   products fit i16 (`|w| <= 128`, `|x| <= 127`), pairs and quads are
//!   widened to i32.
//!
//! Both are signed, so the unsigned planes (nibbles, Q5's fifth bit, Q6_K's
//! six bits, all below 128) and Q8_0's signed bytes enter alike. A 32-weight
//! chunk gives the eight lanes `planes` defines (lane `l`: weights `4l..4l +
//! 4`) as two vectors, the block scale is fused-multiply-added lane by lane
//! into even / odd block accumulators and the lanes are reduced in
//! `planes`' order: the plane kernels give the same bits as the portable
//! path (the quantized-matmul tests assert it on every instruction set
//! `QuantIsa::available` reports); the decoded-row dot, as on x86, differs
//! from its portable form only in the order of the float sums.
//!
//! [`QuantIsa::NeonDot`]: super::dot::QuantIsa::NeonDot
//! [`QuantIsa::Neon`]: super::dot::QuantIsa::Neon

use std::arch::aarch64::*;

use rlx_ir::quant::QuantScheme;

use super::dot::RowDot;
use super::planes::{
    block_terms, block_weights, by_tiles, f16_at, reduce_lanes, ActRow, BlockWeights, TileDot,
};

/// Eight i32 lanes of four-product sums: `lo` lanes 0..4 (weights 0..16 of
/// a chunk), `hi` lanes 4..8 (weights 16..32).
#[derive(Clone, Copy)]
struct Lanes {
    lo: int32x4_t,
    hi: int32x4_t,
}

impl Lanes {
    #[inline(always)]
    unsafe fn zero() -> Lanes {
        Lanes {
            lo: vdupq_n_s32(0),
            hi: vdupq_n_s32(0),
        }
    }
}

/// 32 unsigned bytes: 0..16, 16..32.
type U8x32 = (uint8x16_t, uint8x16_t);

/// One 32-weight chunk: weights 0..16 and 16..32 as i8 vectors.
#[derive(Clone, Copy)]
struct Chunk {
    lo: int8x16_t,
    hi: int8x16_t,
}

/// Four-product lanes of 16 bytes.
pub(super) trait Dot4 {
    /// `acc + [w[4l..4l + 4] · x[4l..4l + 4] for l in 0..4]`.
    unsafe fn dot4(acc: int32x4_t, w: int8x16_t, x: int8x16_t) -> int32x4_t;
}

/// Any Armv8 core: `smull` / `smull2`, then pairwise widening adds.
pub(super) struct Mull;

/// FEAT_DotProd's `sdot`.
pub(super) struct Sdot;

impl Dot4 for Mull {
    #[inline(always)]
    unsafe fn dot4(acc: int32x4_t, w: int8x16_t, x: int8x16_t) -> int32x4_t {
        let p0 = vmull_s8(vget_low_s8(w), vget_low_s8(x));
        let p1 = vmull_high_s8(w, x);
        // [p0+p1, p2+p3, ..] as i32, then neighbouring pairs: products
        // 0..4, 4..8 | 8..12, 12..16.
        let quads = vpaddq_s32(vpaddlq_s16(p0), vpaddlq_s16(p1));
        vaddq_s32(acc, quads)
    }
}

impl Dot4 for Sdot {
    #[inline(always)]
    unsafe fn dot4(acc: int32x4_t, w: int8x16_t, x: int8x16_t) -> int32x4_t {
        let mut acc = acc;
        // SAFETY (of the instruction): only called from functions compiled
        // with `dotprod` (`row_sdot`, `rows_neon_dot`).
        std::arch::asm!(
            "sdot {acc:v}.4s, {w:v}.16b, {x:v}.16b",
            acc = inout(vreg) acc,
            w = in(vreg) w,
            x = in(vreg) x,
            options(pure, nomem, nostack, preserves_flags)
        );
        acc
    }
}

/// `acc + dot4(chunk, x[..32]) * (s_lo, s_hi)`: lanes 0..4 scaled by
/// `s_lo`, 4..8 by `s_hi` (exact integers).
#[inline(always)]
unsafe fn chunk_lanes<D: Dot4>(acc: Lanes, w: Chunk, x: *const i8, s: Option<(i32, i32)>) -> Lanes {
    let zero = vdupq_n_s32(0);
    let lo = D::dot4(zero, w.lo, vld1q_s8(x));
    let hi = D::dot4(zero, w.hi, vld1q_s8(x.add(16)));
    match s {
        None => Lanes {
            lo: vaddq_s32(acc.lo, lo),
            hi: vaddq_s32(acc.hi, hi),
        },
        Some((s0, s1)) => Lanes {
            lo: vmlaq_n_s32(acc.lo, lo, s0),
            hi: vmlaq_n_s32(acc.hi, hi, s1),
        },
    }
}

/// 16 bytes of nibble pairs as 32 weights: low nibbles (weights 0..16),
/// then high ones (16..32).
#[inline(always)]
unsafe fn nibbles16(p: *const u8) -> U8x32 {
    let q = vld1q_u8(p);
    (vandq_u8(q, vdupq_n_u8(0x0F)), vshrq_n_u8::<4>(q))
}

/// Byte `j` is 0x10 where bit `j` of `qh` is set (Q5_0's fifth bits).
#[inline(always)]
unsafe fn fifth_bits(qh: u32) -> U8x32 {
    let bytes = vreinterpretq_u8_u32(vdupq_n_u32(qh));
    const LO: [u8; 16] = [0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1];
    const HI: [u8; 16] = [2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3];
    const BIT: [u8; 16] = [1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128];
    let bit = vld1q_u8(BIT.as_ptr());
    let sixteen = vdupq_n_u8(0x10);
    let spread = |idx: &[u8; 16]| {
        let set = vtstq_u8(vqtbl1q_u8(bytes, vld1q_u8(idx.as_ptr())), bit);
        vandq_u8(set, sixteen)
    };
    (spread(&LO), spread(&HI))
}

/// 32 weights below 128 as a signed chunk.
#[inline(always)]
unsafe fn signed(v: U8x32) -> Chunk {
    Chunk {
        lo: vreinterpretq_s8_u8(v.0),
        hi: vreinterpretq_s8_u8(v.1),
    }
}

/// `a | b`, both halves.
#[inline(always)]
unsafe fn or(a: U8x32, b: U8x32) -> U8x32 {
    (vorrq_u8(a.0, b.0), vorrq_u8(a.1, b.1))
}

/// 32 bytes at `p` as two u8 vectors.
#[inline(always)]
unsafe fn load32(p: *const u8) -> U8x32 {
    (vld1q_u8(p), vld1q_u8(p.add(16)))
}

/// Applies `f` to both halves.
#[inline(always)]
fn both(v: U8x32, f: impl Fn(uint8x16_t) -> uint8x16_t) -> U8x32 {
    (f(v.0), f(v.1))
}

/// The integer lanes of the block at `wp` for each activation row of a
/// tile (`xs`: each row's quants at the block's start).
#[inline(always)]
unsafe fn block_lanes<D: Dot4, const T: usize>(
    scheme: QuantScheme,
    wp: *const u8,
    bw: &BlockWeights,
    xs: &[*const i8; T],
) -> [Lanes; T] {
    use QuantScheme::*;
    let mut lanes = [Lanes::zero(); T];
    let mut add = |w: Chunk, at: usize, s: Option<(i32, i32)>| {
        for (l, &x) in lanes.iter_mut().zip(xs) {
            *l = chunk_lanes::<D>(*l, w, x.add(at), s);
        }
    };
    let low4 = |v: uint8x16_t| vandq_u8(v, vdupq_n_u8(0x0F));
    let high4 = |v: uint8x16_t| vshrq_n_u8::<4>(v);
    match scheme {
        GgufQ4_0 => add(signed(nibbles16(wp.add(2))), 0, None),
        GgufQ4_1 => add(signed(nibbles16(wp.add(4))), 0, None),
        GgufQ5_0 => {
            let qh = u32::from_le_bytes([*wp.add(2), *wp.add(3), *wp.add(4), *wp.add(5)]);
            add(signed(or(nibbles16(wp.add(6)), fifth_bits(qh))), 0, None)
        }
        GgufQ8_0 => add(signed(load32(wp.add(2))), 0, None),
        GgufQ4K => {
            for c in 0..8 {
                let q = load32(wp.add(16 + 32 * (c / 2)));
                let q = if c % 2 == 0 {
                    both(q, low4)
                } else {
                    both(q, high4)
                };
                add(signed(q), 32 * c, Some((bw.scales[c], bw.scales[c])));
            }
        }
        GgufQ5K => {
            let qh = load32(wp.add(16));
            for c in 0..8 {
                let q = load32(wp.add(48 + 32 * (c / 2)));
                let q = if c % 2 == 0 {
                    both(q, low4)
                } else {
                    both(q, high4)
                };
                let bit = vdupq_n_u8(1 << c);
                let hi = both(qh, |v| vandq_u8(vtstq_u8(v, bit), vdupq_n_u8(16)));
                add(
                    signed(or(q, hi)),
                    32 * c,
                    Some((bw.scales[c], bw.scales[c])),
                );
            }
        }
        // Q6_K.
        _ => {
            let low2 = |v: uint8x16_t| vandq_u8(v, vdupq_n_u8(3));
            for n in 0..2 {
                let ql0 = load32(wp.add(64 * n));
                let ql1 = load32(wp.add(64 * n + 32));
                let qh = load32(wp.add(128 + 32 * n));
                let chunks = [
                    (both(ql0, low4), qh),
                    (both(ql1, low4), both(qh, |v| vshrq_n_u8::<2>(v))),
                    (both(ql0, high4), both(qh, |v| vshrq_n_u8::<4>(v))),
                    (both(ql1, high4), both(qh, |v| vshrq_n_u8::<6>(v))),
                ];
                for (j, (lo, hi)) in chunks.into_iter().enumerate() {
                    let c = 4 * n + j;
                    let hi = both(hi, |v| vshlq_n_u8::<4>(low2(v)));
                    let s = (bw.groups[2 * c], bw.groups[2 * c + 1]);
                    add(signed(or(lo, hi)), 32 * c, Some(s));
                }
            }
        }
    }
    lanes
}

/// Asks for the weight bytes about 3 KB ahead (as the x86 path does: the
/// next rows' blocks near a row's end). `prfm` never faults.
#[inline(always)]
unsafe fn prefetch_ahead(scheme: QuantScheme, wp: *const u8) {
    let (block, block_bytes) = (scheme.block_size(), scheme.gguf_block_bytes());
    let ahead = wp.wrapping_add(block_bytes * 96 * 32 / block);
    for at in (0..block_bytes).step_by(64) {
        std::arch::asm!(
            "prfm pldl1keep, [{p}]",
            p = in(reg) ahead.wrapping_add(at),
            options(nostack, readonly, preserves_flags)
        );
    }
}

/// `acc + lanes * scale`, lane by lane, one rounding each (as `mul_add`).
#[inline(always)]
unsafe fn fma_lanes(acc: [float32x4_t; 2], lanes: Lanes, scale: f32) -> [float32x4_t; 2] {
    [
        vfmaq_n_f32(acc[0], vcvtq_f32_s32(lanes.lo), scale),
        vfmaq_n_f32(acc[1], vcvtq_f32_s32(lanes.hi), scale),
    ]
}

/// The eight f32 lanes of `a + b`, reduced in `planes`' order.
#[inline(always)]
unsafe fn reduce(a: [float32x4_t; 2], b: [float32x4_t; 2]) -> f32 {
    let mut l = [0f32; 8];
    vst1q_f32(l.as_mut_ptr(), vaddq_f32(a[0], b[0]));
    vst1q_f32(l.as_mut_ptr().add(4), vaddq_f32(a[1], b[1]));
    reduce_lanes(&l)
}

/// One weight row against `T` activation rows: blocks alternate between
/// the even and odd accumulators, the offset terms summed in block order.
#[inline(always)]
unsafe fn dot_tile<D: Dot4, const T: usize>(
    scheme: QuantScheme,
    w: &[u8],
    a: &[ActRow; T],
) -> [f32; T] {
    let (block, block_bytes) = (scheme.block_size(), scheme.gguf_block_bytes());
    let nb = a[0].q.len() / block;
    assert!(w.len() >= nb * block_bytes);
    for row in a {
        assert!(row.q.len() >= nb * block && row.d.len() >= nb);
    }
    let zero = [vdupq_n_f32(0.0); 2];
    let mut acc = [[zero; T]; 2];
    let mut offsets = [0f32; T];
    for b in 0..nb {
        let bytes = &w[b * block_bytes..(b + 1) * block_bytes];
        prefetch_ahead(scheme, bytes.as_ptr());
        let bw = block_weights(scheme, bytes, f16_at);
        let mut xs = [std::ptr::null::<i8>(); T];
        for (x, row) in xs.iter_mut().zip(a) {
            *x = row.q.as_ptr().add(b * block);
        }
        let lanes = block_lanes::<D, T>(scheme, bytes.as_ptr(), &bw, &xs);
        for t in 0..T {
            let terms = block_terms(scheme, &bw, b, &a[t]);
            acc[b % 2][t] = fma_lanes(acc[b % 2][t], lanes[t], terms.scale);
            offsets[t] += terms.offset;
        }
    }
    let mut sums = [0f32; T];
    for (t, sum) in sums.iter_mut().enumerate() {
        *sum = reduce(acc[0][t], acc[1][t]) + offsets[t];
    }
    sums
}

/// One weight row on NEON with `D`'s products.
struct Row<'a, D> {
    scheme: QuantScheme,
    w: &'a [u8],
    isa: std::marker::PhantomData<D>,
}

impl<D: Dot4> TileDot for Row<'_, D> {
    #[inline(always)]
    unsafe fn dot<const T: usize>(&self, rows: &[ActRow; T]) -> [f32; T] {
        dot_tile::<D, T>(self.scheme, self.w, rows)
    }
}

/// `planes::plane_row` on NEON: each weight block unpacked once per tile.
#[inline(always)]
unsafe fn row_tiles<D: Dot4>(
    scheme: QuantScheme,
    w: &[u8],
    acts: &[ActRow],
    put: impl FnMut(usize, f32),
) {
    let row = Row::<D> {
        scheme,
        w,
        isa: std::marker::PhantomData,
    };
    by_tiles(&row, acts, put)
}

/// Plane rows with `smull`. Safety: NEON (every AArch64 Linux core).
pub(super) unsafe fn row_mull(
    scheme: QuantScheme,
    w: &[u8],
    acts: &[ActRow],
    put: impl FnMut(usize, f32),
) {
    row_tiles::<Mull>(scheme, w, acts, put)
}

/// Plane rows with `sdot`. Safety: the CPU has FEAT_DotProd.
#[target_feature(enable = "neon,dotprod")]
pub(super) unsafe fn row_sdot(
    scheme: QuantScheme,
    w: &[u8],
    acts: &[ActRow],
    put: impl FnMut(usize, f32),
) {
    row_tiles::<Sdot>(scheme, w, acts, put)
}

/// `dot::row_dot` on NEON (decoded weight rows): per block, each 32-quant
/// chunk's lanes times its group scale(s), the block's lanes converted and
/// fused-multiply-added with the block scale, the lanes reduced last.
#[inline(always)]
unsafe fn row_dot_with<D: Dot4>(a: &RowDot) -> f32 {
    assert!(a.w.len() >= a.bscale.len() * a.block && a.x.len() >= a.w.len());
    let zero = [vdupq_n_f32(0.0); 2];
    let mut acc = zero;
    let (wp, xp) = (a.w.as_ptr(), a.x.as_ptr());
    for (b, &bs) in a.bscale.iter().enumerate() {
        let mut lanes = Lanes::zero();
        for off in (b * a.block..(b + 1) * a.block).step_by(32) {
            let w = Chunk {
                lo: vld1q_s8(wp.add(off)),
                hi: vld1q_s8(wp.add(off + 16)),
            };
            let s = a.gscale.map(|s| {
                if a.group == 32 {
                    (s[off / 32], s[off / 32])
                } else {
                    (s[off / 16], s[off / 16 + 1])
                }
            });
            lanes = chunk_lanes::<D>(lanes, w, xp.add(off), s);
        }
        acc = fma_lanes(acc, lanes, bs);
    }
    reduce(acc, zero)
}

/// Decoded-row dot with `smull`. Safety: NEON.
pub(super) unsafe fn row_dot_mull(a: &RowDot) -> f32 {
    row_dot_with::<Mull>(a)
}

/// Decoded-row dot with `sdot`. Safety: the CPU has FEAT_DotProd.
#[target_feature(enable = "neon,dotprod")]
pub(super) unsafe fn row_dot_sdot(a: &RowDot) -> f32 {
    row_dot_with::<Sdot>(a)
}
