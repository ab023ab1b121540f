//! `TrainStep` against torch: a 4-8-3 tanh MLP with softmax cross-entropy,
//! 12 steps of AdamW with a cosine schedule and global-norm clipping, from
//! the same initial params (fixture: tools/gen_train_step_fixtures.py).

use rlx::optim::{AdamConfig, AdamW, LrSchedule, Optimizer};
use rlx::prelude::*;
use rlx::train::TrainStep;
use serde_json::Value;

fn floats(v: &Value) -> Vec<f32> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap() as f32)
        .collect()
}

fn mlp_loss() -> Graph {
    let mut g = Graph::new("mlp");
    let x = g.input("x", Shape::new(&[6, 4], DType::F32));
    let y = g.input("y", Shape::new(&[6, 3], DType::F32));
    let w1 = g.param("w1", Shape::new(&[4, 8], DType::F32));
    let b1 = g.param("b1", Shape::new(&[8], DType::F32));
    let w2 = g.param("w2", Shape::new(&[8, 3], DType::F32));
    let b2 = g.param("b2", Shape::new(&[3], DType::F32));
    let h = g.mm(x, w1);
    let h = g.add(h, b1);
    let h = g.tanh(h);
    let z = g.mm(h, w2);
    let z = g.add(z, b2);
    let lp = g.log_softmax(z, -1);
    let picked = g.mul(y, lp);
    let s = g.sum(picked, &[0, 1], false);
    let loss = g.mul(s, g.constant(-1.0 / 6.0, DType::F32));
    g.set_outputs(vec![loss]);
    g
}

#[test]
fn adamw_cosine_clipped_trajectory_matches_torch() {
    let text = include_str!("fixtures/train_step.json");
    let f: Value = serde_json::from_str(text).unwrap();
    let mut opt = AdamW::new(AdamConfig {
        lr: 0.05,
        weight_decay: 0.01,
        ..AdamConfig::adamw()
    })
    .unwrap();
    opt.set_schedule(LrSchedule::Cosine {
        t_max: 12,
        eta_min: 0.005,
    });
    let mut t = TrainStep::new(&mlp_loss(), &["w1", "b1", "w2", "b2"], opt)
        .unwrap()
        .clip_grad_norm(0.22);
    for name in ["w1", "b1", "w2", "b2"] {
        t.set_param(name, &floats(&f["init"][name])).unwrap();
    }
    let (x, y) = (floats(&f["x"]), floats(&f["y"]));
    let want_losses = floats(&f["losses"]);
    let want_norms = floats(&f["grad_norms"]);
    for (k, (&want, &norm)) in want_losses.iter().zip(&want_norms).enumerate() {
        let out = t.step(&[("x", &x), ("y", &y)]).unwrap();
        assert!(
            (out.loss - want).abs() <= 1e-5 * want.abs().max(1.0),
            "step {k}: loss {} vs torch {want}",
            out.loss
        );
        assert!(
            (out.grad_norm - norm).abs() <= 1e-5 * norm.max(1.0),
            "step {k}: grad norm {} vs torch {norm}",
            out.grad_norm
        );
    }
    assert!(
        want_norms.iter().any(|&n| n > 0.22),
        "the fixture must exercise clipping"
    );
    for name in ["w1", "b1", "w2", "b2"] {
        let want = floats(&f["final"][name]);
        let got = t.param(name).unwrap();
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert!(
                (g - w).abs() <= 2e-5 * w.abs().max(1.0),
                "{name}[{i}]: {g} vs torch {w}"
            );
        }
    }
    assert_eq!(t.optimizer().iteration(), 12);
}

#[test]
fn frozen_params_do_not_move_and_bad_names_are_errors() {
    let opt = AdamW::new(AdamConfig::adamw()).unwrap();
    let err = TrainStep::new(&mlp_loss(), &["w3"], opt)
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("w3") && err.contains("w1"), "{err}");

    let opt = AdamW::new(AdamConfig::adamw()).unwrap();
    let mut t = TrainStep::new(&mlp_loss(), &["w2", "b2"], opt).unwrap();
    let w1: Vec<f32> = (0..32).map(|i| (i as f32 - 16.0) / 40.0).collect();
    t.set_param("w1", &w1).unwrap();
    t.set_param("b1", &[0.1; 8]).unwrap();
    t.set_param("w2", &[0.05; 24]).unwrap();
    t.set_param("b2", &[0.0; 3]).unwrap();
    let x: Vec<f32> = (0..24).map(|i| (i as f32) / 24.0).collect();
    let mut y = vec![0.0f32; 18];
    for r in 0..6 {
        y[r * 3 + r % 3] = 1.0;
    }
    let first = t.step(&[("x", &x), ("y", &y)]).unwrap().loss;
    let mut last = first;
    for _ in 0..20 {
        last = t.step(&[("x", &x), ("y", &y)]).unwrap().loss;
    }
    assert!(last < first, "loss {first} -> {last}");
    assert_eq!(t.param("w1").unwrap(), w1.as_slice());
    assert_ne!(t.param("w2").unwrap(), &[0.05; 24][..]);
    assert!(t.set_param("nope", &[1.0]).is_err());
}
