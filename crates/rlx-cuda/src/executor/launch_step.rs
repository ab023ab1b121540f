//! One [`Step`] of a launch plan on the device: the launches
//! [`step_launches`] describes (entry points, argument values, geometry)
//! pushed onto the device's stream, the GEMMs to cuBLAS / cuBLASLt.

use crate::gemm::CudaGemm;
use crate::gpu::{CudaGpu, GpuError};
use crate::plan::{Buf, Step};
use crate::step_launch::{step_launches, StepLaunch};

/// Launches `step` on `gpu`'s stream; `addr` gives a place's device
/// address, `flag` the address of this step's bad-index flag (gathers).
pub(crate) fn launch_step(
    gpu: &CudaGpu,
    gemm: &CudaGemm,
    step: &Step,
    addr: &dyn Fn(&Buf) -> u64,
    flag: u64,
) -> Result<(), GpuError> {
    for l in step_launches(step, addr, flag)? {
        match l {
            // SAFETY: the plan sized and placed every buffer a launch
            // touches (`LaunchPlan::check`); `step_launches` passes each
            // kernel the arguments of its C signature, in order.
            StepLaunch::Kernel(k) => unsafe { gpu.launch_described(&k) }?,
            // SAFETY: the plan sized every place for this GEMM.
            StepLaunch::Gemm {
                spec,
                dtype,
                places,
            } => unsafe { gemm.planned(&spec, dtype, places) }?,
            StepLaunch::GemmBias {
                spec,
                dtype,
                epilogue,
                places: [a, b, bias, c],
                fallback,
            } => {
                // SAFETY: as above, the bias one value per column, and c
                // overlapping no operand.
                let fused =
                    unsafe { gemm.planned_bias(gpu, &spec, dtype, epilogue, [a, b, bias, c]) }?;
                if !fused {
                    // SAFETY: as above; then the bias and activation in place over c.
                    unsafe { gemm.planned(&spec, dtype, [a, b, c]) }?;
                    for k in &fallback {
                        // SAFETY: as for any planned kernel.
                        unsafe { gpu.launch_described(k) }?;
                    }
                }
            }
        }
    }
    Ok(())
}
