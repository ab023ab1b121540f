//! Gradients of real losses through fft / ifft / rfft / irfft against JAX
//! (`tests/fixtures/fft_grad.json`, from `tools/gen_fft_grad_fixtures.py`,
//! whose docstring defines the losses), and the same gradients against
//! finite differences of the float32 forward pass.

use rlx_autodiff::grad_with_loss;
use rlx_driver::Device;
use rlx_ir::fft::FftNorm;
use rlx_ir::{Complex32, DType, Graph, GraphExt, HostTensor, NodeId, Shape};
use rlx_runtime::Session;
use serde_json::Value;
use std::path::PathBuf;

fn floats(v: &Value, key: &str) -> Vec<f64> {
    v[key]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect()
}

fn real_const(g: &mut Graph, v: &[f64], d: &[usize]) -> NodeId {
    let v: Vec<f32> = v.iter().map(|&x| x as f32).collect();
    g.constant_tensor(&HostTensor::from_vec(v, d).unwrap())
}

fn complex_const(g: &mut Graph, re: &[f64], im: &[f64]) -> NodeId {
    let v: Vec<Complex32> = re
        .iter()
        .zip(im)
        .map(|(&a, &b)| Complex32::new(a as f32, b as f32))
        .collect();
    let n = v.len();
    g.constant_tensor(&HostTensor::from_vec(v, &[n]).unwrap())
}

fn weighted_sum(g: &mut Graph, y: NodeId, w: NodeId) -> NodeId {
    let yr = g.cast(y, DType::F32);
    let p = g.mul(yr, w);
    g.sum(p, &[0, 1], false)
}

fn model(c: &Value) -> Graph {
    let n = c["n"].as_u64().unwrap() as usize;
    let norm = match c["norm"].as_str().unwrap() {
        "backward" => FftNorm::Backward,
        "ortho" => FftNorm::Ortho,
        _ => FftNorm::Forward,
    };
    let mut g = Graph::new("fft_loss");
    let x = g.input("x", Shape::new(&[2, n], DType::F32));
    let r = real_const(&mut g, &floats(c, "r"), &[2, n]);
    let loss = match c["model"].as_str().unwrap() {
        "rfft_irfft" => {
            let k = complex_const(&mut g, &floats(c, "c_re"), &floats(c, "c_im"));
            let f = g.rfft(x, norm);
            let fk = g.mul(f, k);
            let y = g.irfft(fk, n, norm);
            weighted_sum(&mut g, y, r)
        }
        _ => {
            let k = complex_const(&mut g, &floats(c, "c2_re"), &floats(c, "c2_im"));
            let s = real_const(&mut g, &floats(c, "s"), &[2, n]);
            let xc = g.cast(x, DType::C64);
            let f = g.fft(xc, norm);
            let fk = g.mul(f, k);
            let a = weighted_sum(&mut g, fk, r);
            let xk = g.mul(xc, k);
            let i = g.ifft(xk, norm);
            let b = weighted_sum(&mut g, i, s);
            g.add(a, b)
        }
    };
    g.set_outputs(vec![loss]);
    g
}

fn run(g: Graph, x: &[f32], n: usize) -> Vec<Vec<f64>> {
    let mut c = Session::new(Device::Cpu).try_compile(g).unwrap();
    let xt = HostTensor::from_slice(x, &[2, n]).unwrap();
    c.try_run_typed(&[("x", &xt)])
        .unwrap()
        .iter()
        .map(|t| t.to_f64_lossy())
        .collect()
}

#[test]
fn fft_family_gradients_match_jax_and_finite_differences() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fft_grad.json");
    let root: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let mut failures = Vec::new();
    for c in root["cases"].as_array().unwrap() {
        let name = c["name"].as_str().unwrap();
        let n = c["n"].as_u64().unwrap() as usize;
        let g = model(c);
        let x: Vec<f32> = floats(c, "x").iter().map(|&v| v as f32).collect();
        let d = grad_with_loss(&g, &[g.find_input("x").unwrap()]).unwrap();
        let out = run(d, &x, n);
        let want_loss = c["loss"].as_f64().unwrap();
        if (out[0][0] - want_loss).abs() > 1e-4 * (1.0 + want_loss.abs()) {
            failures.push(format!("{name}: loss {} vs JAX {want_loss}", out[0][0]));
        }
        let want = floats(c, "grad");
        for (i, (&a, &b)) in out[1].iter().zip(&want).enumerate() {
            if (a - b).abs() > 1e-4 * (1.0 + b.abs()) {
                failures.push(format!("{name}: grad[{i}] {a} vs JAX {b}"));
            }
        }
        // Central differences of the f32 forward pass (loose: f32 rounding).
        let eps = 1e-2f32;
        for (i, &gi) in out[1].iter().enumerate().step_by(3) {
            let (mut p, mut m) = (x.clone(), x.clone());
            p[i] += eps;
            m[i] -= eps;
            let fd =
                (run(g.clone(), &p, n)[0][0] - run(g.clone(), &m, n)[0][0]) / (2.0 * eps as f64);
            if (fd - gi).abs() > 2e-3 * (1.0 + gi.abs()) {
                failures.push(format!("{name}: grad[{i}] {gi} vs finite differences {fd}"));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
