//! Times each dense linalg op on one `n × n` matrix (default n = 512), f64
//! and f32, through a compiled graph on the CPU backend (best of `reps`
//! runs, input copies included), as `tools/bench_linalg.py` times
//! numpy / scipy on the same sizes.
//!
//! `cargo run --release -p rlx-linalg --example linalg_bench -- [n] [reps]`

use rlx_driver::Device;
use rlx_ir::{DType, Graph, HostTensor, NodeId, Shape};
use rlx_runtime::Session;
use std::time::Instant;

/// A deterministic well-conditioned `n × n` matrix: `M M^T / n + I`
/// (symmetric positive definite, so every op applies).
fn spd(n: usize) -> Vec<f64> {
    let m: Vec<f64> = (0..n * n)
        .map(|k| (((k * 7919 + 13) % 1009) as f64 / 1009.0) - 0.5)
        .collect();
    let mut a = vec![0.0; n * n];
    for i in 0..n {
        for j in 0..n {
            let s: f64 = (0..n).map(|k| m[i * n + k] * m[j * n + k]).sum();
            a[i * n + j] = s / n as f64 + if i == j { 1.0 } else { 0.0 };
        }
    }
    a
}

type Builder = fn(&mut Graph, NodeId, NodeId) -> Vec<NodeId>;

fn ops() -> Vec<(&'static str, Builder)> {
    vec![
        ("cholesky", |g, a, _| {
            vec![rlx_linalg::cholesky(g, a).unwrap()]
        }),
        ("solve", |g, a, b| vec![rlx_linalg::solve(g, a, b).unwrap()]),
        ("lu", |g, a, _| {
            let (p, l, u) = rlx_linalg::lu(g, a).unwrap();
            vec![p, l, u]
        }),
        ("qr", |g, a, _| {
            let (q, r) = rlx_linalg::qr(g, a).unwrap();
            vec![q, r]
        }),
        ("eigh", |g, a, _| {
            let (w, v) = rlx_linalg::eigh(g, a).unwrap();
            vec![w, v]
        }),
        ("svd", |g, a, _| {
            let (u, s, vt) = rlx_linalg::svd(g, a).unwrap();
            vec![u, s, vt]
        }),
        ("inv", |g, a, _| vec![rlx_linalg::inv(g, a).unwrap()]),
        ("det", |g, a, _| vec![rlx_linalg::det(g, a).unwrap()]),
    ]
}

fn tensor(v: &[f64], dims: &[usize], dtype: DType) -> HostTensor {
    match dtype {
        DType::F32 => HostTensor::from_vec(v.iter().map(|&x| x as f32).collect(), dims),
        _ => HostTensor::from_vec(v.to_vec(), dims),
    }
    .expect("dims match")
}

fn main() {
    let mut args = std::env::args().skip(1);
    let n: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(512);
    let reps: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(5);
    let k = 16; // right-hand sides of `solve`
    let a = spd(n);
    let b: Vec<f64> = (0..n * k).map(|i| ((i % 11) as f64 - 5.0) / 5.0).collect();
    for dtype in [DType::F64, DType::F32] {
        let (at, bt) = (tensor(&a, &[n, n], dtype), tensor(&b, &[n, k], dtype));
        for (name, build) in ops() {
            let mut g = Graph::new(name);
            let ai = g.input("a", Shape::new(&[n, n], dtype));
            let bi = g.input("b", Shape::new(&[n, k], dtype));
            let outs = build(&mut g, ai, bi);
            g.set_outputs(outs);
            let mut c = Session::new(Device::Cpu).try_compile(g).expect("compiles");
            let best = (0..reps)
                .map(|_| {
                    let t = Instant::now();
                    std::hint::black_box(c.try_run_typed(&[("a", &at), ("b", &bt)]).expect("runs"));
                    t.elapsed().as_secs_f64()
                })
                .fold(f64::INFINITY, f64::min);
            println!("rlx {dtype} {name} {:.3} ms", best * 1e3);
        }
    }
}
