//! The packed products of MiniLM-L6's layers in model order (q / k / v
//! stacked, attention output, FFN up, FFN down) for `m` rows, over
//! `layers` distinct sets of weights, so that with 6 layers (42.5 MB) the
//! weights stream from DRAM every pass as in the model, and with 1 (7 MB)
//! they stay in L3: `cargo run --release -p rlx-cpu --example seq_probe
//! -- [threads [m [layers]]]` (defaults 2 16 6). Prints the time per pass
//! and each product's GFLOP/s (min and median of 1000 passes).

use rlx_cpu::kernels::gemm_packed;
use std::time::Instant;

fn main() {
    let threads: usize = std::env::args()
        .nth(1)
        .and_then(|t| t.parse().ok())
        .unwrap_or(2);
    let m: usize = std::env::args()
        .nth(2)
        .and_then(|t| t.parse().ok())
        .unwrap_or(16);
    let layers: usize = std::env::args()
        .nth(3)
        .and_then(|t| t.parse().ok())
        .unwrap_or(6);
    rlx_ir::env::set("RLX_NUM_THREADS", &threads.to_string());
    let nr = gemm_packed::panel_width().unwrap();
    // (k, count, n)
    let shapes = [
        (384usize, 3usize, 384usize),
        (384, 1, 384),
        (384, 1, 1536),
        (1536, 1, 384),
    ];
    let w: Vec<Vec<Vec<f32>>> = (0..layers)
        .map(|l| {
            shapes
                .iter()
                .map(|&(k, c, n)| {
                    let b: Vec<f32> = (0..c * k * n)
                        .map(|i| ((i + l) % 5) as f32 * 0.01)
                        .collect();
                    let mut p = vec![0.0; b.len()];
                    gemm_packed::pack(&b, k, n, nr, &mut p);
                    p
                })
                .collect()
        })
        .collect();
    let a: Vec<f32> = (0..m * 1536).map(|i| (i % 7) as f32 * 0.1).collect();
    let mut c = vec![0.0f32; 3 * m * 1536];
    let flops: f64 = shapes
        .iter()
        .map(|&(k, cn, n)| 2.0 * (m * k * cn * n) as f64)
        .sum::<f64>()
        * layers as f64;
    let runs = 1000;
    let mut per_op = vec![vec![0f64; runs]; 4];
    let mut total = vec![0f64; runs];
    for r in 0..runs {
        let t0 = Instant::now();
        for layer in &w {
            for (s, &(k, cn, n)) in shapes.iter().enumerate() {
                let t = Instant::now();
                gemm_packed::matmul_stacked(
                    &a[..m * k],
                    m,
                    k,
                    &layer[s],
                    cn,
                    n,
                    nr,
                    &mut c[..cn * m * n],
                    threads,
                );
                per_op[s][r] += t.elapsed().as_secs_f64();
            }
        }
        total[r] = t0.elapsed().as_secs_f64();
    }
    let med = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        (v[0], v[v.len() / 2])
    };
    let (mn, md) = med(&mut total);
    println!("sequence of {layers} layers, m {m}, {threads} threads: min {:.3} ms ({:.1} GFLOP/s), median {:.3} ms ({:.1} GFLOP/s)", mn * 1e3, flops / mn / 1e9, md * 1e3, flops / md / 1e9);
    for (s, &(k, cn, n)) in shapes.iter().enumerate() {
        let f = 2.0 * (m * k * cn * n) as f64 * layers as f64;
        let (mn, md) = med(&mut per_op[s]);
        println!(
            "  {m}x{k}x{} : min {:.1} median {:.1} GFLOP/s",
            cn * n,
            f / mn / 1e9,
            f / md / 1e9
        );
    }
}
