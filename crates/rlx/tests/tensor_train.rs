//! A model written with the Tensor DSL trains with `rlx::train::TrainStep`:
//! linear regression on exact data recovers the generating weights.

use rlx::optim::{Sgd, SgdConfig};
use rlx::prelude::*;
use rlx::train::TrainStep;

#[test]
fn tensor_dsl_graph_trains_to_the_generating_weights() {
    // y = x @ [2, -3] + 0.5, exactly.
    let xs: [f32; 8] = [1.0, 0.0, 0.0, 1.0, 1.0, 1.0, -1.0, 2.0];
    let ys: Vec<f32> = xs
        .chunks(2)
        .map(|r| 2.0 * r[0] - 3.0 * r[1] + 0.5)
        .collect();
    let g = graph("linreg", |g| {
        let x = g.input("x", shape![4, 2]);
        let y = g.input("y", shape![4]);
        let w = g.param("w", shape![2]);
        let b = g.param("b", shape![]);
        let pred = rlx::tensor::np::matvec(&x, &w) + &b;
        (pred - &y).square().mean(None, false)
    })
    .unwrap();
    let sgd = Sgd::new(SgdConfig {
        lr: 0.1,
        ..Default::default()
    })
    .unwrap();
    let mut t = TrainStep::new(&g, &["w", "b"], sgd).unwrap();
    t.set_param("w", &[0.0, 0.0]).unwrap();
    t.set_param("b", &[0.0]).unwrap();
    let mut last = f32::INFINITY;
    for _ in 0..2000 {
        last = t.step(&[("x", &xs), ("y", &ys)]).unwrap().loss;
    }
    assert!(last < 1e-8, "loss {last}");
    let w = t.param("w").unwrap();
    let b = t.param("b").unwrap();
    assert!(
        (w[0] - 2.0).abs() < 1e-3 && (w[1] + 3.0).abs() < 1e-3,
        "w = {w:?}"
    );
    assert!((b[0] - 0.5).abs() < 1e-3, "b = {b:?}");
}
