//! GEMV speed of the native quantized matmul against dequantize + f32 matmul.
//!
//!     cargo run --release -p rlx-cpu --example bench_qmatmul
//!
//! For Q4_1, Q8_0 and Q4_K weights at M = 1 (one token) and the shapes of
//! a 2048-wide layer and SmolLM2-135M's MLP, prints GFLOP/s (2·M·N·K per
//! run) of: the native kernel on the best instruction set with the op's
//! thread count (one per 2^20 multiply-adds, capped by `RLX_NUM_THREADS` /
//! the cores) and with one thread; the native kernel on
//! the scalar path; dequantizing the whole weight (rlx-gguf) then the CPU
//! backend's f32 matmul kernel; and the same f32 matmul alone on weights
//! dequantized in advance. Median of several timed batches, in one run.
//!
//!     cargo run --release -p rlx-cpu --example bench_qmatmul -- --bandwidth
//!
//! One thread, SmolLM2-135M's shapes (an MLP projection and the 49152 x 576
//! LM head) per format, at M = 1 (decoding) and M = 32 (a prefill chunk):
//! GFLOP/s and, at M = 1, the weight bytes read per second as a share of
//! a copy loop's read + write bandwidth measured in the same run (a
//! 256 MiB `copy_from_slice`, best of 5).

use rlx_cpu::kernels::linalg::matmul;
use rlx_cpu::kernels::quant_matmul::{default_threads, QuantIsa, QuantMatMul};
use rlx_cpu::kernels::{View, ViewMut};
use rlx_gguf::{codecs, GgmlType};
use rlx_ir::quant::QuantScheme;
use rlx_ir::DType;
use std::time::Instant;

/// Median seconds per call of `f`, over batches of at least 50 ms.
fn time(mut f: impl FnMut()) -> f64 {
    f();
    let mut reps = 1;
    loop {
        let t = Instant::now();
        for _ in 0..reps {
            f();
        }
        if t.elapsed().as_secs_f64() > 0.05 {
            break;
        }
        reps *= 2;
    }
    let mut runs: Vec<f64> = (0..7)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..reps {
                f();
            }
            t.elapsed().as_secs_f64() / reps as f64
        })
        .collect();
    runs.sort_by(f64::total_cmp);
    runs[3]
}

fn bytes_of(v: &[f32]) -> &[u8] {
    // SAFETY: f32 has no invalid bit patterns and u8 has alignment 1.
    unsafe { std::slice::from_raw_parts(v.as_ptr() as *const u8, v.len() * 4) }
}

/// `x [1, K] · wdᵀ` with the backend's f32 matmul kernel (`wt` = `wdᵀ`, `[K, N]`).
fn f32_matmul(x: &[f32], wt: &[f32], k: usize, n: usize, y: &mut [f32]) {
    let (xd, wd, yd) = ([1, k], [k, n], [1, n]);
    let ins = [
        View {
            dims: &xd,
            dtype: DType::F32,
            bytes: bytes_of(x),
        },
        View {
            dims: &wd,
            dtype: DType::F32,
            bytes: bytes_of(wt),
        },
    ];
    // SAFETY: as in bytes_of; the view is the only borrow of `y`.
    let yb = unsafe { std::slice::from_raw_parts_mut(y.as_mut_ptr() as *mut u8, y.len() * 4) };
    let mut out = ViewMut {
        dims: &yd,
        dtype: DType::F32,
        bytes: yb,
    };
    matmul(&ins, &mut out).unwrap();
}

