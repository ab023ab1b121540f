//! The activation side of the quantized matmul: `x` quantized once per
//! call, per block, as the weight format pairs it (Q8_0, Q8_1 or Q8_K).
//!
//! The portable path runs rlx-gguf's reference quantizers (ggml's
//! `quantize_row_*_ref`). The AVX2 path computes the same bits eight
//! values at a time: the same absolute maximum, the same f32 scale and
//! reciprocal (one scalar division per block, as the reference), the same
//! products, and the reference's rounding (`roundf`, half away from zero,
//! for Q8_0 / Q8_1; to nearest even, ggml's `nearest_int`, for Q8_K).

use super::decode::ActQuant;
use super::dot::QuantIsa;
use super::KernelError;
use crate::team::Disjoint;
use half::f16;
use rlx_gguf::codecs;
use rlx_gguf::GgmlType;

/// Quantized activation rows.
pub(crate) struct Act {
    /// Quants, one per value of `x`.
    pub(crate) q: Vec<i8>,
    /// Scale per block.
    pub(crate) d: Vec<f32>,
    /// Q8_1's `d * sum(q)` per block.
    pub(crate) s: Vec<f32>,
    /// Sum of the quants per weight group (for K-quant mins).
    pub(crate) gsum: Vec<i32>,
}

/// Values per block of `act`.
fn block_of(act: ActQuant) -> usize {
    match act {
        ActQuant::Q8K => 256,
        ActQuant::Q8_0 | ActQuant::Q8_1 => 32,
    }
}

/// Where a quantization writes: [`Act`]'s fields for some whole rows.
struct ActOut<'a> {
    q: &'a mut [i8],
    d: &'a mut [f32],
    s: &'a mut [f32],
    gsum: &'a mut [i32],
}

/// An [`Act`] of `len` values, zeroed, for [`quantize_into`].
fn zeroed(act: ActQuant, len: usize, group: usize) -> Act {
    let blocks = len / block_of(act);
    Act {
        q: vec![0; len],
        d: vec![0.0; blocks],
        s: vec![0.0; if act == ActQuant::Q8_1 { blocks } else { 0 }],
        gsum: vec![0; len / group.max(1)],
    }
}

/// Quantizes `x` (whole blocks) as `act` on `isa` (one of
/// [`QuantIsa::available`]), with the sums per weight group of `group`
/// values.
pub(crate) fn quantize_act(
    isa: QuantIsa,
    act: ActQuant,
    x: &[f32],
    group: usize,
) -> Result<Act, KernelError> {
    let mut a = zeroed(act, x.len(), group);
    let out = ActOut {
        q: &mut a.q,
        d: &mut a.d,
        s: &mut a.s,
        gsum: &mut a.gsum,
    };
    quantize_into(isa, act, x, group, out)?;
    Ok(a)
}

/// [`quantize_act`] into `out` (sized by [`zeroed`] for `x`).
fn quantize_into(
    isa: QuantIsa,
    act: ActQuant,
    x: &[f32],
    group: usize,
    out: ActOut,
) -> Result<(), KernelError> {
    match isa {
        #[cfg(target_arch = "x86_64")]
        QuantIsa::Avx2 | QuantIsa::Avx512Vnni if x.len().is_multiple_of(block_of(act)) => {
            // SAFETY: both instruction sets include AVX2 (the caller picked
            // `isa` from `QuantIsa::available()`).
            unsafe { x86::quantize(act, x, out.q, out.d, out.s) }
        }
        _ => {
            let r = reference(act, x)?;
            out.q.copy_from_slice(&r.q);
            out.d.copy_from_slice(&r.d);
            out.s.copy_from_slice(&r.s);
        }
    }
    for (sum, g) in out.gsum.iter_mut().zip(out.q.chunks_exact(group)) {
        *sum = g.iter().map(|&v| i32::from(v)).sum::<i32>();
    }
    Ok(())
}

