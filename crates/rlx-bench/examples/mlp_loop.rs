//! Runs the MLP training step (784-256-10, batch 64) in a loop, for
//! profiling:
//!
//! ```text
//! RLX_CPU_PROFILE=1 RLX_NUM_THREADS=1 cargo run --release -p rlx-bench \
//!     --example mlp_loop -- [runs]
//! ```
//! (default 2000). Prints the min / median time per step; with
//! `RLX_CPU_PROFILE` set the CPU executor prints its per-op table at exit.

use rlx_bench::{patterns, PreparedPattern};
use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let runs: usize = match std::env::args().nth(1) {
        Some(a) => a.parse()?,
        None => 2000,
    };
    let pattern = patterns::mlp_train_step(64, [784, 256, 10]);
    let mut prepared = PreparedPattern::new(&pattern)?;
    for _ in 0..10 {
        prepared.step()?;
    }
    let mut times = Vec::with_capacity(runs.max(1));
    for _ in 0..runs.max(1) {
        let t = Instant::now();
        prepared.step()?;
        times.push(t.elapsed());
    }
    times.sort();
    println!(
        "{}: {} steps, min {:?}, median {:?}",
        pattern.name,
        times.len(),
        times[0],
        times[times.len() / 2]
    );
    Ok(())
}
