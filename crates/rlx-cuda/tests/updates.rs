//! Param updates after a run (`run_updating`, `run_training_step`) on the
//! host interpreter of launch plans, executing the same [`UpdatePlan`] the
//! device runs: a training graph with SGD in the graph against the CPU
//! backend's `run_updating`, optimizer steps from gradient outputs against
//! `rlx-optim`, updates that read other updated params (staged), and the
//! refusals of bad update lists. No GPU needed.

mod common;

use common::graphs::{
    digits_batch, digits_grads, digits_init, digits_step, swap_graph, DIGIT_PARAMS,
};
use common::interp_updates::interpret_updating;
use common::optim_mirror::Mirror;
use common::plan_check::lir_of;
use common::reference::{compile, ordered_inputs};
use common::training::{cpu_rlx_optim, digit_slots};
use rlx_cuda::optim::{AdamUpdate, OptimizerRule, SgdUpdate};
use rlx_cuda::plan::{plan, UpdatePlan, UpdateRule};
use rlx_ir::{DType, Graph, GraphExt, HostTensor, Shape};
use rlx_optim::{Adam, AdamConfig, AdamW, Optimizer, Sgd, SgdConfig};

fn f32s(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect()
}

fn bytes_of(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn close(a: &[f32], b: &[f32], rtol: f32, what: &str) {
    assert_eq!(a.len(), b.len(), "{what}: lengths");
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        assert!(
            (x - y).abs() <= 1e-6 + rtol * y.abs(),
            "{what}[{i}]: plan {x}, reference {y}"
        );
    }
}

/// The digits MLP's params in manifest order (bytes) for `lir`.
fn initial_params(lir: &rlx_compile::LirModule) -> Vec<Vec<u8>> {
    let slots = digit_slots(lir);
    let init = digits_init();
    (0..lir.io.params.len())
        .map(|m| {
            let k = slots.iter().position(|&s| s == m).unwrap();
            init[k].bytes().to_vec()
        })
        .collect()
}

#[test]
fn sgd_in_the_graph_updates_params_like_the_cpu_run_updating() {
    let g = digits_step();
    let lir = lir_of(&g);
    let p = plan(&lir, 0).unwrap();
    let slots = digit_slots(&lir);
    let updates: Vec<(usize, usize)> = slots.iter().enumerate().map(|(k, &s)| (k + 1, s)).collect();
    let up = UpdatePlan::new(&p, &updates, UpdateRule::Assign).unwrap();
    assert_eq!(up.returned, vec![0], "only the loss comes back");
    let mut params = initial_params(&lir);
    let mut cpu = compile(&rlx_cpu::CpuBackend, &g);
    let cpu_slots = digit_slots(cpu.lir());
    for (&s, v) in cpu_slots.iter().zip(&digits_init()) {
        cpu.set_param(s, v).unwrap();
    }
    let cpu_updates: Vec<(usize, usize)> = cpu_slots
        .iter()
        .enumerate()
        .map(|(k, &s)| (k + 1, s))
        .collect();
    for step in 0..8 {
        let (x, y) = digits_batch(step);
        let ins = ordered_inputs(&lir, &[("x", &x), ("y", &y)]);
        let got = interpret_updating(&p, &up, &ins, &mut params, None);
        let cpu_ins = ordered_inputs(cpu.lir(), &[("x", &x), ("y", &y)]);
        let want = cpu.run_updating(&cpu_ins, &cpu_updates).unwrap();
        close(
            &f32s(&got[0]),
            &want[0].to_vec::<f32>().unwrap(),
            1e-5,
            &format!("loss at step {step}"),
        );
    }
    for (k, name) in DIGIT_PARAMS.iter().enumerate() {
        let want = cpu
            .param_value(cpu_slots[k])
            .unwrap()
            .to_vec::<f32>()
            .unwrap();
        close(&f32s(&params[slots[k]]), &want, 1e-4, name);
    }
}

