//! Caller tensors read and written in place: inputs no node overwrites are
//! read from the caller's bytes (views of them too), and
//! `CompiledGraph::try_run_into` computes outputs straight into the
//! caller's tensors. Values are checked against host arithmetic in f64,
//! with in-place I/O on and off (`RLX_CPU_IN_PLACE_IO=0`), and the caller's
//! inputs must come back unchanged.

use rlx_driver::Device;
use rlx_ir::{DType, Graph, GraphExt, HostTensor, Shape};
use rlx_runtime::{CompileOptions, CompiledGraph, RuntimeError, Session};

fn f32s(t: &HostTensor) -> Vec<f32> {
    t.to_vec::<f32>().unwrap()
}

fn close(what: &str, got: &[f32], want: &[f64]) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (*g as f64 - w).abs() <= 1e-5 * w.abs().max(1.0),
            "{what}[{i}]: {g} vs {w}"
        );
    }
}

fn tensor(values: Vec<f32>, dims: &[usize]) -> HostTensor {
    HostTensor::from_vec(values, dims).unwrap()
}

/// Outputs of every kind of place: a computed node reading a view of an
/// input, a node written over an input that dies at it, the input itself,
/// a view of it, the same node twice, a param, and a product of a packed
/// weight.
fn mixed_graph() -> Graph {
    let mut g = Graph::new("places");
    let x = g.input("x", Shape::new(&[4, 6], DType::F32));
    let z = g.input("z", Shape::new(&[4, 6], DType::F32));
    let w = g.param("w", Shape::new(&[6, 5], DType::F32));
    let r = g.reshape_(x, &[6, 4]);
    let rows = g.narrow_(r, 0, 1, 2); // flat elements 4..12 of x
    let a = g.neg(rows);
    let doubled = g.mul(z, g.constant(2.0, DType::F32)); // z dies here
    let p = g.mm(x, w);
    g.set_outputs(vec![a, doubled, x, r, a, w, p]);
    g
}

fn inputs() -> (Vec<f32>, Vec<f32>, Vec<f32>) {
    let x = (0..24).map(|i| (i as f32 - 11.0) / 7.0).collect();
    let z = (0..24).map(|i| (i as f32 * 0.37).sin()).collect();
    let w = (0..30).map(|i| ((i * 7 % 11) as f32 - 5.0) / 9.0).collect();
    (x, z, w)
}

fn expected(x: &[f32], z: &[f32], w: &[f32]) -> Vec<Vec<f64>> {
    let x64: Vec<f64> = x.iter().map(|&v| v as f64).collect();
    let a: Vec<f64> = x64[4..12].iter().map(|v| -v).collect();
    let doubled = z.iter().map(|&v| 2.0 * v as f64).collect();
    let mut p = vec![0.0; 4 * 5];
    for i in 0..4 {
        for j in 0..5 {
            p[i * 5 + j] = (0..6).map(|k| x64[i * 6 + k] * w[k * 5 + j] as f64).sum();
        }
    }
    let w64 = w.iter().map(|&v| v as f64).collect();
    vec![a.clone(), doubled, x64.clone(), x64, a, w64, p]
}

fn compile(g: Graph, fusion: bool) -> CompiledGraph {
    let opts = CompileOptions::default().fusion(fusion);
    let mut c = Session::new(Device::Cpu).compile_with(g, &opts);
    c.set_param("w", &inputs().2);
    c
}

fn check_both_ways(c: &mut CompiledGraph) {
    let (x, z, w) = inputs();
    let want = expected(&x, &z, &w);
    let (xt, zt) = (tensor(x.clone(), &[4, 6]), tensor(z.clone(), &[4, 6]));
    for round in 0..2 {
        let outs = c.try_run_typed(&[("x", &xt), ("z", &zt)]).unwrap();
        for (j, (o, w)) in outs.iter().zip(&want).enumerate() {
            close(&format!("run {round}, output {j}"), &f32s(o), w);
        }
        let mut into = c.output_tensors();
        // Stale values from an earlier run must be overwritten.
        for t in &mut into {
            t.bytes_mut().fill(0xAB);
        }
        c.try_run_into(&[("z", &zt), ("x", &xt)], &mut into)
            .unwrap();
        for (j, (o, w)) in into.iter().zip(&want).enumerate() {
            close(&format!("run_into {round}, output {j}"), &f32s(o), w);
        }
    }
    assert_eq!(f32s(&xt), x, "x read in place is unchanged");
    assert_eq!(f32s(&zt), z, "z, overwritten in the plan, is unchanged");
}

