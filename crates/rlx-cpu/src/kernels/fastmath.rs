//! Vectorised f32 `exp` (softmax rows, `Exp`), `log`, exact GELU, tanh,
//! sigmoid and SiLU.
//!
//! Softmax and GELU spend most of their time in `exp` / `erf` once the
//! products around them run on a GEMM; libm is a call per element. Here `exp` is a
//! Cody-Waite range reduction (`x = n ln2 + r`, `|r| <= ln2 / 2`), a degree-6
//! Taylor polynomial for `e^r` (relative error below 2e-7) and `2^n` built in
//! the exponent bits: straight-line code that the compiler vectorises, built
//! once more with AVX2 + FMA enabled and picked at run time. The polynomials
//! are `mul_add` chains in Estrin's scheme (independent FMAs, few dependent
//! steps), one FMA per step on those builds; GELU's chain, still longer than
//! the out-of-order window overlaps, is cut into loops ([`gelu_f32`]).
//!
//! On AVX-512 the sigmoid is its own form in intrinsics ([`sigmoid16`]:
//! `1 / (1 + e^-x)` with `e^t` from a 16-entry `2^(i / 16)` table and a
//! cubic polynomial, no sign selects), used alike by the Sigmoid op, its
//! biased form and the conv epilogue's SiLU (`x * sigmoid16(x)`), so a
//! fused SiLU keeps the unfused op's bits: about a third less time per
//! vector than the autovectorised form.

use super::scalar::Real;

/// Runs `$each(args..)` built for AVX-512, for AVX2 + FMA or for the
/// baseline, the best the CPU runs picked at run time.
macro_rules! dispatch {
    ($each:ident($($arg:ident: $ty:ty),*)) => {{
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "avx512f,avx2,fma")]
        unsafe fn avx512($($arg: $ty),*) {
            $each($($arg),*)
        }
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "avx2,fma")]
        unsafe fn avx2($($arg: $ty),*) {
            $each($($arg),*)
        }
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx512f") {
            // SAFETY: the CPU has AVX-512F (and so AVX2 and FMA).
            return unsafe { avx512($($arg),*) };
        }
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
            // SAFETY: the CPU has AVX2 and FMA.
            return unsafe { avx2($($arg),*) };
        }
        $each($($arg),*)
    }};
}