/// [`quantize_act`] of `x`'s rows of `k` values over `parts` threads of
/// the team, each quantizing whole rows into its place in the result:
/// blocks and weight groups never straddle rows (`k` a multiple of both),
/// so the pieces are the same bits as one call over all of `x`.
pub(crate) fn quantize_act_rows(
    isa: QuantIsa,
    act: ActQuant,
    x: &[f32],
    (k, group): (usize, usize),
    parts: usize,
) -> Result<Act, KernelError> {
    let rows = x.len() / k.max(1);
    let whole = k > 0 && k.is_multiple_of(block_of(act)) && k.is_multiple_of(group);
    if parts <= 1 || rows < 2 || !whole {
        return quantize_act(isa, act, x, group);
    }
    let mut all = zeroed(act, x.len(), group);
    // Per row: blocks (scales, Q8_1's sums) and groups.
    let (nb, ng, ns) = (
        k / block_of(act),
        k / group,
        if act == ActQuant::Q8_1 {
            k / block_of(act)
        } else {
            0
        },
    );
    let ranges = crate::team::split(rows, parts.min(rows), 1);
    let (q, d) = (Disjoint::new(&mut all.q), Disjoint::new(&mut all.d));
    let (s, gsum) = (Disjoint::new(&mut all.s), Disjoint::new(&mut all.gsum));
    crate::team::try_parallel_for(ranges.len(), |p| {
        let r = &ranges[p];
        // SAFETY: the parts' row ranges are disjoint, and so are their
        // values, blocks and groups.
        let out = unsafe {
            ActOut {
                q: q.range(r.start * k..r.end * k),
                d: d.range(r.start * nb..r.end * nb),
                s: s.range(r.start * ns..r.end * ns),
                gsum: gsum.range(r.start * ng..r.end * ng),
            }
        };
        quantize_into(isa, act, &x[r.start * k..r.end * k], group, out)
    })?;
    Ok(all)
}

/// The reference path: rlx-gguf's codecs, then the fields read back from
/// the block bytes (`gsum` left empty).
fn reference(act: ActQuant, x: &[f32]) -> Result<Act, KernelError> {
    let (ty, q_at) = match act {
        ActQuant::Q8_0 => (GgmlType::Q8_0, 2),
        ActQuant::Q8_1 => (GgmlType::Q8_1, 4),
        ActQuant::Q8K => (GgmlType::Q8_K, 4),
    };
    let block = block_of(act);
    let bytes = codecs::quantize(ty, x)?;
    let blocks = x.len() / block;
    let mut a = Act {
        q: Vec::with_capacity(x.len()),
        d: Vec::with_capacity(blocks),
        s: Vec::new(),
        gsum: Vec::new(),
    };
    for b in bytes.chunks_exact(ty.type_size()) {
        let qs = &b[q_at..q_at + block];
        a.q.extend(qs.iter().map(|&v| v as i8));
        let f16_at = |at: usize| f16::from_bits(u16::from_le_bytes([b[at], b[at + 1]])).to_f32();
        match act {
            ActQuant::Q8K => a.d.push(f32::from_le_bytes([b[0], b[1], b[2], b[3]])),
            ActQuant::Q8_0 => a.d.push(f16_at(0)),
            ActQuant::Q8_1 => {
                a.d.push(f16_at(0));
                a.s.push(f16_at(2));
            }
        }
    }
    Ok(a)
}

