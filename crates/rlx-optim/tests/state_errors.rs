//! Saving mid-run and loading into a fresh optimizer continues the same
//! trajectory bit for bit; bad input is a typed error that changes nothing.

mod common;

use common::{load, Problem};
use rlx_optim::*;

fn roundtrip<T: Float>(make: &dyn Fn() -> Box<dyn Optimizer>) {
    let prob = Problem::from(&load("torch_optim.json")["problem"]);
    // Uninterrupted run.
    let mut a = make();
    let mut pa = prob.params::<T>();
    for _ in 0..prob.steps {
        prob.iterate(a.as_mut(), &mut pa);
    }
    // Run 7 steps, save to JSON, load into a fresh optimizer, finish.
    let mut b = make();
    let mut pb = prob.params::<T>();
    for _ in 0..7 {
        prob.iterate(b.as_mut(), &mut pb);
    }
    let json = b.save_state().to_json();
    let mut c = make();
    c.load_state(&OptimState::from_json(&json).unwrap())
        .unwrap();
    assert_eq!(c.save_state(), b.save_state());
    for _ in 7..prob.steps {
        prob.iterate(c.as_mut(), &mut pb);
    }
    assert_eq!(pa, pb, "resumed trajectory differs");
}

#[test]
fn save_load_continues_the_trajectory() {
    let makers: Vec<Box<dyn Fn() -> Box<dyn Optimizer>>> = vec![
        Box::new(|| {
            Box::new(
                Sgd::new(SgdConfig {
                    lr: 0.02,
                    momentum: 0.9,
                    ..Default::default()
                })
                .unwrap(),
            )
        }),
        Box::new(|| {
            Box::new(
                Adam::new(AdamConfig {
                    lr: 0.02,
                    amsgrad: true,
                    ..Default::default()
                })
                .unwrap(),
            )
        }),
        Box::new(|| Box::new(AdamW::with_lr(0.02).unwrap())),
        Box::new(|| {
            Box::new(
                NAdamW::new(NAdamConfig {
                    lr: 0.02,
                    ..Default::default()
                })
                .unwrap(),
            )
        }),
        Box::new(|| {
            Box::new(
                RAdam::new(RAdamConfig {
                    lr: 0.02,
                    ..Default::default()
                })
                .unwrap(),
            )
        }),
        Box::new(|| {
            Box::new(
                Adafactor::new(AdafactorConfig {
                    lr: 0.02,
                    ..Default::default()
                })
                .unwrap(),
            )
        }),
    ];
    for m in &makers {
        roundtrip::<f32>(m.as_ref());
        roundtrip::<f64>(m.as_ref());
    }
}

#[test]
fn stiefel_save_load_and_shape_errors() {
    // A 4 x 3 matrix with orthonormal columns (first three columns of I).
    let w0: Vec<f64> = (0..12)
        .map(|k| if k / 3 == k % 3 { 1.0 } else { 0.0 })
        .collect();
    let grad = |w: &[f64]| {
        w.iter()
            .enumerate()
            .map(|(i, &x)| x - 0.1 * i as f64)
            .collect::<Vec<_>>()
    };
    let make = || {
        Stiefel::new(StiefelConfig {
            lr: 0.05,
            ..Default::default()
        })
        .unwrap()
    };
    let (mut a, mut wa) = (make(), w0.clone());
    for _ in 0..10 {
        let g = grad(&wa);
        a.step("s", &[4, 3], &mut wa, &g).unwrap();
    }
    let (mut b, mut wb) = (make(), w0.clone());
    for _ in 0..4 {
        let g = grad(&wb);
        b.step("s", &[4, 3], &mut wb, &g).unwrap();
    }
    let mut c = make();
    c.load_state(&OptimState::from_json(&b.save_state().to_json()).unwrap())
        .unwrap();
    for _ in 4..10 {
        let g = grad(&wb);
        c.step("s", &[4, 3], &mut wb, &g).unwrap();
    }
    assert_eq!(wa, wb);
    // Not a tall matrix: a typed error, nothing changed.
    let mut v = vec![1.0f64; 12];
    let e = c.step("wide", &[3, 4], &mut v, &[0.5; 12]).unwrap_err();
    assert!(
        matches!(
            e,
            OptimError::UnsupportedShape {
                optimizer: "Stiefel",
                ..
            }
        ),
        "{e}"
    );
    assert_eq!(v, vec![1.0; 12]);
    assert_eq!(c.save_state().params["wide"].step, 0);
}

