//! `jit`: traced and compiled once per argument shapes, re-traced on a new
//! shape, values from JAX (`grad_mlp` and `scalar_mix` of the fixtures).

mod common;

use common::{compare, host, parse_tensor, Fx};
use rlx_tensor::{grad, jit, Tensor};

fn fixture(name: &str) -> (Vec<Fx>, Vec<Fx>) {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/programs.json"
    ))
    .unwrap();
    let fx: serde_json::Value = serde_json::from_str(&text).unwrap();
    let p = fx["programs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == name)
        .unwrap();
    (
        p["inputs"]
            .as_array()
            .unwrap()
            .iter()
            .map(parse_tensor)
            .collect(),
        p["outputs"]
            .as_array()
            .unwrap()
            .iter()
            .map(parse_tensor)
            .collect(),
    )
}

fn mlp_loss(x: &Tensor, w: &Tensor) -> Tensor {
    x.matmul(w).tanh().sum(None, false)
}

#[test]
fn jit_of_grad_matches_jax_and_caches_per_shape() {
    let (ins, outs) = fixture("grad_mlp");
    let f = jit(|x: &Tensor, w: &Tensor| grad(mlp_loss)(&[x, w]));
    let (x, w) = (host(&ins[0]), host(&ins[1]));
    for _ in 0..3 {
        let r = f.call(&[&x, &w]).unwrap();
        compare("jit(grad(mlp))", &r[0], &outs[0], 1e-4, 1e-5).unwrap();
    }
    assert_eq!(f.traces(), 1, "one trace for one signature");
    // A new batch size re-traces; the old signature stays cached.
    let x2 = rlx_ir::HostTensor::from_vec(vec![0.5f32; 2 * 4], &[2, 4]).unwrap();
    let r2 = f.call(&[&x2, &w]).unwrap();
    assert_eq!(r2[0].dims(), &[2, 4]);
    assert_eq!(f.traces(), 2);
    f.call(&[&x, &w]).unwrap();
    assert_eq!(f.traces(), 2);
}

#[test]
fn jit_of_several_outputs_matches_jax() {
    let (ins, outs) = fixture("scalar_mix");
    let f = jit(|a: &Tensor| vec![a * 2.5 - 1.0, 1.0 / (1.0 + a * a), -a]);
    let r = f.call(&[&host(&ins[0])]).unwrap();
    assert_eq!(r.len(), 3);
    for (k, (o, w)) in r.iter().zip(&outs).enumerate() {
        compare(&format!("output {k}"), o, w, 1e-5, 1e-6).unwrap();
    }
}
