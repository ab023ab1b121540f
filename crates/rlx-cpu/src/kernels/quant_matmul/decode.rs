//! Weight rows of each GGUF block format decoded to ggml's integer form:
//! the small integer quants `q` (i8), the integer scale and min of each
//! group of 16 / 32 weights, and the float `d` / `dmin` of each block, so
//! that a weight is `d * scale * q - dmin * min` (K-quants),
//! `d * q + m` (Q4_1 / Q5_1) or `d * q` (the rest). The matmul then takes
//! integer dot products of `q` with the quantized activations, as ggml's
//! `vec_dot_*` do.
// Index-for-index ports of ggml's block layouts (see rlx-gguf's codecs).
#![allow(clippy::needless_range_loop)]

use half::f16;
use rlx_ir::quant::QuantScheme;

/// The activation quantization a weight format is paired with (as in ggml).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ActQuant {
    /// Q8_0 (32 values, f16 scale).
    Q8_0,
    /// Q8_1 (32 values, f16 scale and f16 `d * sum(q)`).
    Q8_1,
    /// Q8_K (256 values, f32 scale).
    Q8K,
}

/// How a block's offset term is formed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mins {
    /// No offset (symmetric formats).
    None,
    /// `m * s_x` per block: Q4_1 / Q5_1 with Q8_1 activations.
    Block,
    /// `-dmin * d_x * sum_g min_g * sum(x_q in g)`: Q2_K / Q4_K / Q5_K.
    Groups,
}

/// The decoding recipe of one block format.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Layout {
    /// Weights per block.
    pub(crate) block: usize,
    /// Bytes per block.
    pub(crate) block_bytes: usize,
    /// Weights per scale group (16 or 32).
    pub(crate) group: usize,
    /// True when every group scale is 1 (the legacy formats and Q8_K).
    pub(crate) unit_scales: bool,
    /// The offset term.
    pub(crate) mins: Mins,
    /// The paired activation quantization.
    pub(crate) act: ActQuant,
    scheme: QuantScheme,
}

/// The layout of `scheme`, or `None` when the native kernel does not run it.
pub(crate) fn layout(scheme: QuantScheme) -> Option<Layout> {
    use ActQuant::*;
    use QuantScheme::*;
    let (group, unit, mins, act) = match scheme {
        GgufQ4_0 | GgufQ5_0 | GgufQ8_0 => (32, true, Mins::None, Q8_0),
        GgufQ4_1 | GgufQ5_1 => (32, true, Mins::Block, Q8_1),
        GgufQ2K => (16, false, Mins::Groups, Q8K),
        GgufQ3K | GgufQ6K => (16, false, Mins::None, Q8K),
        GgufQ4K | GgufQ5K => (32, false, Mins::Groups, Q8K),
        GgufQ8K => (32, true, Mins::None, Q8K),
        _ => return None,
    };
    Some(Layout {
        block: scheme.block_size(),
        block_bytes: scheme.gguf_block_bytes(),
        group,
        unit_scales: unit,
        mins,
        act,
        scheme,
    })
}

/// One decoded weight row.
#[derive(Default)]
pub(crate) struct WeightRow {
    /// Integer quants, one per weight.
    pub(crate) q: Vec<i8>,
    /// Integer scale per group.
    pub(crate) scale: Vec<i32>,
    /// Integer min per group (K-quants with mins).
    pub(crate) min: Vec<i32>,
    /// Float scale per block.
    pub(crate) d: Vec<f32>,
    /// Float min per block (`m` of Q4_1 / Q5_1, `dmin` of K-quants).
    pub(crate) dmin: Vec<f32>,
}

