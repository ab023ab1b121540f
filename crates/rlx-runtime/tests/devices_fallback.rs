//! Fallback chains and device policies: order honoured, denials honoured,
//! compiled-out devices recorded with their reason, env errors named.

mod device_fixture;

use device_fixture::{assert_close, mlp};
use rlx_driver::Device;
use rlx_ir::env;
use rlx_runtime::*;

/// All environment cases in one test: the variables are process-wide.
#[test]
fn env_chain_of_compiled_out_devices_ends_on_the_cpu_with_reasons() {
    let m = mlp();
    env::set("RLX_DEVICE_CHAIN", "cuda,gpu,cpu");
    let chain = device_chain_from_env().unwrap();
    assert_eq!(chain, vec![Device::Cuda(0), Device::Gpu, Device::Cpu]);
    let err = run_with_fallback(&m.graph, &chain[..2], &m.params(), &m.inputs()).unwrap_err();
    // Both compiled-out devices were tried, in order, each with its reason.
    assert_eq!(
        err.attempts.iter().map(|a| a.0).collect::<Vec<_>>(),
        vec![Device::Cuda(0), Device::Gpu]
    );
    assert!(
        err.attempts[0]
            .1
            .contains(&rlx_runtime::devices::unavailable_reason(Device::Cuda(0))),
        "{err}"
    );
    assert!(
        err.attempts[1]
            .1
            .contains(&rlx_runtime::devices::unavailable_reason(Device::Gpu)),
        "{err}"
    );
    let (d, out) = run_with_fallback(&m.graph, &chain, &m.params(), &m.inputs()).unwrap();
    assert_eq!(d, Device::Cpu);
    assert_close(&out[0], &m.want, 1e-5);

    env::set("RLX_DEVICE", "garbage");
    let e = device_from_env().unwrap_err();
    assert_eq!(e.input, "garbage");
    assert!(e.reason.contains("unknown device kind"), "{e}");
    let e = resolve_device().unwrap_err().to_string();
    assert!(e.contains("cannot parse device \"garbage\""), "{e}");
    env::unset("RLX_DEVICE");

    env::set("RLX_DEVICE_CHAIN", "cuda:0,cpu:2");
    let e = device_chain_from_env().unwrap_err();
    assert_eq!(e.input, "cpu:2");
    assert!(e.reason.contains("takes no ordinal"), "{e}");
    env::set("RLX_DEVICE_CHAIN", "cuda:x");
    let e = resolve_device_chain().unwrap_err().to_string();
    assert!(e.contains("\"cuda:x\": the ordinal is not a number"), "{e}");
    env::unset("RLX_DEVICE_CHAIN");
}

#[test]
fn policy_denials_and_allow_lists_are_honoured_in_chain_order() {
    let m = mlp();
    let chain = [Device::Metal, Device::Cpu];
    let deny_cpu = DevicePolicy::default().deny(Device::Cpu);
    let e = run_with_policy(&m.graph, &chain, &deny_cpu, &m.params(), &m.inputs()).unwrap_err();
    assert_eq!(e.attempts.len(), 2);
    assert_eq!(e.attempts[0].0, Device::Metal);
    assert!(
        e.attempts[0]
            .1
            .contains(&rlx_runtime::devices::unavailable_reason(Device::Metal)),
        "{e}"
    );
    assert_eq!(
        e.attempts[1],
        (Device::Cpu, "denied by the device policy".to_string())
    );

    let only_metal = DevicePolicy::default().allow(&[Device::Metal]);
    let e = run_with_policy(&m.graph, &chain, &only_metal, &m.params(), &m.inputs()).unwrap_err();
    assert_eq!(
        e.attempts[1].1,
        "not in the device policy's allowed list (metal)"
    );

    // Fallback off: the first permitted device's failure is final.
    let no_fallback = DevicePolicy::default().fallback(false);
    let e = run_with_policy(&m.graph, &chain, &no_fallback, &m.params(), &m.inputs()).unwrap_err();
    assert_eq!(e.attempts.len(), 1);
    assert_eq!(e.attempts[0].0, Device::Metal);
    // ... but a denied device is passed over without ending the chain.
    let skip_metal = no_fallback.deny(Device::Metal);
    let (d, out) =
        run_with_policy(&m.graph, &chain, &skip_metal, &m.params(), &m.inputs()).unwrap();
    assert_eq!(d, Device::Cpu);
    assert_close(&out[0], &m.want, 1e-5);

    assert_eq!(
        devices_for_with_policy(&m.graph, &DevicePolicy::default()),
        vec![Device::Cpu]
    );
    assert!(
        devices_for_with_policy(&m.graph, &DevicePolicy::default().deny(Device::Cpu)).is_empty()
    );
    assert!(devices_for_with_policy(&m.graph, &only_metal).is_empty());
}

#[test]
fn a_required_precision_is_what_the_device_computes_at() {
    let m = mlp();
    let chain = [Device::Cpu];
    let (_, full) = run_with_policy(
        &m.graph,
        &chain,
        &DevicePolicy::default(),
        &m.params(),
        &m.inputs(),
    )
    .unwrap();
    let half = DevicePolicy::default().require_precision(Precision::F16);
    let (_, reduced) = run_with_policy(&m.graph, &chain, &half, &m.params(), &m.inputs()).unwrap();
    // F16 values (F32 accumulation): near numpy, but not the F32 result.
    assert_close(&reduced[0], &m.want, 1e-2);
    assert_ne!(full, reduced, "the F16 policy changed nothing");
    assert_eq!(devices_for_with_policy(&m.graph, &half), vec![Device::Cpu]);
}

#[test]
fn pick_strategies_pass_over_unusable_candidates_with_reasons() {
    let m = mlp();
    let owned = m.host_tensors();
    let feeds = device_fixture::feeds(&owned);
    let cands = [
        DeviceCandidate::new(Device::Cuda(0)),
        DeviceCandidate::cpu_threads(1),
        DeviceCandidate::new(Device::Cpu),
    ];
    let first = DevicePickStrategy::FirstAvailable
        .pick(&m.graph, &feeds, &cands, &DevicePolicy::default())
        .unwrap();
    assert_eq!(first, DeviceCandidate::cpu_threads(1));
    let cost = DevicePickStrategy::CostModel
        .pick(&m.graph, &feeds, &cands, &DevicePolicy::default())
        .unwrap();
    assert_eq!(cost, DeviceCandidate::new(fastest_device_for(&m.graph)));
    let measured = DevicePickStrategy::FastestMeasured(BenchOptions { warmup: 1, runs: 3 })
        .pick(&m.graph, &feeds, &cands, &DevicePolicy::default())
        .unwrap();
    assert!(cands[1..].contains(&measured), "{measured}");
    let e = DevicePickStrategy::FirstAvailable
        .pick(
            &m.graph,
            &feeds,
            &cands,
            &DevicePolicy::default().deny(Device::Cpu),
        )
        .unwrap_err();
    let whys: Vec<&str> = e.attempts.iter().map(|a| a.1.as_str()).collect();
    assert_eq!(whys[0], "cpu(threads=1): denied by the device policy");
    assert_eq!(whys[1], "denied by the device policy");
    assert!(
        whys[2].contains(&rlx_runtime::devices::unavailable_reason(Device::Cuda(0))),
        "{e}"
    );
}