/// Trains the digits MLP `steps` steps through the plan interpreter with
/// `rule` applied to gradient outputs; returns the losses and params.
fn interpreted_training(rule: OptimizerRule, steps: usize) -> (Vec<f32>, Vec<Vec<f32>>) {
    let lir = lir_of(&digits_grads());
    let p = plan(&lir, 0).unwrap();
    let slots = digit_slots(&lir);
    let grads: Vec<(usize, usize)> = slots.iter().enumerate().map(|(k, &s)| (k + 1, s)).collect();
    let up = UpdatePlan::new(&p, &grads, UpdateRule::Gradient).unwrap();
    let mut params = initial_params(&lir);
    let mut opt = Mirror::new(rule);
    let mut losses = Vec::new();
    for step in 0..steps {
        let (x, y) = digits_batch(step);
        let ins = ordered_inputs(&lir, &[("x", &x), ("y", &y)]);
        let outs = interpret_updating(&p, &up, &ins, &mut params, Some(&mut opt));
        losses.push(f32s(&outs[0])[0]);
    }
    (losses, slots.iter().map(|&s| f32s(&params[s])).collect())
}

fn assert_training_matches(rule: OptimizerRule, reference: &mut dyn Optimizer, what: &str) {
    let steps = 10;
    let (got_loss, got) = interpreted_training(rule, steps);
    let (want_loss, want) = cpu_rlx_optim(reference, steps);
    close(&got_loss, &want_loss, 1e-4, &format!("{what} losses"));
    // The steps moved the weights (both sides standing still would agree too).
    let w1 = digits_init()[0].to_vec::<f32>().unwrap();
    let moved = w1
        .iter()
        .zip(&want[0])
        .map(|(a, b)| (a - b).abs())
        .fold(0.0, f32::max);
    assert!(moved > 1e-3, "{what}: w1 moved by at most {moved}");
    for (k, name) in DIGIT_PARAMS.iter().enumerate() {
        close(&got[k], &want[k], 1e-4, &format!("{what} {name}"));
    }
}

#[test]
fn optimizer_steps_from_gradient_outputs_match_rlx_optim() {
    let sgd = SgdUpdate {
        lr: 0.2,
        momentum: 0.9,
        dampening: 0.0,
        weight_decay: 1e-3,
        nesterov: true,
        maximize: false,
    };
    let mut torch_sgd = Sgd::new(SgdConfig {
        lr: 0.2,
        momentum: 0.9,
        dampening: 0.0,
        weight_decay: f64::from(1e-3f32),
        nesterov: true,
        maximize: false,
    })
    .unwrap();
    assert_training_matches(OptimizerRule::Sgd(sgd), &mut torch_sgd, "sgd");
    let adam = AdamUpdate {
        lr: 1e-2,
        betas: (0.9, 0.999),
        eps: 1e-8,
        weight_decay: 0.0,
        decoupled: false,
        amsgrad: true,
        maximize: false,
    };
    let cfg = AdamConfig {
        lr: 1e-2,
        betas: (0.9, 0.999),
        eps: f64::from(1e-8f32),
        weight_decay: 0.0,
        amsgrad: true,
        maximize: false,
    };
    assert_training_matches(
        OptimizerRule::Adam(adam),
        &mut Adam::new(cfg.clone()).unwrap(),
        "adam",
    );
    let adamw = AdamUpdate {
        weight_decay: 0.05,
        decoupled: true,
        amsgrad: false,
        ..adam
    };
    let cfg_w = AdamConfig {
        weight_decay: 0.05,
        amsgrad: false,
        ..cfg
    };
    assert_training_matches(
        OptimizerRule::Adam(adamw),
        &mut AdamW::new(cfg_w).unwrap(),
        "adamw",
    );
}

