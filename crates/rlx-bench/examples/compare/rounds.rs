//! Alternating rounds of RLX and its reference (`--rounds N`).
//!
//! On a shared VM the speed of both sides drifts by tens of percent over
//! minutes (other tenants' memory traffic). Measuring RLX, then the
//! reference, then RLX again, ... and keeping each side's best statistics
//! over the rounds makes a slow phase cost both sides alike instead of
//! whichever happened to run in it. With `--interleave` the rounds are
//! short batches (a quarter second a side) against a reference process kept
//! alive between them, and each row also reports the paired ratio: the
//! median over rounds of RLX's batch median / the reference's batch median
//! of the same round, which a drift of the host over minutes cancels out of.

use rlx_bench::reference::ReferenceTiming;
use rlx_bench::BenchResult;
use std::error::Error;

/// Both sides over the rounds: each side's best statistics, and the
/// median over rounds of the per-round ratio of medians.
pub struct Rounds {
    pub ours: BenchResult,
    pub theirs: Option<ReferenceTiming>,
    pub paired: Option<f64>,
}

/// How many rounds a row runs, the first `warmup` of them not counted.
#[derive(Clone, Copy, Debug)]
pub struct Plan {
    pub rounds: usize,
    /// Interleaved rows start with rounds both sides run uncounted: the
    /// first MiniLM row at 2 threads found both sides slow for some
    /// seconds (ONNX Runtime 29.5 ms, RLX 22.3, against 21.2 / 20.1 in the
    /// next row a few seconds later), whichever warmed up first.
    pub warmup: usize,
}

/// Runs `ours` and `theirs` `plan.warmup + plan.rounds` times in turn and
/// keeps, per side, the smallest min, median and p99 of the counted rounds.
pub fn alternate<E, F>(
    plan: Plan,
    mut ours: impl FnMut() -> Result<BenchResult, E>,
    mut theirs: impl FnMut() -> Result<Option<ReferenceTiming>, F>,
) -> Result<Rounds, Box<dyn Error>>
where
    E: Into<Box<dyn Error>>,
    F: Into<Box<dyn Error>>,
{
    // Both timing types carry min / median / p99 / runs: keep the best of each.
    macro_rules! merge {
        ($best:expr, $new:expr, $ty:ident) => {
            Some(match $best.take() {
                None => $new,
                Some(b) => $ty {
                    min: b.min.min($new.min),
                    median: b.median.min($new.median),
                    p99: b.p99.min($new.p99),
                    runs: b.runs + $new.runs,
                    ..b
                },
            })
        };
    }
    let mut best: Option<BenchResult> = None;
    let mut best_ref: Option<ReferenceTiming> = None;
    let mut ratios = Vec::new();
    for _ in 0..plan.warmup {
        ours().map_err(Into::into)?;
        theirs().map_err(Into::into)?;
    }
    for _ in 0..plan.rounds.max(1) {
        let r = ours().map_err(Into::into)?;
        let ours_median = r.median.as_secs_f64();
        best = merge!(best, r, BenchResult);
        if let Some(x) = theirs().map_err(Into::into)? {
            ratios.push(ours_median / x.median.as_secs_f64());
            best_ref = merge!(best_ref, x, ReferenceTiming);
        }
    }
    Ok(Rounds {
        ours: best.expect("at least one round"),
        theirs: best_ref,
        paired: median(ratios),
    })
}

/// The median of `xs` (the mean of the middle two for an even count).
fn median(mut xs: Vec<f64>) -> Option<f64> {
    xs.sort_by(f64::total_cmp);
    let n = xs.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(xs[n / 2]),
        _ => Some((xs[n / 2 - 1] + xs[n / 2]) / 2.0),
    }
}

#[cfg(test)]
mod tests {
    use super::median;

    #[test]
    fn median_of_odd_even_and_no_values() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(vec![4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(median(Vec::new()), None);
    }
}
