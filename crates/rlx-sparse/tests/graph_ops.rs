//! The sparse custom ops in graphs: forward against scipy.sparse, vjp /
//! jvp against JAX (dense equivalent on the pattern) and central finite
//! differences, grad of a composite graph through rlx-autodiff, vmap over
//! the dense operand, the textual IR round trip, and refusals (a missing
//! rule, bad shapes, a hostile pattern) as errors naming what was wrong.
//! Fixtures: `tools/gen_sparse_graph_fixtures.py`.

use rlx_autodiff::{grad, jvp, vmap, TANGENT_PREFIX};
use rlx_driver::Device;
use rlx_ir::{parse_graph, DType, Graph, GraphExt, HostTensor, NodeId, Shape};
use rlx_runtime::Session;
use rlx_sparse::graph::{sddmm, spmm, spmv, CsrPattern};
use serde_json::Value;

fn fixtures() -> Value {
    serde_json::from_str(include_str!("fixtures/sparse_graph.json")).unwrap()
}

#[derive(Clone)]
struct T {
    dims: Vec<usize>,
    data: Vec<f64>,
}

fn tensor(v: &Value) -> T {
    let nums = |v: &Value| -> Vec<f64> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap())
            .collect()
    };
    T {
        dims: nums(&v["dims"]).iter().map(|&d| d as usize).collect(),
        data: nums(&v["data"]),
    }
}

fn ints(v: &Value) -> Vec<i32> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_i64().unwrap() as i32)
        .collect()
}

fn host(t: &T, dtype: DType) -> HostTensor {
    match dtype {
        DType::F32 => {
            HostTensor::from_vec(t.data.iter().map(|&x| x as f32).collect(), &t.dims).unwrap()
        }
        _ => HostTensor::from_vec(t.data.clone(), &t.dims).unwrap(),
    }
}

fn run(g: &Graph, inputs: &[(String, HostTensor)]) -> Vec<Vec<f64>> {
    let mut c = Session::new(Device::Cpu).try_compile(g.clone()).unwrap();
    let refs: Vec<(&str, &HostTensor)> = inputs.iter().map(|(n, t)| (n.as_str(), t)).collect();
    c.try_run_typed(&refs)
        .unwrap()
        .iter()
        .map(|t| t.to_f64_lossy())
        .collect()
}

fn close(what: &str, got: &[f64], want: &[f64], tol: f64) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (k, (a, b)) in got.iter().zip(want).enumerate() {
        assert!(
            (a - b).abs() <= tol * (1.0 + b.abs()),
            "{what}[{k}]: {a} vs {b}\n{got:?}\nvs\n{want:?}"
        );
    }
}

/// The pattern as I32 constants (scipy's index width).
fn pattern(g: &mut Graph, c: &Value) -> CsrPattern {
    let ip = ints(&c["indptr"]);
    let ix = ints(&c["indices"]);
    let (nrows, ncols) = (
        c["nrows"].as_u64().unwrap() as usize,
        c["ncols"].as_u64().unwrap() as usize,
    );
    CsrPattern {
        indptr: g.constant_tensor(&HostTensor::from_vec(ip.clone(), &[ip.len()]).unwrap()),
        indices: g.constant_tensor(&HostTensor::from_vec(ix.clone(), &[ix.len()]).unwrap()),
        nrows,
        ncols,
    }
}

/// The case's op over inputs `d0`, `d1` (its differentiable operands:
/// values and x for products, a and b for sddmm); returns `(graph, [d0, d1], out)`.
fn op_graph(c: &Value) -> (Graph, Vec<NodeId>, NodeId, DType) {
    let dtype = if c["dtype"] == "f32" {
        DType::F32
    } else {
        DType::F64
    };
    let mut g = Graph::new(c["name"].as_str().unwrap());
    let p = pattern(&mut g, c);
    let diff: Vec<T> = c["diff"].as_array().unwrap().iter().map(tensor).collect();
    let d: Vec<NodeId> = diff
        .iter()
        .enumerate()
        .map(|(k, t)| g.input(&format!("d{k}"), Shape::new(&t.dims, dtype)))
        .collect();
    let trans = c["trans"].as_bool().unwrap();
    let y = match c["op"].as_str().unwrap() {
        "spmv" => spmv(&mut g, &p, d[0], d[1], trans),
        "spmm" => spmm(&mut g, &p, d[0], d[1], trans),
        _ => sddmm(&mut g, &p, d[0], d[1]),
    }
    .unwrap();
    (g, d, y, dtype)
}

