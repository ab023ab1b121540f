//! Packed-weight GEMM (`kernels::gemm_packed`) next to the library GEMM on
//! the MiniLM-L6 projection shapes, with the weights warm in cache and cold
//! (cycling through more weight bytes than the L3 holds):
//! `cargo run --release -p rlx-cpu --example packed_gemm [threads]`.

use rlx_cpu::kernels::gemm::{GemmFloat, Strided};
use rlx_cpu::kernels::gemm_packed;
use std::time::Instant;

fn min_time(runs: usize, mut f: impl FnMut(usize)) -> f64 {
    let mut best = f64::INFINITY;
    for r in 0..runs {
        let t = Instant::now();
        f(r);
        best = best.min(t.elapsed().as_secs_f64());
    }
    best
}

fn main() {
    let threads: usize = std::env::args()
        .nth(1)
        .and_then(|t| t.parse().ok())
        .unwrap_or(1);
    rlx_ir::env::set("RLX_NUM_THREADS", &threads.to_string());
    let Some(nr) = gemm_packed::panel_width() else {
        println!("no packed GEMM tile on this CPU");
        return;
    };
    for (m, k, n) in [
        (16, 384, 1152),
        (16, 384, 384),
        (16, 384, 1536),
        (16, 1536, 384),
        (128, 384, 1152),
        (128, 384, 1536),
        (128, 1536, 384),
        (1024, 384, 1536),
        (1024, 1536, 384),
    ] {
        // Enough distinct weights to overflow a 32 MiB L3 when cycled.
        let copies = (48 << 20) / (k * n * 4) + 1;
        let a: Vec<f32> = (0..m * k).map(|i| (i % 7) as f32 * 0.1).collect();
        let plain: Vec<Vec<f32>> = (0..copies)
            .map(|c| (0..k * n).map(|i| ((i + c) % 5) as f32 * 0.1).collect())
            .collect();
        let packed: Vec<Vec<f32>> = plain
            .iter()
            .map(|b| {
                let mut p = vec![0.0; k * n];
                gemm_packed::pack(b, k, n, nr, &mut p);
                p
            })
            .collect();
        let mut c = vec![0.0f32; m * n];
        let runs = (2_000_000_000 / (m * n * k)).clamp(20, 2000);
        let flops = 2.0 * (m * n * k) as f64;
        let mut line = format!("{m:>5}x{k:>5}x{n:>5}:");
        for cold in [false, true] {
            let pick = |r: usize| if cold { r % copies } else { 0 };
            let faer = min_time(runs, |r| {
                f32::gemm(
                    Strided::row_major(&a, 0, m, k),
                    Strided::row_major(&plain[pick(r)], 0, k, n),
                    &mut c,
                    threads,
                )
            });
            let ours = min_time(runs, |r| {
                gemm_packed::matmul(&a, m, k, &packed[pick(r)], n, nr, &mut c)
            });
            line += &format!(
                "  {}: faer {:>6.1} packed {:>6.1} GFLOP/s ({:.2}x)",
                if cold { "cold" } else { "warm" },
                flops / faer / 1e9,
                flops / ours / 1e9,
                ours / faer
            );
        }
        println!("{line}");
    }
}