/// Defines `pub fn $name(x: &[f32], y: &mut [f32])`, `y[i] = $one(x[i])`,
/// and `pub fn $biased(y: &mut [f32], bias: &[f32])`,
/// `y[i] = $one(y[i] + bias[i])` in one pass (a matmul's bias +
/// activation epilogue), each vectorised as [`dispatch`] says.
macro_rules! vectorised_map {
    ($(#[$doc:meta])* $name:ident, $one:expr $(, biased: $biased:ident)?) => {
        $(#[$doc])*
        pub(crate) fn $name(x: &[f32], y: &mut [f32]) {
            assert_eq!(x.len(), y.len(), concat!(stringify!($name), " operand lengths"));
            #[inline(always)]
            fn each(x: &[f32], y: &mut [f32]) {
                for (o, &v) in y.iter_mut().zip(x) {
                    *o = $one(v);
                }
            }
            dispatch!(each(x: &[f32], y: &mut [f32]))
        }

        $(
        #[doc = concat!("`y[i] = ", stringify!($name), "(y[i] + bias[i])` in one pass.")]
        pub(crate) fn $biased(y: &mut [f32], bias: &[f32]) {
            assert_eq!(y.len(), bias.len(), concat!(stringify!($biased), " operand lengths"));
            #[inline(always)]
            fn each(y: &mut [f32], bias: &[f32]) {
                for (o, &b) in y.iter_mut().zip(bias) {
                    *o = $one(*o + b);
                }
            }
            dispatch!(each(y: &mut [f32], bias: &[f32]))
        }
        )?

    };
}

/// Exact (erf) GELU of f32 values: `y = x * erfc(-x / sqrt 2) / 2`, with
/// erfc from the Chebyshev fit of Numerical Recipes' `erfcc` (relative
/// error below 1.2e-7 over the whole line, so the negative tail keeps its
/// relative accuracy where `1 + erf` would cancel).
pub(crate) fn gelu_f32(x: &[f32], y: &mut [f32]) {
    assert_eq!(x.len(), y.len(), "gelu_f32 operand lengths");
    #[inline(always)]
    fn each(x: &[f32], y: &mut [f32]) {
        gelu_in_loops(Some(x), y);
    }
    dispatch!(each(x: &[f32], y: &mut [f32]))
}

/// `y[i] = gelu_f32(y[i] + bias[i])`: the sum is formed once, in place.
pub(crate) fn gelu_biased_f32(y: &mut [f32], bias: &[f32]) {
    assert_eq!(y.len(), bias.len(), "gelu_biased_f32 operand lengths");
    #[inline(always)]
    fn each(y: &mut [f32], bias: &[f32]) {
        y.iter_mut().zip(bias).for_each(|(o, &b)| *o += b);
        gelu_in_loops(None, y);
    }
    dispatch!(each(y: &mut [f32], bias: &[f32]))
}

vectorised_map!(
    /// tanh of f32 values within 4e-7 relative error: the odd Taylor series
    /// to x^17 below |x| = 0.55 (where `1 - 2 / (e^2x + 1)` would cancel),
    /// that form with the vectorised [`exp_f32`] above; NaN stays NaN.
    tanh_f32,
    tanh_one,
    biased: tanh_biased_f32
);

#[inline(always)]
fn tanh_one(v: f32) -> f32 {
    let a = v.abs();
    let z = a * a;
    // tanh x = x - x^3/3 + 2x^5/15 - 17x^7/315 + ... (Bernoulli numbers).
    let p: f32 = 6_404_582.0 / 10_854_718_875.0;
    let p = p.mul_add(z, -(929_569.0 / 638_512_875.0));
    let p = p.mul_add(z, 21_844.0 / 6_081_075.0);
    let p = p.mul_add(z, -(1_382.0 / 155_925.0));
    let p = p.mul_add(z, 62.0 / 2_835.0);
    let p = p.mul_add(z, -(17.0 / 315.0));
    let p = p.mul_add(z, 2.0 / 15.0);
    let p = p.mul_add(z, -(1.0 / 3.0));
    let small = a + a * z * p;
    let large = 1.0 - 2.0 / (exp_f32(2.0 * a) + 1.0);
    let t = if a < 0.55 { small } else { large };
    t.copysign(v)
}

/// Logistic sigmoid of f32 values within 3e-7 relative error, NaN stays
/// NaN. On AVX-512 [`sigmoid16`]'s `1 / (1 + e^-x)`; elsewhere
/// [`sigmoid_one`]'s `e = exp(-|x|)`, `1 / (1 + e)` for x >= 0 and
/// `e / (1 + e)` below. [`silu_in_place_f32`] multiplies by the same
/// sigmoid, so a fused SiLU has the bits of this op then a multiply.
pub(crate) fn sigmoid_f32(x: &[f32], y: &mut [f32]) {
    assert_eq!(x.len(), y.len(), "sigmoid_f32 operand lengths");
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx512f") {
        // SAFETY: the CPU has AVX-512F.
        return unsafe { sigmoid_avx512(x, y) };
    }
    #[inline(always)]
    fn each(x: &[f32], y: &mut [f32]) {
        for (o, &v) in y.iter_mut().zip(x) {
            *o = sigmoid_one(v);
        }
    }
    dispatch!(each(x: &[f32], y: &mut [f32]))
}

/// `y[i] = sigmoid_f32(y[i] + bias[i])` in one pass (a matmul's bias +
/// activation epilogue): the sum rounded to f32 first, as the unfused add.
pub(crate) fn sigmoid_biased_f32(y: &mut [f32], bias: &[f32]) {
    assert_eq!(y.len(), bias.len(), "sigmoid_biased_f32 operand lengths");
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx512f") {
        // SAFETY: the CPU has AVX-512F.
        return unsafe { sigmoid_biased_avx512(y, bias) };
    }
    #[inline(always)]
    fn each(y: &mut [f32], bias: &[f32]) {
        for (o, &b) in y.iter_mut().zip(bias) {
            *o = sigmoid_one(*o + b);
        }
    }
    dispatch!(each(y: &mut [f32], bias: &[f32]))
}

/// SiLU (swish) of f32 values in place, `y = y * sigmoid(y)` with
/// [`sigmoid_f32`]'s sigmoid (the same instructions on each path, AVX-512
/// tail included): the leading SiLU of a fused conv's epilogue
/// (YOLO-style detectors apply it after every conv). Each element is
/// computed alone, so any split of a slice (tiles, rows, blocks) gives the
/// same bits, and they are the bits of the unfused sigmoid then multiply:
/// fusing a conv's epilogue must not change its result
/// (`conv_epilogue::tests::check_fused_bits`). The elementwise `silu` op
/// keeps its scalar path: LLM decoding (SwiGLU) is checked token for
/// token against llama.cpp, where last-bit differences flip greedy tokens.
pub(crate) fn silu_in_place_f32(y: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx512f") {
        // SAFETY: the CPU has AVX-512F.
        return unsafe { silu_avx512(y) };
    }
    #[inline(always)]
    fn each(y: &mut [f32]) {
        for o in y.iter_mut() {
            *o = silu_one(*o);
        }
    }
    dispatch!(each(y: &mut [f32]))
}

/// [`sigmoid_f32`] on AVX-512. The closures passed to [`lanes16_avx512`]
/// are defined in functions built for AVX-512, so they inherit it and
/// [`sigmoid16`] inlines into them (from a plain function it is a call per
/// vector: no faster than the autovectorised [`sigmoid_one`]).
///
/// # Safety
/// The CPU must have AVX-512F.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn sigmoid_avx512(x: &[f32], y: &mut [f32]) {
    let n = x.len().min(y.len());
    // SAFETY: `n` floats in `x` and `y`; the CPU has AVX-512F.
    unsafe {
        lanes16_avx512(x.as_ptr(), x.as_ptr(), y.as_mut_ptr(), n, |v, _| {
            sigmoid16(v)
        })
    }
}

