//! Shared by the GPU tests: adapter gate, backends, data, comparisons.
#![allow(dead_code)]

use rlx_driver::{registry, Backend, BackendError, Executable};
use rlx_ir::{Graph, HostTensor};
use rlx_wgpu::{device_divergence, WgpuBackend};
use std::sync::{Arc, Once};

/// True when a wgpu adapter is there (the CPU and GPU backends are then
/// registered). Without one the test prints why and is skipped, unless
/// `RLX_REQUIRE_GPU=1` (CI), where it fails.
pub fn gpu_or_skip(test: &str) -> bool {
    static ENV: Once = Once::new();
    ENV.call_once(|| {
        // Vulkan loaders want a runtime dir; a private one, never a display.
        if std::env::var_os("XDG_RUNTIME_DIR").is_none() {
            let dir = std::env::temp_dir().join(format!("rlx-wgpu-xdg-{}", std::process::id()));
            let _ = std::fs::create_dir_all(&dir);
            std::env::set_var("XDG_RUNTIME_DIR", dir);
        }
    });
    match rlx_wgpu::is_available() {
        Ok(()) => {
            registry::register_backend(Arc::new(rlx_cpu::CpuBackend));
            registry::register_backend(Arc::new(WgpuBackend));
            true
        }
        Err(why) => {
            if std::env::var("RLX_REQUIRE_GPU").as_deref() == Ok("1") {
                panic!("{test}: RLX_REQUIRE_GPU=1 but no GPU: {why}");
            }
            eprintln!("skipping {test}: {why}");
            false
        }
    }
}

/// `t` (f32) rounded to f16 (round to nearest even).
pub fn to_f16(t: &HostTensor) -> HostTensor {
    let v: Vec<rlx_ir::f16> = t
        .to_vec::<f32>()
        .unwrap()
        .into_iter()
        .map(rlx_ir::f16::from_f32)
        .collect();
    HostTensor::from_vec(v, t.dims()).unwrap()
}

/// The CPU (reference) and the wgpu backend.
pub fn backends() -> Vec<Arc<dyn Backend>> {
    vec![Arc::new(rlx_cpu::CpuBackend), Arc::new(WgpuBackend)]
}

/// Deterministic values in `[lo, hi)` (a 64-bit LCG).
pub fn uniform(n: usize, lo: f32, hi: f32, seed: u64) -> Vec<f32> {
    let mut s = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let u = (s >> 40) as f32 / (1u64 << 24) as f32;
            lo + (hi - lo) * u
        })
        .collect()
}

/// An f32 tensor of `dims` with values in `[lo, hi)`.
pub fn rand(dims: &[usize], lo: f32, hi: f32, seed: u64) -> HostTensor {
    HostTensor::from_vec(uniform(dims.iter().product(), lo, hi, seed), dims).unwrap()
}

/// Runs `g` on the CPU and on the GPU and asserts every output agrees to
/// `rtol` relative (plus `1e-6` absolute, for values near zero).
pub fn assert_gpu_matches_cpu(
    g: &Graph,
    params: &[(&str, &HostTensor)],
    inputs: &[(&str, &HostTensor)],
    rtol: f64,
) {
    assert_gpu_matches_cpu_atol(g, params, inputs, rtol, 1e-6)
}

/// [`assert_gpu_matches_cpu`] with an absolute tolerance of `atol`: for
/// long sums, whose near-zero results carry the rounding of their terms.
pub fn assert_gpu_matches_cpu_atol(
    g: &Graph,
    params: &[(&str, &HostTensor)],
    inputs: &[(&str, &HostTensor)],
    rtol: f64,
    atol: f64,
) {
    let d = device_divergence(g, params, inputs, &backends(), (atol, rtol))
        .unwrap_or_else(|e| panic!("{}: {e}", g.name()));
    println!("{}: {d}", g.name());
    assert!(
        d.worst_ratio() <= 1.0,
        "{}: GPU differs from the CPU beyond rtol {rtol}:\n{d}",
        g.name()
    );
    assert!(!d.devices.is_empty());
}

/// `g` lowered for `backend` (default options) and compiled by it.
pub fn compile_on(backend: &dyn Backend, g: &Graph) -> Result<Box<dyn Executable>, BackendError> {
    let lir = rlx_compile::lower(g, &|op| backend.claims(op), &Default::default())
        .unwrap_or_else(|e| panic!("{}: lowering failed: {e}", g.name()));
    backend.compile(lir)
}

/// `g` compiled for the wgpu device.
pub fn compile_gpu(g: &Graph) -> Result<Box<dyn Executable>, BackendError> {
    compile_on(&WgpuBackend, g)
}

/// The message of the wgpu backend's refusal to compile `g`.
pub fn gpu_compile_error(g: &Graph) -> String {
    match compile_gpu(g) {
        Err(e) => e.to_string(),
        Ok(_) => panic!("{}: compiled on the GPU, expected a refusal", g.name()),
    }
}
