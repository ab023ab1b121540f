//! The accelerator kinds this version builds as features: CUDA (`rlx-cuda`
//! probes the driver and, when it answers, its graph executor is
//! registered), and ROCm, Metal, MLX and TPU (no executor). Each says, for
//! `BackendsManifest` and every "device unavailable" error, whether it is
//! compiled out, missing its driver, or not available on this platform,
//! and why; fallback chains skip it with that reason.

mod cuda;

#[cfg(feature = "cuda")]
pub(crate) use cuda::register as register_cuda;
mod others;

use rlx_driver::Device;

/// Why `d` cannot be used, with its class first (`compiled out: ...`,
/// `driver missing: ...`, `not available on this platform: ...`); `None`
/// for the kinds this module does not own (CPU, wgpu).
pub(crate) fn accelerator_reason(d: Device) -> Option<String> {
    match d {
        Device::Cuda(ordinal) => Some(cuda::reason(ordinal)),
        Device::Rocm(_) => Some(others::rocm()),
        Device::Metal => Some(others::metal()),
        Device::Mlx => Some(others::mlx()),
        Device::Tpu(_) => Some(others::tpu()),
        Device::Cpu | Device::Gpu => None,
    }
}

/// True when this build has `d`'s feature on (for the kinds of this module).
pub(crate) fn feature_on(d: Device) -> bool {
    match d {
        Device::Cuda(_) => cfg!(feature = "cuda"),
        Device::Rocm(_) => cfg!(feature = "rocm"),
        Device::Metal => cfg!(feature = "metal"),
        Device::Mlx => cfg!(feature = "mlx"),
        Device::Tpu(_) => cfg!(feature = "tpu"),
        Device::Cpu | Device::Gpu => false,
    }
}

/// `compiled out: the `feature` feature is off ...`.
fn compiled_out(d: Device) -> String {
    format!(
        "compiled out: this build has the `{}` feature off (build rlx with `--features {}`)",
        d.feature(),
        d.feature()
    )
}