/// [`sigmoid_biased_f32`] on AVX-512.
///
/// # Safety
/// The CPU must have AVX-512F.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn sigmoid_biased_avx512(y: &mut [f32], bias: &[f32]) {
    use std::arch::x86_64::_mm512_add_ps;
    let (n, p) = (y.len().min(bias.len()), y.as_mut_ptr());
    // SAFETY: `n` floats in `y` and `bias`; the CPU has AVX-512F.
    unsafe {
        lanes16_avx512(p, bias.as_ptr(), p, n, |v, b| {
            sigmoid16(_mm512_add_ps(v, b))
        })
    }
}

/// [`silu_in_place_f32`] on AVX-512: `v * sigmoid16(v)`.
///
/// # Safety
/// The CPU must have AVX-512F.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn silu_avx512(y: &mut [f32]) {
    use std::arch::x86_64::_mm512_mul_ps;
    let (n, p) = (y.len(), y.as_mut_ptr());
    // SAFETY: `n` floats at `p`; the CPU has AVX-512F.
    unsafe { lanes16_avx512(p, p, p, n, |v, _| _mm512_mul_ps(v, sigmoid16(v))) }
}

/// `out[i] = f(a[i], b[i])` for `i < n`, 16 lanes a step, the last partial
/// vector under a mask (its lanes loaded as 0 and not stored), so every
/// element gets the same instructions whatever the slice's length or
/// offset.
///
/// # Safety
/// The CPU must have AVX-512F; `a` and `b` must be valid for `n` reads and
/// `out` for `n` writes (it may be `a` or `b`: lane `i` is read before it
/// is written).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
unsafe fn lanes16_avx512(
    a: *const f32,
    b: *const f32,
    out: *mut f32,
    n: usize,
    f: impl Fn(std::arch::x86_64::__m512, std::arch::x86_64::__m512) -> std::arch::x86_64::__m512,
) {
    use std::arch::x86_64::*;
    let mut i = 0;
    while i + 16 <= n {
        // SAFETY: 16 floats at `i` in each.
        unsafe {
            let v = f(_mm512_loadu_ps(a.add(i)), _mm512_loadu_ps(b.add(i)));
            _mm512_storeu_ps(out.add(i), v);
        }
        i += 16;
    }
    if i < n {
        let m = ((1u32 << (n - i)) - 1) as __mmask16;
        // SAFETY: the mask covers the `n - i < 16` floats left only.
        unsafe {
            let v = f(
                _mm512_maskz_loadu_ps(m, a.add(i)),
                _mm512_maskz_loadu_ps(m, b.add(i)),
            );
            _mm512_mask_storeu_ps(out.add(i), m, v);
        }
    }
}

/// Bits of `2^(i / 16)` (rounded to f32) minus `i << 19`, `i` in 0..16:
/// adding `k << 19` for `k = 16 q + i` gives the bits of `2^(k / 16)` (the
/// low four bits of `k` cancel, `q` lands in the exponent field), one table
/// lookup and one integer add for the whole `2^n` of [`sigmoid16`].
/// Printed by `tools/gen_sigmoid_exp2_table.py`.
#[cfg(target_arch = "x86_64")]
const EXP2_16THS: [u32; 16] = [
    0x3f800000, 0x3f7daac3, 0x3f7b95c2, 0x3f79c3d3, 0x3f7837f0, 0x3f76f532, 0x3f75fed7, 0x3f75583f,
    0x3f7504f3, 0x3f7508a4, 0x3f75672a, 0x3f76248c, 0x3f7744fd, 0x3f78ccdf, 0x3f7ac0c7, 0x3f7d257d,
];

/// `1 / (1 + e^-x)` on 16 lanes, within 2.5e-7 relative error over
/// -87 .. 28 (measured every 2.9e-5). `e^t` (`t = -x`) reduces
/// `t = k ln2 / 16 + r`, `|r| <= ln2 / 32`, so a cubic Taylor polynomial
/// (truncation under 1e-8) suffices; `2^(k / 16)` is [`EXP2_16THS`]
/// looked up by `vpermps` on the low bits of `k` plus `k << 19` added to
/// its bits (oneDNN / MLAS style): 17 instructions against 19 with a
/// degree-7 polynomial and `vscalefps`, about 25 % less time per vector
/// (Zen 4). `t` is held at -87 and above (`e^-87` is a normal f32 and
/// the exponent add cannot underflow; `1 + e` rounds to 1 there) and
/// lanes with `x < -88` (where `e` would overflow the exponent field)
/// are zeroed by the division's mask: the result is subnormal from
/// x = -87.3, 0 below -88 (the true value under 6e-39), so the tests'
/// flush floor below -87 holds. `e^-x` within f32 range keeps the
/// negative tail's relative accuracy (no `1 - e` cancels). NaN stays NaN
/// (it fails no comparison that zeroes it), -inf gives 0, +inf 1. YOLO
/// runs it after every conv.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
#[inline]
fn sigmoid16(x: std::arch::x86_64::__m512) -> std::arch::x86_64::__m512 {
    use std::arch::x86_64::*;
    const LN2_HI: f32 = 0.693_145_75;
    const LN2_LO: f32 = 1.428_606_8e-6;
    // 1.5 * 2^23: adding it rounds to an integer held in the low mantissa
    // bits (two's complement for negative `k`).
    const SHIFTER: f32 = 12_582_912.0;
    let c = _mm512_set1_ps;
    // max returns its second operand when either is NaN: a NaN `t` passes.
    let t = _mm512_max_ps(c(-87.0), _mm512_sub_ps(c(0.0), x));
    let kf = _mm512_fmadd_ps(t, c(16.0 * std::f32::consts::LOG2_E), c(SHIFTER));
    let k = _mm512_sub_ps(kf, c(SHIFTER));
    let r = _mm512_fnmadd_ps(
        k,
        c(LN2_LO / 16.0),
        _mm512_fnmadd_ps(k, c(LN2_HI / 16.0), t),
    );
    let kbits = _mm512_castps_si512(kf);
    // SAFETY: the table is 16 u32s (one zmm), read unaligned.
    let table = unsafe { _mm512_loadu_si512(EXP2_16THS.as_ptr().cast()) };
    // vpermps reads the low four bits of each lane's index: `k mod 16`.
    let frac = _mm512_permutexvar_epi32(kbits, table);
    let scale = _mm512_castsi512_ps(_mm512_add_epi32(frac, _mm512_slli_epi32::<19>(kbits)));
    let r2 = _mm512_mul_ps(r, r);
    let p = _mm512_fmadd_ps(
        r2,
        _mm512_fmadd_ps(r, c(1.0 / 6.0), c(0.5)),
        _mm512_add_ps(r, c(1.0)),
    );
    let e = _mm512_mul_ps(scale, p);
    // `x >= -88` or unordered (NaN): the other lanes are 0.
    let keep = _mm512_cmp_ps_mask::<_CMP_NLT_UQ>(x, c(-88.0));
    _mm512_maskz_div_ps(keep, c(1.0), _mm512_add_ps(c(1.0), e))
}

