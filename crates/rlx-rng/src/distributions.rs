//! numpy `Generator`'s samplers beyond the basics, written from the
//! algorithms of numpy's `distributions.c` (the `Generator` versions, not
//! the legacy `RandomState` ones, which differ): the exponential ziggurat,
//! Marsaglia & Tsang's gamma (with the Ahrens-Dieter / GS-style rejection
//! for `shape < 1`), Johnk's beta for `a, b <= 1` (ratio of gammas
//! otherwise), Poisson by multiplication (`lam < 10`) or Hörmann's PTRS,
//! binomial by inversion (`n * min(p, q) <= 30`) or Kachitvichyanukul &
//! Schmeiser's BTPE.
//!
//! `ln`, `exp`, `powf`, `ln_1p` and `sqrt` are the platform libm's, as in
//! numpy (glibc on Linux; the fixtures match bit for bit there).

use crate::bit_generator::BitGenerator;
use crate::ziggurat;
use crate::ziggurat_tables::{FE_DOUBLE, KE_DOUBLE, WE_DOUBLE};

/// `ziggurat_exp_r`: where the exponential ziggurat's tail starts.
const EXP_R: f64 = 7.697_117_470_131_05;

/// `random_standard_exponential`: one float64 standard exponential by
/// numpy's 256-strip ziggurat (the low 3 bits of the draw are dropped, the
/// next 8 pick the strip, the rest is the mantissa).
pub(crate) fn standard_exponential<B: BitGenerator + ?Sized>(b: &mut B) -> f64 {
    loop {
        let r = b.next_u64() >> 3;
        let idx = (r & 0xff) as usize;
        let r = r >> 8;
        let x = r as f64 * f64::from_bits(WE_DOUBLE[idx]);
        if r < KE_DOUBLE[idx] {
            return x;
        }
        if idx == 0 {
            return EXP_R - (-b.next_f64()).ln_1p();
        }
        let f0 = f64::from_bits(FE_DOUBLE[idx - 1]);
        let f1 = f64::from_bits(FE_DOUBLE[idx]);
        if (f0 - f1) * b.next_f64() + f1 < (-x).exp() {
            return x;
        }
        // rejected: numpy draws a fresh exponential
    }
}

/// `random_standard_gamma(shape)`.
pub(crate) fn standard_gamma<B: BitGenerator + ?Sized>(b: &mut B, shape: f64) -> f64 {
    if shape == 1.0 {
        return standard_exponential(b);
    }
    if shape == 0.0 {
        return 0.0;
    }
    if shape < 1.0 {
        loop {
            let u = b.next_f64();
            let v = standard_exponential(b);
            if u <= 1.0 - shape {
                let x = u.powf(1.0 / shape);
                if x <= v {
                    return x;
                }
            } else {
                let y = -((1.0 - u) / shape).ln();
                let x = (1.0 - shape + shape * y).powf(1.0 / shape);
                if x <= v + y {
                    return x;
                }
            }
        }
    }
    let bb = shape - 1.0 / 3.0;
    let c = 1.0 / (9.0 * bb).sqrt();
    loop {
        let (x, mut v) = loop {
            let x = ziggurat::standard_normal_f64(b);
            let v = 1.0 + c * x;
            // numpy's `do ... while (V <= 0.0)`: a NaN `V` (NaN shape) ends it too
            #[allow(clippy::neg_cmp_op_on_partial_ord)]
            if !(v <= 0.0) {
                break (x, v);
            }
        };
        v = v * v * v;
        let u = b.next_f64();
        if u < 1.0 - 0.0331 * (x * x) * (x * x) {
            return bb * v;
        }
        if u.ln() < 0.5 * x * x + bb * (1.0 - v + v.ln()) {
            return bb * v;
        }
    }
}

/// Below this, `a` and `b` both, `random_beta` draws its 0 / 1 result
/// directly (numpy's tiny-parameter branch).
const BETA_TINY: f64 = 3e-103;

/// `random_beta(a, b)`.
pub(crate) fn beta<B: BitGenerator + ?Sized>(g: &mut B, a: f64, b: f64) -> f64 {
    if a <= 1.0 && b <= 1.0 {
        if a < BETA_TINY && b < BETA_TINY {
            // both powers would underflow every time: the result is 0 or 1
            // with odds a : b, decided by one uniform
            let u = g.next_f64();
            return if (a + b) * u < a { 1.0 } else { 0.0 };
        }
        // Johnk's algorithm
        loop {
            let u = g.next_f64();
            let v = g.next_f64();
            let x = u.powf(1.0 / a);
            let y = v.powf(1.0 / b);
            let xpy = x + y;
            if xpy <= 1.0 && u + v > 0.0 {
                if x > 0.0 && y > 0.0 {
                    return x / xpy;
                }
                // a power underflowed: X / (X + Y) from the logarithms,
                // as the logistic function of their difference
                let delta = u.ln() / a - v.ln() / b;
                return if delta > 0.0 {
                    (-(-delta).exp().ln_1p()).exp()
                } else {
                    (delta - delta.exp().ln_1p()).exp()
                };
            }
        }
    }
    let ga = standard_gamma(g, a);
    let gb = standard_gamma(g, b);
    ga / (ga + gb)
}

