//! `Device::Cuda`: the feature, then `rlx_cuda::probe` (libraries by file
//! name, then the driver), never a cudarc call that could panic. When the
//! probe succeeds, [`register`] registers `rlx_cuda::CudaBackend` for each
//! device it found; otherwise [`reason`] says why not.

/// Registers the CUDA graph executor for every device the probe found
/// (none when the driver, NVRTC or cuBLAS is missing).
#[cfg(feature = "cuda")]
pub(crate) fn register() {
    if let Ok(info) = rlx_cuda::probe() {
        for ordinal in 0..info.devices.len() {
            rlx_driver::registry::register_backend(std::sync::Arc::new(
                rlx_cuda::CudaBackend::new(ordinal as u32),
            ));
        }
    }
}

#[cfg(feature = "cuda")]
pub(super) fn reason(ordinal: u32) -> String {
    match rlx_cuda::probe() {
        Err(e @ rlx_cuda::CudaUnavailable::LibraryMissing { .. }) => format!("driver missing: {e}"),
        Err(e) => format!("no usable CUDA device: {e}"),
        Ok(info) if ordinal as usize >= info.devices.len() => format!(
            "no CUDA device {ordinal}: the driver reports {} device(s)",
            info.devices.len()
        ),
        Ok(info) => {
            let d = &info.devices[ordinal as usize];
            format!(
                "the CUDA backend is built in but not registered: {} (compute {}.{}, driver CUDA {}.{}) answered the probe",
                d.name,
                d.compute_capability.0,
                d.compute_capability.1,
                info.driver_version / 1000,
                info.driver_version % 1000 / 10
            )
        }
    }
}

#[cfg(not(feature = "cuda"))]
pub(super) fn reason(ordinal: u32) -> String {
    super::compiled_out(rlx_driver::Device::Cuda(ordinal))
}
