//! Every linalg op against numpy / scipy (forward) and JAX (jax.vjp with
//! given cotangents, jax.jvp with given tangents) on random, batched,
//! f32, ill-conditioned and degenerate inputs (fixtures from
//! `tools/gen_linalg_fixtures.py`), plus the vjp against central finite
//! differences of our own forward (f64 cases).

use rlx_autodiff::{grad, jvp, TANGENT_PREFIX};
use rlx_driver::Device;
use rlx_ir::{DType, Graph, GraphExt, HostTensor, NodeId, Shape};
use rlx_runtime::Session;
use serde_json::Value;

struct T {
    dims: Vec<usize>,
    data: Vec<f64>,
}

fn tensor(v: &Value) -> T {
    let dims = v["dims"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d.as_u64().unwrap() as usize)
        .collect();
    let data = v["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| match x {
            Value::String(s) => s.parse::<f64>().unwrap(),
            x => x.as_f64().unwrap(),
        })
        .collect();
    T { dims, data }
}

fn tensors(v: &Value) -> Vec<T> {
    v.as_array().unwrap().iter().map(tensor).collect()
}

fn host(t: &T, dtype: DType) -> HostTensor {
    match dtype {
        DType::F32 => {
            let v: Vec<f32> = t.data.iter().map(|&x| x as f32).collect();
            HostTensor::from_vec(v, &t.dims).unwrap()
        }
        _ => HostTensor::from_vec(t.data.clone(), &t.dims).unwrap(),
    }
}

/// The graph of case `c` over inputs `x0, x1, ...`: its op's outputs.
fn op_graph(c: &Value, dtype: DType) -> (Graph, Vec<NodeId>, Vec<NodeId>) {
    let ins = tensors(&c["inputs"]);
    let mut g = Graph::new(c["name"].as_str().unwrap());
    let xs: Vec<NodeId> = ins
        .iter()
        .enumerate()
        .map(|(i, t)| g.input(&format!("x{i}"), Shape::new(&t.dims, dtype)))
        .collect();
    let attr = |k: &str| c["attrs"][k].as_bool().unwrap_or(false);
    let outs = match c["op"].as_str().unwrap() {
        "cholesky" => vec![rlx_linalg::cholesky(&mut g, xs[0]).unwrap()],
        "solve_triangular" => {
            vec![
                rlx_linalg::solve_triangular(&mut g, xs[0], xs[1], attr("lower"), attr("trans"))
                    .unwrap(),
            ]
        }
        "solve" => vec![rlx_linalg::solve(&mut g, xs[0], xs[1]).unwrap()],
        "inv" => vec![rlx_linalg::inv(&mut g, xs[0]).unwrap()],
        "det" => vec![rlx_linalg::det(&mut g, xs[0]).unwrap()],
        "slogdet" => {
            let (s, l) = rlx_linalg::slogdet(&mut g, xs[0]).unwrap();
            vec![s, l]
        }
        "eigh" => {
            let (w, v) = rlx_linalg::eigh(&mut g, xs[0]).unwrap();
            vec![w, v]
        }
        "qr" => {
            let (q, r) = rlx_linalg::qr(&mut g, xs[0]).unwrap();
            vec![q, r]
        }
        "matrix_power" => {
            let k = c["attrs"]["k"].as_i64().unwrap();
            vec![rlx_linalg::matrix_power(&mut g, xs[0], k).unwrap()]
        }
        "svd" => {
            let (u, s, vt) = rlx_linalg::svd(&mut g, xs[0]).unwrap();
            vec![u, s, vt]
        }
        "pinv" => {
            let rcond = c["attrs"]["rcond"].as_f64().unwrap();
            vec![rlx_linalg::pinv(&mut g, xs[0], rcond).unwrap()]
        }
        "lu" => {
            let (p, l, u) = rlx_linalg::lu(&mut g, xs[0]).unwrap();
            vec![p, l, u]
        }
        "expm" => vec![rlx_linalg::expm(&mut g, xs[0]).unwrap()],
        "lstsq" => vec![rlx_linalg::lstsq(&mut g, xs[0], xs[1]).unwrap()],
        op => panic!("unknown op {op}"),
    };
    (g, xs, outs)
}

fn run(g: &Graph, inputs: &[(String, HostTensor)]) -> Vec<Vec<f64>> {
    let mut c = Session::new(Device::Cpu)
        .try_compile(g.clone())
        .unwrap_or_else(|e| panic!("compile {}: {e}", g.name()));
    let refs: Vec<(&str, &HostTensor)> = inputs.iter().map(|(n, t)| (n.as_str(), t)).collect();
    c.try_run_typed(&refs)
        .unwrap_or_else(|e| panic!("run {}: {e}", g.name()))
        .iter()
        .map(|t| t.to_f64_lossy())
        .collect()
}

fn close(what: &str, got: &[f64], want: &[f64], rtol: f64, atol: f64) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    let scale = want.iter().fold(0f64, |m, v| m.max(v.abs()));
    for (i, (a, b)) in got.iter().zip(want).enumerate() {
        let ok = if b.is_nan() {
            a.is_nan()
        } else if b.is_infinite() {
            a == b
        } else {
            (a - b).abs() <= atol * scale.max(1.0) + rtol * b.abs()
        };
        assert!(
            ok,
            "{what}[{i}]: {a} vs {b} (rtol {rtol}, atol {atol})\n got {got:?}\nwant {want:?}"
        );
    }
}

fn cases() -> Vec<Value> {
    let text = include_str!("fixtures/linalg.json");
    let v: Value = serde_json::from_str(text).unwrap();
    v["cases"].as_array().unwrap().clone()
}

