//! The device optimizer updates' arithmetic (`optim.cu`, mirrored on the
//! host in `common::optim_mirror`) against `rlx-optim`'s CPU optimizers
//! over several steps, for SGD (plain, momentum with dampening, Nesterov,
//! weight decay, maximize) and Adam / AdamW (amsgrad); the kernels' real
//! source run on the host (`common::host_kernels`, the launches
//! `sgd_launch` / `adam_launch` describe for the device); then, on a CUDA
//! GPU, the kernels themselves (skipped without one unless
//! `RLX_REQUIRE_CUDA=1`, as `tools/gpu_check.sh` sets).

mod common;

use common::graphs::rand;
use common::host_kernels::host_kernels;
use common::optim_mirror;
use rlx_cuda::gpu::CudaGpu;
use rlx_cuda::optim::{adam_launch, sgd_launch, AdamState, AdamUpdate, SgdState, SgdUpdate};
use rlx_optim::{Adam, AdamConfig, AdamW, Optimizer, Sgd, SgdConfig};

const STEPS: usize = 6;

fn data(n: usize, step: usize) -> Vec<f32> {
    rand(&[n], -1.5, 1.5, 100 + step as u64)
        .to_vec::<f32>()
        .unwrap()
}

fn close(a: &[f32], b: &[f32], what: &str) {
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        assert!(
            (x - y).abs() <= 1e-6 + 1e-5 * y.abs(),
            "{what}[{i}]: mirror {x}, rlx-optim {y}"
        );
    }
}

fn sgd_cases() -> Vec<(SgdUpdate, SgdConfig)> {
    let one = |lr: f32, momentum: f32, dampening: f32, wd: f32, nesterov, maximize| {
        (
            SgdUpdate {
                lr,
                momentum,
                dampening,
                weight_decay: wd,
                nesterov,
                maximize,
            },
            SgdConfig {
                lr: lr as f64,
                momentum: momentum as f64,
                dampening: dampening as f64,
                weight_decay: wd as f64,
                nesterov,
                maximize,
            },
        )
    };
    vec![
        one(0.1, 0.0, 0.0, 0.0, false, false),
        one(0.05, 0.9, 0.1, 0.0, false, false),
        one(0.05, 0.9, 0.0, 0.01, true, false),
        one(0.02, 0.5, 0.0, 0.1, false, true),
    ]
}

#[test]
fn sgd_updates_match_rlx_optim() {
    let n = 37;
    for (k, (cfg, torch)) in sgd_cases().into_iter().enumerate() {
        let mut opt = Sgd::new(torch).unwrap();
        let mut mirror = optim_mirror::Sgd::default();
        let (mut p, mut q) = (data(n, 99), data(n, 99));
        for s in 0..STEPS {
            let g = data(n, s);
            opt.step_f32("p", &[n], &mut q, &g).unwrap();
            opt.end_iteration();
            mirror.step(&cfg, &mut p, &g);
            close(&p, &q, &format!("sgd case {k} step {s}"));
        }
    }
}

fn adam_cases() -> Vec<AdamUpdate> {
    let base = AdamUpdate {
        lr: 1e-2,
        betas: (0.9, 0.999),
        eps: 1e-8,
        weight_decay: 0.0,
        decoupled: false,
        amsgrad: false,
        maximize: false,
    };
    vec![
        base,
        AdamUpdate {
            weight_decay: 0.05,
            amsgrad: true,
            ..base
        },
        AdamUpdate {
            weight_decay: 0.01,
            decoupled: true,
            betas: (0.8, 0.99),
            ..base
        },
        AdamUpdate {
            maximize: true,
            betas: (0.3, 0.9),
            ..base
        },
    ]
}

/// The rlx-optim optimizer of `c` (AdamW for decoupled decay).
fn rlx_adam(c: &AdamUpdate) -> Box<dyn Optimizer> {
    let cfg = AdamConfig {
        lr: c.lr,
        betas: c.betas,
        eps: c.eps as f64,
        weight_decay: c.weight_decay,
        amsgrad: c.amsgrad,
        maximize: c.maximize,
    };
    if c.decoupled {
        Box::new(AdamW::new(cfg).unwrap())
    } else {
        Box::new(Adam::new(cfg).unwrap())
    }
}

#[test]
fn adam_and_adamw_updates_match_rlx_optim() {
    let n = 41;
    for (k, cfg) in adam_cases().into_iter().enumerate() {
        let mut opt = rlx_adam(&cfg);
        let mut mirror = optim_mirror::Adam::default();
        let (mut p, mut q) = (data(n, 98), data(n, 98));
        for s in 0..STEPS {
            let g = data(n, s);
            opt.step_f32("p", &[n], &mut q, &g).unwrap();
            opt.end_iteration();
            mirror.step(&cfg, &mut p, &g);
            close(&p, &q, &format!("adam case {k} step {s}"));
        }
    }
}

