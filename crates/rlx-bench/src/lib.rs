//! # rlx-bench — the benchmark harness
//!
//! A [`BenchmarkPattern`] is a named workload (a graph, its parameters and
//! inputs, and for training patterns an SGD update); [`run_benchmark`]
//! compiles it for the CPU, warms it up and times repeated runs, reporting
//! min / median / p99. [`patterns`] holds the standard workloads (square
//! GEMMs, GEMV, matmul + GELU, FFN, attention, a BERT layer, a tiny
//! elementwise chain for dispatch overhead, an MLP training step).
//! [`reference`](mod@reference) runs the same workload in a reference library
//! (`tools/bench_ref.py`: numpy / JAX) in a child process, so a comparison
//! is made in one run on one machine.
//!
//! `cargo run --release -p rlx-bench --example compare` prints the ratios;
//! `BENCHMARKS.md` records them. Nothing here asserts on time.
//!
//! ```no_run
//! use rlx_bench::{patterns, run_benchmark, BenchConfig};
//! let p = patterns::matmul(256);
//! let r = run_benchmark(&p, &BenchConfig::quick()).unwrap();
//! println!("{}: median {:?}, {:.1} GFLOP/s", p.name, r.median, r.gflops());
//! ```
#![deny(missing_docs)]

mod harness;
pub mod kernel;
mod pattern;
pub mod patterns;
pub mod reference;

pub use harness::{run_benchmark, time_iterations, BenchConfig, BenchResult, PreparedPattern};
pub use pattern::{BenchError, BenchmarkPattern};
