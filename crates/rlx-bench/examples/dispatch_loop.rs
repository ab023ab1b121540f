//! Runs the tiny 10-op elementwise pattern in a loop, for profiling the
//! per-`run` dispatch cost (`perf record target/release/examples/dispatch_loop`):
//!
//! ```text
//! cargo run --release -p rlx-bench --example dispatch_loop -- [runs]
//! ```
//! (default 2,000,000 runs). Prints the mean and min time per run.

use rlx_bench::{patterns, PreparedPattern};
use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let runs: usize = std::env::args()
        .nth(1)
        .map(|a| a.parse())
        .transpose()?
        .unwrap_or(2_000_000);
    let mut p = PreparedPattern::new(&patterns::elementwise_chain(64))?;
    let (mut min, start) = (f64::MAX, Instant::now());
    for _ in 0..runs {
        let t = Instant::now();
        p.step()?;
        min = min.min(t.elapsed().as_secs_f64());
    }
    let mean = start.elapsed().as_secs_f64() / runs as f64;
    println!(
        "elementwise10_64: mean {:.3} µs, min {:.3} µs over {runs} runs",
        mean * 1e6,
        min * 1e6
    );
    Ok(())
}