/// Host addresses of slices, as the kernels' pointer arguments.
fn at(v: &mut [f32]) -> u64 {
    v.as_mut_ptr() as u64
}

#[test]
fn the_optim_kernels_run_on_the_host_match_rlx_optim() {
    let Some(hk) = host_kernels() else { return };
    let n = 1000;
    for (k, (cfg, torch)) in sgd_cases().into_iter().enumerate() {
        let mut opt = Sgd::new(torch).unwrap();
        let (mut p, mut q, mut buf) = (data(n, 95), data(n, 95), vec![0f32; n]);
        for s in 0..STEPS {
            let mut g = data(n, s);
            opt.step_f32("p", &[n], &mut q, &g).unwrap();
            opt.end_iteration();
            let b = if cfg.momentum != 0.0 { at(&mut buf) } else { 0 };
            hk.launch(&sgd_launch(&cfg, s == 0, [at(&mut p), at(&mut g), b], n))
                .unwrap();
            close(&p, &q, &format!("host sgd case {k} step {s}"));
        }
    }
    for (k, cfg) in adam_cases().into_iter().enumerate() {
        let mut opt = rlx_adam(&cfg);
        let (mut p, mut q) = (data(n, 94), data(n, 94));
        let (mut m, mut v, mut vmax) = (vec![0f32; n], vec![0f32; n], vec![0f32; n]);
        for s in 0..STEPS {
            let mut g = data(n, s);
            opt.step_f32("p", &[n], &mut q, &g).unwrap();
            opt.end_iteration();
            let vm = if cfg.amsgrad { at(&mut vmax) } else { 0 };
            let places = [at(&mut p), at(&mut g), at(&mut m), at(&mut v), vm];
            hk.launch(&adam_launch(&cfg, s as u64 + 1, places, n))
                .unwrap();
            close(&p, &q, &format!("host adam case {k} step {s}"));
        }
    }
}

/// The device, or None (with the reason printed) where CUDA is unusable.
fn gpu() -> Option<CudaGpu> {
    let required = rlx_ir::env::vars::REQUIRE_CUDA
        .get()
        .ok()
        .flatten()
        .unwrap_or(false);
    match CudaGpu::new(0) {
        Ok(g) => Some(g),
        Err(e) if required => panic!("RLX_REQUIRE_CUDA=1 but CUDA is unusable: {e}"),
        Err(e) => {
            println!("skipped: {e}");
            None
        }
    }
}

#[test]
fn device_sgd_and_adam_steps_keep_their_state_on_the_gpu_and_match_rlx_optim() {
    let Some(gpu) = gpu() else { return };
    let n = 1000;
    for (k, (cfg, torch)) in sgd_cases().into_iter().enumerate() {
        let mut opt = Sgd::new(torch).unwrap();
        let mut state = SgdState::default();
        let mut q = data(n, 97);
        let mut p = gpu.upload(&q).unwrap();
        for s in 0..STEPS {
            let g = data(n, s);
            opt.step_f32("p", &[n], &mut q, &g).unwrap();
            opt.end_iteration();
            let dg = gpu.upload(&g).unwrap();
            gpu.sgd_step(&cfg, &mut state, &mut p, &dg).unwrap();
            close(
                &gpu.download(&p).unwrap(),
                &q,
                &format!("device sgd case {k} step {s}"),
            );
        }
    }
    for (k, cfg) in adam_cases().into_iter().enumerate() {
        let mut opt = rlx_adam(&cfg);
        let mut state = AdamState::default();
        let mut q = data(n, 96);
        let mut p = gpu.upload(&q).unwrap();
        for s in 0..STEPS {
            let g = data(n, s);
            opt.step_f32("p", &[n], &mut q, &g).unwrap();
            opt.end_iteration();
            let dg = gpu.upload(&g).unwrap();
            gpu.adam_step(&cfg, &mut state, &mut p, &dg).unwrap();
            close(
                &gpu.download(&p).unwrap(),
                &q,
                &format!("device adam case {k} step {s}"),
            );
        }
        assert_eq!(state.step, STEPS as u64);
    }
    // A gradient of the wrong length is a named error, not a launch.
    let mut p = gpu.upload(&[0.0f32; 4]).unwrap();
    let g = gpu.upload(&[0.0f32; 3]).unwrap();
    let err = gpu
        .sgd_step(&sgd_cases()[0].0, &mut SgdState::default(), &mut p, &g)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("4 elements") && err.contains("gradient of 3"),
        "{err}"
    );
}
