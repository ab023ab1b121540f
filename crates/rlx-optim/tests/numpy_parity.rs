//! 20-step trajectories of the optimizers torch.optim does not have equal
//! those of the numpy re-implementations of the authors' reference code in
//! tools/numpy_optim_ref.py (fixtures/numpy_optim.json, float64): f64 runs
//! at 1e-12 relative, f32 runs (against the same f64 reference: f32 rounding accumulates) at 5e-5.

mod common;

use common::{load, max_rel, traj, Problem};
use rlx_optim::*;
use serde_json::Value;

fn pair(kw: &Value, k: &str, d: (f64, f64)) -> (f64, f64) {
    kw.get(k)
        .map_or(d, |b| (b[0].as_f64().unwrap(), b[1].as_f64().unwrap()))
}

fn build(run: &Value) -> Box<dyn Optimizer> {
    let kw = &run["kwargs"];
    let f = |k: &str, d: f64| kw.get(k).and_then(Value::as_f64).unwrap_or(d);
    let b = |k: &str, d: bool| kw.get(k).and_then(Value::as_bool).unwrap_or(d);
    match run["optimizer"].as_str().unwrap() {
        "Lion" => {
            let d = LionConfig::default();
            Box::new(
                Lion::new(LionConfig {
                    lr: f("lr", d.lr),
                    betas: pair(kw, "betas", d.betas),
                    weight_decay: f("weight_decay", 0.0),
                })
                .unwrap(),
            )
        }
        "QHAdamW" => {
            let d = QHAdamConfig::default();
            Box::new(
                QHAdamW::new(QHAdamConfig {
                    lr: f("lr", d.lr),
                    betas: pair(kw, "betas", d.betas),
                    nus: pair(kw, "nus", d.nus),
                    weight_decay: f("weight_decay", 0.0),
                    decouple_weight_decay: b("decouple_weight_decay", true),
                    eps: f("eps", d.eps),
                })
                .unwrap(),
            )
        }
        "Lamb" => {
            let d = LambConfig::default();
            Box::new(
                Lamb::new(LambConfig {
                    lr: f("lr", d.lr),
                    betas: pair(kw, "betas", d.betas),
                    eps: f("eps", d.eps),
                    weight_decay: f("weight_decay", 0.0),
                    adam: b("adam", false),
                })
                .unwrap(),
            )
        }
        "Sophia" => {
            let d = SophiaConfig::default();
            Box::new(
                Sophia::new(SophiaConfig {
                    lr: f("lr", d.lr),
                    betas: pair(kw, "betas", d.betas),
                    rho: f("rho", d.rho),
                    weight_decay: f("weight_decay", d.weight_decay),
                    bs: f("bs", d.bs),
                    maximize: false,
                })
                .unwrap(),
            )
        }
        "Mars" => {
            let d = MarsConfig::default();
            let mars_type = match kw.get("mars_type").and_then(Value::as_str) {
                Some("mars-lion") => MarsType::Lion,
                _ => MarsType::AdamW,
            };
            Box::new(
                Mars::new(MarsConfig {
                    lr: f("lr", d.lr),
                    betas: pair(kw, "betas", d.betas),
                    eps: f("eps", d.eps),
                    weight_decay: f("weight_decay", d.weight_decay),
                    amsgrad: b("amsgrad", false),
                    gamma: f("gamma", d.gamma),
                    mars_type,
                    optimize_1d: b("optimize_1d", false),
                    lr_1d: f("lr_1d", d.lr_1d),
                    betas_1d: pair(kw, "betas_1d", d.betas_1d),
                    weight_decay_1d: f("weight_decay_1d", d.weight_decay_1d),
                })
                .unwrap(),
            )
        }
        "Muon" => {
            let d = MuonConfig::default();
            Box::new(
                Muon::new(MuonConfig {
                    lr: f("lr", d.lr),
                    momentum: f("momentum", d.momentum),
                    nesterov: b("nesterov", true),
                    weight_decay: f("weight_decay", 0.0),
                    adam_lr: f("adam_lr", d.adam_lr),
                    adam_weight_decay: f("adam_weight_decay", 0.0),
                    ..d
                })
                .unwrap(),
            )
        }
        "Soap" => {
            let d = SoapConfig::default();
            let sb = f("shampoo_beta", -1.0);
            Box::new(
                Soap::new(SoapConfig {
                    lr: f("lr", d.lr),
                    betas: pair(kw, "betas", d.betas),
                    shampoo_beta: (sb >= 0.0).then_some(sb),
                    eps: f("eps", d.eps),
                    weight_decay: f("weight_decay", d.weight_decay),
                    precondition_frequency: f("precondition_frequency", 10.0) as u64,
                    max_precond_dim: d.max_precond_dim,
                    precondition_1d: b("precondition_1d", false),
                    normalize_grads: b("normalize_grads", false),
                    correct_bias: b("correct_bias", true),
                })
                .unwrap(),
            )
        }
        "KronPsgd" => {
            let d = KronConfig::default();
            let update = match kw.get("update_probability").and_then(Value::as_f64) {
                Some(p) => PrecondUpdate::Probability(p),
                None => d.update.clone(),
            };
            let memory_save_mode = match kw.get("memory_save_mode").and_then(Value::as_str) {
                Some("one_diag") => MemorySaveMode::OneDiag,
                Some("all_diag") => MemorySaveMode::AllDiag,
                _ => MemorySaveMode::None,
            };
            Box::new(
                KronPsgd::new(KronConfig {
                    lr: f("lr", d.lr),
                    b1: f("b1", d.b1),
                    weight_decay: f("weight_decay", 0.0),
                    update,
                    memory_save_mode,
                    precond_lr: f("precond_lr", d.precond_lr),
                    precond_init_scale: f("precond_init_scale", d.precond_init_scale),
                    trust_region_scale: f("trust_region_scale", d.trust_region_scale),
                    balance_probability: f("balance_probability", d.balance_probability),
                    seed: kw.get("seed").and_then(Value::as_u64).unwrap_or(d.seed),
                    ..d
                })
                .unwrap(),
            )
        }
        "Stiefel" => {
            let method = if run["method"] == "sgd" {
                StiefelMethod::Sgd {
                    momentum: f("momentum", 0.0),
                    dampening: f("dampening", 0.0),
                    nesterov: b("nesterov", false),
                }
            } else {
                StiefelMethod::Adam {
                    betas: pair(kw, "betas", (0.9, 0.999)),
                    eps: f("eps", 1e-8),
                    amsgrad: b("amsgrad", false),
                }
            };
            Box::new(
                Stiefel::new(StiefelConfig {
                    lr: f("lr", 1e-3),
                    weight_decay: f("weight_decay", 0.0),
                    method,
                })
                .unwrap(),
            )
        }
        other => panic!("no optimizer {other}"),
    }
}

