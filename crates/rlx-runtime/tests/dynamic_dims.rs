//! `DynamicGraph`: symbolic dims bound per run from the inputs, one compile
//! per binding (cached), errors naming the input / symbol. Results are checked
//! against a host-side f64 computation of the same MLP.

use rlx_driver::Device;
use rlx_ir::{DType, Dim, Graph, GraphExt, HostTensor, OpKind, Shape};
use rlx_runtime::{CompileOptions, RuntimeError, Session};

const IN: usize = 3;
const OUT: usize = 2;

/// relu(x @ w + b) with x: [batch, IN].
fn mlp() -> Graph {
    let mut g = Graph::new("mlp");
    let x = g.input(
        "x",
        Shape::from_dims(vec![Dim::sym("batch"), Dim::Static(IN)], DType::F32),
    );
    let w = g.param("w", Shape::new(&[IN, OUT], DType::F32));
    let b = g.param("b", Shape::new(&[OUT], DType::F32));
    let h = g.mm(x, w);
    let h = g.add(h, b);
    let y = g.relu(h);
    g.set_outputs(vec![y]);
    g
}

fn reference(x: &[f32], w: &[f32], b: &[f32]) -> Vec<f32> {
    let rows = x.len() / IN;
    let mut out = Vec::new();
    for r in 0..rows {
        for o in 0..OUT {
            let mut acc = b[o] as f64;
            for i in 0..IN {
                acc += x[r * IN + i] as f64 * w[i * OUT + o] as f64;
            }
            out.push(acc.max(0.0) as f32);
        }
    }
    out
}

fn values(n: usize, seed: f32) -> Vec<f32> {
    (0..n).map(|i| ((i as f32 + seed) * 0.37).sin()).collect()
}

fn t(values: Vec<f32>, dims: &[usize]) -> HostTensor {
    HostTensor::from_vec(values, dims).unwrap()
}

fn dynamic() -> rlx_runtime::DynamicGraph {
    Session::new(Device::Cpu)
        .compile_dynamic(mlp(), &CompileOptions::default())
        .unwrap()
}

#[test]
fn each_batch_size_runs_and_compiles_once() {
    let (w, b) = (values(IN * OUT, 1.0), values(OUT, 2.0));
    let mut d = dynamic();
    d.set_param_typed("w", &t(w.clone(), &[IN, OUT])).unwrap();
    d.set_param_typed("b", &t(b.clone(), &[OUT])).unwrap();
    for batch in [1, 3, 7, 3, 1] {
        let x = values(batch * IN, batch as f32);
        let out = d.run_typed(&[("x", &t(x.clone(), &[batch, IN]))]).unwrap();
        assert_eq!(out[0].dims(), &[batch, OUT]);
        let got = out[0].to_vec::<f32>().unwrap();
        for (g, r) in got.iter().zip(reference(&x, &w, &b)) {
            assert!((g - r).abs() <= 1e-6, "batch {batch}: {g} vs {r}");
        }
    }
    assert_eq!(d.compile_count(), 3);
    let order: Vec<usize> = d.cached_bindings().iter().map(|b| b["batch"]).collect();
    assert_eq!(order, vec![7, 3, 1], "most recently used last");
}

#[test]
fn the_cache_keeps_the_most_recent_bindings() {
    let mut d = dynamic().with_cache_capacity(2);
    d.set_param_typed("w", &t(values(IN * OUT, 1.0), &[IN, OUT]))
        .unwrap();
    d.set_param_typed("b", &t(values(OUT, 2.0), &[OUT]))
        .unwrap();
    for batch in [1, 2, 3, 1] {
        d.run_typed(&[("x", &t(values(batch * IN, 0.0), &[batch, IN]))])
            .unwrap();
    }
    // 1 fell out when 3 came in, so it compiled again.
    assert_eq!(d.compile_count(), 4);
}

#[test]
fn a_new_param_value_reaches_every_cached_binding() {
    let mut d = dynamic();
    let b = values(OUT, 2.0);
    d.set_param_typed("w", &t(values(IN * OUT, 1.0), &[IN, OUT]))
        .unwrap();
    d.set_param_typed("b", &t(b.clone(), &[OUT])).unwrap();
    let x = values(2 * IN, 5.0);
    d.run_typed(&[("x", &t(x.clone(), &[2, IN]))]).unwrap();
    let w2 = values(IN * OUT, 9.0);
    d.set_param_typed("w", &t(w2.clone(), &[IN, OUT])).unwrap();
    let out = d.run_typed(&[("x", &t(x.clone(), &[2, IN]))]).unwrap();
    assert_eq!(d.compile_count(), 1);
    for (g, r) in out[0]
        .to_vec::<f32>()
        .unwrap()
        .iter()
        .zip(reference(&x, &w2, &b))
    {
        assert!((g - r).abs() <= 1e-6);
    }
}

#[test]
fn conflicting_sizes_of_one_symbol_name_both_inputs() {
    let mut g = Graph::new("pair");
    let s = || Shape::from_dims(vec![Dim::sym("n")], DType::F32);
    let x = g.input("x", s());
    let y = g.input("y", s());
    let z = g.add(x, y);
    g.set_outputs(vec![z]);
    let mut d = Session::new(Device::Cpu)
        .compile_dynamic(g, &CompileOptions::default())
        .unwrap();
    let err = d
        .run_typed(&[("x", &t(vec![1.0; 2], &[2])), ("y", &t(vec![1.0; 3], &[3]))])
        .unwrap_err();
    assert!(
        matches!(&err, RuntimeError::DimConflict { symbol, first: 2, second: 3, .. } if symbol == "n"),
        "{err}"
    );
    let msg = err.to_string();
    assert!(
        msg.contains("input \"x\"") && msg.contains("input \"y\""),
        "{msg}"
    );
    assert_eq!(d.compile_count(), 0);
}

