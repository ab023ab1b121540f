//! SiLU of f32 values, vectorised and bit-identical to the scalar
//! `x * sigmoid(x)` of [`super::elementwise`] on glibc hosts.
//!
//! The LLM's SwiGLU gate runs `silu(gate) * up` over every prefill row; the
//! scalar path calls libm's `expf` per element (~6 ns, 8-9 % of a SmolLM2
//! prefill). [`super::fastmath`]'s vectorised SiLU rounds differently in
//! the last bit, which flipped a greedy token of the llama.cpp parity test
//! (commit ddfe0ca), so it stays off this op. Here `exp` is glibc's own
//! algorithm (ARM optimized-routines' `expf`: `x * 32 / ln 2 = k + r`,
//! `2^(k/32)` from a 32-entry table of doubles, a cubic in `r`, all in f64,
//! one rounding to f32 at the end, 0.502 ulp) evaluated 8 lanes at a time,
//! so each `exp` equals libm's bit for bit (a dense sweep in the tests;
//! every f32 input in the ignored `silu_matches_scalar_on_every_f32`); the
//! sigmoid and product are the scalar path's operations in its order.

/// `2^(i/32)` rounded to binary64, minus `i << 47` (so adding `k << 47`
/// for `k = 32 q + i` yields `2^(k/32)`); `tools/gen_expf_table.py` prints it.
#[cfg(target_arch = "x86_64")]
const EXP2_TABLE: [u64; 32] = [
    0x3ff0000000000000,
    0x3fefd9b0d3158574,
    0x3fefb5586cf9890f,
    0x3fef9301d0125b51,
    0x3fef72b83c7d517b,
    0x3fef54873168b9aa,
    0x3fef387a6e756238,
    0x3fef1e9df51fdee1,
    0x3fef06fe0a31b715,
    0x3feef1a7373aa9cb,
    0x3feedea64c123422,
    0x3feece086061892d,
    0x3feebfdad5362a27,
    0x3feeb42b569d4f82,
    0x3feeab07dd485429,
    0x3feea47eb03a5585,
    0x3feea09e667f3bcd,
    0x3fee9f75e8ec5f74,
    0x3feea11473eb0187,
    0x3feea589994cce13,
    0x3feeace5422aa0db,
    0x3feeb737b0cdc5e5,
    0x3feec49182a3f090,
    0x3feed503b23e255d,
    0x3feee89f995ad3ad,
    0x3feeff76f2fb5e47,
    0x3fef199bdd85529c,
    0x3fef3720dcef9069,
    0x3fef5818dcfba487,
    0x3fef7c97337b9b5f,
    0x3fefa4afa2a490da,
    0x3fefd0765b6e4540,
];

/// `32 / ln 2` (binary64 of `1 / ln 2`, times 32).
#[cfg(target_arch = "x86_64")]
const INV_LN2_32: f64 = f64::from_bits(0x3ff71547652b82fe) * 32.0;
/// `1.5 * 2^52`: adding it rounds to an integer held in the low mantissa bits.
#[cfg(target_arch = "x86_64")]
const SHIFT: f64 = 6755399441055744.0;
/// The cubic's coefficients (ARM optimized-routines' `exp2f` fit, scaled by
/// `1/32^3`, `1/32^2`, `1/32`).
#[cfg(target_arch = "x86_64")]
const C0: f64 = f64::from_bits(0x3fac6af84b912394) / 32768.0;
#[cfg(target_arch = "x86_64")]
const C1: f64 = f64::from_bits(0x3fcebfce50fac4f3) / 1024.0;
#[cfg(target_arch = "x86_64")]
const C2: f64 = f64::from_bits(0x3fe62e42ff0c52d6) / 32.0;
/// Above this `exp` overflows f32; below [`UNDERFLOW`] it rounds to zero.
#[cfg(target_arch = "x86_64")]
const OVERFLOW: f32 = 88.72283;
#[cfg(target_arch = "x86_64")]
const UNDERFLOW: f32 = -103.97208;

