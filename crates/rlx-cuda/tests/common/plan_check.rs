//! A plan checked against the CPU backend: the byte-tag simulation, then
//! the host interpreter's outputs and the real kernels' run on the host
//! (`host_kernels`) against the CPU backend's.

use super::host_kernels::{host_kernels, run_plan};
use super::interp::interpret;
use super::reference::{compile, f64s, ordered_inputs, ordered_params, run, worst};
use rlx_compile::{lower, LirModule, LowerOptions};
use rlx_cuda::cuda_claims;
use rlx_cuda::plan::{plan, LaunchPlan};
use rlx_ir::{Graph, HostTensor};

/// `g` lowered with the CUDA backend's claims.
pub fn lir_of(g: &Graph) -> LirModule {
    lower(g, &cuda_claims, &LowerOptions::default()).unwrap()
}

/// `g` lowered with the CUDA backend's claims and no fusion: one launch
/// per primitive node.
pub fn lir_unfused(g: &Graph) -> LirModule {
    let opts = LowerOptions {
        fusion: rlx_compile::FusionOptions::disabled(),
        ..LowerOptions::default()
    };
    lower(g, &cuda_claims, &opts).unwrap()
}

/// Runs `g` through the plan interpreter and the CPU backend; every
/// output must agree to `rtol` (plus a 1e-6 floor).
pub fn assert_plan_matches_cpu(
    g: &Graph,
    params: &[(&str, &HostTensor)],
    inputs: &[(&str, &HostTensor)],
    rtol: f64,
) -> LaunchPlan {
    assert_plan_matches_cpu_of(g, g, params, inputs, rtol)
}

/// [`assert_plan_matches_cpu`] with the CPU running `reference`, a graph
/// of the same inputs and outputs (e.g. `g` with a composite the CPU
/// computes its own way written out as its primitives).
pub fn assert_plan_matches_cpu_of(
    g: &Graph,
    reference: &Graph,
    params: &[(&str, &HostTensor)],
    inputs: &[(&str, &HostTensor)],
    rtol: f64,
) -> LaunchPlan {
    let lir = lir_of(g);
    let p = plan(&lir, 0).unwrap();
    p.check().unwrap();
    let (ins, ps) = (ordered_inputs(&lir, inputs), ordered_params(&lir, params));
    let got = interpret(&p, &ins, &ps);
    let mut cpu = compile(&rlx_cpu::CpuBackend, reference);
    let want = run(cpu.as_mut(), params, inputs);
    assert_outputs_match(g.name(), "interpreter", &got, &want, rtol);
    if let Some(hk) = host_kernels() {
        let got = run_plan(hk, &p, &ins, &ps).unwrap_or_else(|e| panic!("{}: {e}", g.name()));
        assert_outputs_match(g.name(), "kernels on the host", &got, &want, rtol);
    }
    p
}

/// Every output of `got` within `rtol` (plus a 1e-6 floor) of the CPU's.
pub fn assert_outputs_match(
    name: &str,
    what: &str,
    got: &[Vec<f64>],
    want: &[HostTensor],
    rtol: f64,
) {
    assert_eq!(got.len(), want.len());
    for (k, (a, b)) in got.iter().zip(want).enumerate() {
        let w = worst(a, &f64s(b), rtol, 1e-6);
        assert!(
            w <= 1.0,
            "{name} ({what}): output {k} off by {w} of the tolerance"
        );
    }
}
