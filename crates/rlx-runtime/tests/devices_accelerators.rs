//! The spec's accelerator backends (cuda, rocm, metal, mlx, tpu) on a
//! machine without them: each is in the manifest with why it is not usable
//! (compiled out, driver missing, or not on this platform, by feature), a
//! request for one is a named error, and a fallback chain through them ends
//! on the CPU with every skip explained. Runs under any feature set
//! (`cargo test -p rlx-runtime --features cuda,rocm,metal,mlx,tpu` too).

use rlx_ir::{DType, Graph, GraphExt, Shape};
use rlx_runtime::devices::unavailable_reason;
use rlx_runtime::{run_with_policy, BackendsManifest, Device, DevicePolicy, RuntimeError, Session};

const ACCELERATORS: [(Device, bool); 5] = [
    (Device::Cuda(0), cfg!(feature = "cuda")),
    (Device::Rocm(0), cfg!(feature = "rocm")),
    (Device::Metal, cfg!(feature = "metal")),
    (Device::Mlx, cfg!(feature = "mlx")),
    (Device::Tpu(0), cfg!(feature = "tpu")),
];

/// True on a machine where the CUDA executor is registered (a driver and
/// a device answered `rlx_cuda::probe`): cuda:0 is then usable, not a
/// skipped accelerator.
fn cuda_usable() -> bool {
    rlx_runtime::devices::is_available(Device::Cuda(0))
}

/// The accelerators this machine cannot use.
fn unusable() -> Vec<(Device, bool)> {
    ACCELERATORS
        .into_iter()
        .filter(|&(d, _)| !(d == Device::Cuda(0) && cuda_usable()))
        .collect()
}

fn doubler() -> Graph {
    let mut g = Graph::new("double");
    let x = g.input("x", Shape::new(&[3], DType::F32));
    let two = g.constant(2.0, DType::F32);
    let y = g.mul(x, two);
    g.set_outputs(vec![y]);
    g
}

/// What the reason may start with on this build and machine (no HIP, no
/// libtpu, not macOS; CUDA: no driver here, or a driver on a GPU machine
/// where `tools/gpu_check.sh` runs this with `--features cuda`).
fn expected_class(d: Device, feature: bool) -> &'static [&'static str] {
    match (d, feature) {
        (_, false) => &["compiled out: this build has the `"],
        (Device::Cuda(_), true) => &[
            "driver missing: the CUDA driver library (libcuda",
            "no usable CUDA device: ",
        ],
        (_, true) => &["not available on this platform: "],
    }
}

fn has_class(why: &str, d: Device, feature: bool) -> bool {
    expected_class(d, feature).iter().any(|c| why.contains(c))
}

#[test]
fn the_manifest_lists_every_accelerator_with_why_it_is_unusable() {
    let m = BackendsManifest::current();
    for (d, feature) in unusable() {
        let s = m.status(d).unwrap();
        assert!(!s.available, "{d}");
        assert_eq!(s.compiled_in, feature, "{d}");
        let why = s.reason.as_deref().unwrap();
        assert!(has_class(why, d, feature), "{d}: {why}");
        if !feature {
            assert!(
                why.contains(&format!("--features {}", d.feature())),
                "{why}"
            );
        }
        // The manifest and every error give the same reason.
        assert_eq!(why, unavailable_reason(d));
    }
    let json = m.to_json();
    let cuda = &json["backends"][1];
    assert_eq!(cuda["device"], "cuda:0");
    assert_eq!(cuda["compiled_in"], cfg!(feature = "cuda"));
    assert_eq!(m.available.contains(&Device::Cuda(0)), cuda_usable());
}

