//! Softmax of f32 rows along the last axis (attention probabilities),
//! the same numbers as `norm`'s generic rows with every pass vectorised.
//!
//! The generic row loop folds the maximum with `nan_max` one element at a
//! time (a dependent compare / select chain: ~90 % of a SmolLM2 prefill's
//! softmax time in `perf`) and divides on the SSE2 baseline. Here the
//! maximum runs in 16 lanes (NaN anywhere gives NaN, as the fold; otherwise
//! the same value, only the sign of a zero maximum may differ, which
//! `exp(x - max)` does not see), then the same `exp_shifted_sum` and the
//! same per-element division, built for AVX-512 / AVX2 and picked at run
//! time: outputs bit-identical to the generic path.

use super::fastmath::SoftmaxExp;

/// Elements below which the rows stay on one thread (~15 us of work).
const GRAIN: usize = 1 << 14;

/// `o` = softmax of each `n`-element row of `src` (`n > 0`); rows split
/// over the team when there are enough (each row is independent, so the
/// same bits on any thread count).
pub(crate) fn softmax_last_f32(src: &[f32], o: &mut [f32], n: usize) {
    let rows = src.len() / n;
    let threads = crate::team::threads().min(rows);
    if threads < 2 || src.len() < GRAIN {
        return softmax_rows_f32(src, o, n);
    }
    let parts = crate::team::split(rows, threads, 1);
    let out = crate::team::Disjoint::new(o);
    crate::team::parallel_for(parts.len(), |p| {
        let r = parts[p].start * n..parts[p].end * n;
        // SAFETY: the parts' row ranges are disjoint.
        softmax_rows_f32(&src[r.clone()], unsafe { out.range(r) }, n)
    });
}

/// [`softmax_last_f32`] on the calling thread.
fn softmax_rows_f32(src: &[f32], o: &mut [f32], n: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        #[target_feature(enable = "avx512f,avx2,fma")]
        unsafe fn avx512(src: &[f32], o: &mut [f32], n: usize) {
            rows(src, o, n)
        }
        #[target_feature(enable = "avx2,fma")]
        unsafe fn avx2(src: &[f32], o: &mut [f32], n: usize) {
            rows(src, o, n)
        }
        if std::arch::is_x86_feature_detected!("avx512f") {
            // SAFETY: the CPU has AVX-512F (and so AVX2 and FMA).
            return unsafe { avx512(src, o, n) };
        }
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
        {
            // SAFETY: the CPU has AVX2 and FMA.
            return unsafe { avx2(src, o, n) };
        }
    }
    rows(src, o, n)
}

#[inline(always)]
fn rows(src: &[f32], o: &mut [f32], n: usize) {
    for (orow, row) in o.chunks_exact_mut(n).zip(src.chunks_exact(n)) {
        let max = row_max(row);
        orow.copy_from_slice(row);
        let sum = f32::exp_shifted_sum(orow, max) as f32;
        orow.iter_mut().for_each(|v| *v /= sum);
    }
}

/// The maximum of `row`, NaN if it holds one (`nan_max`'s fold).
#[inline(always)]
fn row_max(row: &[f32]) -> f32 {
    let mut acc = [f32::NEG_INFINITY; 16];
    let mut nan = [0u32; 16];
    let mut chunks = row.chunks_exact(16);
    for c in &mut chunks {
        for ((a, f), &v) in acc.iter_mut().zip(nan.iter_mut()).zip(c) {
            *a = if v > *a { v } else { *a };
            *f |= v.is_nan() as u32;
        }
    }
    let mut max = f32::NEG_INFINITY;
    let mut any_nan = nan.iter().any(|&f| f != 0);
    for &v in acc.iter().chain(chunks.remainder()) {
        any_nan |= v.is_nan();
        max = if v > max { v } else { max };
    }
    if any_nan {
        f32::NAN
    } else {
        max
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each row of `o` against an f64 softmax of the row of `x`
    /// (independent of the kernel), within the f32 formula's error.
    fn check_f64(x: &[f32], o: &[f32], n: usize) {
        for (row, orow) in x.chunks(n).zip(o.chunks(n)) {
            let m = row.iter().fold(f64::NEG_INFINITY, |m, &v| m.max(v as f64));
            let s: f64 = row.iter().map(|&v| (v as f64 - m).exp()).sum();
            for (&v, &got) in row.iter().zip(orow) {
                let want = (v as f64 - m).exp() / s;
                // exp's 2e-7, the sum's rounding, and `x - max` rounded
                // in f32 (half an ulp of |x - max|, times e^(x - max)).
                let tol = 1e-6 + (v as f64 - m).abs().min(1e3) * 6e-8;
                assert!(
                    (got as f64 - want).abs() <= tol * want + 1e-30,
                    "n {n}: {got} vs {want}"
                );
            }
        }
    }

    /// Rows of every length 1..70 cover the 16-lane body and remainders,
    /// with -inf (masked) entries and NaN; rows split over 1-3 threads.
    #[test]
    fn matches_f64_softmax() {
        let mut seed = 7u64;
        let mut next = || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((seed >> 33) as f32 / (1u64 << 31) as f32 - 0.5) * 40.0
        };
        for n in 1..70usize {
            let rows = 3;
            let mut x: Vec<f32> = (0..rows * n).map(|_| next()).collect();
            // Row 1: a causal-mask tail of -inf.
            for v in &mut x[n + n.div_ceil(2)..2 * n] {
                *v = f32::NEG_INFINITY;
            }
            let mut o = vec![0f32; x.len()];
            softmax_last_f32(&x, &mut o, n);
            check_f64(&x, &o, n);
        }
        // Enough rows to split over the team (attention's [heads, q, kv]):
        // every thread count gives the bits of one thread.
        let (rows, n) = (3 * 3 * 32, 97);
        let x: Vec<f32> = (0..rows * n).map(|_| next()).collect();
        let mut one = vec![0f32; x.len()];
        softmax_rows_f32(&x, &mut one, n);
        check_f64(&x, &one, n);
        for threads in [1, 2, 3] {
            let mut o = vec![0f32; x.len()];
            crate::threads::with_limit(Some(threads), || softmax_last_f32(&x, &mut o, n));
            assert!(o == one, "{threads} threads");
        }
        let mut o = [0f32; 20];
        let mut x = [1f32; 20];
        x[17] = f32::NAN;
        softmax_last_f32(&x, &mut o, 20);
        assert!(o.iter().all(|v| v.is_nan()));
    }
}
