//! Param hoisting: what depends only on params (a weight transpose, the
//! stacked Q / K / V weights and biases) runs in a prelude once per param
//! change, not once per run; changing a param after a run updates the
//! result (no stale cache). Derived params that only move param bytes (the
//! stacks of `[K, N]` weights, a concat or a slice of params) are
//! assembled instead: setting a param writes its bytes into its slice, with
//! no prelude run and no second copy. Numbers against f64 host references.

use rlx_compile::FusionKind;
use rlx_driver::Device;
use rlx_ir::{DType, Graph, GraphExt, HostTensor, Shape};
use rlx_runtime::{CompileOptions, Session};

mod common;
use common::values;

const M: usize = 5;
const K: usize = 7;
const N: usize = 3;

fn f32s(dims: &[usize]) -> Shape {
    Shape::new(dims, DType::F32)
}

/// Three projections of x with biases: through transposed param weights
/// (`[N, K]`, torch's layout), y_i = x @ w_iᵀ + b_i, when `torch_layout`;
/// else through `[K, N]` weights (as BERT's loader stores them), x @ w_i + b_i.
fn projections(torch_layout: bool) -> Graph {
    let mut g = Graph::new("qkv");
    let x = g.input("x", f32s(&[M, K]));
    let mut outs = Vec::new();
    for name in ["q", "k", "v"] {
        let dims = if torch_layout { [N, K] } else { [K, N] };
        let w = g.param(&format!("{name}.w"), f32s(&dims));
        let b = g.param(&format!("{name}.b"), f32s(&[N]));
        let w = if torch_layout {
            g.transpose_(w, &[1, 0])
        } else {
            w
        };
        let y = g.mm(x, w);
        outs.push(g.add(y, b));
    }
    g.set_outputs(outs);
    g
}

