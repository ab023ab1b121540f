//! Loading and stepping an arbitrary saved state in every optimizer: shared
//! by tests/mutation.rs and the cargo-fuzz target (fuzz/).

use rlx_optim::*;

pub fn optimizers() -> Vec<Box<dyn Optimizer>> {
    vec![
        Box::new(
            Sgd::new(SgdConfig {
                lr: 0.1,
                momentum: 0.9,
                ..Default::default()
            })
            .unwrap(),
        ),
        Box::new(
            Adam::new(AdamConfig {
                amsgrad: true,
                ..Default::default()
            })
            .unwrap(),
        ),
        Box::new(AdamW::with_lr(0.1).unwrap()),
        Box::new(NAdamW::new(NAdamConfig::default()).unwrap()),
        Box::new(RAdam::new(RAdamConfig::default()).unwrap()),
        Box::new(Adafactor::new(AdafactorConfig::default()).unwrap()),
        Box::new(Lion::new(LionConfig::default()).unwrap()),
        Box::new(QHAdamW::new(QHAdamConfig::default()).unwrap()),
        Box::new(Lamb::new(LambConfig::default()).unwrap()),
        Box::new(Sophia::new(SophiaConfig::default()).unwrap()),
        Box::new(Mars::new(MarsConfig::default()).unwrap()),
        Box::new(Muon::new(MuonConfig::default()).unwrap()),
        Box::new(
            Soap::new(SoapConfig {
                precondition_frequency: 1,
                ..Default::default()
            })
            .unwrap(),
        ),
        Box::new(
            KronPsgd::new(KronConfig {
                balance_probability: 1.0,
                ..Default::default()
            })
            .unwrap(),
        ),
        Box::new(Stiefel::new(StiefelConfig::default()).unwrap()),
        Box::new(Adagrad::new(AdagradConfig::default()).unwrap()),
        Box::new(
            RmsProp::new(RmsPropConfig {
                momentum: 0.9,
                centered: true,
                ..Default::default()
            })
            .unwrap(),
        ),
        Box::new(Adamax::new(AdamaxConfig::default()).unwrap()),
        Box::new(Adadelta::new(AdadeltaConfig::default()).unwrap()),
        Box::new(
            Asgd::new(AsgdConfig {
                t0: 1.0,
                ..Default::default()
            })
            .unwrap(),
        ),
        Box::new(Rprop::new(RpropConfig::default()).unwrap()),
    ]
}

/// What the mutants reached.
#[derive(Default, Debug)]
pub struct Reached {
    pub parsed: usize,
    pub loaded: usize,
    pub steps_ok: usize,
    pub steps_err: usize,
}

/// Loads `text` into each optimizer (where it parses) and steps every
/// parameter it names whose shape is small.
pub fn exercise(text: &str, r: &mut Reached) {
    let Ok(state) = OptimState::from_json(text) else {
        return;
    };
    r.parsed += 1;
    let _ = state.to_json();
    for mut opt in optimizers() {
        let mut st = state.clone();
        st.optimizer = opt.save_state().optimizer;
        if opt.load_state(&st).is_err() {
            continue;
        }
        r.loaded += 1;
        for (name, p) in &st.params {
            let n = p.shape.iter().try_fold(1usize, |a, &d| a.checked_mul(d));
            if !matches!(n, Some(n) if n <= 4096) {
                continue;
            }
            let n = n.unwrap_or(0);
            let mut w: Vec<f64> = (0..n).map(|i| (i as f64 * 0.37).sin()).collect();
            let g: Vec<f64> = (0..n).map(|i| (i as f64 * 0.11).cos()).collect();
            let mut w32: Vec<f32> = w.iter().map(|&x| x as f32).collect();
            let g32: Vec<f32> = g.iter().map(|&x| x as f32).collect();
            for res in [
                opt.step_f64(name, &p.shape, &mut w, &g),
                opt.step_f32(name, &p.shape, &mut w32, &g32),
            ] {
                match res {
                    Ok(()) => r.steps_ok += 1,
                    Err(_) => r.steps_err += 1,
                }
            }
        }
        opt.end_iteration();
        let _ = opt.save_state().to_json();
    }
}