/// Runs `run` in precision `T`, calling Sophia's `update_hessian` the way the fixture did.
fn trajectory<T: Float>(prob: &Problem, run: &Value) -> Vec<Vec<f64>> {
    let every = run
        .get("hessian_every")
        .and_then(Value::as_u64)
        .unwrap_or(0) as usize;
    if every == 0 {
        return prob.run::<T>(build(run).as_mut());
    }
    let Value::Object(_) = run else {
        unreachable!()
    };
    let kw = &run["kwargs"];
    let f = |k: &str, d: f64| kw.get(k).and_then(Value::as_f64).unwrap_or(d);
    let d = SophiaConfig::default();
    let mut opt = Sophia::new(SophiaConfig {
        lr: f("lr", d.lr),
        betas: pair(kw, "betas", d.betas),
        rho: f("rho", d.rho),
        weight_decay: f("weight_decay", d.weight_decay),
        bs: f("bs", d.bs),
        maximize: false,
    })
    .unwrap();
    let mut ps = prob.params::<T>();
    let mut out = vec![];
    prob.reset();
    for k in 1..=prob.steps {
        prob.iterate(&mut opt, &mut ps);
        if k % every == 0 {
            // ghat at the iteration just done (the drift term's k).
            prob.back();
            for (i, p) in ps.iter().enumerate() {
                let ghat: Vec<T> = prob
                    .grad(i, p)
                    .iter()
                    .map(|&g| g * T::c(0.5) + T::c(0.05))
                    .collect();
                opt.update_hessian(&prob.names[i], &prob.shapes[i], &ghat)
                    .unwrap();
            }
        }
        out.push(ps.iter().flatten().map(|x| x.f64()).collect());
    }
    out
}

#[test]
fn trajectories_match_numpy_references() {
    let fx = load("numpy_optim.json");
    let base = Problem::from(&fx["problem"]);
    let mut failures = vec![];
    let mut seen = std::collections::BTreeSet::new();
    for run in fx["runs"].as_array().unwrap() {
        let name = run["name"].as_str().unwrap();
        seen.insert(run["optimizer"].as_str().unwrap().to_string());
        let own;
        let prob = match run.get("problem") {
            Some(p) => {
                own = Problem::from(p);
                &own
            }
            None => &base,
        };
        let want = traj(&run["f64"]);
        let e64 = max_rel(&trajectory::<f64>(prob, run), &want, 5e-2);
        let e32 = max_rel(&trajectory::<f32>(prob, run), &want, 5e-2);
        println!(
            "{name:26} f64 max rel {:.2e} (step {})   f32 {:.2e} (step {})",
            e64.0, e64.1, e32.0, e32.1
        );
        if e32.0.is_nan() || e64.0.is_nan() || e64.0 > 1e-12 || e32.0 > 5e-5 {
            failures.push(name.to_string());
        }
    }
    assert!(
        failures.is_empty(),
        "trajectories differ from the numpy references: {failures:?}"
    );
    for o in [
        "Lion", "QHAdamW", "Lamb", "Sophia", "Mars", "Muon", "Stiefel",
    ] {
        assert!(seen.contains(o), "no fixture run for {o}");
    }
}

#[test]
fn stiefel_steps_stay_on_the_manifold() {
    let fx = load("numpy_optim.json");
    for run in fx["runs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["optimizer"] == "Stiefel")
    {
        let prob = Problem::from(&run["problem"]);
        for (tol, t) in [
            (1e-13, trajectory::<f64>(&prob, run)),
            (1e-5, trajectory::<f32>(&prob, run)),
        ] {
            for w in &t {
                // W is 4 x 3: W^T W = I.
                for a in 0..3 {
                    for b in 0..3 {
                        let dot: f64 = (0..4).map(|r| w[r * 3 + a] * w[r * 3 + b]).sum();
                        let want = if a == b { 1.0 } else { 0.0 };
                        assert!(
                            (dot - want).abs() <= tol,
                            "{}: (W^T W)[{a}][{b}] = {dot}",
                            run["name"]
                        );
                    }
                }
            }
        }
    }
}