/// x @ wᵀ + b in f64 (x @ w + b unless `torch_layout`).
fn reference(x: &[f32], w: &[f32], b: &[f32], torch_layout: bool) -> Vec<f64> {
    let w_at = |k: usize, j: usize| {
        if torch_layout {
            w[j * K + k]
        } else {
            w[k * N + j]
        }
    };
    let mut y = vec![0.0f64; M * N];
    for i in 0..M {
        for j in 0..N {
            let dot: f64 = (0..K)
                .map(|k| x[i * K + k] as f64 * w_at(k, j) as f64)
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
    let mut c = Session::new(Device::Cpu).compile(projections(true));
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
                &reference(&x, w, b, true),
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
            assert_close(
                &out[i],
                &reference(&x, w, b, true),
                &format!("after k.w out {i}"),
            );
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
    // Torch-layout weights are transposed and stacked by the prelude;
    // `[K, N]` ones are assembled, with no prelude run.
    for torch_layout in [true, false] {
        let run = |opts: &CompileOptions| {
            let mut c = Session::new(Device::Cpu).compile_with(projections(torch_layout), opts);
            for (i, (name, shape)) in c.param_shapes().into_iter().enumerate() {
                let n: usize = shape.static_dims().unwrap().iter().product();
                c.set_param(&name, &values(n, i as u64, 0.5));
            }
            let out = c.run(&[("x", &x)]);
            (out, c.prelude_runs(), c.lir().fusion.clone())
        };
        let (hoisted, runs, fused) = run(&CompileOptions::default());
        let (plain, no_runs, unstacked) = run(&CompileOptions::default().hoist_params(false));
        assert_eq!(runs, usize::from(torch_layout));
        assert_eq!(no_runs, 0);
        // Without hoisting, stacking param weights would copy them every run:
        // the shared-input fusion reports them as a miss instead.
        assert_eq!(fused.of_kind(FusionKind::SharedInput).len(), 1);
        assert!(unstacked.of_kind(FusionKind::SharedInput).is_empty());
        assert!(unstacked
            .missed
            .iter()
            .any(|m| m.reason == rlx_compile::MissReason::ParamWeights));
        assert_eq!(hoisted, plain, "torch layout: {torch_layout}");
    }
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
        &reference(&x, &wv, &bv, true),
        "first",
    );
    wv = values(N * K, 9, 0.5);
    d.set_param_typed("w", &t(&wv, &[N, K])).unwrap();
    let out = d.run_typed(&[("x", &t(&x, &[M, K]))]).unwrap();
    assert_close(
        &out[0].to_vec::<f32>().unwrap(),
        &reference(&x, &wv, &bv, true),
        "after w",
    );
}

fn le_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

#[test]
fn stacked_weights_are_written_into_their_slice_and_never_go_stale() {
    let mut c = Session::new(Device::Cpu).compile(projections(false));
    let report = &c.lir().fusion;
    assert_eq!(
        report.of_kind(rlx_compile::FusionKind::SharedInput).len(),
        1,
        "{report}"
    );
    assert!(c.prelude_lir().is_none(), "the stacks only move bytes");
    // The main graph reads the two stacks (weights and biases) only.
    let main_params: Vec<String> = c
        .lir()
        .graph
        .params()
        .iter()
        .map(|p| p.1.to_string())
        .collect();
    assert_eq!(main_params, ["hoisted.0", "hoisted.1"]);
    assert_eq!(
        c.param_names(),
        ["q.w", "q.b", "k.w", "k.b", "v.w", "v.b"],
        "the caller's params, in declaration order"
    );

    let mut params: Vec<(Vec<f32>, Vec<f32>)> = (0..3)
        .map(|i| (values(K * N, i, 0.5), values(N, 10 + i, 0.5)))
        .collect();
    for (name, (w, b)) in ["q", "k", "v"].iter().zip(&params).take(2) {
        c.set_param(&format!("{name}.w"), w);
        c.set_param(&format!("{name}.b"), b);
    }
    let x = values(M * K, 100, 1.0);
    let err = c.try_run(&[("x", &x)]).unwrap_err().to_string();
    assert!(err.contains("v.w"), "an unset member is named: {err}");
    c.set_param("v.w", &params[2].0);
    c.set_param("v.b", &params[2].1);
    let check = |c: &mut rlx_runtime::CompiledGraph, params: &[(Vec<f32>, Vec<f32>)], what| {
        let out = c.run(&[("x", &x)]);
        for (i, (w, b)) in params.iter().enumerate() {
            assert_close(
                &out[i],
                &reference(&x, w, b, false),
                &format!("{what}: out {i}"),
            );
        }
    };
    check(&mut c, &params, "first run");

    // A new k weight after the run: its slice changes, q's and v's do not.
    params[1].0 = values(K * N, 77, 0.5);
    c.set_param("k.w", &params[1].0);
    check(&mut c, &params, "after k.w");

    // In-place writes land in the slice too: row 2 of v.w, then v.b[1].
    let row = values(N, 5, 0.5);
    params[2].0[2 * N..3 * N].copy_from_slice(&row);
    c.write_param_bytes("v.w", 2 * N * 4, &le_bytes(&row))
        .unwrap();
    params[2].1[1] = 0.25;
    c.write_param_bytes("v.b", 4, &le_bytes(&[0.25])).unwrap();
    check(&mut c, &params, "after writes");

    // Failed calls change nothing.
    assert!(c.try_set_param("q.w", &[1.0; 3]).is_err());
    assert!(c
        .set_param_typed("k.b", &HostTensor::from_slice(&[1.0f64; N], &[N]).unwrap())
        .is_err());
    assert!(c.write_param_bytes("q.b", (N - 1) * 4, &[0; 8]).is_err());
    check(&mut c, &params, "after failed calls");
    assert_eq!(c.prelude_runs(), 0);

    // A stacked member has no buffer of its own to share, either way.
    let mut d = Session::new(Device::Cpu).compile(projections(false));
    let err = d.share_param_from("q.w", &c, "q.w").unwrap_err();
    assert!(err.to_string().contains("stacks"), "{err}");
    let mut plain = Session::new(Device::Cpu).compile_with(
        projections(false),
        &CompileOptions::default().hoist_params(false),
    );
    let err = plain.share_param_from("q.w", &c, "q.w").unwrap_err();
    assert!(err.to_string().contains("stacked"), "{err}");
    assert!(plain.try_run(&[("x", &x)]).is_err(), "q.w is still unset");
}

#[test]
fn inner_axis_concats_and_slices_of_params_are_assembled() {
    const R: usize = 3;
    const A: usize = 2;
    const B: usize = 4;
    const T: usize = 6;
    const S: usize = 3;
    let mut g = Graph::new("moves");
    let x = g.input("x", f32s(&[R, A + B]));
    let y = g.input("y", f32s(&[S, B]));
    let a = g.param("a", f32s(&[R, A]));
    let b = g.param("b", f32s(&[R, B]));
    let t = g.param("t", f32s(&[T, B]));
    let cat = g.concat_(&[a, b], 1);
    let rows = g.narrow_(t, 0, 1, S);
    let o1 = g.add(x, cat);
    let o2 = g.add(y, rows);
    let z = g.input("z", f32s(&[2, A]));
    let at = g.transpose_(a, &[1, 0]);
    let o3 = g.mm(z, at);
    g.set_outputs(vec![o1, o2, o3]);
    let mut c = Session::new(Device::Cpu).compile(g);
    let prelude = c.prelude_lir().expect("aᵀ is computed");
    assert_eq!(prelude.io.params.len(), 1, "only a feeds the prelude");
    // Neither graph moves the bytes: the concat and the slice are assembled.
    for g in [&prelude.graph, &c.lir().graph] {
        assert!(
            g.nodes()
                .iter()
                .all(|n| !matches!(n.op, rlx_ir::Op::Concat { .. } | rlx_ir::Op::Slice(_))),
            "{g}"
        );
    }

    let (xv, yv) = (values(R * (A + B), 1, 1.0), values(S * B, 2, 1.0));
    let zv = values(2 * A, 6, 1.0);
    let mut av = values(R * A, 3, 1.0);
    let bv = values(R * B, 4, 1.0);
    let mut tv = values(T * B, 5, 1.0);
    c.set_param("a", &av);
    c.set_param("b", &bv);
    c.set_param("t", &tv);
    for round in 0..2 {
        let out = c.run(&[("x", &xv), ("y", &yv), ("z", &zv)]);
        let (xs, as_, bs) = (&xv, &av, &bv);
        let want1: Vec<f64> = (0..R)
            .flat_map(|r| {
                (0..A + B).map(move |j| {
                    let p = if j < A {
                        as_[r * A + j]
                    } else {
                        bs[r * B + j - A]
                    };
                    xs[r * (A + B) + j] as f64 + p as f64
                })
            })
            .collect();
        let want2: Vec<f64> = (0..S * B)
            .map(|i| yv[i] as f64 + tv[B + i] as f64)
            .collect();
        let want3: Vec<f64> = (0..2 * R)
            .map(|i| {
                let (row, r) = (i / R, i % R);
                (0..A)
                    .map(|k| zv[row * A + k] as f64 * av[r * A + k] as f64)
                    .sum()
            })
            .collect();
        assert_close(&out[0], &want1, &format!("round {round}: concat"));
        assert_close(&out[1], &want2, &format!("round {round}: rows"));
        assert_close(&out[2], &want3, &format!("round {round}: z @ aT"));
        // Change a (in the concat and the prelude) and t (rows 1..4 are read).
        av = values(R * A, 30, 1.0);
        tv = values(T * B, 50, 1.0);
        c.set_param("a", &av);
        c.set_param("t", &tv);
    }
    assert_eq!(c.prelude_runs(), 2);
}