/// `random_loggam(x)`: `ln Γ(x)` by Stirling's series (shifted up to 7).
fn loggam(x: f64) -> f64 {
    const A: [f64; 10] = [
        8.333_333_333_333_333e-2,
        -2.777_777_777_777_778e-3,
        7.936_507_936_507_937e-4,
        -5.952_380_952_380_952e-4,
        8.417_508_417_508_418e-4,
        -1.917_526_917_526_918e-3,
        6.410_256_410_256_41e-3,
        -2.955_065_359_477_124e-2,
        1.796_443_723_688_307e-1,
        -1.392_432_216_905_9,
    ];
    if x == 1.0 || x == 2.0 {
        return 0.0;
    }
    let n: i64 = if x < 7.0 { (7.0 - x) as i64 } else { 0 };
    let mut x0 = x + n as f64;
    let x2 = (1.0 / x0) * (1.0 / x0);
    let lg2pi = 1.837_877_066_409_345_3;
    let mut gl0 = A[9];
    for k in (0..9).rev() {
        gl0 *= x2;
        gl0 += A[k];
    }
    let mut gl = gl0 / x0 + 0.5 * lg2pi + (x0 - 0.5) * x0.ln() - x0;
    if x < 7.0 {
        for _ in 1..=n {
            gl -= (x0 - 1.0).ln();
            x0 -= 1.0;
        }
    }
    gl
}

/// `random_poisson(lam)`: 0 for `lam == 0`, multiplication of uniforms for
/// `lam < 10`, PTRS (transformed rejection with squeeze) from 10 on.
pub(crate) fn poisson<B: BitGenerator + ?Sized>(b: &mut B, lam: f64) -> i64 {
    if lam >= 10.0 {
        return poisson_ptrs(b, lam);
    }
    if lam == 0.0 {
        return 0;
    }
    let enlam = (-lam).exp();
    let mut k = 0;
    let mut prod = 1.0;
    loop {
        prod *= b.next_f64();
        if prod > enlam {
            k += 1;
        } else {
            return k;
        }
    }
}

/// `random_poisson_ptrs`: Hörmann (1993), "The transformed rejection method
/// for generating Poisson random variables".
fn poisson_ptrs<B: BitGenerator + ?Sized>(b: &mut B, lam: f64) -> i64 {
    let slam = lam.sqrt();
    let loglam = lam.ln();
    let bb = 0.931 + 2.53 * slam;
    let a = -0.059 + 0.02483 * bb;
    let invalpha = 1.1239 + 1.1328 / (bb - 3.4);
    let vr = 0.9277 - 3.6224 / (bb - 2.0);
    loop {
        let u = b.next_f64() - 0.5;
        let v = b.next_f64();
        let us = 0.5 - u.abs();
        let k = ((2.0 * a / us + bb) * u + lam + 0.43).floor() as i64;
        if us >= 0.07 && v <= vr {
            return k;
        }
        if k < 0 || (us < 0.013 && v > us) {
            continue;
        }
        if v.ln() + invalpha.ln() - (a / (us * us) + bb).ln()
            <= -lam + k as f64 * loglam - loggam(k as f64 + 1.0)
        {
            return k;
        }
    }
}

/// `random_binomial(p, n)`: inversion while `n * min(p, 1 - p) <= 30`,
/// BTPE beyond; for `p > 1/2` the count of failures is drawn.
pub(crate) fn binomial<B: BitGenerator + ?Sized>(b: &mut B, n: i64, p: f64) -> i64 {
    if n == 0 || p == 0.0 {
        return 0;
    }
    if p <= 0.5 {
        if p * n as f64 <= 30.0 {
            binomial_inversion(b, n, p)
        } else {
            binomial_btpe(b, n, p)
        }
    } else {
        let q = 1.0 - p;
        if q * n as f64 <= 30.0 {
            n - binomial_inversion(b, n, q)
        } else {
            n - binomial_btpe(b, n, q)
        }
    }
}

/// `random_binomial_inversion`: sequential search from 0, restarted past
/// `bound = min(n, np + 10 sqrt(npq + 1))`.
fn binomial_inversion<B: BitGenerator + ?Sized>(b: &mut B, n: i64, p: f64) -> i64 {
    let q = 1.0 - p;
    let qn = (n as f64 * q.ln()).exp();
    let np = n as f64 * p;
    let bound = (n as f64).min(np + 10.0 * (np * q + 1.0).sqrt()) as i64;
    let mut x: i64 = 0;
    let mut px = qn;
    let mut u = b.next_f64();
    while u > px {
        x += 1;
        if x > bound {
            x = 0;
            px = qn;
            u = b.next_f64();
        } else {
            u -= px;
            px = ((n - x + 1) as f64 * p * px) / (x as f64 * q);
        }
    }
    x
}

