//! The rest of torch.optim.lr_scheduler: MultiStepLR, ExponentialLR,
//! CosineAnnealingWarmRestarts, OneCycleLR (with its momentum / beta1
//! cycling), ReduceLROnPlateau, and 80-iteration runs of StepLR / LinearLR /
//! CosineAnnealingLR against torch's recursive forms (fixtures:
//! tests/fixtures/schedules_more.json from tools/gen_optim_fixtures.py).

mod common;

use common::{f64s, load};
use rlx_optim::*;

fn close(x: f64, w: f64) -> bool {
    (x - w).abs() <= 1e-12 * w.abs()
}

fn schedule(v: &serde_json::Value) -> LrSchedule {
    let f = |k: &str| v[k].as_f64().unwrap();
    let u = |k: &str| v[k].as_u64().unwrap();
    match v["kind"].as_str().unwrap() {
        "linear" => LrSchedule::Linear {
            start_factor: f("start_factor"),
            end_factor: f("end_factor"),
            total_iters: u("total_iters"),
        },
        "cosine" => LrSchedule::Cosine {
            t_max: u("t_max"),
            eta_min: f("eta_min"),
        },
        "step" => LrSchedule::Step {
            step_size: u("step_size"),
            gamma: f("gamma"),
        },
        "multi_step" => LrSchedule::MultiStep {
            // Unsorted, as the fixture's torch call.
            milestones: v["milestones"]
                .as_array()
                .unwrap()
                .iter()
                .rev()
                .map(|m| m.as_u64().unwrap())
                .collect(),
            gamma: f("gamma"),
        },
        "exponential" => LrSchedule::Exponential { gamma: f("gamma") },
        "cosine_warm_restarts" => LrSchedule::CosineWarmRestarts {
            t_0: u("t_0"),
            t_mult: u("t_mult"),
            eta_min: f("eta_min"),
        },
        "one_cycle" => LrSchedule::OneCycle {
            total_steps: u("total_steps"),
            pct_start: f("pct_start"),
            anneal: match v["anneal"].as_str().unwrap() {
                "cos" => Anneal::Cos,
                "linear" => Anneal::Linear,
                a => panic!("anneal {a}"),
            },
            div_factor: f("div_factor"),
            final_div_factor: f("final_div_factor"),
            three_phase: v["three_phase"].as_bool().unwrap(),
            base_momentum: f("base_momentum"),
            max_momentum: f("max_momentum"),
        },
        k => panic!("schedule {k}"),
    }
}

#[test]
fn schedules_match_torch_over_80_iterations() {
    let fx = load("schedules_more.json");
    let cases = fx["cases"].as_array().unwrap();
    assert!(cases.len() >= 15);
    for case in cases {
        let name = case["name"].as_str().unwrap();
        let s = schedule(&case["schedule"]);
        let base = case["base_lr"].as_f64().unwrap();
        let want = f64s(&case["lrs"]);
        assert!(want.len() >= 61, "{name}: {} rates", want.len());
        let mut opt = Sgd::new(SgdConfig {
            lr: base,
            ..Default::default()
        })
        .unwrap();
        opt.set_schedule(s.clone());
        for (t, &w) in want.iter().enumerate() {
            for x in [s.lr_at(base, t as u64), opt.lr()] {
                assert!(close(x, w), "{name} t={t}: {x} vs torch {w}");
            }
            opt.end_iteration();
        }
        if let Some(m) = case.get("momentum") {
            let what = case["momentum_of"].as_str().unwrap();
            for (t, w) in f64s(m).into_iter().enumerate() {
                let x = s.momentum_at(t as u64).unwrap();
                assert!(
                    close(x, w),
                    "{name} {what} momentum t={t}: {x} vs torch {w}"
                );
            }
            // Past total_steps (torch raises) the last rate and momentum hold.
            let n = want.len() as u64 - 1;
            assert_eq!(s.lr_at(base, n + 5), s.lr_at(base, n));
            assert_eq!(s.momentum_at(n + 5), s.momentum_at(n));
        } else {
            assert_eq!(s.momentum_at(3), None);
        }
    }
}

