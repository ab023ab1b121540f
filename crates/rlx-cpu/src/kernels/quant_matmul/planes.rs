//! Row dots straight from the GGUF block bytes (decode's GEMV and
//! prefill's GEMM).
//!
//! Decoding a weight row to i8 quants first (`decode`) writes and re-reads
//! `K` bytes per row; these kernels instead unpack each block's 4 / 5 / 6 /
//! 8-bit planes in registers and feed them to `vpdpbusd` (AVX-512 VNNI on
//! 256-bit vectors) or `vpmaddubsw` + `vpmaddwd` (AVX2), for Q4_0, Q4_1,
//! Q5_0, Q8_0, Q4_K, Q5_K and Q6_K. With several activation rows (prefill), the
//! rows go in tiles of [`TILE`]: each unpacked 32-weight chunk is dotted
//! with every row of the tile before the next chunk is unpacked, so
//! unpacking and weight loads are paid once per tile rather than per row.
//! (With AVX-512 VNNI, Q4_0 / Q4_1 / Q5_0 / Q8_0 go to `gemv512`'s 512-bit
//! GEMV and tiles up to `gemv512::MAX_ROWS` rows (the same numbers) and
//! to `gemm16` above it (ggml's per-block sums, within f32 rounding of
//! these); Q4_K / Q5_K / Q6_K to `gemv512k`'s GEMV with one row (the same
//! numbers) and to `gemm16k` from `gemm16k::MIN_ROWS` rows.)
//!
//! Every path here computes the same numbers in the same order, so the SIMD
//! results are bit-identical to the portable one:
//! - weights enter the integer products unsigned where the format stores
//!   them so (Q4_0's `q + 8`, Q5_0's `q + 16`, Q6_K's `q + 32`, the
//!   K-quants' nibbles) and
//!   signed for Q8_0 (through the `|w|`, `sign(x, w)` trick); the offset
//!   comes back through the activation sums (`-8 * sum x`, `-16 * sum x`, `-32 * scale *
//!   sum x`), exactly, in integers;
//! - each 32-weight chunk gives eight i32 lanes of four products (lane `l`:
//!   weights `4l..4l + 4` of the chunk), times the lane's group scale;
//! - per block, the lanes are summed in integers, converted to f32 and
//!   fused-multiply-added with the block scale `d_w * d_x` into eight f32
//!   lane accumulators (even blocks into one set, odd blocks into another,
//!   added lane-wise at the end, so two chains run at once); the block's
//!   offset terms (mins, the unsigned
//!   offset) go into one f32 sum in block order;
//! - the lanes are reduced as `(l0 + l4) + (l2 + l6)) + ((l1 + l5) + (l3 +
//!   l7)` and the offset sum added last.
//!
//! Integer sums cannot overflow: a lane takes at most 4 products of
//! `|w| <= 128` and `|x| <= 127` per chunk, times a 6- or 8-bit scale, for
//! 8 chunks. AVX2's `vpmaddubsw` adds two products in i16 first, at most
//! `2 * 128 * 127 < 32767` (the activation quantizers keep `|x| <= 127`).

use half::f16;
use rlx_ir::quant::QuantScheme;

use super::decode::{layout, WeightRow};
use super::dot::QuantIsa;

/// One quantized activation row, as the matmul's `Act` holds it.
#[derive(Clone, Copy)]
pub(crate) struct ActRow<'a> {
    /// Quants, one per input feature.
    pub(crate) q: &'a [i8],
    /// Scale per activation block (32 or 256 values).
    pub(crate) d: &'a [f32],
    /// Q8_1's `d * sum(q)` per block (Q4_1 only).
    pub(crate) s: &'a [f32],
    /// Sum of the quants per weight group (16 or 32 values).
    pub(crate) gsum: &'a [i32],
}

/// Whether [`plane_row`] runs weights of `scheme`.
pub(crate) fn runs(scheme: QuantScheme) -> bool {
    use QuantScheme::*;
    matches!(
        scheme,
        GgufQ4_0 | GgufQ4_1 | GgufQ5_0 | GgufQ8_0 | GgufQ4K | GgufQ5K | GgufQ6K
    )
}

/// Activation rows one weight block is unpacked for: each block's planes
/// are unpacked once into registers and dotted with this many rows.
pub(crate) const TILE: usize = 4;

