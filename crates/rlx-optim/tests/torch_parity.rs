//! 20-step trajectories equal torch.optim's (tools/gen_optim_fixtures.py,
//! fixtures/torch_optim.json), and 50-step ones for the rest of torch.optim
//! (fixtures/torch_optim_more.json: Adagrad, RMSprop, Adamax, Adadelta, ASGD,
//! Rprop, NAdam with momentum decay; zero / sparse-ish gradients, maximize,
//! weight decay): f32 at 1e-6 relative, f64 at 1e-12.
//! Relative to `max(|torch value|, FLOOR)` (parameters are of size 0.1-1):
//! a parameter crossing zero is compared at `FLOOR * tol` absolute there,
//! a few ulps of the values that cancel. torch's f32 `sqrt` is not
//! correctly rounded (1 ulp), so the Adam-type f32 runs agree to ~1e-7
//! relative, not bit for bit; SGD, Adafactor and all f64 runs agree to an ulp.

mod common;

use common::{load, max_rel, traj, Problem};
use rlx_optim::*;
use serde_json::Value;

fn betas(kw: &Value, default: (f64, f64)) -> (f64, f64) {
    match kw.get("betas") {
        Some(b) => (b[0].as_f64().unwrap(), b[1].as_f64().unwrap()),
        None => default,
    }
}

/// The optimizer a torch run describes (torch kwargs -> our config).
fn build(which: &str, kw: &Value) -> Box<dyn Optimizer> {
    let f = |k: &str, d: f64| kw.get(k).and_then(Value::as_f64).unwrap_or(d);
    let b = |k: &str| kw.get(k).and_then(Value::as_bool).unwrap_or(false);
    match which {
        "Sgd" => Box::new(
            Sgd::new(SgdConfig {
                lr: f("lr", 1e-3),
                momentum: f("momentum", 0.0),
                dampening: f("dampening", 0.0),
                weight_decay: f("weight_decay", 0.0),
                nesterov: b("nesterov"),
                maximize: b("maximize"),
            })
            .unwrap(),
        ),
        "Adam" | "AdamW" => {
            let base = if which == "Adam" {
                AdamConfig::default()
            } else {
                AdamConfig::adamw()
            };
            let cfg = AdamConfig {
                lr: f("lr", base.lr),
                betas: betas(kw, base.betas),
                eps: f("eps", base.eps),
                weight_decay: f("weight_decay", base.weight_decay),
                amsgrad: b("amsgrad"),
                maximize: b("maximize"),
            };
            if which == "Adam" {
                Box::new(Adam::new(cfg).unwrap())
            } else {
                Box::new(AdamW::new(cfg).unwrap())
            }
        }
        "NAdamW" => Box::new(
            NAdamW::new(NAdamConfig {
                lr: f("lr", 2e-3),
                betas: betas(kw, (0.9, 0.999)),
                eps: f("eps", 1e-8),
                weight_decay: f("weight_decay", 0.0),
                momentum_decay: f("momentum_decay", 4e-3),
                decoupled_weight_decay: b("decoupled_weight_decay"),
                maximize: b("maximize"),
            })
            .unwrap(),
        ),
        "RAdam" => Box::new(
            RAdam::new(RAdamConfig {
                lr: f("lr", 1e-3),
                betas: betas(kw, (0.9, 0.999)),
                eps: f("eps", 1e-8),
                weight_decay: f("weight_decay", 0.0),
                decoupled_weight_decay: b("decoupled_weight_decay"),
                maximize: b("maximize"),
            })
            .unwrap(),
        ),
        "Adafactor" => {
            let (eps1, eps2) = match kw.get("eps") {
                Some(e) => (e[0].as_f64(), e[1].as_f64().unwrap()),
                None => (None, 1e-3),
            };
            Box::new(
                Adafactor::new(AdafactorConfig {
                    lr: f("lr", 1e-2),
                    beta2_decay: f("beta2_decay", -0.8),
                    eps1,
                    eps2,
                    d: f("d", 1.0),
                    weight_decay: f("weight_decay", 0.0),
                    maximize: b("maximize"),
                })
                .unwrap(),
            )
        }
        "Adagrad" => Box::new(
            Adagrad::new(AdagradConfig {
                lr: f("lr", 1e-2),
                lr_decay: f("lr_decay", 0.0),
                weight_decay: f("weight_decay", 0.0),
                initial_accumulator_value: f("initial_accumulator_value", 0.0),
                eps: f("eps", 1e-10),
                maximize: b("maximize"),
            })
            .unwrap(),
        ),
        "RmsProp" => Box::new(
            RmsProp::new(RmsPropConfig {
                lr: f("lr", 1e-2),
                alpha: f("alpha", 0.99),
                eps: f("eps", 1e-8),
                weight_decay: f("weight_decay", 0.0),
                momentum: f("momentum", 0.0),
                centered: b("centered"),
                maximize: b("maximize"),
            })
            .unwrap(),
        ),
        "Adamax" => Box::new(
            Adamax::new(AdamaxConfig {
                lr: f("lr", 2e-3),
                betas: betas(kw, (0.9, 0.999)),
                eps: f("eps", 1e-8),
                weight_decay: f("weight_decay", 0.0),
                maximize: b("maximize"),
            })
            .unwrap(),
        ),
        "Adadelta" => Box::new(
            Adadelta::new(AdadeltaConfig {
                lr: f("lr", 1.0),
                rho: f("rho", 0.9),
                eps: f("eps", 1e-6),
                weight_decay: f("weight_decay", 0.0),
                maximize: b("maximize"),
            })
            .unwrap(),
        ),
        "Asgd" => Box::new(
            Asgd::new(AsgdConfig {
                lr: f("lr", 1e-2),
                lambd: f("lambd", 1e-4),
                alpha: f("alpha", 0.75),
                t0: f("t0", 1e6),
                weight_decay: f("weight_decay", 0.0),
                maximize: b("maximize"),
            })
            .unwrap(),
        ),
        "Rprop" => {
            let pair = |k: &str, d: (f64, f64)| match kw.get(k) {
                Some(v) => (v[0].as_f64().unwrap(), v[1].as_f64().unwrap()),
                None => d,
            };
            Box::new(
                Rprop::new(RpropConfig {
                    lr: f("lr", 1e-2),
                    etas: pair("etas", (0.5, 1.2)),
                    step_sizes: pair("step_sizes", (1e-6, 50.0)),
                    maximize: b("maximize"),
                })
                .unwrap(),
            )
        }
        other => panic!("no optimizer {other}"),
    }
}

