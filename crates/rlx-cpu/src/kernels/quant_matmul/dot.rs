//! The integer block dot products of the quantized matmul, per instruction
//! set: `sum_b bscale[b] * sum_{g in b} gscale[g] * (w_q[g] · x_q[g])`,
//! where `w_q` and `x_q` are i8 quants, groups `g` hold 16 or 32 of them
//! and blocks `b` hold `block` of them. Integer sums are exact; only the
//! float accumulation order differs between the paths.

/// Which instruction set a quantized matmul runs with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum QuantIsa {
    /// Portable Rust.
    Scalar,
    /// x86-64 AVX2 + FMA + F16C (`vpmaddubsw` / `vpmaddwd` with the sign trick).
    Avx2,
    /// x86-64 AVX-512 VNNI on 256-bit vectors (`vpdpbusd`; BW's byte masks
    /// for the 5th bits of Q5_0).
    Avx512Vnni,
    /// AArch64 NEON on any Armv8 core (`smull` + pairwise adds).
    Neon,
    /// AArch64 NEON with FEAT_DotProd (`sdot`, Armv8.2+).
    NeonDot,
}

impl QuantIsa {
    /// The instruction sets this CPU runs, slowest first.
    pub fn available() -> Vec<QuantIsa> {
        #[allow(unused_mut)]
        let mut out = vec![QuantIsa::Scalar];
        #[cfg(target_arch = "x86_64")]
        {
            if is_x86_feature_detected!("avx2")
                && is_x86_feature_detected!("fma")
                && is_x86_feature_detected!("f16c")
            {
                out.push(QuantIsa::Avx2);
                if is_x86_feature_detected!("avx512vnni")
                    && is_x86_feature_detected!("avx512vl")
                    && is_x86_feature_detected!("avx512bw")
                {
                    out.push(QuantIsa::Avx512Vnni);
                }
            }
        }
        #[cfg(target_arch = "aarch64")]
        {
            if std::arch::is_aarch64_feature_detected!("neon") {
                out.push(QuantIsa::Neon);
                if std::arch::is_aarch64_feature_detected!("dotprod") {
                    out.push(QuantIsa::NeonDot);
                }
            }
        }
        out
    }

    /// The fastest instruction set this CPU runs.
    pub fn best() -> QuantIsa {
        *QuantIsa::available()
            .last()
            .expect("scalar is always available")
    }
}

/// Arguments of one row dot.
pub(crate) struct RowDot<'a> {
    /// Weight quants.
    pub(crate) w: &'a [i8],
    /// Activation quants (same length).
    pub(crate) x: &'a [i8],
    /// Integer scale per group; `None`: all 1.
    pub(crate) gscale: Option<&'a [i32]>,
    /// Weights per group (16 or 32).
    pub(crate) group: usize,
    /// Float scale per block (`d_w * d_x`).
    pub(crate) bscale: &'a [f32],
    /// Weights per block (a multiple of 32).
    pub(crate) block: usize,
}

/// The row dot on `isa` (which must be one of [`QuantIsa::available`]).
#[inline(always)]
pub(crate) fn row_dot(isa: QuantIsa, a: &RowDot) -> f32 {
    match isa {
        QuantIsa::Scalar => row_dot_scalar(a),
        #[cfg(target_arch = "x86_64")]
        // SAFETY: the caller picked `isa` from `QuantIsa::available()`.
        QuantIsa::Avx2 => unsafe { x86::row_dot_avx2(a) },
        #[cfg(target_arch = "x86_64")]
        // SAFETY: as above.
        QuantIsa::Avx512Vnni => unsafe { x86::row_dot_vnni(a) },
        #[cfg(target_arch = "aarch64")]
        // SAFETY: as above.
        QuantIsa::Neon => unsafe { super::neon::row_dot_mull(a) },
        #[cfg(target_arch = "aarch64")]
        // SAFETY: as above.
        QuantIsa::NeonDot => unsafe { super::neon::row_dot_sdot(a) },
        _ => row_dot_scalar(a),
    }
}