#[inline(always)]
fn sigmoid_one(v: f32) -> f32 {
    let e = exp_f32(-v.abs());
    let s = 1.0 / (1.0 + e);
    // `v < 0` is false for NaN, whose `s` is NaN already.
    if v < 0.0 {
        e * s
    } else {
        s
    }
}

#[inline(always)]
fn silu_one(v: f32) -> f32 {
    v * sigmoid_one(v)
}

/// `y = act(y + bias)` over a row in place.
pub(crate) type BiasedActivation = fn(&mut [f32], &[f32]);

/// The one-pass `y = act(y + bias)` of an activation, where there is one.
pub(crate) fn biased_in_place(act: rlx_ir::op::UnaryOp) -> Option<BiasedActivation> {
    use rlx_ir::op::UnaryOp;
    match act {
        UnaryOp::Gelu => Some(gelu_biased_f32),
        UnaryOp::Tanh => Some(tanh_biased_f32),
        UnaryOp::Sigmoid => Some(sigmoid_biased_f32),
        _ => None,
    }
}

/// The first half of erfc (Numerical Recipes `erfcc`, fractional error
/// < 1.2e-7) of `a = |z|`: the exponent `P(t) - a²`
/// (with `a²` rounded) and `t = 1 / (1 + a / 2)`.
// The fit's coefficients are kept as published.
#[allow(clippy::excessive_precision)]
#[inline(always)]
fn erfc_stage_one(a: f32) -> (f32, f32) {
    let t = 1.0 / (1.0 + 0.5 * a);
    // Estrin's scheme: the degree-9 polynomial in four dependent FMA steps
    // (Horner's nine: GELU 1.84 -> 1.55 ns per element, Zen 4 AVX2).
    let t2 = t * t;
    let t4 = t2 * t2;
    let t8 = t4 * t4;
    let p01 = t.mul_add(1.000_023_68, -1.265_512_23);
    let p23 = t.mul_add(0.096_784_18, 0.374_091_96);
    let p45 = t.mul_add(0.278_868_07, -0.186_288_06);
    let p67 = t.mul_add(1.488_515_87, -1.135_203_98);
    let p89 = t.mul_add(0.170_872_77, -0.822_152_23);
    let p03 = t2.mul_add(p23, p01);
    let p47 = t2.mul_add(p67, p45);
    let p07 = t4.mul_add(p47, p03);
    let p = t8.mul_add(p89, p07);
    (p - a * a, t)
}

/// The second half of erfc, given `e = exp(arg)`: `t e` corrected
/// for the rounding of `a²`, and the reflection for negative `z`.
#[inline(always)]
fn erfc_stage_two(z: f32, e: f32, t: f32) -> f32 {
    let a = z.abs();
    // a² split into hi + lo (exact with FMA) keeps the f32 rounding of a²
    // out of the exponent (`e` holds `e^-hi`), where it would cost ~1e-6
    // relative in the tail.
    let hi = a * a;
    let lo = a.mul_add(a, -hi);
    // Beyond |z| = 10 erfc is 0 (or 2) in f32; selecting it also keeps
    // inf - inf out of `lo`.
    let ans = if a < 10.0 { t * e * (1.0 - lo) } else { 0.0 };
    if z >= 0.0 {
        ans
    } else {
        2.0 - ans
    }
}

/// Values per block of [`gelu_in_loops`]'s loops.
const GELU_BLOCK: usize = 256;