#[test]
fn one_cycle_defaults_are_torchs() {
    let fx = load("schedules_more.json");
    let case = fx["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "one_cycle_defaults")
        .unwrap();
    assert_eq!(schedule(&case["schedule"]), LrSchedule::one_cycle(66));
}

fn plateau_config(v: &serde_json::Value) -> PlateauConfig {
    let f = |k: &str| v[k].as_f64().unwrap();
    let u = |k: &str| v[k].as_u64().unwrap();
    PlateauConfig {
        mode: match v["mode"].as_str().unwrap() {
            "min" => PlateauMode::Min,
            "max" => PlateauMode::Max,
            m => panic!("mode {m}"),
        },
        factor: f("factor"),
        patience: u("patience"),
        threshold: f("threshold"),
        threshold_mode: match v["threshold_mode"].as_str().unwrap() {
            "rel" => ThresholdMode::Rel,
            "abs" => ThresholdMode::Abs,
            m => panic!("threshold_mode {m}"),
        },
        cooldown: u("cooldown"),
        min_lr: f("min_lr"),
        eps: f("eps"),
    }
}

#[test]
fn reduce_lr_on_plateau_matches_torch() {
    let fx = load("schedules_more.json");
    let cases = fx["plateau"].as_array().unwrap();
    assert_eq!(cases.len(), 4);
    for case in cases {
        let name = case["name"].as_str().unwrap();
        let cfg = plateau_config(&case["config"]);
        let base = case["base_lr"].as_f64().unwrap();
        let metrics = f64s(&case["metrics"]);
        let want = f64s(&case["lrs"]);
        assert!(want.len() >= 60);
        let mut alone = ReduceLrOnPlateau::new(base, cfg).unwrap();
        let mut driver = ReduceLrOnPlateau::new(base, cfg).unwrap();
        let mut opt = Adam::new(AdamConfig {
            lr: base,
            ..Default::default()
        })
        .unwrap();
        let mut reductions = 0;
        for (t, (&m, &w)) in metrics.iter().zip(&want).enumerate() {
            let before = alone.lr();
            let x = alone.step(m);
            reductions += (x != before) as usize;
            let y = driver.step_optimizer(&mut opt, m);
            for v in [x, y, opt.lr()] {
                assert!(close(v, w), "{name} t={t} metric {m}: {v} vs torch {w}");
            }
            opt.end_iteration();
        }
        assert!(reductions >= 4, "{name}: {reductions} reductions");
        assert_eq!(alone.steps(), metrics.len() as u64);
    }
}

#[test]
fn plateau_resumes_from_torch_state_dict_and_its_own() {
    let fx = load("schedules_more.json");
    let mut mid_cooldown = 0;
    for case in fx["plateau"].as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        let k = case["resume_at"].as_u64().unwrap() as usize;
        let metrics = f64s(&case["metrics"]);
        let want = f64s(&case["lrs"]);
        let torch_state = case["torch_state"].to_string();
        let mut resumed = ReduceLrOnPlateau::from_state_json(&torch_state).unwrap();
        assert_eq!(resumed.steps(), k as u64, "{name}");
        assert_eq!(*resumed.config(), plateau_config(&case["config"]), "{name}");
        mid_cooldown += resumed.in_cooldown() as usize;
        // our own saved state restores the same scheduler, bit for bit
        let mine = resumed.state_json();
        let again = ReduceLrOnPlateau::from_state_json(&mine).unwrap();
        assert_eq!(again, resumed, "{name}");
        let mut loaded = ReduceLrOnPlateau::new(1.0, PlateauConfig::default()).unwrap();
        loaded.load_state_json(&mine).unwrap();
        assert_eq!(loaded, resumed, "{name}");
        for t in k..metrics.len() {
            let x = resumed.step(metrics[t]);
            assert!(
                close(x, want[t]),
                "{name} resumed at {k}, t={t}: {x} vs torch {}",
                want[t]
            );
        }
    }
    assert!(mid_cooldown >= 1, "a case resumes inside a cooldown");
}

#[test]
fn plateau_state_errors_name_the_field() {
    let fx = load("schedules_more.json");
    let good: serde_json::Value = fx["plateau"][0]["torch_state"].clone();
    let with = |key: &str, v: serde_json::Value| {
        let mut s = good.clone();
        s[key] = v;
        s.to_string()
    };
    let without = |key: &str| {
        let mut s = good.clone();
        s.as_object_mut().unwrap().remove(key);
        s.to_string()
    };
    let err = |text: String| {
        ReduceLrOnPlateau::from_state_json(&text)
            .unwrap_err()
            .to_string()
    };
    assert!(err(without("best")).contains("missing `best`"));
    assert!(err(with("mode", "up".into())).contains("state.mode: `up` is not min / max"));
    assert!(err(with("factor", 1.5.into())).contains("factor"));
    assert!(err(with("min_lrs", serde_json::json!([0.1, 0.2]))).contains("min_lrs: 2 values"));
    assert!(err(with("num_bad_epochs", (-1).into())).contains("num_bad_epochs"));
    assert!(err(with("best", "lots".into())).contains("`lots` is not a number"));
    assert!(err("[1, 2]".into()).contains("not an object"));
    assert!(err("{".into()).contains("not JSON"));
    // a failed load changes nothing
    let mut s = ReduceLrOnPlateau::new(0.3, PlateauConfig::default()).unwrap();
    s.step(1.0);
    let before = s.clone();
    assert!(s.load_state_json(&without("cooldown")).is_err());
    assert_eq!(s, before);
}

