//! Param hoisting: what depends only on params (a weight transpose, the
//! stacked Q / K / V weights and biases) runs in a prelude once per param
//! change, not once per run; changing a param after a run updates the
//! result (no stale cache). Numbers against an f64 host reference.

use rlx_compile::FusionKind;
use rlx_driver::Device;
use rlx_ir::{DType, Graph, GraphExt, Shape};
use rlx_runtime::{CompileOptions, Session};

mod common;
use common::values;

const M: usize = 5;
const K: usize = 7;
const N: usize = 3;

/// Three projections of x through transposed param weights (`[N, K]`,
/// torch's layout) with biases: y_i = x @ w_iᵀ + b_i.
fn projections() -> Graph {
    let mut g = Graph::new("qkv");
    let x = g.input("x", Shape::new(&[M, K], DType::F32));
    let mut outs = Vec::new();
    for name in ["q", "k", "v"] {
        let w = g.param(&format!("{name}.w"), Shape::new(&[N, K], DType::F32));
        let b = g.param(&format!("{name}.b"), Shape::new(&[N], DType::F32));
        let wt = g.transpose_(w, &[1, 0]);
        let y = g.mm(x, wt);
        outs.push(g.add(y, b));
    }
    g.set_outputs(outs);
    g
}

/// x @ wᵀ + b in f64.
fn reference(x: &[f32], w: &[f32], b: &[f32]) -> Vec<f64> {
    let mut y = vec![0.0f64; M * N];
    for i in 0..M {
        for j in 0..N {
            let dot: f64 = (0..K)
                .map(|k| x[i * K + k] as f64 * w[j * K + k] as f64)
                .sum();
            y[i * N + j] = dot + b[j] as f64;
        }
    }
    y
}

fn assert_close(got: &[f32], want: &[f64], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}");
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g as f64 - w).abs() <= 1e-5 * (1.0 + w.abs()),
            "{what}[{i}]: {g} vs {w}"
        );
    }
}

#[test]
fn the_prelude_runs_once_per_param_change_and_never_goes_stale() {
    let mut c = Session::new(Device::Cpu).compile(projections());
    let report = &c.lir().fusion;
    assert_eq!(report.of_kind(FusionKind::SharedInput).len(), 1, "{report}");
    assert!(report.missed.is_empty(), "{report}");
    // The transposes and the stacks are in the prelude; the main graph
    // reads them as derived params and has no transpose or concat left.
    let main = &c.lir().graph;
    assert!(
        main.nodes().iter().all(|n| !matches!(
            n.op,
            rlx_ir::Op::Transpose { .. } | rlx_ir::Op::Concat { .. }
        )),
        "{main}"
    );
    assert!(c.prelude_lir().is_some());
    assert_eq!(
        c.param_names(),
        ["q.w", "q.b", "k.w", "k.b", "v.w", "v.b"],
        "the caller's params, in declaration order"
    );

    let mut params: Vec<(Vec<f32>, Vec<f32>)> = (0..3)
        .map(|i| (values(N * K, i, 0.5), values(N, 10 + i, 0.5)))
        .collect();
    for (name, (w, b)) in ["q", "k", "v"].iter().zip(&params) {
        c.set_param(&format!("{name}.w"), w);
        c.set_param(&format!("{name}.b"), b);
    }
    assert_eq!(c.prelude_runs(), 0, "nothing runs before the first run");
    for round in 0..3 {
        let x = values(M * K, 100 + round, 1.0);
        let out = c.run(&[("x", &x)]);
        for (i, (w, b)) in params.iter().enumerate() {
            assert_close(
                &out[i],
                &reference(&x, w, b),
                &format!("round {round} out {i}"),
            );
        }
    }
    assert_eq!(c.prelude_runs(), 1, "three runs, params set once");

    // A new k weight: the next run recomputes the stack, once.
    params[1].0 = values(N * K, 77, 0.5);
    c.set_param("k.w", &params[1].0);
    let x = values(M * K, 200, 1.0);
    for _ in 0..2 {
        let out = c.run(&[("x", &x)]);
        for (i, (w, b)) in params.iter().enumerate() {
            assert_close(&out[i], &reference(&x, w, b), &format!("after k.w out {i}"));
        }
    }
    assert_eq!(c.prelude_runs(), 2);

    // A failed set_param changes nothing, so nothing is recomputed.
    assert!(c.try_set_param("v.b", &[1.0]).is_err());
    c.run(&[("x", &x)]);
    assert_eq!(c.prelude_runs(), 2);
}

#[test]
fn hoisting_off_computes_the_same_bits_every_run() {
    let x = values(M * K, 5, 1.0);
    let run = |opts: &CompileOptions| {
        let mut c = Session::new(Device::Cpu).compile_with(projections(), opts);
        for (i, (name, shape)) in c.param_shapes().into_iter().enumerate() {
            let n: usize = shape.static_dims().unwrap().iter().product();
            c.set_param(&name, &values(n, i as u64, 0.5));
        }
        let out = c.run(&[("x", &x)]);
        (out, c.prelude_runs(), c.lir().fusion.clone())
    };
    let (hoisted, runs, fused) = run(&CompileOptions::default());
    let (plain, no_runs, unstacked) = run(&CompileOptions::default().hoist_params(false));
    assert_eq!(runs, 1);
    assert_eq!(no_runs, 0);
    // Without hoisting, stacking param weights would copy them every run:
    // the shared-input fusion reports them as a miss instead.
    assert_eq!(fused.of_kind(FusionKind::SharedInput).len(), 1);
    assert!(unstacked.of_kind(FusionKind::SharedInput).is_empty());
    assert!(unstacked
        .missed
        .iter()
        .any(|m| m.reason == rlx_compile::MissReason::ParamWeights));
    assert_eq!(hoisted, plain);
}

#[test]
fn a_dynamic_graph_hoists_per_binding_and_sees_new_params() {
    // Params set on a dynamic graph reach every cached plan's prelude.
    let mut g = Graph::new("dyn");
    let x = g.input(
        "x",
        Shape::from_dims(vec![rlx_ir::Dim::sym("m"), K.into()], DType::F32),
    );
    let w = g.param("w", Shape::new(&[N, K], DType::F32));
    let b = g.param("b", Shape::new(&[N], DType::F32));
    let wt = g.transpose_(w, &[1, 0]);
    let y = g.mm(x, wt);
    let y = g.add(y, b);
    g.set_outputs(vec![y]);
    let mut d = Session::new(Device::Cpu)
        .compile_dynamic(g, &CompileOptions::default())
        .unwrap();
    let (mut wv, bv) = (values(N * K, 1, 0.5), values(N, 2, 0.5));
    let t = |v: &[f32], dims: &[usize]| rlx_ir::HostTensor::from_slice(v, dims).unwrap();
    d.set_param_typed("w", &t(&wv, &[N, K])).unwrap();
    d.set_param_typed("b", &t(&bv, &[N])).unwrap();
    let x = values(M * K, 3, 1.0);
    let out = d.run_typed(&[("x", &t(&x, &[M, K]))]).unwrap();
    assert_close(
        &out[0].to_vec::<f32>().unwrap(),
        &reference(&x, &wv, &bv),
        "first",
    );
    wv = values(N * K, 9, 0.5);
    d.set_param_typed("w", &t(&wv, &[N, K])).unwrap();
    let out = d.run_typed(&[("x", &t(&x, &[M, K]))]).unwrap();
    assert_close(
        &out[0].to_vec::<f32>().unwrap(),
        &reference(&x, &wv, &bv),
        "after w",
    );
}
