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
    let mut best: Option<BenchResult> = None;
    let mut best_ref: Option<ReferenceTiming> = None;
    for _ in 0..rounds.max(1) {
        let r = ours().map_err(Into::into)?;
        best = Some(match best {
            None => r,
            Some(b) => BenchResult {
                min: b.min.min(r.min),
                median: b.median.min(r.median),
                p99: b.p99.min(r.p99),
                runs: b.runs + r.runs,
                ..b
            },
        });
        if let Some(x) = theirs().map_err(Into::into)? {
            best_ref = Some(match best_ref {
                None => x,
                Some(b) => ReferenceTiming {
                    min: b.min.min(x.min),
                    median: b.median.min(x.median),
                    p99: b.p99.min(x.p99),
                    runs: b.runs + x.runs,
                    ..b
                },
            });
        }
    }
    Ok((best.expect("at least one round"), best_ref))
}