fn diff_inputs(c: &Value, dtype: DType, prefix: &str, key: &str) -> Vec<(String, HostTensor)> {
    c[key]
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
        .map(|(k, t)| (format!("{prefix}d{k}"), host(&tensor(t), dtype)))
        .collect()
}

fn tol(dtype: DType) -> f64 {
    if dtype == DType::F32 {
        1e-5
    } else {
        1e-12
    }
}

fn cases() -> Vec<Value> {
    fixtures()["cases"].as_array().unwrap().clone()
}

/// `sum(y * ct)` appended; returns it.
fn weighted(g: &mut Graph, y: NodeId, ct: &T, dtype: DType) -> NodeId {
    let c = g.constant_tensor(&host(ct, dtype));
    let w = g.mul(y, c);
    let axes: Vec<i64> = (0..ct.dims.len() as i64).collect();
    g.sum(w, &axes, false)
}

#[test]
fn forward_matches_scipy() {
    for c in cases() {
        let (mut g, _, y, dtype) = op_graph(&c);
        g.set_outputs(vec![y]);
        let got = run(&g, &diff_inputs(&c, dtype, "", "diff"));
        let name = c["name"].as_str().unwrap();
        close(name, &got[0], &tensor(&c["out"]).data, tol(dtype));
    }
}

#[test]
fn vjp_matches_jax() {
    for c in cases() {
        let (mut g, d, y, dtype) = op_graph(&c);
        let loss = weighted(&mut g, y, &tensor(&c["ct"]), dtype);
        g.set_outputs(vec![loss]);
        let dg = grad(&g, &d).unwrap();
        let got = run(&dg, &diff_inputs(&c, dtype, "", "diff"));
        for (k, want) in c["vjp"].as_array().unwrap().iter().enumerate() {
            let what = format!("{} vjp {k}", c["name"]);
            close(&what, &got[k], &tensor(want).data, tol(dtype) * 10.0);
        }
    }
}

#[test]
fn jvp_matches_jax() {
    for c in cases() {
        let (mut g, d, y, dtype) = op_graph(&c);
        g.set_outputs(vec![y]);
        let dg = jvp(&g, &d).unwrap();
        let mut inputs = diff_inputs(&c, dtype, "", "diff");
        inputs.extend(diff_inputs(&c, dtype, TANGENT_PREFIX, "tangents"));
        let got = run(&dg, &inputs);
        let what = format!("{} jvp", c["name"]);
        close(&what, &got[1], &tensor(&c["jvp"]).data, tol(dtype) * 10.0);
    }
}

/// `<vjp(ct), t>` against `(L(x + h t) - L(x - h t)) / 2h` of our forward.
#[test]
fn vjp_matches_finite_differences() {
    for c in cases().into_iter().filter(|c| c["dtype"] == "f64") {
        let (mut g, d, y, dtype) = op_graph(&c);
        let loss = weighted(&mut g, y, &tensor(&c["ct"]), dtype);
        g.set_outputs(vec![loss]);
        let x: Vec<T> = c["diff"].as_array().unwrap().iter().map(tensor).collect();
        let dirs: Vec<T> = c["tangents"]
            .as_array()
            .unwrap()
            .iter()
            .map(tensor)
            .collect();
        let named = |xs: &[T]| -> Vec<(String, HostTensor)> {
            xs.iter()
                .enumerate()
                .map(|(k, t)| (format!("d{k}"), host(t, dtype)))
                .collect()
        };
        let grads = run(&grad(&g, &d).unwrap(), &named(&x));
        let analytic: f64 = grads
            .iter()
            .zip(&dirs)
            .map(|(gk, dk)| gk.iter().zip(&dk.data).map(|(a, b)| a * b).sum::<f64>())
            .sum();
        let h = 1e-6;
        let at = |sign: f64| -> f64 {
            let xt: Vec<T> = x
                .iter()
                .zip(&dirs)
                .map(|(xk, dk)| T {
                    dims: xk.dims.clone(),
                    data: (xk.data.iter().zip(&dk.data))
                        .map(|(a, b)| a + sign * h * b)
                        .collect(),
                })
                .collect();
            run(&g, &named(&xt))[0][0]
        };
        let fd = (at(1.0) - at(-1.0)) / (2.0 * h);
        assert!(
            (fd - analytic).abs() <= 1e-6 * analytic.abs().max(1.0),
            "{}: finite differences {fd} vs vjp {analytic}",
            c["name"]
        );
    }
}

