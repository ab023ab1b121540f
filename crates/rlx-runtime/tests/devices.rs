//! Device selection with only a CPU present: honest answers, errors that say why.

use rlx_driver::Device;
use rlx_ir::{env, DType, Graph, GraphExt, Shape};
use rlx_runtime::*;

fn double() -> Graph {
    let mut g = Graph::new("double");
    let x = g.input("x", Shape::new(&[2], DType::F32));
    let w = g.param("w", Shape::new(&[2], DType::F32));
    let y = g.mul(x, w);
    g.set_outputs(vec![y]);
    g
}

#[test]
fn only_the_cpu_is_available_and_fastest() {
    assert_eq!(available_devices(), vec![Device::Cpu]);
    assert!(is_available(Device::Cpu));
    assert!(!is_available(Device::Metal));
    assert_eq!(fastest_device(), Device::Cpu);
    assert_eq!(fastest_device_for(&double()), Device::Cpu);
    assert_eq!(devices_for(&double()), vec![Device::Cpu]);
    let report = device_report();
    assert!(report.contains("cpu        available (CPU)"), "{report}");
    assert!(
        report.contains(&format!(
            "cuda:0     unavailable: {}",
            rlx_runtime::devices::unavailable_reason(Device::Cuda(0))
        )),
        "{report}"
    );
    assert_eq!(device_label(Device::Cuda(1)), "CUDA:1");
}

#[test]
fn fallback_chain_skips_absent_devices_and_reports_every_failure() {
    let g = double();
    let (d, out) = run_with_fallback(
        &g,
        &[Device::Cuda(0), Device::Cpu],
        &[("w", &[3.0, 4.0])],
        &[("x", &[1.0, 2.0])],
    )
    .unwrap();
    assert_eq!(d, Device::Cpu);
    assert_eq!(out, vec![vec![3.0, 8.0]]);
    let e = run_with_fallback(
        &g,
        &[Device::Cuda(0), Device::Metal],
        &[],
        &[("x", &[1.0, 2.0])],
    )
    .unwrap_err();
    assert_eq!(e.attempts.len(), 2);
    assert!(
        e.to_string()
            .starts_with("every device failed: cuda:0: device cuda:0 is not available"),
        "{e}"
    );
    // The CPU fails too when the param is missing, and says so.
    let e = run_with_fallback(&g, &[Device::Cpu], &[], &[("x", &[1.0, 2.0])]).unwrap_err();
    assert!(
        e.to_string()
            .contains("param \"w\" of shape f32[2] is not set"),
        "{e}"
    );
}

#[test]
fn graph_devices_compiles_lazily_and_replays_params() {
    let mut runner = GraphDevices::new(double());
    let d = runner.fastest();
    assert_eq!(d, Device::Cpu);
    runner.set_param("w", &[2.0, 2.0]).unwrap();
    assert_eq!(
        runner.run(d, &[("x", &[1.0, 5.0])]).unwrap(),
        vec![vec![2.0, 10.0]]
    );
    assert!(runner
        .set_param("w", &[1.0])
        .unwrap_err()
        .to_string()
        .contains("expected 2 values"));
    assert!(runner.run(Device::Mlx, &[("x", &[1.0, 5.0])]).is_err());
}

/// All environment cases in one test: the overrides are process-wide.
#[test]
fn environment_overrides_device_choice() {
    env::set("RLX_DEVICE", "cpu");
    assert_eq!(device_from_env().unwrap(), Some(Device::Cpu));
    assert_eq!(resolve_device().unwrap(), Device::Cpu);

    env::set("RLX_DEVICE", "cuda:1");
    let e = resolve_device().unwrap_err().to_string();
    assert!(
        e.starts_with("device cuda:1 is not available: requested by RLX_DEVICE"),
        "{e}"
    );

    env::set("RLX_DEVICE", "abacus");
    let e = resolve_device().unwrap_err().to_string();
    assert!(
        e.contains("cannot parse device \"abacus\": unknown device kind"),
        "{e}"
    );

    env::unset("RLX_DEVICE");
    assert_eq!(device_from_env().unwrap(), None);
    assert_eq!(resolve_device().unwrap(), Device::Cpu);

    env::set("RLX_DEVICE_CHAIN", "rocm:0, metal, cpu");
    assert_eq!(
        device_chain_from_env().unwrap(),
        vec![Device::Rocm(0), Device::Metal, Device::Cpu]
    );
    assert_eq!(resolve_device_chain().unwrap(), Device::Cpu);
    env::set("RLX_DEVICE_CHAIN", "rocm:0, metal");
    let e = resolve_device_chain().unwrap_err().to_string();
    assert!(
        e.contains(&format!(
            "no device of RLX_DEVICE_CHAIN is available: rocm:0: {}",
            rlx_runtime::devices::unavailable_reason(Device::Rocm(0))
        )),
        "{e}"
    );
    env::unset("RLX_DEVICE_CHAIN");
    assert_eq!(resolve_device_chain().unwrap(), Device::Cpu);
}