#[test]
fn static_dims_and_dtypes_are_checked_before_compiling() {
    let mut d = dynamic();
    let err = d
        .run_typed(&[("x", &t(vec![0.0; 8], &[2, 4]))])
        .unwrap_err();
    assert!(
        matches!(&err, RuntimeError::Shape { what, given, .. } if what == "input \"x\"" && given == &vec![2, 4]),
        "{err}"
    );
    let err = d
        .run_typed(&[(
            "x",
            &HostTensor::from_vec(vec![0.0f64; 6], &[2, 3]).unwrap(),
        )])
        .unwrap_err();
    assert!(matches!(err, RuntimeError::DType { .. }), "{err}");
    let err = d
        .set_param_typed("w", &t(vec![0.0; 4], &[2, 2]))
        .unwrap_err();
    assert!(matches!(err, RuntimeError::Shape { .. }), "{err}");
    assert_eq!(d.compile_count(), 0);
}

#[test]
fn a_symbol_no_input_determines_is_an_error_unless_bound() {
    let mut g = Graph::new("free");
    let x = g.input("x", Shape::new(&[2], DType::F32));
    let p = g.param("p", Shape::from_dims(vec![Dim::sym("k")], DType::F32));
    let s = g.sum(p, &[0], false);
    let y = g.add(x, s);
    g.set_outputs(vec![y]);
    let err = Session::new(Device::Cpu)
        .compile_dynamic(g.clone(), &CompileOptions::default())
        .unwrap_err();
    assert!(
        matches!(&err, RuntimeError::UnboundDim { symbol } if symbol == "k"),
        "{err}"
    );
    let mut d = Session::new(Device::Cpu)
        .compile_dynamic(g, &CompileOptions::default().bind_dim("k", 3))
        .unwrap();
    d.set_param_typed("p", &t(vec![1.0, 2.0, 3.0], &[3]))
        .unwrap();
    let out = d.run_typed(&[("x", &t(vec![0.5, -1.0], &[2]))]).unwrap();
    assert_eq!(out[0].to_vec::<f32>().unwrap(), vec![6.5, 5.0]);
}

/// softmax(tanh(x @ w + b) * 0.5) over the last axis, x: [seq, IN].
#[test]
fn a_dynamic_seq_graph_is_optimised_once_and_runs_at_several_lengths() {
    let mut g = Graph::new("dyn_seq");
    let x = g.input(
        "x",
        Shape::from_dims(vec![Dim::sym("seq"), Dim::Static(IN)], DType::F32),
    );
    let w = g.param("w", Shape::new(&[IN, OUT], DType::F32));
    let b = g.param("b", Shape::new(&[OUT], DType::F32));
    let h = g.mm(x, w);
    let h = g.add(h, b);
    let h = g.tanh(h);
    let h = g.mul(h, g.constant(0.5, DType::F32));
    let y = g.sm(h, -1);
    g.set_outputs(vec![y]);
    let mut d = Session::new(Device::Cpu)
        .compile_dynamic(g, &CompileOptions::default())
        .unwrap();
    // The graph-level passes ran on the symbolic graph (the softmax stays
    // whole, nothing is bound yet) ...
    let text = d.optimized().to_string();
    assert!(text.contains("f32[seq,2]"), "still symbolic: {text}");
    let (w, b) = (values(IN * OUT, 1.0), values(OUT, 2.0));
    d.set_param_typed("w", &t(w.clone(), &[IN, OUT])).unwrap();
    d.set_param_typed("b", &t(b.clone(), &[OUT])).unwrap();
    for seq in [1, 4, 9, 4] {
        let x = values(seq * IN, seq as f32 * 0.1);
        let out = d.run_typed(&[("x", &t(x.clone(), &[seq, IN]))]).unwrap();
        let got = out[0].to_vec::<f32>().unwrap();
        for r in 0..seq {
            let z: Vec<f64> = (0..OUT)
                .map(|o| {
                    let mut acc = b[o] as f64;
                    for i in 0..IN {
                        acc += x[r * IN + i] as f64 * w[i * OUT + o] as f64;
                    }
                    acc.tanh() * 0.5
                })
                .collect();
            let m = z.iter().cloned().fold(f64::MIN, f64::max);
            let s: f64 = z.iter().map(|v| (v - m).exp()).sum();
            for o in 0..OUT {
                let want = (z[o] - m).exp() / s;
                let got = got[r * OUT + o] as f64;
                assert!(
                    (got - want).abs() <= 1e-6,
                    "seq {seq} [{r},{o}]: {got} vs {want}"
                );
            }
        }
    }
    assert_eq!(d.compile_count(), 3);
    // ... and each binding's plan fused the matmul's bias / tanh / scale tail.
    for (binding, compiled) in d.cached() {
        let g = &compiled.lir().graph;
        assert!(
            g.ids().any(|i| g.node(i).op.kind() == OpKind::FusedMatMul),
            "{binding:?}: {g}"
        );
    }
}