/// The portable reference of the row dot.
pub(crate) fn row_dot_scalar(a: &RowDot) -> f32 {
    let mut acc = 0f32;
    for (b, &bs) in a.bscale.iter().enumerate() {
        let mut isum = 0i32;
        for g in (b * a.block..(b + 1) * a.block).step_by(a.group) {
            let d: i32 = a.w[g..g + a.group]
                .iter()
                .zip(&a.x[g..g + a.group])
                .map(|(&w, &x)| i32::from(w) * i32::from(x))
                .sum();
            isum += a.gscale.map_or(d, |s| s[g / a.group] * d);
        }
        acc += bs * isum as f32;
    }
    acc
}

/// `sum_i w[i] * x[i]` in f32 with eight partial sums (vectorizes).
#[inline(always)]
pub(crate) fn dot_f32(w: &[f32], x: &[f32]) -> f32 {
    let mut acc = [0f32; 8];
    let (wc, xc) = (w.chunks_exact(8), x.chunks_exact(8));
    let (wr, xr) = (wc.remainder(), xc.remainder());
    for (a, b) in wc.zip(xc) {
        for l in 0..8 {
            acc[l] += a[l] * b[l];
        }
    }
    let tail: f32 = wr.iter().zip(xr).map(|(a, b)| a * b).sum();
    acc.iter().sum::<f32>() + tail
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::RowDot;
    use std::arch::x86_64::*;

    #[inline(always)]
    unsafe fn hsum_ps(v: __m256) -> f32 {
        let s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
        let s = _mm_add_ps(s, _mm_movehl_ps(s, s));
        let s = _mm_add_ss(s, _mm_movehdup_ps(s));
        _mm_cvtss_f32(s)
    }

    /// The group scales of the 32 quants at `off`, one per i32 lane (lanes
    /// 0..4 hold quants 0..16, lanes 4..8 quants 16..32).
    #[inline(always)]
    unsafe fn lane_scales(s: &[i32], group: usize, off: usize) -> __m256i {
        if group == 32 {
            _mm256_set1_epi32(s[off / 32])
        } else {
            let (a, b) = (s[off / 16], s[off / 16 + 1]);
            _mm256_setr_epi32(a, a, a, a, b, b, b, b)
        }
    }

    /// The shared loop; `dot4` turns 32 weight / activation quants into
    /// eight i32 lanes of four-product sums.
    #[inline(always)]
    unsafe fn row_dot_with(a: &RowDot, dot4: impl Fn(__m256i, __m256i) -> __m256i) -> f32 {
        let mut acc = _mm256_setzero_ps();
        let (wp, xp) = (a.w.as_ptr(), a.x.as_ptr());
        for (b, &bs) in a.bscale.iter().enumerate() {
            let mut iacc = _mm256_setzero_si256();
            for off in (b * a.block..(b + 1) * a.block).step_by(32) {
                let wv = _mm256_loadu_si256(wp.add(off) as *const __m256i);
                let xv = _mm256_loadu_si256(xp.add(off) as *const __m256i);
                // |w| (unsigned) times x with w's sign: u8 x i8 products.
                let mut p = dot4(_mm256_sign_epi8(wv, wv), _mm256_sign_epi8(xv, wv));
                if let Some(s) = a.gscale {
                    p = _mm256_mullo_epi32(p, lane_scales(s, a.group, off));
                }
                iacc = _mm256_add_epi32(iacc, p);
            }
            acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(iacc), _mm256_set1_ps(bs), acc);
        }
        hsum_ps(acc)
    }

    /// AVX2 row dot. Safety: the CPU has AVX2 and FMA; `w` / `x` hold the
    /// blocks `bscale` names.
    #[target_feature(enable = "avx2,fma")]
    pub(crate) unsafe fn row_dot_avx2(a: &RowDot) -> f32 {
        assert!(a.w.len() >= a.bscale.len() * a.block && a.x.len() >= a.w.len());
        let ones = _mm256_set1_epi16(1);
        row_dot_with(a, |u, s| {
            _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), ones)
        })
    }

    /// AVX-512 VNNI row dot (256-bit `vpdpbusd`). Safety: the CPU has
    /// AVX2, FMA, AVX512-VNNI and AVX512-VL; sizes as for the AVX2 path.
    #[target_feature(enable = "avx2,fma,avx512f,avx512vl,avx512vnni")]
    pub(crate) unsafe fn row_dot_vnni(a: &RowDot) -> f32 {
        assert!(a.w.len() >= a.bscale.len() * a.block && a.x.len() >= a.w.len());
        row_dot_with(a, |u, s| _mm256_dpbusd_epi32(_mm256_setzero_si256(), u, s))
    }
}
