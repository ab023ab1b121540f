//! [`Tick`]: a monotonic timestamp for profiling and reports.

use std::time::{Duration, Instant};

/// A point in time from a monotonic clock.
///
/// ```
/// let t = rlx_ir::Tick::now();
/// assert!(t.elapsed().as_secs() < 60);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Tick(Instant);

impl Tick {
    /// Now.
    pub fn now() -> Tick {
        Tick(Instant::now())
    }

    /// Time since this tick.
    pub fn elapsed(self) -> Duration {
        self.0.elapsed()
    }

    /// Microseconds since this tick.
    pub fn elapsed_us(self) -> f64 {
        self.elapsed().as_secs_f64() * 1e6
    }

    /// Time from `earlier` to `self` (zero if `earlier` is later).
    pub fn since(self, earlier: Tick) -> Duration {
        self.0.saturating_duration_since(earlier.0)
    }
}
