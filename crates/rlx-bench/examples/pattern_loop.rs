//! Runs one pattern of [`patterns::standard`] in a loop, as the compare
//! command times it (`PreparedPattern::step_into`), for profiling:
//!
//! ```text
//! RLX_CPU_PROFILE=1 cargo run --release -p rlx-bench --example pattern_loop -- matmul_2048 [runs]
//! ```
//! (default 20 runs). Prints the min and median time per run; with
//! `RLX_CPU_PROFILE` set the CPU executor prints its per-op table at exit.

use rlx_bench::{patterns, PreparedPattern};
use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let name = args.next().ok_or("usage: pattern_loop NAME [runs]")?;
    let runs: usize = args.next().map(|a| a.parse()).transpose()?.unwrap_or(20);
    let pattern = patterns::standard()
        .into_iter()
        .find(|p| p.name == name)
        .ok_or_else(|| format!("no standard pattern named {name:?}"))?;
    let mut p = PreparedPattern::new(&pattern)?;
    let mut outputs = p.output_tensors();
    p.step_into(&mut outputs)?;
    let mut times = Vec::with_capacity(runs.max(1));
    for _ in 0..runs.max(1) {
        let t = Instant::now();
        p.step_into(&mut outputs)?;
        times.push(t.elapsed().as_secs_f64());
    }
    times.sort_by(f64::total_cmp);
    println!(
        "{name}: min {:.3} ms, median {:.3} ms over {} runs",
        times[0] * 1e3,
        times[times.len() / 2] * 1e3,
        times.len()
    );
    Ok(())
}