const FLOOR: f64 = 5e-2;

#[test]
fn trajectories_match_torch_optim() {
    let fx = load("torch_optim.json");
    let mut prob = Problem::from(&fx["problem"]);
    let mut failures = vec![];
    let runs = fx["runs"].as_array().unwrap();
    assert!(runs.len() >= 18);
    for run in runs {
        let name = run["name"].as_str().unwrap();
        let which = run["optimizer"].as_str().unwrap();
        prob.negate = run["kwargs"]
            .get("maximize")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let got32 = prob.run::<f32>(build(which, &run["kwargs"]).as_mut());
        let got64 = prob.run::<f64>(build(which, &run["kwargs"]).as_mut());
        let e32 = max_rel(&got32, &traj(&run["f32"]), FLOOR);
        let e64 = max_rel(&got64, &traj(&run["f64"]), FLOOR);
        println!(
            "{name:28} f32 max rel {:.2e} (step {}, elem {})   f64 {:.2e}",
            e32.0, e32.1, e32.2, e64.0
        );
        if e32.0.is_nan() || e64.0.is_nan() || e32.0 > 1e-6 || e64.0 > 1e-12 {
            failures.push(name.to_string());
        }
    }
    assert!(
        failures.is_empty(),
        "trajectories differ from torch: {failures:?}"
    );
}

/// The flattened buffer `key` of every parameter in `opt`'s saved state.
fn saved_buffer(opt: &dyn Optimizer, names: &[String], key: &str) -> Vec<f64> {
    let st = opt.save_state();
    names
        .iter()
        .flat_map(|n| st.params[n].buffers[key].clone())
        .collect()
}

#[test]
fn more_trajectories_match_torch_optim() {
    let fx = load("torch_optim_more.json");
    let mut prob = Problem::from(&fx["problem"]);
    assert!(prob.steps >= 50);
    let mut failures = vec![];
    let runs = fx["runs"].as_array().unwrap();
    assert!(runs.len() >= 24);
    for run in runs {
        let name = run["name"].as_str().unwrap();
        let which = run["optimizer"].as_str().unwrap();
        prob.negate = run["kwargs"]
            .get("maximize")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        prob.masked = run["grad_mask"].as_bool().unwrap();
        let mut o32 = build(which, &run["kwargs"]);
        let mut o64 = build(which, &run["kwargs"]);
        let got32 = prob.run::<f32>(o32.as_mut());
        let got64 = prob.run::<f64>(o64.as_mut());
        let e32 = max_rel(&got32, &traj(&run["f32"]), FLOOR);
        let e64 = max_rel(&got64, &traj(&run["f64"]), FLOOR);
        println!(
            "{name:36} f32 max rel {:.2e} (step {}, elem {})   f64 {:.2e}",
            e32.0, e32.1, e32.2, e64.0
        );
        let mut bad = e32.0.is_nan() || e64.0.is_nan() || e32.0 > 1e-6 || e64.0 > 1e-12;
        if which == "Asgd" {
            // the running average, after the last step
            let a32 = saved_buffer(o32.as_ref(), &prob.names, "ax");
            let a64 = saved_buffer(o64.as_ref(), &prob.names, "ax");
            let r32 = max_rel(&[a32], &[common::f64s(&run["f32_ax"])], FLOOR);
            let r64 = max_rel(&[a64], &[common::f64s(&run["f64_ax"])], FLOOR);
            println!("{name:36} average: f32 {:.2e}   f64 {:.2e}", r32.0, r64.0);
            bad |= r32.0.is_nan() || r64.0.is_nan() || r32.0 > 1e-6 || r64.0 > 1e-12;
        }
        if bad {
            failures.push(name.to_string());
        }
    }
    assert!(
        failures.is_empty(),
        "trajectories differ from torch: {failures:?}"
    );
}