/// `loss = sum(tanh(A X)^2) + sum(A^T y)`: grads w.r.t. the values, `X`
/// and `y` through rlx-autodiff, against `jax.grad` of the dense equivalent.
#[test]
fn grad_of_a_composite_graph_matches_jax() {
    let c = fixtures()["composite"].clone();
    let (v, x, y) = (tensor(&c["values"]), tensor(&c["x"]), tensor(&c["y"]));
    let mut g = Graph::new("composite");
    let p = pattern(&mut g, &c);
    let vi = g.input("v", Shape::new(&v.dims, DType::F64));
    let xi = g.input("x", Shape::new(&x.dims, DType::F64));
    let yi = g.input("y", Shape::new(&y.dims, DType::F64));
    let ax = spmm(&mut g, &p, vi, xi, false).unwrap();
    let th = g.tanh(ax);
    let sq = g.mul(th, th);
    let l1 = g.sum(sq, &[0, 1], false);
    let aty = spmv(&mut g, &p, vi, yi, true).unwrap();
    let l2 = g.sum(aty, &[0], false);
    let loss = g.add(l1, l2);
    g.set_outputs(vec![loss]);
    let inputs = vec![
        ("v".to_string(), host(&v, DType::F64)),
        ("x".to_string(), host(&x, DType::F64)),
        ("y".to_string(), host(&y, DType::F64)),
    ];
    let l = run(&g, &inputs);
    close("loss", &l[0], &[c["loss"].as_f64().unwrap()], 1e-12);
    let got = run(&grad(&g, &[vi, xi, yi]).unwrap(), &inputs);
    for (k, want) in c["grads"].as_array().unwrap().iter().enumerate() {
        close(&format!("grad {k}"), &got[k], &tensor(want).data, 1e-12);
    }
}

#[test]
fn vmap_over_the_dense_operand_matches_scipy() {
    let c = fixtures()["vmap"].clone();
    let v = tensor(&c["values"]);
    for (xk, outk) in [("xb", "out"), ("xb3", "out3")] {
        let xb = tensor(&c[xk]);
        let mut g = Graph::new("vmap");
        let p = pattern(&mut g, &c);
        let vi = g.input("v", Shape::new(&v.dims, DType::F64));
        let xi = g.input("x", Shape::new(&xb.dims[1..], DType::F64));
        let y = if xb.dims.len() == 2 {
            spmv(&mut g, &p, vi, xi, false)
        } else {
            spmm(&mut g, &p, vi, xi, false)
        }
        .unwrap();
        g.set_outputs(vec![y]);
        let vg = vmap(&g, &["x"], xb.dims[0]).unwrap();
        let got = run(
            &vg,
            &[
                ("v".to_string(), host(&v, DType::F64)),
                ("x".to_string(), host(&xb, DType::F64)),
            ],
        );
        close(xk, &got[0], &tensor(&c[outk]).data, 1e-12);
    }
}

#[test]
fn missing_rules_and_unsupported_batching_are_named_errors() {
    let c = fixtures()["vmap"].clone();
    let mut g = Graph::new("refuse");
    let p = pattern(&mut g, &c);
    let a = g.input("a", Shape::new(&[p.nrows], DType::F64));
    let b = g.input("b", Shape::new(&[p.ncols], DType::F64));
    let s = sddmm(&mut g, &p, a, b).unwrap();
    g.set_outputs(vec![s]);
    let e = vmap(&g, &["a"], 2).unwrap_err().to_string();
    assert!(
        e.contains("sparse.sddmm") && e.contains("no vmap rule"),
        "{e}"
    );

    let mut g = Graph::new("refuse_values");
    let p = pattern(&mut g, &c);
    let nnz = c["indices"].as_array().unwrap().len();
    let v = g.input("v", Shape::new(&[nnz], DType::F64));
    let x = g.input("x", Shape::new(&[p.ncols], DType::F64));
    let y = spmv(&mut g, &p, v, x, false).unwrap();
    g.set_outputs(vec![y]);
    let e = vmap(&g, &["v"], 2).unwrap_err().to_string();
    assert!(
        e.contains("sparse.spmv") && e.contains("dense operand only"),
        "{e}"
    );
}