impl WeightRow {
    /// Decodes the `k` weights in `bytes` (one row of whole blocks).
    #[inline(always)]
    pub(crate) fn decode(&mut self, lay: &Layout, bytes: &[u8], k: usize) {
        use QuantScheme::*;
        let (nb, ng) = (k / lay.block, k / lay.group);
        self.q.resize(k, 0);
        self.scale.resize(ng, 1);
        self.min.resize(ng, 0);
        self.d.resize(nb, 0.0);
        self.dmin.resize(nb, 0.0);
        // A direct call per format (not a function pointer), so each block
        // decoder inlines and vectorizes with the caller's target features.
        macro_rules! blocks {
            ($f:ident) => {{
                let (bs, bb, gpb) = (lay.block, lay.block_bytes, lay.block / lay.group);
                let q = self.q.chunks_exact_mut(bs);
                let sc = self.scale.chunks_exact_mut(gpb);
                let mn = self.min.chunks_exact_mut(gpb);
                let dd = self.d.iter_mut().zip(self.dmin.iter_mut());
                for ((((b, q), sc), mn), (d, dmin)) in
                    bytes.chunks_exact(bb).zip(q).zip(sc).zip(mn).zip(dd)
                {
                    (*d, *dmin) = $f(b, q, sc, mn);
                }
            }};
        }
        match lay.scheme {
            GgufQ4_0 => blocks!(q4_0),
            GgufQ4_1 => blocks!(q4_1),
            GgufQ5_0 => blocks!(q5_0),
            GgufQ5_1 => blocks!(q5_1),
            GgufQ8_0 => blocks!(q8_0),
            GgufQ2K => blocks!(q2_k),
            GgufQ3K => blocks!(q3_k),
            GgufQ4K => blocks!(q4_k),
            GgufQ5K => blocks!(q5_k),
            GgufQ6K => blocks!(q6_k),
            _ => blocks!(q8_k),
        }
    }
}

/// `s` as a fixed-size array (its length is the block's, by construction),
/// so the decoders index it without bounds checks.
#[inline(always)]
fn fixed<const N: usize>(s: &[u8]) -> &[u8; N] {
    s.try_into().expect("a whole block")
}

#[inline(always)]
fn fixed_mut<const N: usize>(s: &mut [i8]) -> &mut [i8; N] {
    s.try_into().expect("a whole block")
}

/// Bytes read as the i8 quants they store.
#[inline(always)]
fn as_i8(b: &[u8]) -> &[i8] {
    // SAFETY: u8 and i8 have the same size, alignment and validity.
    unsafe { std::slice::from_raw_parts(b.as_ptr() as *const i8, b.len()) }
}

#[inline(always)]
fn f16_at(b: &[u8], at: usize) -> f32 {
    f16::from_bits(u16::from_le_bytes([b[at], b[at + 1]])).to_f32()
}

#[inline(always)]
fn nibbles(qs: &[u8], offset: i8, q: &mut [i8]) {
    let half = qs.len();
    for j in 0..half {
        q[j] = (qs[j] & 0xF) as i8 - offset;
        q[j + half] = (qs[j] >> 4) as i8 - offset;
    }
}

#[inline(always)]
fn q4_0(b: &[u8], q: &mut [i8], _: &mut [i32], _: &mut [i32]) -> (f32, f32) {
    let (b, q): (&[u8; 18], &mut [i8; 32]) = (fixed(b), fixed_mut(q));
    nibbles(&b[2..18], 8, q);
    (f16_at(b, 0), 0.0)
}

#[inline(always)]
fn q4_1(b: &[u8], q: &mut [i8], _: &mut [i32], _: &mut [i32]) -> (f32, f32) {
    let (b, q): (&[u8; 20], &mut [i8; 32]) = (fixed(b), fixed_mut(q));
    nibbles(&b[4..20], 0, q);
    (f16_at(b, 0), f16_at(b, 2))
}

/// Q5_0 / Q5_1 quants: nibbles plus the 5th bit from the 32-bit `qh`.
#[inline(always)]
fn fives(qh: u32, qs: &[u8], offset: i8, q: &mut [i8]) {
    let (qs, q): (&[u8; 16], &mut [i8; 32]) = (qs.try_into().unwrap(), fixed_mut(q));
    // Bit e of qh is the 5th bit of quant e: spread to bytes by table (as ggml).
    let h: [u8; 32] = le_bytes_of([
        BIT_TO_0X10[(qh & 0xFF) as usize],
        BIT_TO_0X10[((qh >> 8) & 0xFF) as usize],
        BIT_TO_0X10[((qh >> 16) & 0xFF) as usize],
        BIT_TO_0X10[(qh >> 24) as usize],
    ]);
    for j in 0..16 {
        q[j] = ((qs[j] & 0xF) | h[j]) as i8 - offset;
        q[j + 16] = ((qs[j] >> 4) | h[j + 16]) as i8 - offset;
    }
}

/// Four little-endian u64 as their 32 bytes.
#[inline(always)]
fn le_bytes_of(v: [u64; 4]) -> [u8; 32] {
    let mut out = [0u8; 32];
    for (c, w) in out.chunks_exact_mut(8).zip(v) {
        c.copy_from_slice(&w.to_le_bytes());
    }
    out
}

