//! Alternating rounds of RLX and its reference (`--rounds N`).
//!
//! On a shared VM the speed of both sides drifts by tens of percent over
//! minutes (other tenants' memory traffic). Measuring RLX, then the
//! reference, then RLX again, ... and keeping each side's best statistics
//! over the rounds makes a slow phase cost both sides alike instead of
//! whichever happened to run in it.

use rlx_bench::reference::ReferenceTiming;
use rlx_bench::BenchResult;
use std::error::Error;

/// Runs `ours` and `theirs` `rounds` times in turn and keeps, per side,
/// the smallest min, median and p99 seen.
pub fn alternate<E, F>(
    rounds: usize,
    mut ours: impl FnMut() -> Result<BenchResult, E>,
    mut theirs: impl FnMut() -> Result<Option<ReferenceTiming>, F>,
) -> Result<(BenchResult, Option<ReferenceTiming>), Box<dyn Error>>
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
    for _ in 0..rounds.max(1) {
        let r = ours().map_err(Into::into)?;
        best = merge!(best, r, BenchResult);
        if let Some(x) = theirs().map_err(Into::into)? {
            best_ref = merge!(best_ref, x, ReferenceTiming);
        }
    }
    Ok((best.expect("at least one round"), best_ref))
}