#[test]
fn kron_with_a_singular_factor_is_an_error_that_changes_nothing() {
    let mk = || {
        KronPsgd::new(KronConfig {
            update: PrecondUpdate::Probability(1.0),
            ..Default::default()
        })
        .unwrap()
    };
    let mut opt = mk();
    let mut w = vec![0.5f64, -0.25, 1.0, 2.0, -1.5, 0.75];
    opt.step("w", &[2, 3], &mut w, &[0.1, 0.2, -0.3, 0.4, 0.5, -0.6])
        .unwrap();
    opt.end_iteration();
    let mut st = opt.save_state();
    st.params
        .get_mut("w")
        .unwrap()
        .buffers
        .get_mut("Q1")
        .unwrap()[4] = 0.0; // a diagonal entry
    let mut bad = mk();
    bad.load_state(&st).unwrap();
    let before = (w.clone(), bad.save_state());
    let e = bad.step("w", &[2, 3], &mut w, &[0.1; 6]).unwrap_err();
    assert!(e.to_string().contains("singular"), "{e}");
    assert_eq!((w, bad.save_state()), before);
}

#[test]
fn orthonormalize_puts_a_matrix_on_the_stiefel_manifold() {
    let mut w: Vec<f64> = (0..15).map(|i| ((i * 7 % 11) as f64 - 5.0) / 3.0).collect();
    Stiefel::orthonormalize(&[5, 3], &mut w).unwrap();
    for a in 0..3 {
        for b in 0..3 {
            let dot: f64 = (0..5).map(|r| w[r * 3 + a] * w[r * 3 + b]).sum();
            assert!(
                (dot - if a == b { 1.0 } else { 0.0 }).abs() < 1e-14,
                "{a} {b} {dot}"
            );
        }
    }
    assert!(Stiefel::orthonormalize(&[3, 5], &mut w).is_err());
    assert!(Stiefel::orthonormalize(&[5, 2], &mut w).is_err());
}

#[test]
fn step_all_steps_every_parameter() {
    let mut a = AdamW::with_lr(0.1).unwrap();
    let mut b = AdamW::with_lr(0.1).unwrap();
    let (mut w1, mut b1) = (vec![1.0f32; 6], vec![2.0f32; 3]);
    let (mut w2, mut b2) = (w1.clone(), b1.clone());
    let (gw, gb) = (vec![0.3f32; 6], vec![-0.2f32; 3]);
    a.step("w", &[2, 3], &mut w1, &gw).unwrap();
    a.step("b", &[3], &mut b1, &gb).unwrap();
    b.step_all([
        ("w", &[2usize, 3][..], &mut w2[..], &gw[..]),
        ("b", &[3][..], &mut b2[..], &gb[..]),
    ])
    .unwrap();
    assert_eq!((w1, b1), (w2, b2));
}

#[test]
fn sophia_hessian_state_checks_its_input() {
    let mut s = Sophia::new(SophiaConfig::default()).unwrap();
    let e = s.update_hessian("x", &[2, 2], &[1.0f64; 3]).unwrap_err();
    assert!(
        matches!(
            e,
            OptimError::LengthMismatch {
                expected: 4,
                given: 3,
                ..
            }
        ),
        "{e}"
    );
    s.update_hessian("x", &[4], &[1.0f64; 4]).unwrap();
    let h = &s.save_state().params["x"].buffers["hessian"];
    assert!(h.iter().all(|&v| (v - 0.01).abs() < 1e-15), "{h:?}");
}

#[test]
fn schedule_survives_save_load() {
    let mk = || {
        let mut o = AdamW::with_lr(0.1).unwrap();
        o.set_schedule(LrSchedule::Cosine {
            t_max: 10,
            eta_min: 0.0,
        });
        o
    };
    let mut a = mk();
    for _ in 0..4 {
        a.end_iteration();
    }
    let mut b = mk();
    b.load_state(&a.save_state()).unwrap();
    assert_eq!(b.iteration(), 4);
    assert_eq!(b.lr(), a.lr());
}