/// GELU as three loops over blocks of [`GELU_BLOCK`] values in L1 (erfc's
/// polynomial, its exp, the rest), reading `x` (or `y` itself when `x` is
/// `None`). One loop doing all kept ~90 cycles of dependent operations per
/// vector, more than the out-of-order window overlaps: 1.56 ns per element
/// against 1.19 in three (Zen 4, AVX2; the same operations, so the same
/// bits).
#[inline(always)]
fn gelu_in_loops(x: Option<&[f32]>, y: &mut [f32]) {
    let mut arg = [0f32; GELU_BLOCK];
    let mut t = [0f32; GELU_BLOCK];
    for (b, yb) in y.chunks_mut(GELU_BLOCK).enumerate() {
        let n = yb.len();
        let (arg, t) = (&mut arg[..n], &mut t[..n]);
        let xb = x.map(|x| &x[b * GELU_BLOCK..b * GELU_BLOCK + n]);
        for ((a, tv), &v) in arg.iter_mut().zip(t.iter_mut()).zip(xb.unwrap_or(yb)) {
            let (e, r) = erfc_stage_one(gelu_z(v).abs());
            *a = e;
            *tv = r;
        }
        arg.iter_mut().for_each(|a| *a = exp_f32(*a));
        match xb {
            Some(src) => {
                for (((o, &v), &a), &tv) in yb.iter_mut().zip(src).zip(&*arg).zip(&*t) {
                    *o = 0.5 * v * erfc_stage_two(gelu_z(v), a, tv);
                }
            }
            None => {
                for ((o, &a), &tv) in yb.iter_mut().zip(&*arg).zip(&*t) {
                    let v = *o;
                    *o = 0.5 * v * erfc_stage_two(gelu_z(v), a, tv);
                }
            }
        }
    }
}

/// GELU's erfc argument.
#[inline(always)]
fn gelu_z(v: f32) -> f32 {
    -v * std::f32::consts::FRAC_1_SQRT_2
}

/// Softmax numerators: `x[i] = exp(x[i] - max)` in place, returning their sum
/// in f64.
pub(crate) trait SoftmaxExp: Real {
    /// Replaces each `x` by `exp(x - max)` and returns the sum.
    fn exp_shifted_sum(x: &mut [Self], max: Self) -> f64;
}

impl SoftmaxExp for f64 {
    fn exp_shifted_sum(x: &mut [f64], max: f64) -> f64 {
        x.iter_mut().fold(0.0, |s, v| {
            *v = (*v - max).exp();
            s + *v
        })
    }
}