#[test]
fn every_kind_of_output_and_input_place_gives_host_values() {
    for fusion in [true, false] {
        let mut c = compile(mixed_graph(), fusion);
        check_both_ways(&mut c);
    }
}

#[test]
fn with_in_place_io_off_the_values_are_the_same() {
    rlx_ir::env::set("RLX_CPU_IN_PLACE_IO", "0");
    let mut c = compile(mixed_graph(), true);
    rlx_ir::env::clear_override("RLX_CPU_IN_PLACE_IO");
    check_both_ways(&mut c);
}

#[test]
fn a_product_is_computed_into_the_caller_s_tensor() {
    // Big enough for the packed-weight kernel and the team split.
    let (m, k, n) = (40, 96, 80);
    let mut g = Graph::new("product");
    let x = g.input("x", Shape::new(&[m, k], DType::F32));
    let w = g.param("w", Shape::new(&[k, n], DType::F32));
    let y = g.mm(x, w);
    let y = g.add(y, g.constant(0.5, DType::F32));
    g.set_outputs(vec![y]);
    let mut c = Session::new(Device::Cpu).compile(g);
    let xv: Vec<f32> = (0..m * k)
        .map(|i| ((i * 13 % 17) as f32 - 8.0) / 8.0)
        .collect();
    let wv: Vec<f32> = (0..k * n)
        .map(|i| ((i * 5 % 23) as f32 - 11.0) / 16.0)
        .collect();
    c.set_param("w", &wv);
    let want: Vec<f64> = (0..m * n)
        .map(|e| {
            let (i, j) = (e / n, e % n);
            let dot: f64 = (0..k)
                .map(|q| xv[i * k + q] as f64 * wv[q * n + j] as f64)
                .sum();
            dot + 0.5
        })
        .collect();
    let xt = tensor(xv, &[m, k]);
    let mut out = c.output_tensors();
    for _ in 0..3 {
        out[0].bytes_mut().fill(0);
        c.try_run_into(&[("x", &xt)], &mut out).unwrap();
        close("x @ w + 0.5", &f32s(&out[0]), &want);
    }
}

#[test]
fn run_into_with_a_bound_update_writes_the_other_outputs() {
    let mut g = Graph::new("accumulate");
    let x = g.input("x", Shape::new(&[2], DType::F32));
    let total = g.param("total", Shape::new(&[2], DType::F32));
    let next = g.add(total, x);
    let doubled = g.mul(next, g.constant(2.0, DType::F32));
    g.set_outputs(vec![doubled, next]);
    let mut c = Session::new(Device::Cpu).compile(g);
    c.set_param("total", &[0.0, 0.0]);
    c.bind_update(1, "total").unwrap();
    let mut out = c.output_tensors();
    assert_eq!(out.len(), 1);
    let xt = tensor(vec![1.0, 2.0], &[2]);
    c.try_run_into(&[("x", &xt)], &mut out).unwrap();
    assert_eq!(f32s(&out[0]), vec![2.0, 4.0]);
    c.try_run_into(&[("x", &xt)], &mut out).unwrap();
    assert_eq!(f32s(&out[0]), vec![4.0, 8.0]);
    assert_eq!(
        c.param_value("total").unwrap().to_vec::<f32>().unwrap(),
        vec![2.0, 4.0]
    );
}

#[test]
fn wrong_output_tensors_are_named_errors() {
    let mut c = compile(mixed_graph(), true);
    let (x, z, _) = inputs();
    let (xt, zt) = (tensor(x, &[4, 6]), tensor(z, &[4, 6]));
    let ins = [("x", &xt), ("z", &zt)];

    let mut short = c.output_tensors();
    short.pop();
    let err = c.try_run_into(&ins, &mut short).unwrap_err();
    assert_eq!(
        err,
        RuntimeError::OutputCount {
            expected: 7,
            given: 6
        }
    );

    let mut dims = c.output_tensors();
    dims[3] = HostTensor::zeros(DType::F32, &[4, 6]);
    match c.try_run_into(&ins, &mut dims).unwrap_err() {
        RuntimeError::Shape { what, given, .. } => {
            assert_eq!(what, "output 3");
            assert_eq!(given, vec![4, 6]);
        }
        e => panic!("wrong error {e}"),
    }

    let mut dtype = c.output_tensors();
    dtype[6] = HostTensor::zeros(DType::F64, &[4, 5]);
    match c.try_run_into(&ins, &mut dtype).unwrap_err() {
        RuntimeError::DType { what, given, .. } => {
            assert_eq!(what, "output 6");
            assert_eq!(given, DType::F64);
        }
        e => panic!("wrong error {e}"),
    }
}
