//! Kernel-only GEMM throughput on the MiniLM-L6 projection shapes
//! (`cargo run --release -p rlx-bench --example gemm_shapes`), one line per
//! shape: min / median time and GFLOP/s at the min.

use rlx_bench::{kernel, BenchConfig};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let cfg = BenchConfig::default();
    for (m, k, n) in [
        (128, 384, 384),
        (64, 384, 384),
        (128, 384, 192),
        (64, 384, 1152),
        (128, 384, 576),
        (64, 384, 1536),
        (128, 384, 768),
        (64, 1536, 384),
        (128, 1536, 192),
        (128, 384, 1152),
        (128, 384, 1536),
        (128, 1536, 384),
        (1024, 384, 1536),
    ] {
        let r = kernel::matmul_kernel(m, k, n, &cfg)?;
        println!(
            "{:>18}: min {:>8.1} µs  median {:>8.1} µs  {:>6.1} GFLOP/s at min",
            r.name,
            r.min.as_secs_f64() * 1e6,
            r.median.as_secs_f64() * 1e6,
            r.flops / r.min.as_secs_f64() / 1e9
        );
    }
    Ok(())
}
