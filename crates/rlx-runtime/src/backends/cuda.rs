//! `Device::Cuda`'s status: the feature, then `rlx_cuda::probe` (libraries
//! by file name, then the driver), never a cudarc call that could panic.

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
                "no CUDA graph executor in this version: {} (compute {}.{}, driver CUDA {}.{}) is usable by rlx-cuda's kernels and GEMMs, but graphs run on the next device of the chain",
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
