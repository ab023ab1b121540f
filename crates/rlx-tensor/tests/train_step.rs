//! `train_step` against JAX: a 4-5-3 tanh MLP with softmax cross-entropy,
//! written with `Tensor`s, takes 5 SGD-momentum and 5 Adam steps; the
//! losses and params after every step match the trajectory of
//! `tools/gen_tensor_train_step_fixtures.py` (JAX gradients, the optimizer
//! updates in numpy from the PyTorch formulas).

use rlx_optim::{Adam, AdamConfig, Optimizer, Sgd, SgdConfig};
use rlx_tensor::{nn, shape, train_step, Tensor, TensorError, TrainStep};
use serde_json::Value;

fn fixture() -> Value {
    let text = include_str!("fixtures/train_step.json");
    serde_json::from_str(text).unwrap()
}

fn floats(v: &Value) -> Vec<f32> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap() as f32)
        .collect()
}

const PARAMS: [&str; 4] = ["w1", "b1", "w2", "b2"];

/// Mean softmax cross-entropy of `tanh(x @ w1 + b1) @ w2 + b2`.
fn mlp_loss(p: &[Tensor], batch: &[Tensor]) -> Tensor {
    let (x, y) = (&batch[0], &batch[1]);
    let h = (x.matmul(&p[0]) + &p[1]).tanh();
    let z = h.matmul(&p[2]) + &p[3];
    -(y * nn::log_softmax(&z, -1))
        .sum(-1, false)
        .mean(None, false)
}

fn build<O: Optimizer>(opt: O, f: &Value) -> TrainStep<O> {
    let mut t = train_step(
        mlp_loss,
        &[
            ("w1", shape![4, 5]),
            ("b1", shape![5]),
            ("w2", shape![5, 3]),
            ("b2", shape![3]),
        ],
        &[("x", shape![6, 4]), ("y", shape![6, 3])],
        opt,
    )
    .unwrap();
    for name in PARAMS {
        t.set_param(name, &floats(&f["init"][name])).unwrap();
    }
    t
}

fn follow<O: Optimizer>(mut t: TrainStep<O>, f: &Value, which: &str) {
    let (x, y) = (floats(&f["x"]), floats(&f["y"]));
    for (k, want) in f[which]["steps"].as_array().unwrap().iter().enumerate() {
        let out = t.step(&[("x", &x), ("y", &y)]).unwrap();
        let loss = want["loss"].as_f64().unwrap() as f32;
        assert!(
            (out.loss - loss).abs() <= 1e-5 * loss.abs().max(1.0),
            "{which} step {k}: loss {} vs JAX {loss}",
            out.loss
        );
        for name in PARAMS {
            let want = floats(&want["params"][name]);
            let got = t.param(name).unwrap();
            for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                assert!(
                    (g - w).abs() <= 2e-5 * w.abs().max(1.0),
                    "{which} step {k}: {name}[{i}] = {g}, JAX {w}"
                );
            }
        }
    }
}

#[test]
fn sgd_momentum_steps_match_jax() {
    let f = fixture();
    let sgd = Sgd::new(SgdConfig {
        lr: f["sgd"]["lr"].as_f64().unwrap(),
        momentum: f["sgd"]["momentum"].as_f64().unwrap(),
        ..Default::default()
    })
    .unwrap();
    follow(build(sgd, &f), &f, "sgd");
}

#[test]
fn adam_steps_match_jax() {
    let f = fixture();
    let adam = Adam::new(AdamConfig {
        lr: f["adam"]["lr"].as_f64().unwrap(),
        betas: (0.9, 0.999),
        eps: f["adam"]["eps"].as_f64().unwrap(),
        ..Default::default()
    })
    .unwrap();
    follow(build(adam, &f), &f, "adam");
}

#[test]
fn a_loss_closure_that_fails_to_build_is_a_named_error() {
    let sgd = Sgd::new(SgdConfig::default()).unwrap();
    // [6, 4] @ [5, 3]: the contraction dims disagree.
    let err = train_step(
        |p: &[Tensor], b: &[Tensor]| b[0].matmul(&p[0]).sum(None, false),
        &[("w", shape![5, 3])],
        &[("x", shape![6, 4])],
        sgd,
    )
    .err()
    .unwrap();
    assert!(!matches!(err, TensorError::Optim { .. }), "{err}");
    let msg = err.to_string();
    assert!(msg.contains("matmul"), "{msg}");
}

#[test]
fn unknown_and_misshaped_params_are_errors() {
    let f = fixture();
    let mut t = build(Sgd::new(SgdConfig::default()).unwrap(), &f);
    let err = t.set_param("w3", &[0.0]).unwrap_err().to_string();
    assert!(err.contains("w3"), "{err}");
    assert!(t.set_param("b2", &[0.0; 4]).is_err());
}
