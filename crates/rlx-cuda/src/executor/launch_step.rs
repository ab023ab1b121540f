//! One [`Step`] of a launch plan on the device: the launches
//! [`step_launches`] describes (entry points, argument values, geometry)
//! pushed onto the device's stream, the GEMMs to cuBLAS / cuBLASLt.

use crate::gemm::CudaGemm;
use crate::gpu::{CudaGpu, GpuError};
use crate::plan::{Buf, Step};
use crate::step_launch::{step_launches, KernelArg, KernelLaunch, StepLaunch};
use cudarc::driver::{LaunchArgs, LaunchConfig, PushKernelArg};

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
            StepLaunch::Kernel(k) => unsafe { launch(gpu, &k) }?,
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
                        unsafe { launch(gpu, k) }?;
                    }
                }
            }
        }
    }
    Ok(())
}

/// Launches one kernel with its arguments.
///
/// # Safety
/// The arguments must match the entry point's signature and every address
/// must hold what the kernel reads and writes at this geometry.
unsafe fn launch(gpu: &CudaGpu, k: &KernelLaunch) -> Result<(), GpuError> {
    let f = gpu.function(k.module, &k.entry)?;
    let mut l = gpu.stream().launch_builder(&f);
    for a in &k.args {
        push(&mut l, a);
    }
    let cfg = LaunchConfig {
        grid_dim: k.grid,
        block_dim: k.block,
        shared_mem_bytes: 0,
    };
    // SAFETY: the caller's promise.
    unsafe { l.launch(cfg) }?;
    Ok(())
}

fn push<'a>(l: &mut LaunchArgs<'a>, a: &'a KernelArg) {
    match a {
        KernelArg::Ptr(v) | KernelArg::U64(v) => l.arg(v),
        KernelArg::I64(v) => l.arg(v),
        KernelArg::I32(v) => l.arg(v),
        KernelArg::F32(v) => l.arg(v),
        KernelArg::F64(v) => l.arg(v),
        KernelArg::Layout(v) => l.arg(v),
        KernelArg::Window(v) => l.arg(v),
        KernelArg::Pad(v) => l.arg(v),
        KernelArg::Resize(v) => l.arg(v),
    };
}