#[test]
fn bad_shapes_and_dtypes_are_errors_naming_them() {
    let mut g = Graph::new("bad");
    let p = CsrPattern::input(&mut g, "a", (3, 4), 5, DType::I32).unwrap();
    let v = g.input("v", Shape::new(&[5], DType::F64));
    let x_wrong = g.input("x", Shape::new(&[3], DType::F64));
    let e = spmv(&mut g, &p, v, x_wrong, false).unwrap_err().to_string();
    assert!(
        e.contains("sparse.spmv") && e.contains("[4]") && e.contains("f64[3]"),
        "{e}"
    );
    let v_short = g.input("v4", Shape::new(&[4], DType::F64));
    let x = g.input("x4", Shape::new(&[4], DType::F64));
    let e = spmv(&mut g, &p, v_short, x, false).unwrap_err().to_string();
    assert!(e.contains("values must be [nnz] = [5]"), "{e}");
    let x32 = g.input("x32", Shape::new(&[4], DType::F32));
    let e = spmv(&mut g, &p, v, x32, false).unwrap_err().to_string();
    assert!(e.contains("share a dtype"), "{e}");
    let xm = g.input("xm", Shape::new(&[4, 2], DType::F64));
    let e = spmv(&mut g, &p, v, xm, false).unwrap_err().to_string();
    assert!(e.contains("must be [4]"), "{e}");
    let e = CsrPattern::input(&mut g, "f", (3, 4), 5, DType::F32)
        .unwrap_err()
        .to_string();
    assert!(e.contains("i32 or i64"), "{e}");
}

#[test]
fn a_hostile_pattern_fails_at_run_time_naming_the_position() {
    let mut g = Graph::new("hostile");
    let p = CsrPattern::input(&mut g, "a", (2, 3), 3, DType::I64).unwrap();
    let v = g.input("v", Shape::new(&[3], DType::F64));
    let x = g.input("x", Shape::new(&[3], DType::F64));
    let y = spmv(&mut g, &p, v, x, false).unwrap();
    g.set_outputs(vec![y]);
    let mut c = Session::new(Device::Cpu).try_compile(g).unwrap();
    let vals = HostTensor::from_vec(vec![1.0f64, 2.0, 3.0], &[3]).unwrap();
    let run_with = |c: &mut rlx_runtime::CompiledGraph, ip: Vec<i64>, ix: Vec<i64>| {
        let ip = HostTensor::from_vec(ip, &[3]).unwrap();
        let ix = HostTensor::from_vec(ix, &[3]).unwrap();
        c.try_run_typed(&[
            ("a_indptr", &ip),
            ("a_indices", &ix),
            ("v", &vals),
            ("x", &vals),
        ])
        .map(|_| ())
        .unwrap_err()
        .to_string()
    };
    let e = run_with(&mut c, vec![0, 2, 3], vec![0, 7, 1]);
    assert!(e.contains("column index 7 at position 1"), "{e}");
    let e = run_with(&mut c, vec![0, 3, 2], vec![0, 1, 1]);
    assert!(e.contains("indptr"), "{e}");
    let e = run_with(&mut c, vec![0, 1, 3], vec![0, -1, 1]);
    assert!(e.contains("indices[1] = -1 is negative"), "{e}");
}

#[test]
fn textual_ir_round_trips_and_runs_the_same() {
    let c = cases().into_iter().find(|c| c["op"] == "spmm").unwrap();
    let (mut g, _, y, dtype) = op_graph(&c);
    g.set_outputs(vec![y]);
    let text = g.to_text();
    assert!(text.contains("custom.sparse.spmm{ncols="), "{text}");
    let back = parse_graph(&text).unwrap();
    assert_eq!(back.to_text(), text);
    let inputs = diff_inputs(&c, dtype, "", "diff");
    assert_eq!(run(&back, &inputs), run(&g, &inputs));
}

#[test]
fn constant_pattern_of_a_csr_matrix_matches_its_own_spmv() {
    // CsrMatrix::spmv is checked against scipy in scipy_parity.rs.
    let a = rlx_sparse::CsrMatrix::try_new(
        3,
        4,
        vec![0, 3, 3, 7],
        vec![2, 0, 2, 3, 1, 3, 0],
        vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0],
    )
    .unwrap();
    let x = vec![0.5, -1.0, 2.0, 3.0];
    let mut g = Graph::new("const");
    let p = CsrPattern::constant(&mut g, &a).unwrap();
    let v = g.constant_tensor(&HostTensor::from_vec(a.values().to_vec(), &[a.nnz()]).unwrap());
    let xi = g.input("x", Shape::new(&[4], DType::F64));
    let y = spmv(&mut g, &p, v, xi, false).unwrap();
    g.set_outputs(vec![y]);
    let got = run(
        &g,
        &[("x".into(), HostTensor::from_vec(x.clone(), &[4]).unwrap())],
    );
    close("spmv", &got[0], &a.spmv(&x).unwrap(), 1e-15);
}