#[test]
fn plateau_rejects_bad_config_and_resets() {
    for cfg in [
        PlateauConfig {
            factor: 1.0,
            ..Default::default()
        },
        PlateauConfig {
            factor: f64::NAN,
            ..Default::default()
        },
        PlateauConfig {
            min_lr: -1.0,
            ..Default::default()
        },
        PlateauConfig {
            eps: f64::INFINITY,
            ..Default::default()
        },
    ] {
        let e = ReduceLrOnPlateau::new(0.1, cfg).unwrap_err();
        assert!(matches!(e, OptimError::InvalidHyperparameter { .. }), "{e}");
    }
    let mut p = ReduceLrOnPlateau::new(
        1.0,
        PlateauConfig {
            patience: 0,
            factor: 0.5,
            cooldown: 1,
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(p.best(), f64::INFINITY);
    assert_eq!(p.step(2.0), 1.0); // improvement on +inf
    assert_eq!(p.step(2.0), 0.5); // one bad step > patience 0
    assert!(p.in_cooldown());
    assert_eq!(p.step(f64::NAN), 0.5); // cooldown swallows it
    assert_eq!(p.step(f64::NAN), 0.25); // NaN is never an improvement
    p.reset();
    assert!(!p.in_cooldown() && p.num_bad_steps() == 0);
    assert_eq!(p.step(5.0), 0.25);
    assert_eq!(p.best(), 5.0);
}

/// What torch 2.15's schedulers refuse (their ValueError / ZeroDivisionError,
/// checked with `tools/gen_optim_fixtures.py`'s torch env), refused here too.
#[test]
fn schedules_validate_as_torch_does() {
    let one_cycle = |total_steps, pct_start, three_phase| match LrSchedule::one_cycle(total_steps) {
        LrSchedule::OneCycle {
            anneal,
            div_factor,
            final_div_factor,
            base_momentum,
            max_momentum,
            ..
        } => LrSchedule::OneCycle {
            total_steps,
            pct_start,
            anneal,
            div_factor,
            final_div_factor,
            three_phase,
            base_momentum,
            max_momentum,
        },
        _ => unreachable!(),
    };
    let why = |s: LrSchedule| s.validate().unwrap_err().to_string();
    // torch: "Expected positive integer total_steps, but got 0"
    assert!(why(one_cycle(0, 0.3, false)).contains("total_steps"));
    // torch: "Expected float between 0 and 1 pct_start, but got 1.5"
    assert!(why(one_cycle(10, 1.5, false)).contains("between 0 and 1"));
    // torch: ZeroDivisionError at the first step (the first phase ends at 0)
    assert!(why(one_cycle(10, 0.1, false)).contains("zero length"));
    // torch steps these fine (a negative first phase is skipped)
    one_cycle(1, 0.3, false).validate().unwrap();
    one_cycle(100, 0.25, true).validate().unwrap();
    one_cycle(7, 0.0, false).validate().unwrap();
    // torch: "Expected positive integer T_0" / "Expected integer T_mult >= 1"
    let wr = |t_0, t_mult| LrSchedule::CosineWarmRestarts {
        t_0,
        t_mult,
        eta_min: 0.0,
    };
    assert!(why(wr(0, 1)).contains("T_0"));
    assert!(why(wr(2, 0)).contains("T_mult"));
    // torch: "Starting multiplicative factor expected to be greater than 0 ..."
    let lin = LrSchedule::Linear {
        start_factor: 0.0,
        end_factor: 1.0,
        total_iters: 5,
    };
    assert!(why(lin).contains("start_factor"));
    // torch: ZeroDivisionError (integer modulo by zero)
    assert!(why(LrSchedule::Step {
        step_size: 0,
        gamma: 0.5
    })
    .contains("step_size"));
    assert!(why(LrSchedule::Cosine {
        t_max: 0,
        eta_min: 0.0
    })
    .contains("t_max"));
    // try_set_schedule refuses and leaves the optimizer as it was
    let mut opt = Adam::new(AdamConfig {
        lr: 0.01,
        ..Default::default()
    })
    .unwrap();
    assert!(opt.try_set_schedule(one_cycle(10, 0.1, false)).is_err());
    assert_eq!(opt.lr(), 0.01);
    opt.try_set_schedule(one_cycle(10, 0.3, false)).unwrap();
    assert!((opt.lr() - 0.01 / 25.0).abs() < 1e-15);
}