/// The BTPE steps of Kachitvichyanukul & Schmeiser (1988), as numpy's
/// `random_binomial_btpe` (its `goto` steps become a labelled loop).
fn binomial_btpe<B: BitGenerator + ?Sized>(b: &mut B, n: i64, p: f64) -> i64 {
    let nf = n as f64;
    let r = p.min(1.0 - p);
    let q = 1.0 - r;
    let fm = nf * r + r;
    let m = fm.floor() as i64;
    let mf = m as f64;
    let p1 = (2.195 * (nf * r * q).sqrt() - 4.6 * q).floor() + 0.5;
    let xm = mf + 0.5;
    let xl = xm - p1;
    let xr = xm + p1;
    let c = 0.134 + 20.5 / (15.3 + mf);
    let a = (fm - xl) / (fm - xl * r);
    let laml = a * (1.0 + a / 2.0);
    let a = (xr - fm) / (xr * q);
    let lamr = a * (1.0 + a / 2.0);
    let p2 = p1 * (1.0 + 2.0 * c);
    let p3 = p2 + c / laml;
    let p4 = p3 + c / lamr;
    let nrq = nf * r * q;

    let y = 'step10: loop {
        let u = b.next_f64() * p4;
        let mut v = b.next_f64();
        let y: i64;
        if u <= p1 {
            // triangular region: always accepted
            break 'step10 (xm - p1 * v + u).floor() as i64;
        } else if u <= p2 {
            // parallelograms
            let x = xl + (u - p1) / c;
            v = v * c + 1.0 - (mf - x + 0.5).abs() / p1;
            if v > 1.0 {
                continue;
            }
            y = x.floor() as i64;
        } else if u <= p3 {
            // left exponential tail
            let yf = (xl + v.ln() / laml).floor();
            if yf < 0.0 || v == 0.0 {
                continue;
            }
            y = yf as i64;
            v = v * (u - p2) * laml;
        } else {
            // right exponential tail
            let yf = (xr - v.ln() / lamr).floor();
            if yf > nf || v == 0.0 {
                continue;
            }
            y = yf as i64;
            v = v * (u - p3) * lamr;
        }
        // step 50: acceptance test
        let k = (y - m).abs();
        if !(k > 20 && (k as f64) < nrq / 2.0 - 1.0) {
            // explicit evaluation of f(y) / f(m)
            let s = r / q;
            let a = s * (n + 1) as f64;
            let mut f = 1.0;
            if m < y {
                for i in m + 1..=y {
                    f *= a / i as f64 - s;
                }
            } else if m > y {
                for i in y + 1..=m {
                    f /= a / i as f64 - s;
                }
            }
            if v > f {
                continue;
            }
            break 'step10 y;
        }
        // step 52: squeezing with the normal approximation, then Stirling
        let kf = k as f64;
        let rho = (kf / nrq) * ((kf * (kf / 3.0 + 0.625) + 0.166_666_666_666_666_66) / nrq + 0.5);
        let t = (-k * k) as f64 / (2.0 * nrq);
        let big_a = v.ln();
        if big_a < t - rho {
            break 'step10 y;
        }
        if big_a > t + rho {
            continue;
        }
        let x1 = (y + 1) as f64;
        let f1 = (m + 1) as f64;
        let z = (n + 1 - m) as f64;
        let w = (n - y + 1) as f64;
        let x2 = x1 * x1;
        let f2 = f1 * f1;
        let z2 = z * z;
        let w2 = w * w;
        let stirling = |d: f64, d2: f64| {
            (13680. - (462. - (132. - (99. - 140. / d2) / d2) / d2) / d2) / d / 166320.
        };
        let bound = xm * (f1 / x1).ln()
            + ((n - m) as f64 + 0.5) * (z / w).ln()
            + (y - m) as f64 * (w * r / (x1 * q)).ln()
            + stirling(f1, f2)
            + stirling(z, z2)
            + stirling(x1, x2)
            + stirling(w, w2);
        if big_a > bound {
            continue;
        }
        break 'step10 y;
    };
    // numpy's `if (p > 0.5) y = n - y`: never taken, callers pass p <= 1/2
    y
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[allow(clippy::excessive_precision)]
    fn constants_are_numpys() {
        assert_eq!(EXP_R, 7.69711747013104972);
        assert_eq!(loggam(1.0), 0.0);
        // ln Γ(10) = ln 362880
        assert!((loggam(10.0) - 362_880f64.ln()).abs() < 1e-12);
        assert!((loggam(3.5) - (3.323_350_970_447_843f64).ln()).abs() < 1e-12);
    }
}