/// Byte `b` of each entry is 0x10 where bit `b` of the index is set.
const BIT_TO_0X10: [u64; 256] = {
    let mut t = [0u64; 256];
    let mut i = 0;
    while i < 256 {
        let mut b = 0;
        while b < 8 {
            if (i >> b) & 1 == 1 {
                t[i] |= 0x10 << (8 * b);
            }
            b += 1;
        }
        i += 1;
    }
    t
};

#[inline(always)]
fn q5_0(b: &[u8], q: &mut [i8], _: &mut [i32], _: &mut [i32]) -> (f32, f32) {
    let (b, q): (&[u8; 22], &mut [i8; 32]) = (fixed(b), fixed_mut(q));
    fives(
        u32::from_le_bytes([b[2], b[3], b[4], b[5]]),
        &b[6..22],
        16,
        q,
    );
    (f16_at(b, 0), 0.0)
}

#[inline(always)]
fn q5_1(b: &[u8], q: &mut [i8], _: &mut [i32], _: &mut [i32]) -> (f32, f32) {
    let (b, q): (&[u8; 24], &mut [i8; 32]) = (fixed(b), fixed_mut(q));
    fives(
        u32::from_le_bytes([b[4], b[5], b[6], b[7]]),
        &b[8..24],
        0,
        q,
    );
    (f16_at(b, 0), f16_at(b, 2))
}

#[inline(always)]
fn q8_0(b: &[u8], q: &mut [i8], _: &mut [i32], _: &mut [i32]) -> (f32, f32) {
    let (b, q): (&[u8; 34], &mut [i8; 32]) = (fixed(b), fixed_mut(q));
    q.copy_from_slice(as_i8(&b[2..34]));
    (f16_at(b, 0), 0.0)
}

/// Q2_K: `scales[16] (min << 4 | scale), qs[64], d, dmin`; groups of 16.
#[inline(always)]
fn q2_k(b: &[u8], q: &mut [i8], scale: &mut [i32], min: &mut [i32]) -> (f32, f32) {
    let (b, q): (&[u8; 84], &mut [i8; 256]) = (fixed(b), fixed_mut(q));
    let (sc, qs) = (&b[0..16], &b[16..80]);
    for g in 0..16 {
        scale[g] = i32::from(sc[g] & 0xF);
        min[g] = i32::from(sc[g] >> 4);
    }
    for (qs, q) in qs.chunks_exact(32).zip(q.chunks_exact_mut(128)) {
        crumb_planes(qs, q);
    }
    (f16_at(b, 80), f16_at(b, 82))
}

/// Q3_K: `hmask[32], qs[64], scales[12] (16 signed 6-bit), d`; groups of 16.
#[inline(always)]
fn q3_k(b: &[u8], q: &mut [i8], scale: &mut [i32], _: &mut [i32]) -> (f32, f32) {
    let (b, q): (&[u8; 110], &mut [i8; 256]) = (fixed(b), fixed_mut(q));
    let (hmask, qs, s) = (&b[0..32], &b[32..96], &b[96..108]);
    for g in 0..16 {
        let lo = if g < 8 { s[g] & 0xF } else { s[g - 8] >> 4 };
        let hi = (s[8 + g % 4] >> (2 * (g / 4))) & 3;
        scale[g] = i32::from(lo | (hi << 4)) - 32;
    }
    for (n, (qs, q)) in qs.chunks_exact(32).zip(q.chunks_exact_mut(128)).enumerate() {
        crumb_planes(qs, q);
        // minus 4 where the quant's high-mask bit is clear
        for (j, q) in q.chunks_exact_mut(32).enumerate() {
            let m = 1u8 << (n * 4 + j);
            for (o, &hm) in q.iter_mut().zip(hmask) {
                *o -= i8::from(hm & m == 0) << 2;
            }
        }
    }
    (f16_at(b, 108), 0.0)
}

/// The four 2-bit planes of 32 bytes into 128 quants (plane `j` = bits `2j..2j+2`).
/// Constant shifts: x86 has no per-byte variable shift to vectorize with.
#[inline(always)]
fn crumb_planes(qs: &[u8], q: &mut [i8]) {
    let (q0, rest) = q.split_at_mut(32);
    let (q1, rest) = rest.split_at_mut(32);
    let (q2, q3) = rest.split_at_mut(32);
    crumbs::<0>(qs, q0);
    crumbs::<2>(qs, q1);
    crumbs::<4>(qs, q2);
    crumbs::<6>(qs, q3);
}

