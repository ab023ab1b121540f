//! # rlx-wgpu — the GPU backend on wgpu
//!
//! [`WgpuBackend`] implements [`rlx_driver::Backend`] for [`Device::Gpu`]:
//! any adapter wgpu finds (Vulkan by default; a software one such as
//! Mesa's lavapipe counts), chosen once per process ([`context`]).
//! Compiling LIR generates one WGSL compute kernel per node, specialised to
//! its shapes and arena offsets and cached by source
//! ([`WgpuExecutable`]); the memory plan maps onto one GPU buffer, so data
//! crosses to the host only at inputs, outputs, `set_param` and
//! `param_value`. The compiler's fused elementwise regions run as one
//! kernel each (every step inlined as a WGSL expression over the region's
//! broadcast inputs), and a fused matmul as the matmul with its epilogue
//! applied before the store. Softmax, log-softmax, layer and RMS norm run
//! as native kernels (f16 too, along an even-length last axis); so do conv
//! and transposed conv (N-d, strided / padded / dilated / grouped), max /
//! average pooling, gather-elements and scatter-add; the other composites
//! (attention, group norm, ...) run decomposed into the primitives that
//! have kernels. Values are f32, f16 (stored two to a word; computed in
//! WGSL `f16` by the elementwise, region and matmul kernels where the
//! adapter has `shader-f16`, in f32 otherwise: [`F16Mode`]), i32, i64
//! (computed in 32 bits, range-checked) or bool. A node with no kernel (or
//! another dtype)
//! is [`BackendError::Unsupported`] naming the node and why; with a
//! fallback policy the runtime places it on the CPU instead
//! (`rlx_runtime::HeteroExecutable::compile_with_fallback`).
//!
//! wgpu's validation errors, uncaptured errors and device loss become
//! [`BackendError`]s (error scopes around every creation, a handler for
//! the rest: [`GpuContext::checked`]), never wgpu's panic.
//!
//! [`device_divergence`] runs one graph on every available device and
//! reports the largest difference per output.
#![deny(missing_docs)]

mod context;
mod divergence;
mod executable;
mod kernels;
mod wgsl;

pub use context::{context, GpuContext};
pub use divergence::{device_divergence, DeviceDivergence, OutputDivergence};
pub use executable::{F16Mode, WgpuExecutable};

use rlx_compile::LirModule;
use rlx_driver::{Backend, BackendError, Device, Executable};
use rlx_ir::Op;

/// The wgpu backend (one shared device per process).
#[derive(Debug, Default, Clone, Copy)]
pub struct WgpuBackend;

/// `Ok(())` when a wgpu adapter and device were found, else why not.
pub fn is_available() -> Result<(), String> {
    context().map(|_| ())
}

impl Backend for WgpuBackend {
    fn device(&self) -> Device {
        Device::Gpu
    }

    fn name(&self) -> &'static str {
        "wgpu"
    }

    /// Primitives are all claimed (one without a kernel fails compile by
    /// name); composites only where a native kernel exists (fused regions
    /// and matmul epilogues among them, which turns the compiler's fusion
    /// passes for them on), so the rest (attention, group norm, ...) are
    /// decomposed first.
    fn claims(&self, op: &Op) -> bool {
        if let Op::Custom(_) = op {
            return false;
        }
        kernels::has_kernel(op) || !op.kind().is_composite()
    }

    fn compile(&self, lir: LirModule) -> Result<Box<dyn Executable>, BackendError> {
        let ctx = context().map_err(|why| BackendError::Unsupported {
            device: Device::Gpu,
            node: format!("the whole graph: {why}"),
        })?;
        Ok(Box::new(WgpuExecutable::new(lir, ctx)?))
    }
}