/// `y[i] = x[i] * sigmoid(x[i])`, bit-identical to the scalar unary op.
pub(crate) fn silu_f32(x: &[f32], y: &mut [f32]) {
    assert_eq!(x.len(), y.len(), "silu_f32 operand lengths");
    #[cfg_attr(not(target_arch = "x86_64"), allow(unused_mut))]
    let mut done = 0;
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx512f")
        && std::arch::is_x86_feature_detected!("avx512vl")
    {
        // SAFETY: the CPU has AVX-512 F / VL (and so AVX2 and FMA).
        done = unsafe { avx512::silu(x, y) };
    }
    for (o, &v) in y[done..].iter_mut().zip(&x[done..]) {
        *o = silu_scalar(v);
    }
}

/// The scalar op's SiLU: `x / (1 + e^-x)` for `x >= 0`, else
/// `e^x / (1 + e^x)` times `x`.
#[inline]
fn silu_scalar(v: f32) -> f32 {
    let s = if v >= 0.0 {
        1.0 / (1.0 + (-v).exp())
    } else {
        let e = v.exp();
        e / (1.0 + e)
    };
    v * s
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    use super::*;
    use std::arch::x86_64::*;

    /// SiLU of the leading multiple of 8 of `x` into `y`; returns how many.
    #[target_feature(enable = "avx512f,avx512vl,avx2,fma")]
    pub(super) fn silu(x: &[f32], y: &mut [f32]) -> usize {
        let n = x.len() / 8 * 8;
        let tab = Table::load();
        let zero = _mm256_setzero_ps();
        let one = _mm256_set1_ps(1.0);
        for i in (0..n).step_by(8) {
            // SAFETY: i + 8 <= n <= len of both slices.
            let v = unsafe { _mm256_loadu_ps(x.as_ptr().add(i)) };
            let nonneg = _mm256_cmp_ps_mask::<_CMP_GE_OQ>(v, zero);
            // exp(-x) for x >= 0, exp(x) otherwise (and NaN for NaN).
            let a = _mm256_mask_sub_ps(v, nonneg, zero, v);
            let e = exp8(a, &tab);
            let num = _mm256_mask_blend_ps(nonneg, e, one);
            let s = _mm256_div_ps(num, _mm256_add_ps(one, e));
            // SAFETY: as the load.
            unsafe { _mm256_storeu_ps(y.as_mut_ptr().add(i), _mm256_mul_ps(v, s)) };
        }
        n
    }

    /// [`EXP2_TABLE`] in four registers.
    struct Table([__m512i; 4]);

    impl Table {
        #[target_feature(enable = "avx512f")]
        fn load() -> Self {
            let p = EXP2_TABLE.as_ptr() as *const __m512i;
            // SAFETY: the table has 32 u64 = four 512-bit loads.
            unsafe {
                Table([
                    _mm512_loadu_si512(p),
                    _mm512_loadu_si512(p.add(1)),
                    _mm512_loadu_si512(p.add(2)),
                    _mm512_loadu_si512(p.add(3)),
                ])
            }
        }
    }

    /// libm's `expf` of 8 lanes, bit for bit (see the module doc).
    #[target_feature(enable = "avx512f,avx512vl,avx2,fma")]
    fn exp8(a: __m256, tab: &Table) -> __m256 {
        let xd = _mm512_cvtps_pd(a);
        // `x * 32 / ln 2` fused into both uses, as glibc's FMA build
        // contracts it (the unfused product differs at x = -63.09946).
        let inv = _mm512_set1_pd(INV_LN2_32);
        let shift = _mm512_set1_pd(SHIFT);
        let kd = _mm512_fmadd_pd(inv, xd, shift);
        let ki = _mm512_castpd_si512(kd);
        let r = _mm512_fmsub_pd(inv, xd, _mm512_sub_pd(kd, shift));
        // T[k % 32]: entries 0-15 / 16-31 by the low 4 bits, bit 4 picks.
        let lo = _mm512_permutex2var_epi64(tab.0[0], ki, tab.0[1]);
        let hi = _mm512_permutex2var_epi64(tab.0[2], ki, tab.0[3]);
        let upper = _mm512_test_epi64_mask(ki, _mm512_set1_epi64(16));
        let t = _mm512_mask_blend_epi64(upper, lo, hi);
        let s = _mm512_castsi512_pd(_mm512_add_epi64(t, _mm512_slli_epi64::<47>(ki)));
        let p = _mm512_fmadd_pd(_mm512_set1_pd(C0), r, _mm512_set1_pd(C1));
        let r2 = _mm512_mul_pd(r, r);
        let q = _mm512_fmadd_pd(_mm512_set1_pd(C2), r, _mm512_set1_pd(1.0));
        let y = _mm512_mul_pd(_mm512_fmadd_pd(p, r2, q), s);
        let out = _mm512_cvtpd_ps(y);
        // Out of range: 0 below, inf above; NaN passes through.
        let under = _mm256_cmp_ps_mask::<_CMP_LT_OQ>(a, _mm256_set1_ps(UNDERFLOW));
        let over = _mm256_cmp_ps_mask::<_CMP_GT_OQ>(a, _mm256_set1_ps(OVERFLOW));
        let nan = _mm256_cmp_ps_mask::<_CMP_UNORD_Q>(a, a);
        let out = _mm256_mask_blend_ps(under, out, _mm256_setzero_ps());
        let out = _mm256_mask_blend_ps(over, out, _mm256_set1_ps(f32::INFINITY));
        _mm256_mask_blend_ps(nan, out, a)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A dense sweep (every 61st f32 in [-110, 110], plus edges): each
    /// SiLU equals the scalar op bit for bit where libm is glibc's, and is
    /// within 4 ulp of the f64 reference `x / (1 + e^-x)` for |x| <= 87.
    #[test]
    fn silu_matches_scalar_and_f64() {
        let mut x: Vec<f32> = Vec::new();
        let mut b = (-110.0f32).to_bits();
        while b > 0x8000_0000 {
            x.push(f32::from_bits(b));
            b -= 61;
        }
        let mut b = 0u32;
        while f32::from_bits(b) < 110.0 {
            x.push(f32::from_bits(b));
            b += 61;
        }
        x.extend([
            0.0, -0.0, 88.72283, 88.72284, -103.97208, -103.9721, 1e30, -1e30,
        ]);
        x.extend([f32::INFINITY, f32::NEG_INFINITY, f32::MIN_POSITIVE, -1e-45]);
        let mut y = vec![0f32; x.len()];
        silu_f32(&x, &mut y);
        let mut worst = 0f64;
        for (&v, &got) in x.iter().zip(&y) {
            if cfg!(target_env = "gnu") {
                assert_same(v, got);
            }
            let r = v as f64 / (1.0 + (-(v as f64)).exp());
            // Below -87 `e^x` is subnormal in f32 (the formula's own loss).
            if v.abs() <= 87.0 && r != 0.0 {
                let ulp = (r as f32).abs().next_up() - (r as f32).abs();
                worst = worst.max((got as f64 - r).abs() / ulp as f64);
            }
        }
        // The scalar formula's own error: `1 + e^x` rounds e^x away below
        // x ~ -16 (3.2 ulp at worst in this sweep).
        assert!(worst < 4.0, "worst error {worst} ulp");
        let mut n = [0f32; 9];
        silu_f32(&[f32::NAN; 9], &mut n);
        assert!(n.iter().all(|v| v.is_nan()));
    }

    /// `got` is the scalar op's SiLU of `v` bit for bit (any NaN for NaN).
    fn assert_same(v: f32, got: f32) {
        let want = silu_scalar(v);
        assert!(
            got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()),
            "silu({v:e}): {got:e} vs scalar {want:e}"
        );
    }

    /// Every f32 input, in slices of 4096 (a minute or two):
    /// `cargo test -p rlx-cpu --release --lib silu_exact -- --ignored`.
    #[test]
    #[ignore = "sweeps all 2^32 inputs"]
    fn silu_matches_scalar_on_every_f32() {
        if !cfg!(target_env = "gnu") {
            return;
        }
        let mut x = vec![0f32; 4096];
        let mut y = vec![0f32; 4096];
        for hi in 0..(1u64 << 20) {
            for (j, v) in x.iter_mut().enumerate() {
                *v = f32::from_bits(((hi << 12) | j as u64) as u32);
            }
            silu_f32(&x, &mut y);
            for (&v, &got) in x.iter().zip(&y) {
                assert_same(v, got);
            }
        }
    }
}
