//! The patterns compute what their names say (small sizes, one run each,
//! against f64 loops written here), and a training pattern's SGD steps lower
//! its loss. No test looks at time.

use rlx_bench::{patterns, run_benchmark, BenchConfig, BenchmarkPattern, PreparedPattern};
use rlx_runtime::{Device, Session};
use std::time::Duration;

fn run_once(p: &BenchmarkPattern) -> Vec<Vec<f32>> {
    let mut c = Session::new(Device::Cpu)
        .try_compile(p.graph.clone())
        .unwrap();
    for (n, v) in &p.params {
        c.try_set_param(n, v).unwrap();
    }
    let inputs: Vec<(&str, &[f32])> = p
        .inputs
        .iter()
        .map(|(n, v)| (n.as_str(), v.as_slice()))
        .collect();
    c.try_run(&inputs).unwrap()
}

fn named<'a>(list: &'a [(String, Vec<f32>)], name: &str) -> &'a [f32] {
    &list.iter().find(|(n, _)| n == name).unwrap().1
}

fn assert_close(got: &[f32], want: &[f64], tol: f64, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g as f64 - w).abs() <= tol * (1.0 + w.abs()),
            "{what}[{i}]: {g} vs {w}"
        );
    }
}

fn naive_mm(x: &[f32], w: &[f32], m: usize, k: usize, n: usize) -> Vec<f64> {
    let mut c = vec![0.0; m * n];
    for i in 0..m {
        for p in 0..k {
            for j in 0..n {
                c[i * n + j] += x[i * k + p] as f64 * w[p * n + j] as f64;
            }
        }
    }
    c
}

#[test]
fn matmul_and_gemv_patterns() {
    for (p, m, k, n) in [
        (patterns::matmul(33), 33, 33, 33),
        (patterns::gemv(70, 45), 1, 70, 45),
    ] {
        let want = naive_mm(named(&p.inputs, "x"), named(&p.params, "w"), m, k, n);
        assert_close(&run_once(&p)[0], &want, 1e-5, &p.name);
        assert_eq!(p.flops, 2.0 * (m * k * n) as f64);
    }
}

#[test]
fn elementwise_chain_pattern() {
    let p = patterns::elementwise_chain(16);
    let want: Vec<f64> = named(&p.inputs, "x")
        .iter()
        .map(|&x| {
            let x = x as f64;
            let h = ((1.5 * x + 0.5).tanh() * x - x).abs().sqrt() + 1.0;
            h.ln().max(0.0)
        })
        .collect();
    assert_close(&run_once(&p)[0], &want, 1e-5, &p.name);
}

#[test]
fn ffn_pattern() {
    let p = patterns::ffn(3, 8, 12);
    let gelu = |v: f64| 0.5 * v * (1.0 + erf(v / 2f64.sqrt()));
    let x = named(&p.inputs, "x");
    let mut h: Vec<f32> = naive_mm(x, named(&p.params, "ffn1.w"), 3, 8, 12)
        .iter()
        .zip(named(&p.params, "ffn1.b").iter().cycle())
        .map(|(&v, &b)| gelu(v + b as f64) as f32)
        .collect();
    h.truncate(3 * 12);
    let want: Vec<f64> = naive_mm(&h, named(&p.params, "ffn2.w"), 3, 12, 8)
        .iter()
        .zip(named(&p.params, "ffn2.b").iter().cycle())
        .map(|(&v, &b)| v + b as f64)
        .collect();
    assert_close(&run_once(&p)[0], &want, 1e-4, &p.name);
}

/// erf (Abramowitz-Stegun 7.1.26 is too coarse; a series / continued form in f64).
fn erf(x: f64) -> f64 {
    // Taylor series converges fast for the |x| < 3 used here.
    let (mut term, mut sum, mut n) = (x, x, 0.0);
    while term.abs() > 1e-17 * sum.abs().max(1e-300) {
        n += 1.0;
        term *= -x * x / n;
        sum += term / (2.0 * n + 1.0);
    }
    2.0 / std::f64::consts::PI.sqrt() * sum
}

#[test]
fn every_standard_pattern_builds_and_small_ones_run() {
    let names: Vec<String> = patterns::standard().into_iter().map(|p| p.name).collect();
    assert!(names.iter().any(|n| n == "matmul_1024"), "{names:?}");
    let small = [
        patterns::matmul_gelu(4, 8, 6),
        patterns::attention(2, 5, 4),
        patterns::bert_layer(6, 16, 4),
        patterns::mlp_train_step(4, [12, 8, 3]),
    ];
    let cfg = BenchConfig {
        warmup: 1,
        min_runs: 2,
        min_time: Duration::ZERO,
    };
    for p in &small {
        let r = run_benchmark(p, &cfg).unwrap();
        assert_eq!(r.runs, 2, "{}", p.name);
        assert!(run_once(p)[0].iter().all(|v| v.is_finite()), "{}", p.name);
    }
}

#[test]
fn training_pattern_lowers_its_loss() {
    let p = patterns::mlp_train_step(8, [12, 16, 3]);
    let mut prepared = PreparedPattern::new(&p).unwrap();
    let loss = |outs: Vec<rlx_ir::HostTensor>| outs[0].to_vec::<f32>().unwrap()[0];
    let first = prepared.step().unwrap();
    assert_eq!(first.len(), 1, "a step returns only the loss");
    let first = loss(first);
    for _ in 0..30 {
        prepared.step().unwrap();
    }
    let last = loss(prepared.step().unwrap());
    assert!(last < 0.8 * first, "loss {first} -> {last}");
    assert_ne!(
        prepared.params().unwrap()[0].1,
        p.params[0].1,
        "parameters were updated"
    );
    // The harness's loss is the graph's loss at the updated parameters.
    let mut q = p.clone();
    q.sgd = None;
    q.params = prepared.params().unwrap();
    let loss_now = run_once(&q)[0][0];
    let next = loss(prepared.step().unwrap());
    assert!(
        (loss_now - next).abs() <= 1e-6 * (1.0 + next.abs()),
        "{loss_now} vs {next}"
    );
}

#[test]
fn step_into_writes_the_pattern_s_values_into_kept_outputs() {
    let p = patterns::matmul(40);
    let want = naive_mm(named(&p.inputs, "x"), named(&p.params, "w"), 40, 40, 40);
    let mut prepared = PreparedPattern::new(&p).unwrap();
    let mut outs = prepared.output_tensors();
    for round in 0..2 {
        outs[0].bytes_mut().fill(0xFF);
        prepared.step_into(&mut outs).unwrap();
        let got = outs[0].to_vec::<f32>().unwrap();
        assert_close(&got, &want, 1e-5, &format!("step_into {round}"));
    }
    // A training step into kept outputs returns the loss and updates.
    let t = patterns::mlp_train_step(8, [12, 16, 3]);
    let mut prepared = PreparedPattern::new(&t).unwrap();
    let mut loss = prepared.output_tensors();
    assert_eq!(loss.len(), 1, "only the loss is returned");
    prepared.step_into(&mut loss).unwrap();
    let mut q = t.clone();
    q.sgd = None;
    q.params = prepared.params().unwrap();
    let loss_now = run_once(&q)[0][0];
    prepared.step_into(&mut loss).unwrap();
    let next = loss[0].to_vec::<f32>().unwrap()[0];
    assert!(
        (loss_now - next).abs() <= 1e-6 * (1.0 + next.abs()),
        "{loss_now} vs {next}"
    );
}