/// `W_row · x_i` for every activation row `x_i` of `acts` (`runs(scheme)`
/// holds, `isa` is one of [`QuantIsa::available`], each row quantized as
/// the format pairs, with `K` = `q.len()`), passed to `put(i, value)`.
///
/// The rows go in tiles of [`TILE`], so a weight block's planes are
/// unpacked once per tile (the prefill GEMM), and each value is the same
/// bits as a single-row dot: the per-row arithmetic does not depend on the
/// tile. The portable path decodes the weight row once into `scratch`.
#[inline(always)]
pub(crate) fn plane_row(
    isa: QuantIsa,
    scheme: QuantScheme,
    w: &[u8],
    acts: &[ActRow],
    scratch: &mut WeightRow,
    put: impl FnMut(usize, f32),
) {
    match isa {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: the caller picked `isa` from `QuantIsa::available()`.
        QuantIsa::Avx2 => unsafe { x86::row_avx2(scheme, w, acts, put) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: as above.
        QuantIsa::Avx512Vnni => unsafe { x86::row_vnni(scheme, w, acts, put) },
        #[cfg(target_arch = "aarch64")]
        // SAFETY: as above.
        QuantIsa::Neon => unsafe { super::neon::row_mull(scheme, w, acts, put) },
        #[cfg(target_arch = "aarch64")]
        // SAFETY: as above.
        QuantIsa::NeonDot => unsafe { super::neon::row_sdot(scheme, w, acts, put) },
        _ => row_scalar(scheme, w, acts, scratch, put),
    }
}

/// One weight row's dot against a tile of `T` activation rows, per
/// instruction set.
pub(super) trait TileDot {
    /// The row's dot with each of `rows`. Safety: the CPU runs the
    /// implementation's instruction set.
    unsafe fn dot<const T: usize>(&self, rows: &[ActRow; T]) -> [f32; T];
}

/// `row`'s dots with `acts` in tiles of [`TILE`], the last tile narrower,
/// each value passed to `put(i, value)`. Safety: as [`TileDot::dot`].
#[inline(always)]
pub(super) unsafe fn by_tiles(
    row: &impl TileDot,
    acts: &[ActRow],
    mut put: impl FnMut(usize, f32),
) {
    let mut tiles = acts.chunks_exact(TILE);
    let mut at = 0;
    for tile in tiles.by_ref() {
        let tile: &[ActRow; TILE] = tile.try_into().expect("a whole tile");
        for (i, v) in row.dot(tile).into_iter().enumerate() {
            put(at + i, v);
        }
        at += TILE;
    }
    let mut emit = |vals: &[f32]| {
        for (i, &v) in vals.iter().enumerate() {
            put(at + i, v);
        }
    };
    match tiles.remainder() {
        [] => {}
        [a] => emit(&row.dot(&[*a])),
        [a, b] => emit(&row.dot(&[*a, *b])),
        [a, b, c] => emit(&row.dot(&[*a, *b, *c])),
        _ => unreachable!("a remainder is shorter than a tile"),
    }
}

/// The f16 at byte `at`.
#[inline(always)]
pub(super) fn f16_at(b: &[u8], at: usize) -> f32 {
    f16::from_bits(u16::from_le_bytes([b[at], b[at + 1]])).to_f32()
}

/// The sum of the eight lane accumulators, in the SIMD paths' order.
#[inline(always)]
pub(super) fn reduce_lanes(l: &[f32; 8]) -> f32 {
    let s: [f32; 4] = std::array::from_fn(|i| l[i] + l[i + 4]);
    (s[0] + s[2]) + (s[1] + s[3])
}

/// The weight side of one block, read once per block and shared by every
/// activation row of a tile.
#[derive(Clone, Copy)]
pub(super) struct BlockWeights {
    /// The block scale `d`.
    pub(super) d: f32,
    /// Q4_1's `m`, the K-quants' `dmin`.
    pub(super) m: f32,
    /// Q4_K / Q5_K's 6-bit group scales.
    pub(super) scales: [i32; 8],
    /// Q4_K / Q5_K's group mins (first 8) or Q6_K's 16 signed scales.
    pub(super) groups: [i32; 16],
}

/// The weight facts of one block (`bytes` = the block's bytes).
#[inline(always)]
pub(super) fn block_weights(
    scheme: QuantScheme,
    bytes: &[u8],
    f16_at: impl Fn(&[u8], usize) -> f32,
) -> BlockWeights {
    use QuantScheme::*;
    let mut bw = BlockWeights {
        d: 0.0,
        m: 0.0,
        scales: [0; 8],
        groups: [0; 16],
    };
    match scheme {
        GgufQ4_0 | GgufQ5_0 | GgufQ8_0 => bw.d = f16_at(bytes, 0),
        GgufQ4_1 => (bw.d, bw.m) = (f16_at(bytes, 0), f16_at(bytes, 2)),
        GgufQ4K | GgufQ5K => {
            let (scales, mins) = scales_mins_k4(&bytes[4..16]);
            bw.scales = scales;
            bw.groups[..8].copy_from_slice(&mins);
            (bw.d, bw.m) = (f16_at(bytes, 0), f16_at(bytes, 2));
        }
        // Q6_K.
        _ => {
            bw.d = f16_at(bytes, 208);
            for (g, &sc) in bw.groups.iter_mut().zip(&bytes[192..208]) {
                *g = i32::from(sc as i8);
            }
        }
    }
    bw
}

/// The scalar, per-block facts every path shares: the block scale `d_w *
/// d_x` and the block's offset term (added to the offset sum).
#[derive(Clone, Copy)]
pub(super) struct BlockTerms {
    pub(super) scale: f32,
    pub(super) offset: f32,
}

/// The block terms of block `b` of weights `w` against activation row `a`.
#[inline(always)]
pub(super) fn block_terms(
    scheme: QuantScheme,
    w: &BlockWeights,
    b: usize,
    a: &ActRow,
) -> BlockTerms {
    use QuantScheme::*;
    let dx = a.d[b];
    let scale = w.d * dx;
    match scheme {
        GgufQ4_0 => BlockTerms {
            scale,
            offset: scale * (-8 * a.gsum[b]) as f32,
        },
        GgufQ5_0 => BlockTerms {
            scale,
            offset: scale * (-16 * a.gsum[b]) as f32,
        },
        GgufQ4_1 => BlockTerms {
            scale,
            offset: w.m * a.s[b],
        },
        GgufQ8_0 => BlockTerms { scale, offset: 0.0 },
        GgufQ4K | GgufQ5K => {
            let gsum = &a.gsum[b * 8..b * 8 + 8];
            let isum: i32 = w.groups[..8].iter().zip(gsum).map(|(&m, &s)| m * s).sum();
            BlockTerms {
                scale,
                offset: -(w.m * dx) * isum as f32,
            }
        }
        // Q6_K.
        _ => {
            let gsum = &a.gsum[b * 16..b * 16 + 16];
            let isum: i32 = w.groups.iter().zip(gsum).map(|(&sc, &s)| sc * s).sum();
            BlockTerms {
                scale,
                offset: scale * (-32 * isum) as f32,
            }
        }
    }
}

/// The 6-bit scales and mins of Q4_K / Q5_K's eight groups of 32.
#[inline(always)]
fn scales_mins_k4(s: &[u8]) -> ([i32; 8], [i32; 8]) {
    let mut out = ([0; 8], [0; 8]);
    for j in 0..8 {
        let (sc, m) = if j < 4 {
            (s[j] & 63, s[j + 4] & 63)
        } else {
            (
                (s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4),
                (s[j + 4] >> 4) | ((s[j] >> 6) << 4),
            )
        };
        out.0[j] = i32::from(sc);
        out.1[j] = i32::from(m);
    }
    out
}

/// The unsigned offset each format's integer products carry.
fn unsigned_offset(scheme: QuantScheme) -> i32 {
    match scheme {
        QuantScheme::GgufQ4_0 => 8,
        QuantScheme::GgufQ5_0 => 16,
        QuantScheme::GgufQ6K => 32,
        _ => 0,
    }
}

/// The portable path: the row decoded once by `decode`'s reference
/// decoders, then the lanes formed as the SIMD paths form them, per
/// activation row.
fn row_scalar(
    scheme: QuantScheme,
    w: &[u8],
    acts: &[ActRow],
    wr: &mut WeightRow,
    mut put: impl FnMut(usize, f32),
) {
    let Some(k) = acts.first().map(|a| a.q.len()) else {
        return;
    };
    let lay = layout(scheme).expect("a block format");
    wr.decode(&lay, w, k);
    let blocks: Vec<BlockWeights> = w
        .chunks_exact(lay.block_bytes)
        .take(k / lay.block)
        .map(|bytes| block_weights(scheme, bytes, f16_at))
        .collect();
    let off = unsigned_offset(scheme);
    for (i, a) in acts.iter().enumerate() {
        let mut acc = [[0f32; 8]; 2];
        let mut offsets = 0f32;
        for (b, bw) in blocks.iter().enumerate() {
            let t = block_terms(scheme, bw, b, a);
            let mut lanes = [0i32; 8];
            for c in (b * lay.block..(b + 1) * lay.block).step_by(32) {
                for (l, lane) in lanes.iter_mut().enumerate() {
                    let e = c + 4 * l;
                    let p: i32 = (e..e + 4)
                        .map(|i| (i32::from(wr.q[i]) + off) * i32::from(a.q[i]))
                        .sum();
                    let scale = if lay.unit_scales {
                        1
                    } else {
                        wr.scale[e / lay.group]
                    };
                    *lane += p * scale;
                }
            }
            for (acc, &lane) in acc[b % 2].iter_mut().zip(&lanes) {
                *acc = (lane as f32).mul_add(t.scale, *acc);
            }
            offsets += t.offset;
        }
        put(
            i,
            reduce_lanes(&std::array::from_fn(|l| acc[0][l] + acc[1][l])) + offsets,
        );
    }
}

#[cfg(target_arch = "x86_64")]
pub(super) mod x86 {
    use super::{
        block_terms, block_weights, by_tiles, reduce_lanes, ActRow, BlockWeights, TileDot,
    };
    use rlx_ir::quant::QuantScheme;
    use std::arch::x86_64::*;

    /// A chunk's integer scale(s), in the forms both instruction sets use:
    /// one i32 per lane and one i16 per byte pair.
    #[derive(Clone, Copy)]
    struct LaneScale {
        i32s: __m256i,
        i16s: __m256i,
    }

    impl LaneScale {
        /// One scale for the whole 32-weight chunk.
        #[inline(always)]
        unsafe fn one(s: i32) -> LaneScale {
            LaneScale {
                i32s: _mm256_set1_epi32(s),
                i16s: _mm256_set1_epi16(s as i16),
            }
        }

        /// `s0` for weights 0..16 (lanes 0..4), `s1` for 16..32.
        #[inline(always)]
        unsafe fn halves(s0: i32, s1: i32) -> LaneScale {
            LaneScale {
                i32s: _mm256_setr_epi32(s0, s0, s0, s0, s1, s1, s1, s1),
                i16s: _mm256_set_m128i(_mm_set1_epi16(s1 as i16), _mm_set1_epi16(s0 as i16)),
            }
        }
    }

    /// Eight i32 lanes of four `u8 x i8` products each.
    trait Dot4 {
        /// `acc + dot4(u, s)`.
        unsafe fn dot4(acc: __m256i, u: __m256i, s: __m256i) -> __m256i;

        /// Byte `j` is 0x10 where bit `j` of `qh` is set (Q5_0's fifth bits).
        #[inline(always)]
        unsafe fn fifth_bits(qh: u32) -> __m256i {
            fifth_bits(qh)
        }

        /// `acc + dot4(u, s) * scale` (exact integers either way).
        #[inline(always)]
        unsafe fn dot4_scaled(acc: __m256i, u: __m256i, s: __m256i, sc: LaneScale) -> __m256i {
            let p = Self::dot4(_mm256_setzero_si256(), u, s);
            _mm256_add_epi32(acc, _mm256_mullo_epi32(p, sc.i32s))
        }
    }

    struct Avx2;
    struct Vnni;

    impl Dot4 for Avx2 {
        #[inline(always)]
        unsafe fn dot4(acc: __m256i, u: __m256i, s: __m256i) -> __m256i {
            let p = _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), _mm256_set1_epi16(1));
            _mm256_add_epi32(acc, p)
        }

        /// The scale enters `vpmaddwd` in place of the ones (pair sums fit
        /// i16, scales are 6- or 8-bit): no `vpmulld`.
        #[inline(always)]
        unsafe fn dot4_scaled(acc: __m256i, u: __m256i, s: __m256i, sc: LaneScale) -> __m256i {
            let p = _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), sc.i16s);
            _mm256_add_epi32(acc, p)
        }
    }

    impl Dot4 for Vnni {
        #[inline(always)]
        unsafe fn dot4(acc: __m256i, u: __m256i, s: __m256i) -> __m256i {
            _mm256_dpbusd_epi32(acc, u, s)
        }

        #[inline(always)]
        unsafe fn fifth_bits(qh: u32) -> __m256i {
            fifth_bits_mask(qh)
        }
    }

    /// AVX2 path. Safety: the CPU has AVX2, FMA and F16C.
    #[target_feature(enable = "avx2,fma,f16c")]
    pub(super) unsafe fn row_avx2(
        scheme: QuantScheme,
        w: &[u8],
        acts: &[ActRow],
        put: impl FnMut(usize, f32),
    ) {
        by_format::<Avx2>(scheme, w, acts, put)
    }

    /// VNNI path. Safety: the CPU has AVX2, FMA, F16C, AVX512-VNNI,
    /// AVX512-VL and AVX512-BW.
    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512vl,avx512bw,avx512vnni")]
    pub(super) unsafe fn row_vnni(
        scheme: QuantScheme,
        w: &[u8],
        acts: &[ActRow],
        put: impl FnMut(usize, f32),
    ) {
        by_format::<Vnni>(scheme, w, acts, put)
    }

    /// One copy of the tile loop per format (the format a constant), so
    /// each block's loop holds only that format's unpacking and terms.
    #[inline(always)]
    unsafe fn by_format<D: Dot4>(
        scheme: QuantScheme,
        w: &[u8],
        acts: &[ActRow],
        put: impl FnMut(usize, f32),
    ) {
        use QuantScheme::*;
        match scheme {
            GgufQ4_0 => row_tiles::<D, { code(GgufQ4_0) }>(scheme, w, acts, put),
            GgufQ4_1 => row_tiles::<D, { code(GgufQ4_1) }>(scheme, w, acts, put),
            GgufQ5_0 => row_tiles::<D, { code(GgufQ5_0) }>(scheme, w, acts, put),
            GgufQ8_0 => row_tiles::<D, { code(GgufQ8_0) }>(scheme, w, acts, put),
            // The K-quants' long blocks amortize the format checks; with
            // the format a constant, their eight chunks spill registers.
            _ => row_tiles::<D, RUNTIME>(scheme, w, acts, put),
        }
    }

    /// The formats compiled with the format a constant, by const-generic
    /// code.
    const FORMATS: [QuantScheme; 4] = [
        QuantScheme::GgufQ4_0,
        QuantScheme::GgufQ4_1,
        QuantScheme::GgufQ5_0,
        QuantScheme::GgufQ8_0,
    ];

    /// How far ahead [`prefetch_ahead`] reaches, in 32-weight chunks (about
    /// 2-3 KB of weights). Measured on SmolLM2 decode (2-vCPU Xeon VM,
    /// Q4_1 / Q8_0 / Q4_K_M): 1.5-3 KB ahead ~1.5-2x the tokens/s of no
    /// prefetch, 256-768 bytes about half of that gain.
    const PREFETCH_CHUNKS: usize = 96;

    /// The code of a format read at run time.
    const RUNTIME: u8 = u8::MAX;

    /// The format of code `F`: a constant, or `scheme` for [`RUNTIME`].
    #[inline(always)]
    fn format<const F: u8>(scheme: QuantScheme) -> QuantScheme {
        match F {
            RUNTIME => scheme,
            f => FORMATS[f as usize],
        }
    }

    /// `scheme`'s index in [`FORMATS`].
    const fn code(scheme: QuantScheme) -> u8 {
        let mut i = 0;
        while i < FORMATS.len() {
            if FORMATS[i] as u8 == scheme as u8 {
                return i as u8;
            }
            i += 1;
        }
        panic!("not a plane format")
    }

    /// One weight row of format code `F` on instruction set `D`.
    struct Row<'a, D, const F: u8> {
        scheme: QuantScheme,
        w: &'a [u8],
        isa: std::marker::PhantomData<D>,
    }

    impl<D: Dot4, const F: u8> TileDot for Row<'_, D, F> {
        #[inline(always)]
        unsafe fn dot<const T: usize>(&self, rows: &[ActRow; T]) -> [f32; T] {
            dot_tile::<D, F, T>(self.scheme, self.w, rows)
        }
    }

    /// The activation rows in tiles of [`TILE`], the last tile narrower.
    #[inline(always)]
    unsafe fn row_tiles<D: Dot4, const F: u8>(
        scheme: QuantScheme,
        w: &[u8],
        acts: &[ActRow],
        put: impl FnMut(usize, f32),
    ) {
        let row = Row::<D, F> {
            scheme,
            w,
            isa: std::marker::PhantomData,
        };
        by_tiles(&row, acts, put)
    }

    /// [`fifth_bits`] with AVX-512 BW: `qh` is a byte mask as it stands,
    /// one masked move.
    #[inline(always)]
    pub(in crate::kernels::quant_matmul) unsafe fn fifth_bits_mask(qh: u32) -> __m256i {
        _mm256_maskz_mov_epi8(qh, _mm256_set1_epi8(0x10))
    }

    /// The f16 at byte `at` with F16C (the same value as `half`'s).
    #[inline(always)]
    pub(in crate::kernels::quant_matmul) unsafe fn f16c_at(b: &[u8], at: usize) -> f32 {
        let bits = u16::from_le_bytes([b[at], b[at + 1]]);
        _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(i32::from(bits))))
    }

    #[inline(always)]
    unsafe fn load32(p: *const u8) -> __m256i {
        _mm256_loadu_si256(p as *const __m256i)
    }

    /// 16 bytes of nibble pairs as 32 bytes: low nibbles, then high ones.
    #[inline(always)]
    pub(in crate::kernels::quant_matmul) unsafe fn nibbles16(p: *const u8) -> __m256i {
        let q = _mm_loadu_si128(p as *const __m128i);
        let m = _mm_set1_epi8(0x0F);
        let lo = _mm_and_si128(q, m);
        let hi = _mm_and_si128(_mm_srli_epi16(q, 4), m);
        _mm256_set_m128i(hi, lo)
    }

    /// Byte `j` is 0x10 where bit `j` of `qh` is set (Q5_0's fifth bits).
    #[inline(always)]
    unsafe fn fifth_bits(qh: u32) -> __m256i {
        // Byte j takes byte j / 8 of qh, then tests bit j % 8 of it.
        let spread = _mm256_shuffle_epi8(
            _mm256_set1_epi32(qh as i32),
            _mm256_setr_epi64x(
                0,
                0x0101_0101_0101_0101,
                0x0202_0202_0202_0202,
                0x0303_0303_0303_0303,
            ),
        );
        let bit = _mm256_set1_epi64x(0x8040_2010_0804_0201u64 as i64);
        let set = _mm256_cmpeq_epi8(_mm256_and_si256(spread, bit), bit);
        _mm256_and_si256(set, _mm256_set1_epi8(0x10))
    }

    /// Adds `dot4(u, x_t[at..at + 32])` (times `sc` when given) to every
    /// row's lanes: the unpacked weight chunk `u` serves the whole tile.
    #[inline(always)]
    unsafe fn chunk<D: Dot4, const T: usize>(
        lanes: &mut [__m256i; T],
        u: __m256i,
        xs: &[*const i8; T],
        at: usize,
        sc: Option<LaneScale>,
    ) {
        for (l, &x) in lanes.iter_mut().zip(xs) {
            let s = load32(x.add(at) as _);
            *l = match sc {
                Some(sc) => D::dot4_scaled(*l, u, s, sc),
                None => D::dot4(*l, u, s),
            };
        }
    }

    /// The integer lanes of block `wp` (its bytes) for each row of the tile.
    #[inline(always)]
    unsafe fn block_lanes<D: Dot4, const T: usize>(
        scheme: QuantScheme,
        wp: *const u8,
        bw: &BlockWeights,
        xs: &[*const i8; T],
    ) -> [__m256i; T] {
        use QuantScheme::*;
        let mut lanes = [_mm256_setzero_si256(); T];
        let low4 = _mm256_set1_epi8(0x0F);
        match scheme {
            GgufQ4_0 => chunk::<D, T>(&mut lanes, nibbles16(wp.add(2)), xs, 0, None),
            GgufQ4_1 => chunk::<D, T>(&mut lanes, nibbles16(wp.add(4)), xs, 0, None),
            GgufQ5_0 => {
                let qh = u32::from_le_bytes([*wp.add(2), *wp.add(3), *wp.add(4), *wp.add(5)]);
                let u = _mm256_or_si256(nibbles16(wp.add(6)), D::fifth_bits(qh));
                chunk::<D, T>(&mut lanes, u, xs, 0, None)
            }
            GgufQ8_0 => {
                // |w| (unsigned) times x with w's sign.
                let wv = load32(wp.add(2));
                let u = _mm256_sign_epi8(wv, wv);
                for (l, &x) in lanes.iter_mut().zip(xs) {
                    *l = D::dot4(*l, u, _mm256_sign_epi8(load32(x as _), wv));
                }
            }
            GgufQ4K => {
                for c in 0..8 {
                    let q = load32(wp.add(16 + 32 * (c / 2)));
                    let q = if c % 2 == 0 {
                        q
                    } else {
                        _mm256_srli_epi16(q, 4)
                    };
                    let sc = LaneScale::one(bw.scales[c]);
                    chunk::<D, T>(&mut lanes, _mm256_and_si256(q, low4), xs, 32 * c, Some(sc));
                }
            }
            GgufQ5K => {
                let qh = load32(wp.add(16));
                for c in 0..8 {
                    let q = load32(wp.add(48 + 32 * (c / 2)));
                    let q = if c % 2 == 0 {
                        q
                    } else {
                        _mm256_srli_epi16(q, 4)
                    };
                    let bit = _mm256_set1_epi8(1 << c);
                    let hi = _mm256_cmpeq_epi8(_mm256_and_si256(qh, bit), bit);
                    let u = _mm256_or_si256(
                        _mm256_and_si256(q, low4),
                        _mm256_and_si256(hi, _mm256_set1_epi8(16)),
                    );
                    let sc = LaneScale::one(bw.scales[c]);
                    chunk::<D, T>(&mut lanes, u, xs, 32 * c, Some(sc));
                }
            }
            // Q6_K.
            _ => {
                let low2 = _mm256_set1_epi8(3);
                for n in 0..2 {
                    let ql0 = load32(wp.add(64 * n));
                    let ql1 = load32(wp.add(64 * n + 32));
                    let qh = load32(wp.add(128 + 32 * n));
                    let chunks = [
                        (ql0, qh),
                        (ql1, _mm256_srli_epi16(qh, 2)),
                        (_mm256_srli_epi16(ql0, 4), _mm256_srli_epi16(qh, 4)),
                        (_mm256_srli_epi16(ql1, 4), _mm256_srli_epi16(qh, 6)),
                    ];
                    for (j, (lo, hi)) in chunks.into_iter().enumerate() {
                        let c = 4 * n + j;
                        let u = _mm256_or_si256(
                            _mm256_and_si256(lo, low4),
                            _mm256_slli_epi16(_mm256_and_si256(hi, low2), 4),
                        );
                        let sc = LaneScale::halves(bw.groups[2 * c], bw.groups[2 * c + 1]);
                        chunk::<D, T>(&mut lanes, u, xs, 32 * c, Some(sc));
                    }
                }
            }
        }
        lanes
    }

    /// One weight row against `T` activation rows (see the module docs for
    /// the order of operations, which is each row's alone). Blocks go in
    /// pairs, even into one set of accumulators and odd into the other, so
    /// both sets stay in registers.
    #[inline(always)]
    unsafe fn dot_tile<D: Dot4, const F: u8, const T: usize>(
        scheme: QuantScheme,
        w: &[u8],
        a: &[ActRow; T],
    ) -> [f32; T] {
        let scheme = format::<F>(scheme);
        let (block, block_bytes) = (scheme.block_size(), scheme.gguf_block_bytes());
        let k = a[0].q.len();
        let nb = k / block;
        // Activation sums per block: one per weight group of the block.
        let gsums = match scheme {
            QuantScheme::GgufQ4_0 | QuantScheme::GgufQ5_0 => nb,
            QuantScheme::GgufQ4K | QuantScheme::GgufQ5K => 8 * nb,
            QuantScheme::GgufQ6K => 16 * nb,
            _ => 0,
        };
        let sums = if scheme == QuantScheme::GgufQ4_1 {
            nb
        } else {
            0
        };
        assert!(w.len() >= nb * block_bytes);
        // Rows cut to exactly what the blocks read, so the per-block
        // indexing needs no bounds checks.
        let mut rows = *a;
        for row in &mut rows {
            *row = ActRow {
                q: &row.q[..k],
                d: &row.d[..nb],
                s: &row.s[..sums],
                gsum: &row.gsum[..gsums],
            };
        }
        let mut even = [_mm256_setzero_ps(); T];
        let mut odd = [_mm256_setzero_ps(); T];
        let mut offsets = [0f32; T];
        let mut b = 0;
        if F == RUNTIME {
            // The K-quants' 256-weight blocks hide the chains' latency;
            // unrolled, their eight chunks run out of registers.
            let mut acc = [[_mm256_setzero_ps(); T]; 2];
            for b in 0..nb {
                block_step::<D, F, T>(scheme, w, b, &rows, &mut acc[b % 2], &mut offsets);
            }
            [even, odd] = acc;
            b = nb;
        }
        while b + 1 < nb {
            block_step::<D, F, T>(scheme, w, b, &rows, &mut even, &mut offsets);
            block_step::<D, F, T>(scheme, w, b + 1, &rows, &mut odd, &mut offsets);
            b += 2;
        }
        if b < nb {
            block_step::<D, F, T>(scheme, w, b, &rows, &mut even, &mut offsets);
        }
        // A loop, not `array::from_fn`: see `block_step`.
        let mut sums = [0f32; T];
        for (t, sum) in sums.iter_mut().enumerate() {
            let mut l = [0f32; 8];
            _mm256_storeu_ps(l.as_mut_ptr(), _mm256_add_ps(even[t], odd[t]));
            *sum = reduce_lanes(&l) + offsets[t];
        }
        sums
    }

    /// Asks for the weight bytes [`PREFETCH_CHUNKS`] 32-weight chunks past
    /// the block at `wp` (the next rows' blocks near a row's end: a
    /// matrix's rows lie back to back). Without it decode stalls on these
    /// loads (perf: a quarter of the GEMV's samples on the first use of a
    /// block's bytes); the hardware prefetcher alone does not keep up.
    /// Prefetches never fault, so running past the weights is harmless.
    #[inline(always)]
    unsafe fn prefetch_ahead(scheme: QuantScheme, wp: *const u8) {
        let (block, block_bytes) = (scheme.block_size(), scheme.gguf_block_bytes());
        let ahead = wp.wrapping_add(block_bytes * PREFETCH_CHUNKS * 32 / block);
        // One request per cache line of the block (one for the 32-weight
        // formats, whose blocks are at most 34 bytes).
        for at in (0..block_bytes).step_by(64) {
            _mm_prefetch::<_MM_HINT_T0>(ahead.wrapping_add(at) as *const i8);
        }
    }

    /// Block `b` of weight row `w` into every row's accumulator and offset
    /// sum (`rows` as `dot_tile` cut them).
    #[inline(always)]
    unsafe fn block_step<D: Dot4, const F: u8, const T: usize>(
        scheme: QuantScheme,
        w: &[u8],
        b: usize,
        rows: &[ActRow; T],
        acc: &mut [__m256; T],
        offsets: &mut [f32; T],
    ) {
        let (block, block_bytes) = (scheme.block_size(), scheme.gguf_block_bytes());
        let bytes = w.get_unchecked(b * block_bytes..(b + 1) * block_bytes);
        prefetch_ahead(scheme, bytes.as_ptr());
        let bw = block_weights(scheme, bytes, |b, at| f16c_at(b, at));
        // A loop, not `array::from_fn`: its closure is not always inlined.
        let mut xs = [std::ptr::null::<i8>(); T];
        for (x, row) in xs.iter_mut().zip(rows) {
            *x = row.q.as_ptr().add(b * block);
        }
        let lanes = block_lanes::<D, T>(scheme, bytes.as_ptr(), &bw, &xs);
        for t in 0..T {
            let terms = block_terms(scheme, &bw, b, &rows[t]);
            acc[t] = _mm256_fmadd_ps(
                _mm256_cvtepi32_ps(lanes[t]),
                _mm256_set1_ps(terms.scale),
                acc[t],
            );
            offsets[t] += terms.offset;
        }
    }
}
