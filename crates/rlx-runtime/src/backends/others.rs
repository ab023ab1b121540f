//! ROCm, Metal, MLX and TPU: features that build everywhere and say why
//! the device is not usable (no executor for them is in this version).

use super::compiled_out;
use rlx_driver::Device;

/// True when a shared library loads under one of `names` (checked only
/// when the feature is on; nothing in it is called).
#[cfg(any(feature = "rocm", feature = "tpu"))]
fn library_loads(names: &[&str]) -> bool {
    // SAFETY: only opens and closes the library; no symbol is called.
    names
        .iter()
        .any(|&n| unsafe { libloading::Library::new(n) }.is_ok())
}

#[cfg(feature = "rocm")]
pub(super) fn rocm() -> String {
    let hip = if library_loads(&["libamdhip64.so", "libamdhip64.so.6", "libamdhip64.so.5"]) {
        "the HIP runtime (libamdhip64) loads"
    } else {
        "the HIP runtime (libamdhip64) is not installed"
    };
    format!(
        "not available on this platform: RLX {} has no ROCm executor ({hip}); use `gpu` (wgpu over Vulkan) on AMD GPUs",
        env!("CARGO_PKG_VERSION")
    )
}

#[cfg(not(feature = "rocm"))]
pub(super) fn rocm() -> String {
    compiled_out(Device::Rocm(0))
}

#[cfg(feature = "tpu")]
pub(super) fn tpu() -> String {
    let plugin = if library_loads(&["libtpu.so"]) {
        "the PJRT plugin libtpu.so loads"
    } else {
        "the PJRT plugin libtpu.so is not installed"
    };
    format!(
        "not available on this platform: RLX {} has no PJRT executor ({plugin})",
        env!("CARGO_PKG_VERSION")
    )
}

#[cfg(not(feature = "tpu"))]
pub(super) fn tpu() -> String {
    compiled_out(Device::Tpu(0))
}

pub(super) fn metal() -> String {
    if !cfg!(feature = "metal") {
        return compiled_out(Device::Metal);
    }
    if cfg!(target_os = "macos") {
        "not available on this platform: Metal runs through the `gpu` feature (wgpu's Metal backend); use device `gpu`".into()
    } else {
        format!(
            "not available on this platform: Metal needs macOS (this is {})",
            std::env::consts::OS
        )
    }
}

pub(super) fn mlx() -> String {
    if !cfg!(feature = "mlx") {
        return compiled_out(Device::Mlx);
    }
    if cfg!(all(target_os = "macos", target_arch = "aarch64")) {
        "not available on this platform: RLX has no MLX executor yet; use `gpu` (wgpu's Metal backend) on Apple Silicon".into()
    } else {
        format!(
            "not available on this platform: MLX needs Apple Silicon macOS (this is {} on {})",
            std::env::consts::OS,
            std::env::consts::ARCH
        )
    }
}
