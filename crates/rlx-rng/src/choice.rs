//! The parts of numpy's `choice` that `RandomState` and `Generator` share:
//! the checks of `a` / `size` / `p`, sampling by inverse CDF
//! (`cumsum`, normalise by the last entry, `searchsorted(side='right')`)
//! and the repeated-draw loop of sampling with probabilities and without
//! replacement.

use crate::error::{Result, RngError};

/// numpy's `atol` for the sum of `p`: `sqrt(finfo(float64).eps)`.
const P_SUM_ATOL: f64 = 1.490_116_119_384_765_6e-8;

/// numpy's `kahan_sum` (compensated, in order).
fn kahan_sum(p: &[f64]) -> f64 {
    let Some((&first, rest)) = p.split_first() else {
        return 0.0;
    };
    let (mut sum, mut c) = (first, 0.0);
    for &v in rest {
        let y = v - c;
        let t = sum + y;
        c = (t - sum) - y;
        sum = t;
    }
    sum
}

/// The argument checks of `choice(population, size, replace, p)`, in numpy's order.
pub(crate) fn check(
    population: usize,
    size: usize,
    replace: bool,
    p: Option<&[f64]>,
) -> Result<()> {
    if population == 0 && size != 0 {
        return Err(RngError::EmptyPopulation { size });
    }
    if let Some(p) = p {
        if p.len() != population {
            return Err(RngError::InvalidProbabilities(format!(
                "'a' and 'p' must have same size ({population} != {})",
                p.len()
            )));
        }
        let sum = kahan_sum(p);
        if sum.is_nan() {
            return Err(RngError::InvalidProbabilities(
                "probabilities contain NaN".into(),
            ));
        }
        if p.iter().any(|&v| v < 0.0) {
            return Err(RngError::InvalidProbabilities(
                "probabilities are not non-negative".into(),
            ));
        }
        if (sum - 1.0).abs() > P_SUM_ATOL {
            return Err(RngError::InvalidProbabilities(format!(
                "probabilities do not sum to 1 (sum = {sum})"
            )));
        }
    }
    if !replace {
        if size > population {
            return Err(RngError::SampleTooLarge { size, population });
        }
        if let Some(p) = p {
            let nonzero = p.iter().filter(|&&v| v > 0.0).count();
            if nonzero < size {
                return Err(RngError::InvalidProbabilities(format!(
                    "fewer non-zero entries in p ({nonzero}) than size ({size})"
                )));
            }
        }
    }
    Ok(())
}

/// `cdf = p.cumsum(); cdf /= cdf[-1]`.
fn cdf(p: &[f64]) -> Vec<f64> {
    let mut acc = 0.0;
    let mut c: Vec<f64> = p
        .iter()
        .map(|&v| {
            acc += v;
            acc
        })
        .collect();
    if let Some(&last) = c.last() {
        c.iter_mut().for_each(|v| *v /= last);
    }
    c
}

/// `cdf.searchsorted(u, side='right')`: the number of entries `<= u`.
fn search_right(cdf: &[f64], u: f64) -> i64 {
    cdf.partition_point(|&c| c <= u) as i64
}

/// Sampling with replacement and probabilities: one uniform per sample.
pub(crate) fn with_p_replace(p: &[f64], uniforms: &[f64]) -> Vec<i64> {
    let c = cdf(p);
    uniforms.iter().map(|&u| search_right(&c, u)).collect()
}

/// Sampling without replacement with probabilities: draw as many uniforms
/// as samples are missing, zero the probabilities of those already found,
/// keep the first occurrence of each new index; repeat.
pub(crate) fn with_p_no_replace(
    p: &[f64],
    size: usize,
    mut uniforms: impl FnMut(usize) -> Vec<f64>,
) -> Vec<i64> {
    let mut p = p.to_vec();
    let mut found: Vec<i64> = Vec::with_capacity(size);
    while found.len() < size {
        let x = uniforms(size - found.len());
        for &i in &found {
            p[i as usize] = 0.0;
        }
        let c = cdf(&p);
        let mut batch: Vec<i64> = Vec::new();
        for &u in &x {
            let idx = search_right(&c, u);
            if !batch.contains(&idx) {
                batch.push(idx);
            }
        }
        found.extend(batch);
    }
    found
}