#[test]
fn bad_input_is_a_typed_error_and_changes_nothing() {
    let mut opt = Adam::with_lr(0.1).unwrap();
    let mut p = vec![1.0f32; 12];
    let g = vec![0.5f32; 12];
    opt.step("w", &[3, 4], &mut p, &g).unwrap();
    let before = (p.clone(), opt.save_state());

    let e = opt.step("w", &[3, 4], &mut p, &g[..11]).unwrap_err();
    assert!(
        matches!(
            e,
            OptimError::LengthMismatch {
                what: "grad",
                expected: 12,
                given: 11,
                ..
            }
        ),
        "{e}"
    );
    let e = opt.step("w", &[4, 3], &mut p, &g).unwrap_err();
    assert!(matches!(e, OptimError::StateMismatch { .. }), "{e}");
    let mut p64 = vec![1.0f64; 12];
    let e = opt.step("w", &[3, 4], &mut p64, &[0.5; 12]).unwrap_err();
    assert!(e.to_string().contains("f64"), "{e}");
    assert_eq!((p.clone(), opt.save_state()), before);

    // A saved state with a buffer of the wrong length: error at the step, nothing changed.
    let mut st = opt.save_state();
    st.params
        .get_mut("w")
        .unwrap()
        .buffers
        .get_mut("exp_avg")
        .unwrap()
        .pop();
    let mut fresh = Adam::with_lr(0.1).unwrap();
    fresh.load_state(&st).unwrap();
    let snap = fresh.save_state();
    let e = fresh.step("w", &[3, 4], &mut p, &g).unwrap_err();
    assert!(matches!(e, OptimError::BadState(_)), "{e}");
    assert_eq!(fresh.save_state(), snap);
    assert_eq!(p, before.0);

    // Malformed documents and mismatched optimizers.
    for bad in ["", "{}", "[1]", r#"{"format":"rlx-optim-state-v1"}"#] {
        assert!(
            matches!(OptimState::from_json(bad), Err(OptimError::BadState(_))),
            "{bad}"
        );
    }
    let json = opt.save_state().to_json();
    let mut other = Sgd::new(SgdConfig::default()).unwrap();
    assert!(other
        .load_state(&OptimState::from_json(&json).unwrap())
        .is_err());
    let e = OptimState::from_json(&json.replace("\"f32\"", "\"f16\"")).unwrap();
    assert!(Adam::with_lr(0.1).unwrap().load_state(&e).is_err());

    // Invalid hyperparameters.
    assert!(matches!(
        Adam::new(AdamConfig {
            betas: (1.0, 0.999),
            ..Default::default()
        }),
        Err(OptimError::InvalidHyperparameter {
            name: "betas[0]",
            ..
        })
    ));
    assert!(Sgd::new(SgdConfig {
        nesterov: true,
        ..Default::default()
    })
    .is_err());
    assert!(Adafactor::new(AdafactorConfig {
        d: 0.5,
        ..Default::default()
    })
    .is_err());
    assert!(AdamW::with_lr(-1.0).is_err());
}

#[test]
fn non_finite_state_round_trips() {
    let mut st = OptimState {
        optimizer: "Adam".into(),
        lr: 0.1,
        ..Default::default()
    };
    st.params.insert(
        "x".into(),
        SavedParam {
            step: 3,
            shape: vec![3],
            dtype: "f64".into(),
            buffers: [(
                "exp_avg".to_string(),
                vec![f64::INFINITY, -f64::INFINITY, 0.1 + 0.2],
            )]
            .into(),
            scalars: Default::default(),
        },
    );
    assert_eq!(OptimState::from_json(&st.to_json()).unwrap(), st);
}

/// The optimizers from Adagrad on (torch_optim_more.json), each with its
/// stateful variants on.
fn more_makers() -> Vec<Box<dyn Fn() -> Box<dyn Optimizer>>> {
    vec![
        Box::new(|| {
            Box::new(
                Adagrad::new(AdagradConfig {
                    lr: 0.1,
                    lr_decay: 0.01,
                    initial_accumulator_value: 0.1,
                    weight_decay: 0.05,
                    ..Default::default()
                })
                .unwrap(),
            )
        }),
        Box::new(|| {
            Box::new(
                RmsProp::new(RmsPropConfig {
                    lr: 0.003,
                    momentum: 0.5,
                    centered: true,
                    ..Default::default()
                })
                .unwrap(),
            )
        }),
        Box::new(|| Box::new(Adamax::new(AdamaxConfig::default()).unwrap())),
        Box::new(|| Box::new(Adadelta::new(AdadeltaConfig::default()).unwrap())),
        Box::new(|| {
            Box::new(
                Asgd::new(AsgdConfig {
                    lr: 0.03,
                    t0: 3.0,
                    ..Default::default()
                })
                .unwrap(),
            )
        }),
        Box::new(|| {
            Box::new(
                Rprop::new(RpropConfig {
                    lr: 0.05,
                    ..Default::default()
                })
                .unwrap(),
            )
        }),
        Box::new(|| Box::new(NAdamW::new(NAdamConfig::nadam()).unwrap())),
    ]
}

