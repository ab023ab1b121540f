//! Fixture access for the PEFT parity tests. The fixtures come from
//! tools/gen_peft_fixtures.py (HF PEFT 0.21, torch, float32).
#![allow(dead_code)]

use rlx_ir::HostTensor;
use rlx_peft::Linear;
use serde_json::Value;
use std::path::PathBuf;

/// The adapted modules of the fixture model
/// `Sequential(Linear(8, 6), Tanh(), Linear(6, 4))`.
pub const MODULES: [&str; 2] = ["0", "2"];

/// The tolerance of the parity checks: `|got - want| <= TOL * max(1, |want|)`.
pub const TOL: f64 = 1e-6;

pub fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

pub fn fixture(name: &str) -> Value {
    let path = fixtures().join(format!("{name}.json"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

fn flatten(v: &Value, dims: &mut Vec<usize>, out: &mut Vec<f64>, depth: usize) {
    match v {
        Value::Array(a) => {
            if dims.len() == depth {
                dims.push(a.len());
            }
            for x in a {
                flatten(x, dims, out, depth + 1);
            }
        }
        Value::Number(n) => out.push(n.as_f64().unwrap()),
        other => panic!("not a number: {other}"),
    }
}

fn nested(v: &Value) -> (Vec<usize>, Vec<f64>) {
    let (mut dims, mut vals) = (Vec::new(), Vec::new());
    flatten(v, &mut dims, &mut vals, 0);
    (dims, vals)
}

/// A nested JSON list as an f32 tensor.
pub fn tensor(v: &Value) -> HostTensor {
    let (dims, vals) = nested(v);
    let vals: Vec<f32> = vals.into_iter().map(|x| x as f32).collect();
    HostTensor::from_vec(vals, &dims).unwrap()
}

/// A nested JSON list's numbers, exactly as written.
pub fn values(v: &Value) -> Vec<f64> {
    nested(v).1
}

/// A tensor's values as f64.
pub fn vals(t: &HostTensor) -> Vec<f64> {
    t.to_f64_lossy()
}

/// An f32 tensor widened to f64 (exactly).
pub fn widen(t: &HostTensor) -> HostTensor {
    HostTensor::from_vec(t.to_f64_lossy(), t.dims()).unwrap()
}

pub fn base_linear(case: &Value, module: &str) -> Linear {
    let b = &case["base"][module];
    Linear::new(tensor(&b["weight"]), Some(tensor(&b["bias"]))).unwrap()
}

/// Asserts `got` is within `tol` (relative, absolute below 1) of `want`;
/// returns the largest error.
pub fn assert_close_tol(what: &str, got: &[f64], want: &[f64], tol: f64) -> f64 {
    assert_eq!(got.len(), want.len(), "{what}: length");
    let mut worst = 0.0f64;
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        let err = (g - w).abs();
        let tol = tol * w.abs().max(1.0);
        assert!(
            err <= tol,
            "{what}[{i}]: got {g}, PEFT {w} (|diff| {err:.3e} > {tol:.1e})"
        );
        worst = worst.max(err);
    }
    worst
}

/// [`assert_close_tol`] at [`TOL`].
pub fn assert_close(what: &str, got: &[f64], want: &[f64]) -> f64 {
    assert_close_tol(what, got, want, TOL)
}

/// The gradient PEFT recorded for a saved key (DoRA's magnitude is a
/// module parameter `…lora_magnitude_vector.weight` but saved without `.weight`).
pub fn grad_of<'a>(grads: &'a Value, key: &str) -> &'a Value {
    let g = grads;
    if g.get(key).is_some() {
        &g[key]
    } else {
        g.get(format!("{key}.weight"))
            .unwrap_or_else(|| panic!("no PEFT gradient for {key}"))
    }
}

/// Elementwise tanh, the fixture model's activation between its layers.
pub fn tanh(t: &HostTensor) -> HostTensor {
    let v: Vec<f32> = t
        .to_vec::<f32>()
        .unwrap()
        .iter()
        .map(|x| x.tanh())
        .collect();
    HostTensor::from_vec(v, t.dims()).unwrap()
}