impl SoftmaxExp for f32 {
    fn exp_shifted_sum(x: &mut [f32], max: f32) -> f64 {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx512f") {
            // SAFETY: the CPU has AVX-512F (and so AVX2 and FMA).
            return unsafe { exp_shifted_sum_avx512(x, max) };
        }
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
        {
            // SAFETY: the CPU has AVX2 and FMA.
            return unsafe { exp_shifted_sum_avx2(x, max) };
        }
        exp_shifted_sum_f32(x, max)
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx2,fma")]
unsafe fn exp_shifted_sum_avx512(x: &mut [f32], max: f32) -> f64 {
    exp_shifted_sum_f32(x, max)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
unsafe fn exp_shifted_sum_avx2(x: &mut [f32], max: f32) -> f64 {
    exp_shifted_sum_f32(x, max)
}

#[inline(always)]
fn exp_shifted_sum_f32(x: &mut [f32], max: f32) -> f64 {
    // Lane-wise partial sums keep the loop vectorisable.
    let mut acc = [0f32; 16];
    let mut chunks = x.chunks_exact_mut(16);
    for c in &mut chunks {
        for (a, v) in acc.iter_mut().zip(c.iter_mut()) {
            *v = exp_f32(*v - max);
            *a += *v;
        }
    }
    let mut sum: f64 = acc.iter().map(|&a| a as f64).sum();
    for v in chunks.into_remainder() {
        *v = exp_f32(*v - max);
        sum += *v as f64;
    }
    sum
}

/// `e^x` for f32 within 2e-7 relative error; 0 below -87 (where the true
/// value is under 2e-38), +inf above 88.7, NaN for NaN.
#[inline(always)]
pub(crate) fn exp_f32(x: f32) -> f32 {
    const LOG2E: f32 = std::f32::consts::LOG2_E;
    const LN2_HI: f32 = 0.693_145_75;
    const LN2_LO: f32 = 1.428_606_8e-6;
    let xc = x.clamp(-87.0, 88.0);
    let n = (xc * LOG2E).round_ties_even();
    let r = n.mul_add(-LN2_LO, n.mul_add(-LN2_HI, xc));
    // Taylor to r^6 by Estrin's scheme (three dependent FMA steps, not six).
    let r2 = r * r;
    let r4 = r2 * r2;
    let p01 = r + 1.0;
    let p23 = r.mul_add(1.0 / 6.0, 0.5);
    let p45 = r.mul_add(1.0 / 120.0, 1.0 / 24.0);
    let p46 = r2.mul_add(1.0 / 720.0, p45);
    let p = r4.mul_add(p46, r2.mul_add(p23, p01));
    // 2^n from the exponent bits. n + 127 lies in 1..=254; adding 2^23 puts
    // it in the low mantissa bits exactly, a float-only route that keeps the
    // loop vectorised (a saturating `as i32` cast does not vectorise).
    let biased = (n + (127.0 + 8_388_608.0)).to_bits() & 0x7f_ffff;
    let scale = f32::from_bits(biased << 23);
    let y = p * scale;
    if x < -87.0 {
        0.0
    } else if x > 88.72 {
        f32::INFINITY
    } else {
        y
    }
}

/// Natural log of f32 within 2e-7 relative error (Cephes' `logf`
/// decomposition: `x = m 2^e` with `m` in `[sqrt(1/2), sqrt(2))`, a degree-8
/// polynomial in `m - 1`, `e ln 2` in two parts); subnormals are scaled
/// into range first; `log 0 = -inf`, `log inf = inf`, NaN for negatives and
/// NaN. Branch-free, so a loop of it vectorises.
#[inline(always)]
pub(crate) fn log_f32(x: f32) -> f32 {
    const LN2_HI: f32 = 0.693_359_4;
    const LN2_LO: f32 = -2.121_944_4e-4;
    const A: [f32; 9] = [
        3.333_333e-1,
        -2.499_999_4e-1,
        2.000_071_5e-1,
        -1.666_805_8e-1,
        1.424_932_3e-1,
        -1.242_014_1e-1,
        1.167_699_9e-1,
        -1.151_461e-1,
        7.037_683_6e-2,
    ];
    let tiny = x < f32::MIN_POSITIVE;
    let scaled = if tiny { x * 8_388_608.0 } else { x };
    let bits = scaled.to_bits();
    let exponent = ((bits >> 23) & 0xff) as i32 - if tiny { 126 + 23 } else { 126 };
    // The mantissa in [0.5, 1), then folded into [sqrt(1/2), sqrt(2)).
    let m = f32::from_bits((bits & 0x007f_ffff) | 0x3f00_0000);
    let low = m < std::f32::consts::FRAC_1_SQRT_2;
    let f = if low { m + m - 1.0 } else { m - 1.0 };
    let e = (exponent - i32::from(low)) as f32;
    // f z P(f) by Estrin's scheme.
    let z = f * f;
    let z2 = z * z;
    let p01 = f.mul_add(A[1], A[0]);
    let p23 = f.mul_add(A[3], A[2]);
    let p45 = f.mul_add(A[5], A[4]);
    let p67 = f.mul_add(A[7], A[6]);
    let p03 = z.mul_add(p23, p01);
    let p47 = z.mul_add(p67, p45);
    let p = (z2 * z2).mul_add(A[8], z2.mul_add(p47, p03));
    let y = e.mul_add(LN2_LO, (f * z).mul_add(p, -0.5 * z));
    let r = e.mul_add(LN2_HI, f + y);
    if x == 0.0 {
        f32::NEG_INFINITY
    } else if x == f32::INFINITY {
        x
    } else if x < 0.0 || x.is_nan() {
        f32::NAN
    } else {
        r
    }
}

vectorised_map!(
    /// `e^x` of f32 values by [`exp_f32`].
    exp_map_f32,
    exp_f32
);

vectorised_map!(
    /// Natural log of f32 values by [`log_f32`].
    log_map_f32,
    log_f32
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_f32_matches_f64_ln() {
        let mut x: Vec<f32> = (0..20_000)
            .map(|i| f32::from_bits(0x0000_1000u32.wrapping_add(i * 106_400)))
            .filter(|v| v.is_finite())
            .collect();
        x.extend([1.0, 0.999_999_9, 1.000_000_1, 0.5, 2.0]);
        // Either side of the fold into [sqrt(1/2), sqrt(2)).
        let fold = std::f32::consts::FRAC_1_SQRT_2.to_bits();
        x.extend([fold - 1, fold, fold + 1].map(f32::from_bits));
        x.extend([f32::MIN_POSITIVE, 1e-45, f32::MAX, 3e-39]);
        let mut y = vec![0f32; x.len()];
        log_map_f32(&x, &mut y);
        let mut worst = 0f64;
        for (&v, &l) in x.iter().zip(&y) {
            let want = (v as f64).ln();
            let err = (l as f64 - want).abs() / want.abs().max(1e-30);
            worst = worst.max(err);
            assert!(err <= 2e-7, "log({v:e}) = {l}, want {want}");
        }
        assert!(worst > 0.0, "the test reached rounded values");
        assert_eq!(log_f32(1.0), 0.0);
        assert_eq!(log_f32(0.0), f32::NEG_INFINITY);
        assert_eq!(log_f32(-0.0), f32::NEG_INFINITY);
        assert_eq!(log_f32(f32::INFINITY), f32::INFINITY);
        assert!(log_f32(-1.0).is_nan() && log_f32(f32::NAN).is_nan());
        assert!(log_f32(f32::NEG_INFINITY).is_nan());
    }

    #[test]
    fn exp_f32_matches_f64_exp() {
        let mut worst = 0f64;
        let mut x = -87.0f32;
        while x <= 88.0 {
            let want = (x as f64).exp();
            let got = exp_f32(x) as f64;
            worst = worst.max((got - want).abs() / want);
            x += 0.0137;
        }
        assert!(worst < 3e-7, "worst relative error {worst}");
        assert_eq!(exp_f32(f32::NEG_INFINITY), 0.0);
        assert_eq!(exp_f32(-200.0), 0.0);
        assert_eq!(exp_f32(0.0), 1.0);
        assert_eq!(exp_f32(100.0), f32::INFINITY);
        assert!(exp_f32(f32::NAN).is_nan());
    }

    /// erf of f64 by its Maclaurin series (|z| < 3) or the continued
    /// fraction of erfc (larger |z|): an independent reference.
    fn erfc_f64(z: f64) -> f64 {
        if z.abs() < 3.0 {
            let (mut term, mut sum, mut n) = (z, z, 0.0);
            while term.abs() > 1e-18 {
                n += 1.0;
                term *= -z * z / n;
                sum += term / (2.0 * n + 1.0);
            }
            return 1.0 - 2.0 / std::f64::consts::PI.sqrt() * sum;
        }
        let a = z.abs();
        // Lentz-free backward evaluation of the continued fraction.
        let mut f = 0.0;
        for k in (1..200).rev() {
            f = (k as f64 / 2.0) / (a + f);
        }
        let tail = (-a * a).exp() / std::f64::consts::PI.sqrt() / (a + f);
        if z > 0.0 {
            tail
        } else {
            2.0 - tail
        }
    }

    #[test]
    fn gelu_matches_f64_erfc() {
        let x: Vec<f32> = (0..2001).map(|i| (i as f32 - 1000.0) * 0.0071).collect();
        let mut y = vec![0f32; x.len()];
        gelu_f32(&x, &mut y);
        for (&v, &g) in x.iter().zip(&y) {
            let w = 0.5 * v as f64 * erfc_f64(-(v as f64) / 2f64.sqrt());
            // GELU's condition number in the tail is about 1 + x²: rounding
            // x / sqrt 2 to f32 alone costs that many f32 epsilons.
            let tol = 4e-7 * (1.0 + (v * v) as f64) * w.abs() + 1e-12;
            assert!((g as f64 - w).abs() <= tol, "gelu({v}) = {g}, want {w}");
        }
        let mut z = [0f32; 3];
        gelu_f32(&[f32::NAN, f32::INFINITY, -30.0], &mut z);
        assert!(z[0].is_nan());
        assert_eq!(&z[1..], &[f32::INFINITY, -0.0]);
    }

    #[test]
    fn biased_activations_match_f64_of_the_sum() {
        let y0: Vec<f32> = (0..1003).map(|i| (i as f32 - 500.0) * 0.013).collect();
        let bias: Vec<f32> = (0..1003)
            .map(|i| ((i * 7) % 11) as f32 * 0.1 - 0.5)
            .collect();
        let (mut g, mut t) = (y0.clone(), y0.clone());
        gelu_biased_f32(&mut g, &bias);
        tanh_biased_f32(&mut t, &bias);
        for i in 0..y0.len() {
            let v = y0[i] + bias[i];
            let w = 0.5 * v as f64 * erfc_f64(-(v as f64) / 2f64.sqrt());
            let tol = 4e-7 * (1.0 + (v * v) as f64) * w.abs() + 1e-12;
            assert!(
                (g[i] as f64 - w).abs() <= tol,
                "gelu({v}) = {}, want {w}",
                g[i]
            );
            let w = (v as f64).tanh();
            assert!(
                (t[i] as f64 - w).abs() <= 4e-7 * w.abs() + 1e-45,
                "tanh({v})"
            );
        }
    }

    /// tools/gen_sigmoid_fixtures.py's float64 numpy sigmoid / SiLU over
    /// -100 .. 100 (dense in the subnormal tail, the table reduction's
    /// worst region and the saturation to 1; 1603 values, so the last
    /// vector is masked), for the op, its biased form and the in-place
    /// SiLU the conv epilogue runs, whole and split into odd pieces.
    #[test]
    fn sigmoid_and_silu_match_numpy() {
        let fixture: serde_json::Value =
            serde_json::from_str(include_str!("../../tests/fixtures/cnn_ops/sigmoid.json"))
                .expect("fixture JSON");
        let list = |key: &str| fixture[key].as_array().expect("a list").clone();
        let x: Vec<f32> = list("x_bits")
            .iter()
            .map(|b| f32::from_bits(b.as_u64().expect("bits") as u32))
            .collect();
        let want = |key: &str| -> Vec<f64> {
            list(key)
                .iter()
                .map(|v| v.as_f64().expect("a value"))
                .collect()
        };
        let (sig, silu) = (want("sigmoid"), want("silu"));
        assert_eq!((x.len(), sig.len(), silu.len()), (1603, 1603, 1603));
        let mut s = vec![0f32; x.len()];
        sigmoid_f32(&x, &mut s);
        let mut sb = x.clone();
        sigmoid_biased_f32(&mut sb, &vec![0.0; x.len()]);
        let mut w = x.clone();
        silu_in_place_f32(&mut w);
        let mut pieces = x.clone();
        for chunk in pieces.chunks_mut(21) {
            silu_in_place_f32(chunk);
        }
        for i in 0..x.len() {
            let v = x[i] as f64;
            // Below e^-87 (about 1.6e-38) the f32 result may flush to 0.
            let floor = if v < -87.0 { 2e-38 } else { 1e-45 };
            let ok = |got: f32, want: f64, floor: f64| {
                (got as f64 - want).abs() <= 3e-7 * want.abs() + floor
            };
            assert!(
                ok(s[i], sig[i], floor),
                "sigmoid({v}) = {}, want {}",
                s[i],
                sig[i]
            );
            assert!(ok(sb[i], sig[i], floor), "biased sigmoid({v}) = {}", sb[i]);
            let silu_floor = floor * (1.0 + v.abs());
            assert!(
                ok(w[i], silu[i], silu_floor),
                "silu({v}) = {}, want {}",
                w[i],
                silu[i]
            );
            assert_eq!(pieces[i].to_bits(), w[i].to_bits(), "silu({v}) split");
        }
    }

    #[test]
    fn sigmoid_and_silu_match_f64() {
        let mut x: Vec<f32> = (0..6001).map(|i| (i as f32 - 3000.0) * 0.0291).collect();
        x.extend([1e-30, -3e-8, 86.9, -86.9, 88.5, -88.5, 1e4, -1e4]);
        // Densely over -87 .. 28, where the error peaks (3.2e-7 at -28.07
        // with a degree-6 exp polynomial on AVX-512).
        x.extend((0..400_000).map(|i| -87.0 + i as f32 * 2.875e-4));
        let (mut s, mut w) = (vec![0f32; x.len()], x.clone());
        sigmoid_f32(&x, &mut s);
        silu_in_place_f32(&mut w);
        // A bias of zero: the biased form gives the same values.
        let mut sb = x.clone();
        sigmoid_biased_f32(&mut sb, &vec![0.0; x.len()]);
        assert_eq!(s, sb);
        for i in 0..x.len() {
            let v = x[i] as f64;
            let want = 1.0 / (1.0 + (-v).exp());
            // Below e^-87 (about 1.6e-38) the f32 result may flush to 0.
            let floor = if v < -87.0 { 2e-38 } else { 1e-45 };
            let ok = |got: f32, want: f64, floor: f64| {
                (got as f64 - want).abs() <= 3e-7 * want.abs() + floor
            };
            assert!(
                ok(s[i], want, floor),
                "sigmoid({v}) = {}, want {want}",
                s[i]
            );
            let (ws, wf) = (v * want, floor * (1.0 + v.abs()));
            assert!(ok(w[i], ws, wf), "silu({v}) = {}, want {ws}", w[i]);
        }
        // Any split of a slice gives the same bits (the conv kernels apply
        // it to tiles, rows or whole blocks).
        let mut parts = x.clone();
        let (mut at, mut len) = (0, 1);
        while at < parts.len() {
            let end = parts.len().min(at + len);
            silu_in_place_f32(&mut parts[at..end]);
            (at, len) = (end, len % 37 + 7);
        }
        assert!(parts
            .iter()
            .zip(&w)
            .all(|(a, b)| a.to_bits() == b.to_bits()));
        let mut specials = [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, -0.0, 0.0];
        silu_in_place_f32(&mut specials);
        assert!(specials[0].is_nan() && specials[2].is_nan());
        assert_eq!(specials[1], f32::INFINITY);
        assert_eq!(specials[3].to_bits(), (-0f32).to_bits());
        assert_eq!(specials[4].to_bits(), 0);
        let mut z = [0f32; 3];
        sigmoid_f32(&[f32::NAN, f32::INFINITY, f32::NEG_INFINITY], &mut z);
        assert!(z[0].is_nan());
        assert_eq!(&z[1..], &[1.0, 0.0]);
    }

    #[test]
    fn tanh_matches_f64() {
        let mut x: Vec<f32> = (0..4001).map(|i| (i as f32 - 2000.0) * 0.0053).collect();
        x.extend([1e-30, -3e-8, 0.549_999, 0.55, 0.550_001, 9.5, -20.0, 1e4]);
        let mut y = vec![0f32; x.len()];
        tanh_f32(&x, &mut y);
        for (&v, &t) in x.iter().zip(&y) {
            let w = (v as f64).tanh();
            assert!(
                (t as f64 - w).abs() <= 4e-7 * w.abs() + 1e-45,
                "tanh({v}) = {t}, want {w}"
            );
        }
        let mut z = [0f32; 4];
        tanh_f32(&[f32::NAN, f32::INFINITY, f32::NEG_INFINITY, -0.0], &mut z);
        assert!(z[0].is_nan());
        assert_eq!(&z[1..3], &[1.0, -1.0]);
        assert!(z[3] == 0.0 && z[3].is_sign_negative());
    }

    #[test]
    fn shifted_sum_matches_f64() {
        let mut v: Vec<f32> = (0..37).map(|i| (i as f32 * 0.7).sin() * 5.0).collect();
        v[3] = f32::NEG_INFINITY;
        let max = 5.0f32;
        // The shift is an f32 subtraction; exp itself is checked against f64.
        let want: Vec<f64> = v.iter().map(|&x| ((x - max) as f64).exp()).collect();
        let sum = f32::exp_shifted_sum(&mut v, max);
        for (g, w) in v.iter().zip(&want) {
            assert!((*g as f64 - w).abs() <= 3e-7 * w, "{g} vs {w}");
        }
        let ws: f64 = want.iter().sum();
        assert!((sum - ws).abs() <= 1e-6 * ws, "{sum} vs {ws}");
    }
}