fn dtype_of(c: &Value) -> DType {
    if c["dtype"] == "f32" {
        DType::F32
    } else {
        DType::F64
    }
}

fn named(prefix: &str, ts: &[T], dtype: DType) -> Vec<(String, HostTensor)> {
    ts.iter()
        .enumerate()
        .map(|(i, t)| (format!("{prefix}x{i}"), host(t, dtype)))
        .collect()
}

/// `L = Σ_k sum(out_k * ct_k)` appended to the op graph; returns it.
fn weighted(g: &mut Graph, outs: &[NodeId], cts: &[T], dtype: DType) -> NodeId {
    let mut loss = None;
    for (&o, ct) in outs.iter().zip(cts) {
        let c = g.constant_tensor(&host(ct, dtype));
        let w = g.mul(o, c);
        let axes: Vec<i64> = (0..ct.dims.len() as i64).collect();
        let s = if axes.is_empty() {
            w
        } else {
            g.sum(w, &axes, false)
        };
        loss = Some(match loss {
            None => s,
            Some(l) => g.add(l, s),
        });
    }
    loss.unwrap()
}

#[test]
fn forward_matches_numpy_and_scipy() {
    for c in cases() {
        let dtype = dtype_of(&c);
        let (mut g, _, outs) = op_graph(&c, dtype);
        g.set_outputs(outs);
        let got = run(&g, &named("", &tensors(&c["inputs"]), dtype));
        let (rtol, atol) = (c["rtol"].as_f64().unwrap(), c["atol"].as_f64().unwrap());
        for (k, want) in tensors(&c["outputs"]).iter().enumerate() {
            close(
                &format!("{} out {k}", c["name"]),
                &got[k],
                &want.data,
                rtol,
                atol,
            );
        }
    }
}

#[test]
fn vjp_matches_jax() {
    for c in cases().into_iter().filter(|c| c.get("vjp").is_some()) {
        let dtype = dtype_of(&c);
        let (mut g, xs, outs) = op_graph(&c, dtype);
        let loss = weighted(&mut g, &outs, &tensors(&c["cotangents"]), dtype);
        g.set_outputs(vec![loss]);
        let d = grad(&g, &xs).unwrap_or_else(|e| panic!("{}: {e}", c["name"]));
        let got = run(&d, &named("", &tensors(&c["inputs"]), dtype));
        let (rtol, atol) = (c["rtol"].as_f64().unwrap(), c["atol"].as_f64().unwrap());
        for (k, want) in tensors(&c["vjp"]).iter().enumerate() {
            close(
                &format!("{} vjp {k}", c["name"]),
                &got[k],
                &want.data,
                rtol * 10.0,
                atol * 10.0,
            );
        }
    }
}

#[test]
fn jvp_matches_jax() {
    for c in cases().into_iter().filter(|c| c.get("jvp").is_some()) {
        let dtype = dtype_of(&c);
        let (mut g, xs, outs) = op_graph(&c, dtype);
        let n_out = outs.len();
        g.set_outputs(outs);
        let d = jvp(&g, &xs).unwrap_or_else(|e| panic!("{}: {e}", c["name"]));
        let mut inputs = named("", &tensors(&c["inputs"]), dtype);
        inputs.extend(named(TANGENT_PREFIX, &tensors(&c["tangents"]), dtype));
        let got = run(&d, &inputs);
        let (rtol, atol) = (c["rtol"].as_f64().unwrap(), c["atol"].as_f64().unwrap());
        for (k, want) in tensors(&c["jvp"]).iter().enumerate() {
            close(
                &format!("{} jvp {k}", c["name"]),
                &got[n_out + k],
                &want.data,
                rtol * 10.0,
                atol * 10.0,
            );
        }
    }
}

/// `<vjp(ct), d>` against `(L(x + h d) - L(x - h d)) / 2h` of our forward.
#[test]
fn vjp_matches_finite_differences() {
    for c in cases()
        .into_iter()
        .filter(|c| c.get("vjp").is_some() && c["dtype"] == "f64")
    {
        if c["name"].as_str().unwrap().contains("hilbert") {
            continue; // too ill-conditioned for a 1e-5 step
        }
        let (mut g, xs, outs) = op_graph(&c, DType::F64);
        let loss = weighted(&mut g, &outs, &tensors(&c["cotangents"]), DType::F64);
        g.set_outputs(vec![loss]);
        let x = tensors(&c["inputs"]);
        let dirs = tensors(&c["tangents"]);
        let grads = run(&grad(&g, &xs).unwrap(), &named("", &x, DType::F64));
        let analytic: f64 = grads
            .iter()
            .zip(&dirs)
            .map(|(gk, dk)| gk.iter().zip(&dk.data).map(|(a, b)| a * b).sum::<f64>())
            .sum();
        let h = 1e-6;
        let shifted = |sign: f64| -> f64 {
            let xt: Vec<T> = x
                .iter()
                .zip(&dirs)
                .map(|(xk, dk)| T {
                    dims: xk.dims.clone(),
                    data: xk
                        .data
                        .iter()
                        .zip(&dk.data)
                        .map(|(a, b)| a + sign * h * b)
                        .collect(),
                })
                .collect();
            run(&g, &named("", &xt, DType::F64))[0][0]
        };
        let fd = (shifted(1.0) - shifted(-1.0)) / (2.0 * h);
        assert!(
            (fd - analytic).abs() <= 1e-5 * analytic.abs().max(1.0),
            "{}: finite differences {fd} vs vjp {analytic}",
            c["name"]
        );
    }
}
