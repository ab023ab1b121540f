//! Packed-weight GEMM (`kernels::gemm_packed`) and the GEMM that packs per
//! call (`kernels::gemm_blocked`) next to faer on the MiniLM-L6 projection
//! shapes and square ones, with the weights warm in cache and cold
//! (cycling through more weight bytes than the L3 holds):
//! `cargo run --release -p rlx-cpu --example packed_gemm [threads [MxKxN]]`.

use rlx_cpu::kernels::gemm::{GemmFloat, Strided};
use rlx_cpu::kernels::{gemm_blocked, gemm_packed};
use std::time::Instant;

/// Best time of each of `kernels`, run in turn `runs` times (interleaved,
/// so a slow phase of a noisy host hits them alike).
fn min_times<const K: usize>(runs: usize, kernels: [&mut dyn FnMut(usize); K]) -> [f64; K] {
    let mut best = [f64::INFINITY; K];
    let mut kernels = kernels;
    for r in 0..runs {
        for (f, b) in kernels.iter_mut().zip(&mut best) {
            let t = Instant::now();
            f(r);
            *b = b.min(t.elapsed().as_secs_f64());
        }
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
    let only: Option<Vec<usize>> = std::env::args()
        .nth(2)
        .map(|s| s.split('x').filter_map(|d| d.parse().ok()).collect());
    let shapes = [
        (16, 384, 1152),
        (16, 384, 384),
        (16, 384, 1536),
        (16, 1536, 384),
        (128, 384, 1152),
        (128, 384, 1536),
        (128, 1536, 384),
        (1024, 384, 1536),
        (1024, 1536, 384),
        (512, 512, 512),
        (1024, 1024, 1024),
        (2048, 2048, 2048),
    ];
    // A shape given on the command line runs alone (listed or not).
    let shapes: Vec<(usize, usize, usize)> = match only.as_deref() {
        Some(&[m, k, n]) => vec![(m, k, n)],
        _ => shapes.to_vec(),
    };
    for (m, k, n) in shapes {
        // Enough distinct weights to overflow a 32 MiB L3 when cycled.
        let copies = ((48 << 20) / (k * n * 4) + 1).min(4);
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
            let views = |r: usize| {
                (
                    Strided::row_major(&a, 0, m, k),
                    Strided::row_major(&plain[pick(r)], 0, k, n),
                )
            };
            let mut c2 = c.clone();
            let mut c3 = c.clone();
            let [faer, blocked, ours] = min_times(
                runs,
                [
                    &mut |r| {
                        let (av, bv) = views(r);
                        f32::gemm(av, bv, &mut c, threads)
                    },
                    &mut |r| {
                        let (av, bv) = views(r);
                        gemm_blocked::gemm(av, bv, &mut c2, false, threads)
                    },
                    &mut |r| {
                        gemm_packed::matmul(&a, m, k, &packed[pick(r)], n, nr, &mut c3, threads)
                    },
                ],
            );
            line += &format!(
                "  {}: faer {:>6.1} blocked {:>6.1} packed {:>6.1} GFLOP/s",
                if cold { "cold" } else { "warm" },
                flops / faer / 1e9,
                flops / blocked / 1e9,
                flops / ours / 1e9,
            );
        }
        println!("{line}");
    }
}