#[test]
fn updates_read_params_before_any_changes_like_the_cpu() {
    let g = swap_graph();
    let lir = lir_of(&g);
    let p = plan(&lir, 0).unwrap();
    let idx = |n: &str| lir.io.params.iter().position(|q| q.1 == n).unwrap();
    let (a, b) = (idx("a"), idx("b"));
    let updates = [(0, a), (1, b)];
    let up = UpdatePlan::new(&p, &updates, UpdateRule::Assign).unwrap();
    assert!(
        up.writes.iter().all(|w| w.staged),
        "both sources are params a write changes: {up:?}"
    );
    let va = [1.0f32, 2.0, 3.0, 4.0, 5.0];
    let vb = [-1.0f32, -2.0, -3.0, -4.0, -5.0];
    let mut params = vec![Vec::new(); 2];
    params[a] = bytes_of(&va);
    params[b] = bytes_of(&vb);
    let got = interpret_updating(&p, &up, &[], &mut params, None);
    let mut cpu = compile(&rlx_cpu::CpuBackend, &g);
    let ci = |n: &str| cpu.lir().io.params.iter().position(|q| q.1 == n).unwrap();
    let (ca, cb) = (ci("a"), ci("b"));
    cpu.set_param(ca, &HostTensor::from_vec(va.to_vec(), &[5]).unwrap())
        .unwrap();
    cpu.set_param(cb, &HostTensor::from_vec(vb.to_vec(), &[5]).unwrap())
        .unwrap();
    let want = cpu.run_updating(&[], &[(0, ca), (1, cb)]).unwrap();
    assert_eq!(got.len(), 1);
    close(&f32s(&got[0]), &want[0].to_vec::<f32>().unwrap(), 0.0, "2a");
    for (mine, theirs, name) in [(a, ca, "a"), (b, cb, "b")] {
        let want = cpu.param_value(theirs).unwrap().to_vec::<f32>().unwrap();
        close(&f32s(&params[mine]), &want, 0.0, name);
    }
    // An update of a param by itself changes nothing and is dropped.
    let same = UpdatePlan::new(&p, &[(1, a)], UpdateRule::Assign).unwrap();
    assert!(same.writes.is_empty(), "{same:?}");
    assert_eq!(same.returned, vec![0, 2]);
}

#[test]
fn bad_update_lists_are_named_errors() {
    let lir = lir_of(&swap_graph());
    let p = plan(&lir, 0).unwrap();
    let err = |u: &[(usize, usize)], rule| UpdatePlan::new(&p, u, rule).unwrap_err().to_string();
    let e = err(&[(3, 0)], UpdateRule::Assign);
    assert!(e.contains("output 3 out of range (3 outputs)"), "{e}");
    let e = err(&[(0, 2)], UpdateRule::Assign);
    assert!(e.contains("param index 2 out of range (2 params)"), "{e}");
    let e = err(&[(0, 0), (1, 0)], UpdateRule::Assign);
    assert!(e.contains("repeats the output or param"), "{e}");
    let e = err(&[(0, 0), (0, 1)], UpdateRule::Assign);
    assert!(e.contains("repeats the output or param"), "{e}");

    // A gradient must be f32 of the param's size.
    let mut g = Graph::new("bad_grad");
    let w = g.param("w", Shape::new(&[4], DType::F32));
    let h = g.param("h", Shape::new(&[4], DType::F16));
    let s = g.sum(w, &[0], false);
    g.set_outputs(vec![s, h]);
    let lir = lir_of(&g);
    let p = plan(&lir, 0).unwrap();
    let wi = lir.io.params.iter().position(|q| q.1 == "w").unwrap();
    let hi = lir.io.params.iter().position(|q| q.1 == "h").unwrap();
    let e = UpdatePlan::new(&p, &[(0, wi)], UpdateRule::Gradient)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("cannot be the f32 gradient of param \"w\""),
        "{e}"
    );
    let e = UpdatePlan::new(&p, &[(1, hi)], UpdateRule::Gradient)
        .unwrap_err()
        .to_string();
    assert!(e.contains("f32 gradient of param \"h\""), "{e}");
}