fn main() {
    // `--profile TYPE`: only the native kernel, one thread, for 3 s (for perf).
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("--profile") {
        let scheme = QuantScheme::from_name(args.get(2).map_or("Q8_0", String::as_str)).unwrap();
        let (n, k) = (2048, 2048);
        let wf: Vec<f32> = (0..n * k)
            .map(|i| ((i * 7919) % 1000) as f32 / 500.0 - 1.0)
            .collect();
        let w = codecs::quantize(GgmlType::from(scheme), &wf).unwrap();
        let x: Vec<f32> = (0..k).map(|i| (i as f32 * 0.01).sin()).collect();
        let mut y = vec![0f32; n];
        let mm = QuantMatMul {
            scheme: Some(scheme),
            w_dtype: DType::U8,
            n,
            k,
        };
        let t = Instant::now();
        let mut runs = 0;
        while t.elapsed().as_secs_f64() < 3.0 {
            mm.run(QuantIsa::best(), 1, &w, &x, &mut y).unwrap();
            runs += 1;
        }
        let s = t.elapsed().as_secs_f64() / runs as f64;
        println!(
            "{scheme} {n}x{k}: {:.2} GFLOP/s",
            2.0 * (n * k) as f64 / s / 1e9
        );
        return;
    }
    if args.get(1).map(String::as_str) == Some("--bandwidth") {
        bandwidth_table();
        return;
    }
    let threads = rlx_cpu::kernels::gemm::num_threads();
    let best = QuantIsa::best();
    println!("best ISA {best:?}, {threads} threads; GFLOP/s at M = 1 (higher is better)");
    println!(
        "{:<5} {:>5} {:>5} | {:>9} {:>9} {:>9} | {:>12} {:>10}",
        "type", "N", "K", "native", "native 1t", "scalar 1t", "deq+T+f32 mm", "f32 mm"
    );
    let shapes: [(usize, usize); 3] = [(2048, 2048), (576, 1536), (1536, 576)];
    for scheme in [
        QuantScheme::GgufQ4_1,
        QuantScheme::GgufQ8_0,
        QuantScheme::GgufQ4K,
    ] {
        for (n, k) in shapes {
            if !k.is_multiple_of(scheme.block_size()) {
                continue;
            }
            let wf: Vec<f32> = (0..n * k)
                .map(|i| ((i * 7919) % 1000) as f32 / 500.0 - 1.0)
                .collect();
            let ty = GgmlType::from(scheme);
            let w = codecs::quantize(ty, &wf).unwrap();
            let x: Vec<f32> = (0..k).map(|i| (i as f32 * 0.01).sin()).collect();
            let mut y = vec![0f32; n];
            let mm = QuantMatMul {
                scheme: Some(scheme),
                w_dtype: DType::U8,
                n,
                k,
            };
            let flops = 2.0 * (n * k) as f64 / 1e9;
            let t = default_threads(1, n, k);
            let native = time(|| mm.run(best, t, &w, &x, &mut y).unwrap());
            let native1 = time(|| mm.run(best, 1, &w, &x, &mut y).unwrap());
            let scalar1 = time(|| mm.run(QuantIsa::Scalar, 1, &w, &x, &mut y).unwrap());
            let transpose = |wd: &[f32]| {
                let mut wt = vec![0f32; n * k];
                for r in 0..n {
                    for c in 0..k {
                        wt[c * n + r] = wd[r * k + c];
                    }
                }
                wt
            };
            let deq = time(|| {
                let wd = codecs::dequantize(ty, &w, n * k).unwrap();
                f32_matmul(&x, &transpose(&wd), k, n, &mut y);
            });
            let wt = transpose(&codecs::dequantize(ty, &w, n * k).unwrap());
            let f32only = time(|| f32_matmul(&x, &wt, k, n, &mut y));
            println!(
                "{:<5} {n:>5} {k:>5} | {:>9.2} {:>9.2} {:>9.2} | {:>12.2} {:>10.2}",
                scheme.name(),
                flops / native,
                flops / native1,
                flops / scalar1,
                flops / deq,
                flops / f32only
            );
        }
    }
}

/// Read + write bytes per second of a 256 MiB `copy_from_slice`, best of 5.
fn copy_bandwidth() -> f64 {
    let src = vec![1u8; 256 << 20];
    let mut dst = vec![0u8; src.len()];
    let best = (0..5)
        .map(|_| {
            let t = Instant::now();
            dst.copy_from_slice(std::hint::black_box(&src));
            std::hint::black_box(&dst);
            t.elapsed().as_secs_f64()
        })
        .fold(f64::INFINITY, f64::min);
    2.0 * src.len() as f64 / best
}

/// The `--bandwidth` table (see the module docs).
fn bandwidth_table() {
    let copy = copy_bandwidth();
    println!(
        "copy bandwidth (read + write, 1 thread): {:.1} GB/s",
        copy / 1e9
    );
    println!(
        "{:<5} {:>6} {:>5} | {:>10} {:>10} {:>8} | {:>11}",
        "type", "N", "K", "M=1 GF/s", "weight GB/s", "of copy", "M=32 GF/s"
    );
    let shapes: [(usize, usize); 3] = [(1536, 576), (576, 1536), (49152, 576)];
    for scheme in [
        QuantScheme::GgufQ4_1,
        QuantScheme::GgufQ8_0,
        QuantScheme::GgufQ5_0,
        QuantScheme::GgufQ4K,
        QuantScheme::GgufQ6K,
    ] {
        for (n, k) in shapes {
            if !k.is_multiple_of(scheme.block_size()) {
                continue;
            }
            let wf: Vec<f32> = (0..n * k)
                .map(|i| ((i * 7919) % 1000) as f32 / 500.0 - 1.0)
                .collect();
            let w = codecs::quantize(GgmlType::from(scheme), &wf).unwrap();
            let mm = QuantMatMul {
                scheme: Some(scheme),
                w_dtype: DType::U8,
                n,
                k,
            };
            let rate = |m: usize| {
                let x: Vec<f32> = (0..m * k).map(|i| (i as f32 * 0.01).sin()).collect();
                let mut y = vec![0f32; m * n];
                let s = time(|| mm.run(QuantIsa::best(), 1, &w, &x, &mut y).unwrap());
                (2.0 * (m * n * k) as f64 / s / 1e9, w.len() as f64 / s)
            };
            let (gemv, bytes) = rate(1);
            let (gemm, _) = rate(32);
            println!(
                "{:<5} {n:>6} {k:>5} | {gemv:>10.2} {:>10.2} {:>7.0}% | {gemm:>11.2}",
                scheme.name(),
                bytes / 1e9,
                100.0 * bytes / copy
            );
        }
    }
}