/// The 2-bit fields at bit `S` of 32 bytes.
#[inline(always)]
fn crumbs<const S: u32>(qs: &[u8], q: &mut [i8]) {
    let (qs, q): (&[u8; 32], &mut [i8; 32]) = (qs.try_into().unwrap(), fixed_mut(q));
    // As one u64 per 8 bytes: a shift and mask of the whole word (SWAR).
    for (o, i) in q.chunks_exact_mut(8).zip(qs.chunks_exact(8)) {
        let w = u64::from_le_bytes(i.try_into().unwrap());
        let c = (w >> S) & 0x0303_0303_0303_0303;
        o.copy_from_slice(as_i8(&c.to_le_bytes()));
    }
}

/// The 6-bit scales and mins of Q4_K / Q5_K (8 groups of 32).
#[inline(always)]
fn scales_mins_k4(s: &[u8], scale: &mut [i32], min: &mut [i32]) {
    for j in 0..8 {
        let (sc, m) = if j < 4 {
            (s[j] & 63, s[j + 4] & 63)
        } else {
            (
                (s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4),
                (s[j + 4] >> 4) | ((s[j] >> 6) << 4),
            )
        };
        scale[j] = i32::from(sc);
        min[j] = i32::from(m);
    }
}

/// Q4_K: `d, dmin, scales[12], qs[128]`; groups of 32.
#[inline(always)]
fn q4_k(b: &[u8], q: &mut [i8], scale: &mut [i32], min: &mut [i32]) -> (f32, f32) {
    let (b, q): (&[u8; 144], &mut [i8; 256]) = (fixed(b), fixed_mut(q));
    scales_mins_k4(&b[4..16], scale, min);
    for c in 0..4 {
        nibbles(&b[16 + c * 32..48 + c * 32], 0, &mut q[c * 64..c * 64 + 64]);
    }
    (f16_at(b, 0), f16_at(b, 2))
}

/// Q5_K: `d, dmin, scales[12], qh[32], qs[128]`; groups of 32.
#[inline(always)]
fn q5_k(b: &[u8], q: &mut [i8], scale: &mut [i32], min: &mut [i32]) -> (f32, f32) {
    let (b, q): (&[u8; 176], &mut [i8; 256]) = (fixed(b), fixed_mut(q));
    scales_mins_k4(&b[4..16], scale, min);
    let (qh, qs) = (&b[16..48], &b[48..176]);
    for (c, (qs, q)) in qs.chunks_exact(32).zip(q.chunks_exact_mut(64)).enumerate() {
        let (lo, hi) = q.split_at_mut(32);
        for (((o0, o1), &x), &h) in lo.iter_mut().zip(hi.iter_mut()).zip(qs).zip(qh) {
            *o0 = ((x & 0xF) | (((h >> (2 * c)) & 1) << 4)) as i8;
            *o1 = ((x >> 4) | (((h >> (2 * c + 1)) & 1) << 4)) as i8;
        }
    }
    (f16_at(b, 0), f16_at(b, 2))
}

/// Q6_K: `ql[128], qh[64], scales[16] (i8), d`; groups of 16.
#[inline(always)]
fn q6_k(b: &[u8], q: &mut [i8], scale: &mut [i32], _: &mut [i32]) -> (f32, f32) {
    let (b, q): (&[u8; 210], &mut [i8; 256]) = (fixed(b), fixed_mut(q));
    for g in 0..16 {
        scale[g] = i32::from(b[192 + g] as i8);
    }
    for n in 0..2 {
        let ql = &b[n * 64..n * 64 + 64];
        let qh = &b[128 + n * 32..128 + n * 32 + 32];
        let y = &mut q[n * 128..n * 128 + 128];
        for l in 0..32 {
            y[l] = ((ql[l] & 0xF) | ((qh[l] & 3) << 4)) as i8 - 32;
            y[l + 32] = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) as i8 - 32;
            y[l + 64] = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) as i8 - 32;
            y[l + 96] = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) as i8 - 32;
        }
    }
    (f16_at(b, 208), 0.0)
}

/// Q8_K: `d (f32), qs[256], bsums[16]`; one scale.
#[inline(always)]
fn q8_k(b: &[u8], q: &mut [i8], _: &mut [i32], _: &mut [i32]) -> (f32, f32) {
    let (b, q): (&[u8; 292], &mut [i8; 256]) = (fixed(b), fixed_mut(q));
    q.copy_from_slice(as_i8(&b[4..260]));
    (f32::from_le_bytes([b[0], b[1], b[2], b[3]]), 0.0)
}
