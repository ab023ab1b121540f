//! The MLP training step as the benchmark runs it (forward, backward and
//! the SGD update in one compiled graph, params updated in place) follows
//! JAX's trajectory step for step (`tools/gen_mlp_step_fixtures.py`).

use rlx_bench::{patterns, PreparedPattern};
use serde_json::Value;

fn floats(v: &Value) -> Vec<f32> {
    v.as_array()
        .expect("array")
        .iter()
        .map(|x| x.as_f64().expect("number") as f32)
        .collect()
}

fn named(v: &Value, names: &[&str]) -> Vec<(String, Vec<f32>)> {
    names
        .iter()
        .map(|n| (n.to_string(), floats(&v[*n])))
        .collect()
}

fn assert_close(got: &[f32], want: &[f32], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= 2e-6 + 2e-5 * w.abs(),
            "{what}[{i}]: {g} vs JAX {w}"
        );
    }
}

#[test]
fn sgd_steps_follow_jax() {
    let fixture: Value = serde_json::from_str(include_str!("fixtures/mlp_sgd_steps.json")).unwrap();
    let dims: Vec<usize> = fixture["dims"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d.as_u64().unwrap() as usize)
        .collect();
    let mut p = patterns::mlp_train_step(dims[0], [dims[1], dims[2], dims[3]]);
    assert_eq!(p.sgd, Some(fixture["lr"].as_f64().unwrap() as f32));
    let names = ["l1.w", "l1.b", "l2.w", "l2.b"];
    p.params = named(&fixture["params"], &names);
    p.inputs = named(&fixture["inputs"], &["x", "y"]);
    let mut step = PreparedPattern::new(&p).unwrap();
    for (i, want) in floats(&fixture["losses"]).iter().enumerate() {
        let outs = step.step().unwrap();
        assert_eq!(outs.len(), 1, "a step returns only the loss");
        assert_close(
            &outs[0].to_vec::<f32>().unwrap(),
            &[*want],
            &format!("loss {i}"),
        );
    }
    let got = step.params().unwrap();
    for ((name, value), (want_name, want)) in
        got.iter().zip(named(&fixture["final_params"], &names))
    {
        assert_eq!(name, &want_name);
        assert_close(value, &want, name);
    }
}