fn roundtrip_more<T: Float>(make: &dyn Fn() -> Box<dyn Optimizer>) {
    let mut prob = Problem::from(&load("torch_optim_more.json")["problem"]);
    prob.masked = true;
    let mut a = make();
    let mut pa = prob.params::<T>();
    prob.reset();
    for _ in 0..prob.steps {
        prob.iterate(a.as_mut(), &mut pa);
    }
    let mut b = make();
    let mut pb = prob.params::<T>();
    prob.reset();
    for _ in 0..11 {
        prob.iterate(b.as_mut(), &mut pb);
    }
    let json = b.save_state().to_json();
    let mut c = make();
    c.load_state(&OptimState::from_json(&json).unwrap())
        .unwrap();
    assert_eq!(c.save_state(), b.save_state());
    for _ in 11..prob.steps {
        prob.iterate(c.as_mut(), &mut pb);
    }
    assert_eq!(pa, pb, "resumed trajectory differs");
}

#[test]
fn more_optimizers_save_load_continue_the_trajectory() {
    for m in more_makers() {
        roundtrip_more::<f32>(m.as_ref());
        roundtrip_more::<f64>(m.as_ref());
    }
}

#[test]
fn more_optimizers_failed_step_changes_nothing() {
    for make in more_makers() {
        let mut opt = make();
        let (mut p, g) = (vec![0.3f64, -0.2, 0.7, 0.1], vec![0.5f64, 0.0, -0.25, 1.0]);
        for _ in 0..3 {
            opt.step_f64("w", &[2, 2], &mut p, &g).unwrap();
            opt.end_iteration();
        }
        let before = (p.clone(), opt.save_state());
        assert!(opt.step_f64("w", &[2, 2], &mut p, &g[..3]).is_err());
        assert!(opt.step_f64("w", &[4], &mut p, &g).is_err());
        assert_eq!((p.clone(), opt.save_state()), before);
        // Each buffer of the saved state cut short in turn: the step is an
        // error and changes neither the parameter nor the state.
        let keys: Vec<String> = before.1.params["w"].buffers.keys().cloned().collect();
        assert!(!keys.is_empty());
        for key in keys {
            let mut st = before.1.clone();
            st.params
                .get_mut("w")
                .unwrap()
                .buffers
                .get_mut(&key)
                .unwrap()
                .pop();
            let mut fresh = make();
            fresh.load_state(&st).unwrap();
            let snap = fresh.save_state();
            let e = fresh.step_f64("w", &[2, 2], &mut p, &g).unwrap_err();
            assert!(matches!(e, OptimError::BadState(_)), "{key}: {e}");
            assert_eq!(fresh.save_state(), snap, "{key}");
            assert_eq!(p, before.0, "{key}");
        }
    }
}

#[test]
fn more_optimizers_reject_bad_hyperparameters() {
    let bad = |r: Result<()>, name: &str| match r {
        Err(OptimError::InvalidHyperparameter { name: n, .. }) => assert_eq!(n, name),
        other => panic!("{name}: {other:?}"),
    };
    bad(
        Adagrad::new(AdagradConfig {
            lr_decay: -1.0,
            ..Default::default()
        })
        .map(drop),
        "lr_decay",
    );
    bad(
        Adagrad::new(AdagradConfig {
            initial_accumulator_value: -0.1,
            ..Default::default()
        })
        .map(drop),
        "initial_accumulator_value",
    );
    bad(
        RmsProp::new(RmsPropConfig {
            alpha: -0.5,
            ..Default::default()
        })
        .map(drop),
        "alpha",
    );
    bad(
        RmsProp::new(RmsPropConfig {
            momentum: -0.5,
            ..Default::default()
        })
        .map(drop),
        "momentum",
    );
    bad(
        Adamax::new(AdamaxConfig {
            betas: (0.9, 1.0),
            ..Default::default()
        })
        .map(drop),
        "betas[1]",
    );
    bad(
        Adadelta::new(AdadeltaConfig {
            rho: 1.5,
            ..Default::default()
        })
        .map(drop),
        "rho",
    );
    bad(
        Asgd::new(AsgdConfig {
            t0: f64::NAN,
            ..Default::default()
        })
        .map(drop),
        "t0",
    );
    bad(
        Rprop::new(RpropConfig {
            etas: (1.0, 1.2),
            ..Default::default()
        })
        .map(drop),
        "etas[0]",
    );
    bad(
        Rprop::new(RpropConfig {
            etas: (0.5, 1.0),
            ..Default::default()
        })
        .map(drop),
        "etas[1]",
    );
    bad(
        Rprop::new(RpropConfig {
            step_sizes: (1.0, 0.5),
            ..Default::default()
        })
        .map(drop),
        "step_sizes[1]",
    );
}
