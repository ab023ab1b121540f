//! The small MLP the device-layer tests run, with numpy's float64 outputs
//! (`tools/gen_device_fixtures.py` -> `fixtures/devices_mlp.json`).
#![allow(dead_code)] // each test binary uses part of it

use rlx_ir::{DType, Graph, GraphExt, HostTensor, Shape};
use serde_json::Value;

const FIXTURE: &str = include_str!("../fixtures/devices_mlp.json");

/// The MLP: graph, every input / param tensor by name, numpy's output.
pub struct Mlp {
    /// `relu(x @ w1 + b1) @ w2 + b2`.
    pub graph: Graph,
    /// `(name, values, dims)` for x, w1, b1, w2, b2.
    pub tensors: Vec<(String, Vec<f32>, Vec<usize>)>,
    /// numpy's float64 output, row major.
    pub want: Vec<f64>,
}

/// The generator's `pattern`: exact in f32, so bit-identical to numpy's.
pub fn pattern(n: usize, seed: i64, scale: f32) -> Vec<f32> {
    (0..n as i64)
        .map(|i| {
            let k = (i * 7919 + seed * 104729) % 2001 - 1000;
            (k as f32 / 1024.0) * scale
        })
        .collect()
}

pub fn mlp() -> Mlp {
    let fx: Value = serde_json::from_str(FIXTURE).expect("fixture parses");
    let mut tensors = Vec::new();
    for t in fx["tensors"].as_array().unwrap() {
        let dims: Vec<usize> = t["shape"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d.as_u64().unwrap() as usize)
            .collect();
        let n = dims.iter().product();
        let v = pattern(
            n,
            t["seed"].as_i64().unwrap(),
            t["scale"].as_f64().unwrap() as f32,
        );
        tensors.push((t["name"].as_str().unwrap().to_string(), v, dims));
    }
    // The inputs are rebuilt here: check they are numpy's.
    let sum = |name: &str| -> f64 {
        let t = tensors.iter().find(|t| t.0 == name).unwrap();
        t.1.iter().map(|&v| v as f64).sum()
    };
    assert_eq!(sum("x"), fx["x_checksum"].as_f64().unwrap());
    assert_eq!(sum("w1"), fx["w1_checksum"].as_f64().unwrap());
    let dims = |name: &str| tensors.iter().find(|t| t.0 == name).unwrap().2.clone();
    let f32s = |d: Vec<usize>| Shape::new(&d, DType::F32);
    let mut g = Graph::new("mlp");
    let x = g.input("x", f32s(dims("x")));
    let w1 = g.param("w1", f32s(dims("w1")));
    let b1 = g.param("b1", f32s(dims("b1")));
    let w2 = g.param("w2", f32s(dims("w2")));
    let b2 = g.param("b2", f32s(dims("b2")));
    let h = g.mm(x, w1);
    let h = g.add(h, b1);
    let h = g.relu(h);
    let y = g.mm(h, w2);
    let y = g.add(y, b2);
    g.set_outputs(vec![y]);
    let want = fx["y"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect();
    Mlp {
        graph: g,
        tensors,
        want,
    }
}

impl Mlp {
    /// The values of `name`.
    pub fn values(&self, name: &str) -> &[f32] {
        &self.tensors.iter().find(|t| t.0 == name).unwrap().1
    }

    /// The params as `(name, values)`.
    pub fn params(&self) -> Vec<(&str, &[f32])> {
        self.tensors
            .iter()
            .filter(|t| t.0 != "x")
            .map(|t| (t.0.as_str(), t.1.as_slice()))
            .collect()
    }

    /// The input as `(name, values)`.
    pub fn inputs(&self) -> Vec<(&str, &[f32])> {
        vec![("x", self.values("x"))]
    }

    /// Every tensor as a host tensor, for `benchmark_devices`.
    pub fn host_tensors(&self) -> Vec<(String, HostTensor)> {
        self.tensors
            .iter()
            .map(|(n, v, d)| (n.clone(), HostTensor::from_slice(v, d).unwrap()))
            .collect()
    }
}

/// Asserts `got` is numpy's output within `tol` (absolute + relative).
pub fn assert_close(got: &[f32], want: &[f64], tol: f64) {
    assert_eq!(got.len(), want.len());
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g as f64 - w).abs() <= tol * (1.0 + w.abs()),
            "y[{i}]: {g} vs numpy {w}"
        );
    }
}

/// Borrowed feeds of `owned` (name, tensor) pairs.
pub fn feeds(owned: &[(String, HostTensor)]) -> Vec<(&str, &HostTensor)> {
    owned.iter().map(|(n, t)| (n.as_str(), t)).collect()
}
