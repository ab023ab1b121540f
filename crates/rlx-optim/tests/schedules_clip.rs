//! Learning-rate schedules equal torch.optim.lr_scheduler's, and global-norm
//! clipping equals torch.nn.utils.clip_grad_norm_ (fixtures from
//! tools/gen_optim_fixtures.py).

mod common;

use common::{f64s, load};
use rlx_optim::*;

fn schedule(v: &serde_json::Value) -> LrSchedule {
    let f = |k: &str| v[k].as_f64().unwrap();
    let u = |k: &str| v[k].as_u64().unwrap();
    match v["kind"].as_str().unwrap() {
        "constant" => LrSchedule::Constant,
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
        "warmup_cosine" => LrSchedule::WarmupCosine {
            warmup: u("warmup"),
            total: u("total"),
            min_factor: f("min_factor"),
        },
        k => panic!("schedule {k}"),
    }
}

#[test]
fn schedules_match_torch_lr_scheduler() {
    let fx = load("schedules.json");
    for case in fx["cases"].as_array().unwrap() {
        let s = schedule(&case["schedule"]);
        let base = case["base_lr"].as_f64().unwrap();
        let want = f64s(&case["lrs"]);
        // Through an optimizer: the rate in force before each end_iteration.
        let mut opt = Sgd::new(SgdConfig {
            lr: base,
            ..Default::default()
        })
        .unwrap();
        opt.set_schedule(s.clone());
        for (t, &w) in want.iter().enumerate() {
            let direct = s.lr_at(base, t as u64);
            let got = opt.lr();
            for x in [direct, got] {
                assert!(
                    (x - w).abs() <= 1e-12 * w.abs().max(1e-3),
                    "{} t={t}: {x} vs torch {w}",
                    case["name"]
                );
            }
            opt.end_iteration();
        }
    }
}

#[test]
fn clipping_matches_clip_grad_norm() {
    let fx = load("clip.json");
    for case in fx["cases"].as_array().unwrap() {
        let max_norm = case["max_norm"].as_f64().unwrap();
        let grads: Vec<Vec<f64>> = case["grads"].as_array().unwrap().iter().map(f64s).collect();
        // f64
        let want = &case["f64"];
        let views: Vec<&[f64]> = grads.iter().map(|g| g.as_slice()).collect();
        let total = l2_norm(&views);
        let w_total = want["total_norm"].as_f64().unwrap();
        assert!((total - w_total).abs() <= 1e-12 * w_total);
        let scale = global_grad_clip_scale(&views, max_norm);
        let mut g64 = grads.clone();
        let mut muts: Vec<&mut [f64]> = g64.iter_mut().map(|g| g.as_mut_slice()).collect();
        assert_eq!(clip_grad_norm(&mut muts, max_norm), total);
        for ((g, orig), w) in g64
            .iter()
            .zip(&grads)
            .zip(want["clipped"].as_array().unwrap())
        {
            for ((&a, &o), b) in g.iter().zip(orig).zip(f64s(w)) {
                assert!((a - b).abs() <= 1e-12 * b.abs().max(1e-6), "{a} vs {b}");
                assert!((o * scale - b).abs() <= 1e-12 * b.abs().max(1e-6));
            }
        }
        // f32
        let want = &case["f32"];
        let mut g32: Vec<Vec<f32>> = grads
            .iter()
            .map(|g| g.iter().map(|&x| x as f32).collect())
            .collect();
        let mut muts: Vec<&mut [f32]> = g32.iter_mut().map(|g| g.as_mut_slice()).collect();
        let total = clip_grad_norm(&mut muts, max_norm) as f64;
        let w_total = want["total_norm"].as_f64().unwrap();
        assert!(
            (total - w_total).abs() <= 1e-6 * w_total,
            "{total} vs {w_total}"
        );
        for (g, w) in g32.iter().zip(want["clipped"].as_array().unwrap()) {
            for (&a, b) in g.iter().zip(f64s(w)) {
                assert!(
                    (a as f64 - b).abs() <= 1e-6 * b.abs().max(1e-6),
                    "{a} vs {b}"
                );
            }
        }
        assert!(scale <= 1.0);
    }
}