/// A scale as its f16 block field stores it.
#[cfg(target_arch = "x86_64")]
fn through_f16(v: f32) -> f32 {
    f16::from_f32(v).to_f32()
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::{block_of, through_f16, ActQuant};
    use std::arch::x86_64::*;

    /// The AVX2 quantizer (`x.len()` a whole number of blocks).
    /// Safety: the CPU has AVX2.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn quantize(
        act: ActQuant,
        x: &[f32],
        q: &mut [i8],
        d: &mut [f32],
        s: &mut [f32],
    ) {
        let block = block_of(act);
        assert!(q.len() == x.len() && d.len() == x.len() / block);
        for (b, (xb, qb)) in x
            .chunks_exact(block)
            .zip(q.chunks_exact_mut(block))
            .enumerate()
        {
            let amax = abs_max(xb);
            match act {
                ActQuant::Q8K => d[b] = block_q8k(xb, amax, qb),
                ActQuant::Q8_0 | ActQuant::Q8_1 => {
                    let scale = amax / 127.0;
                    let id = if scale != 0.0 { 1.0 / scale } else { 0.0 };
                    let sum = round_away_block(xb, id, qb);
                    d[b] = through_f16(scale);
                    if act == ActQuant::Q8_1 {
                        s[b] = through_f16(sum as f32 * scale);
                    }
                }
            }
        }
    }

    /// The largest `|v|` of `x` (a multiple of 8 long), NaNs skipped as
    /// `f32::max` skips them.
    #[inline(always)]
    unsafe fn abs_max(x: &[f32]) -> f32 {
        let abs = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fff_ffff));
        let mut m = _mm256_setzero_ps();
        for c in x.chunks_exact(8) {
            // `maxps` returns its second operand when the first is NaN.
            m = _mm256_max_ps(_mm256_and_ps(_mm256_loadu_ps(c.as_ptr()), abs), m);
        }
        let mut l = [0f32; 8];
        _mm256_storeu_ps(l.as_mut_ptr(), m);
        let mut max = 0.0f32;
        for v in l {
            max = max.max(v);
        }
        max
    }

    /// NaN lanes to 0 (what the reference's saturating cast makes of them).
    #[inline(always)]
    unsafe fn nan_to_zero(v: __m256) -> __m256 {
        _mm256_and_ps(v, _mm256_cmp_ps::<_CMP_ORD_Q>(v, v))
    }

    /// 32 rounded values (integral f32, |v| <= 127) as i8 at `q`.
    #[inline(always)]
    unsafe fn store_i8x32(r: [__m256; 4], q: *mut i8) -> __m256i {
        // Loops, not `map` / `array::from_fn`: a closure does not inherit
        // the caller's target features, so its intrinsics become calls.
        let mut i = [_mm256_setzero_si256(); 4];
        for (iv, &v) in i.iter_mut().zip(&r) {
            *iv = _mm256_cvtps_epi32(v);
        }
        let p = _mm256_packs_epi16(
            _mm256_packs_epi32(i[0], i[1]),
            _mm256_packs_epi32(i[2], i[3]),
        );
        // The packs interleave 128-bit halves; put the values back in order.
        let p = _mm256_permutevar8x32_epi32(p, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
        _mm256_storeu_si256(q as *mut __m256i, p);
        _mm256_add_epi32(_mm256_add_epi32(i[0], i[1]), _mm256_add_epi32(i[2], i[3]))
    }

    /// Q8_0 / Q8_1's quants of one 32-value block: `roundf(v * id)` (half
    /// away from zero); returns their sum.
    #[inline(always)]
    unsafe fn round_away_block(x: &[f32], id: f32, q: &mut [i8]) -> i32 {
        let idv = _mm256_set1_ps(id);
        let sign = _mm256_set1_ps(-0.0);
        let half = _mm256_set1_ps(0.5);
        let one = _mm256_set1_ps(1.0);
        let mut r = [_mm256_setzero_ps(); 4];
        for (c, rc) in r.iter_mut().enumerate() {
            let v = _mm256_mul_ps(_mm256_loadu_ps(x.as_ptr().add(8 * c)), idv);
            // trunc(v) + copysign(1, v) where |v - trunc(v)| >= 0.5; the
            // fraction is exact.
            let t = _mm256_round_ps::<{ _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC }>(v);
            let frac = _mm256_andnot_ps(sign, _mm256_sub_ps(v, t));
            let up = _mm256_cmp_ps::<_CMP_GE_OQ>(frac, half);
            let step = _mm256_or_ps(_mm256_and_ps(v, sign), one);
            *rc = nan_to_zero(_mm256_add_ps(t, _mm256_and_ps(up, step)));
        }
        let sums = store_i8x32(r, q.as_mut_ptr());
        let mut l = [0i32; 8];
        _mm256_storeu_si256(l.as_mut_ptr() as *mut __m256i, sums);
        let mut sum = 0;
        for v in l {
            sum += v;
        }
        sum
    }

    /// Q8_K's quants of one 256-value block (largest magnitude `amax`);
    /// returns the block scale.
    #[inline(always)]
    unsafe fn block_q8k(x: &[f32], amax: f32, q: &mut [i8]) -> f32 {
        if amax == 0.0 {
            q.fill(0);
            return 0.0;
        }
        // The first value of the largest magnitude, with its sign.
        let max = x
            .iter()
            .copied()
            .find(|v| v.abs() == amax)
            .expect("amax is some |v|");
        let iscale = -127.0 / max;
        let s = _mm256_set1_ps(iscale);
        for (xc, qc) in x.chunks_exact(32).zip(q.chunks_exact_mut(32)) {
            let mut r = [_mm256_setzero_ps(); 4];
            for (c, rc) in r.iter_mut().enumerate() {
                let v = _mm256_mul_ps(_mm256_loadu_ps(xc.as_ptr().add(8 * c)), s);
                *rc = nan_to_zero(_mm256_round_ps::<
                    { _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC },
                >(v));
            }
            store_i8x32(r, qc.as_mut_ptr());
        }
        1.0 / iscale
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Values with ties at the rounding points, zeros, a zero block, both
    /// signs of the largest magnitude and NaN-free extremes.
    fn values(len: usize, seed: u32) -> Vec<f32> {
        let mut s = seed;
        let mut v: Vec<f32> = (0..len)
            .map(|_| {
                s = s.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                ((s >> 8) as f32 / (1u32 << 24) as f32 - 0.5) * 8.0
            })
            .collect();
        // Block 0: exact halves after scaling by 127 / 127 (amax 127).
        for (i, x) in v.iter_mut().take(32).enumerate() {
            *x = (i as f32 - 16.0) + 0.5;
        }
        v[31] = 127.0;
        // Block 1 (of 32) all zero; the first 256-block sees +-amax tie.
        v[32..64].fill(0.0);
        v[100] = -9.0;
        v[200] = 9.0;
        v
    }

    #[test]
    fn avx2_quantizer_is_bit_identical_to_the_reference() {
        if !QuantIsa::available().contains(&QuantIsa::Avx2) {
            return;
        }
        for act in [ActQuant::Q8_0, ActQuant::Q8_1, ActQuant::Q8K] {
            for (len, seed) in [(256, 1), (512, 7), (1536, 3)] {
                let x = values(len, seed);
                let fast = quantize_act(QuantIsa::Avx2, act, &x, 16).unwrap();
                let slow = reference(act, &x).unwrap();
                assert_eq!(fast.q, slow.q, "{act:?} quants, {len} values");
                let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&fast.d), bits(&slow.d), "{act:?} scales");
                assert_eq!(bits(&fast.s), bits(&slow.s), "{act:?} sums");
                let gsum: Vec<i32> = slow
                    .q
                    .chunks_exact(16)
                    .map(|g| g.iter().map(|&v| i32::from(v)).sum())
                    .collect();
                assert_eq!(fast.gsum, gsum);
            }
        }
    }

    #[test]
    fn reference_rounding_of_halves_is_away_from_zero() {
        // 127 scales to 127 exactly; 2.5 -> 3 and -2.5 -> -3 (`roundf`).
        let mut x = vec![0f32; 32];
        x[0] = 127.0;
        x[1] = 2.5;
        x[2] = -2.5;
        for isa in QuantIsa::available() {
            let a = quantize_act(isa, ActQuant::Q8_0, &x, 32).unwrap();
            assert_eq!(&a.q[..3], &[127, 3, -3], "{isa:?}");
        }
    }
}