#[test]
fn platform_reasons_name_the_platform_and_the_missing_runtime() {
    if cfg!(feature = "metal") {
        assert!(unavailable_reason(Device::Metal).contains("Metal needs macOS (this is linux)"));
    }
    if cfg!(feature = "mlx") {
        assert!(unavailable_reason(Device::Mlx).contains("MLX needs Apple Silicon macOS"));
    }
    if cfg!(feature = "rocm") {
        assert!(unavailable_reason(Device::Rocm(0)).contains("libamdhip64) is not installed"));
    }
    if cfg!(feature = "tpu") {
        assert!(unavailable_reason(Device::Tpu(0)).contains("libtpu.so is not installed"));
    }
    if cfg!(feature = "cuda") && !cuda_usable() {
        let why = unavailable_reason(Device::Cuda(0));
        if why.starts_with("driver missing") {
            assert!(
                why.contains("libcuda.so.1"),
                "the file names tried are listed: {why}"
            );
        }
    }
}

#[test]
fn compiling_for_an_accelerator_is_a_named_error_not_a_panic() {
    for (d, feature) in unusable() {
        let err = Session::new(d).try_compile(doubler()).unwrap_err();
        let RuntimeError::DeviceUnavailable { device, reason } = &err else {
            panic!("{d}: {err:?}");
        };
        assert_eq!(*device, d);
        assert!(has_class(reason, d, feature), "{reason}");
        assert!(err
            .to_string()
            .starts_with(&format!("device {d} is not available: ")));
    }
}

#[test]
fn the_chain_cuda_rocm_cpu_falls_back_to_the_cpu() {
    let x = [1.0f32, -2.5, 4.0];
    let chain = [Device::Cuda(0), Device::Rocm(0), Device::Cpu];
    let (used, out) = run_with_policy(
        &doubler(),
        &chain,
        &DevicePolicy::default(),
        &[],
        &[("x", &x)],
    )
    .unwrap();
    let first = if cuda_usable() {
        Device::Cuda(0)
    } else {
        Device::Cpu
    };
    assert_eq!(used, first);
    assert_eq!(out, [vec![2.0, -5.0, 8.0]]);
}

#[test]
fn a_usable_cuda_device_runs_the_graph_itself() {
    if !cuda_usable() {
        println!(
            "skipped: cuda:0 is not usable here ({})",
            unavailable_reason(Device::Cuda(0))
        );
        return;
    }
    let policy = DevicePolicy::default().fallback(false);
    let (used, out) = run_with_policy(
        &doubler(),
        &[Device::Cuda(0)],
        &policy,
        &[],
        &[("x", &[1.0, -2.5, 4.0])],
    )
    .unwrap();
    assert_eq!((used, out), (Device::Cuda(0), vec![vec![2.0, -5.0, 8.0]]));
    assert!(Session::new(Device::Cuda(0)).try_compile(doubler()).is_ok());
}

#[test]
fn a_chain_of_only_accelerators_reports_why_each_was_skipped() {
    let accelerators = unusable();
    let chain: Vec<Device> = accelerators.iter().map(|a| a.0).collect();
    let err = run_with_policy(
        &doubler(),
        &chain,
        &DevicePolicy::default(),
        &[],
        &[("x", &[0.0; 3])],
    )
    .unwrap_err();
    assert_eq!(err.attempts.len(), chain.len());
    for ((d, why), &(want, feature)) in err.attempts.iter().zip(&accelerators) {
        assert_eq!(*d, want);
        assert!(has_class(why, want, feature), "{d}: {why}");
    }
    let text = err.to_string();
    let first = chain[0];
    assert!(
        text.starts_with(&format!(
            "every device failed: {first}: device {first} is not available"
        )),
        "{text}"
    );
}

#[test]
fn with_fallback_off_the_first_accelerator_failure_is_final() {
    let first = unusable()[0].0;
    let chain = [first, Device::Cpu];
    let policy = DevicePolicy::default().fallback(false);
    let err = run_with_policy(&doubler(), &chain, &policy, &[], &[("x", &[0.0; 3])]).unwrap_err();
    assert_eq!(err.attempts.len(), 1);
    assert_eq!(err.attempts[0].0, first);
}
