//! Latency statistics of `rlx bench`.

use std::time::Duration;

/// Summary of a set of run times, in milliseconds.
#[derive(Clone, Debug, PartialEq)]
pub struct Latency {
    /// Runs measured.
    pub runs: usize,
    /// Fastest run.
    pub min_ms: f64,
    /// Median (nearest-rank 50th percentile).
    pub p50_ms: f64,
    /// Nearest-rank 90th percentile.
    pub p90_ms: f64,
    /// Nearest-rank 99th percentile.
    pub p99_ms: f64,
    /// Mean.
    pub mean_ms: f64,
}

/// The nearest-rank `p`-th percentile (0 < p <= 100) of sorted `v`.
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

impl Latency {
    /// The summary of `times` (empty: every field NaN, `runs` 0).
    pub fn of(times: &[Duration]) -> Latency {
        let mut ms: Vec<f64> = times.iter().map(|t| t.as_secs_f64() * 1e3).collect();
        ms.sort_by(f64::total_cmp);
        Latency {
            runs: ms.len(),
            min_ms: ms.first().copied().unwrap_or(f64::NAN),
            p50_ms: percentile(&ms, 50.0),
            p90_ms: percentile(&ms, 90.0),
            p99_ms: percentile(&ms, 99.0),
            mean_ms: ms.iter().sum::<f64>() / ms.len() as f64,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles_match_numpy_inverted_cdf() {
        // numpy.percentile([1..10], q, method="inverted_cdf"): 50 -> 5, 90 -> 9, 99 -> 10.
        let v: Vec<f64> = (1..=10).map(f64::from).collect();
        assert_eq!(percentile(&v, 50.0), 5.0);
        assert_eq!(percentile(&v, 90.0), 9.0);
        assert_eq!(percentile(&v, 99.0), 10.0);
        let l = Latency::of(&[Duration::from_millis(3), Duration::from_millis(1)]);
        assert_eq!((l.runs, l.min_ms, l.p50_ms, l.mean_ms), (2, 1.0, 1.0, 2.0));
    }
}
