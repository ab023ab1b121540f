//! # rlx-cpu — the CPU backend
//!
//! [`CpuBackend`] implements [`rlx_driver::Backend`]: it claims every op
//! (composites included: it has native softmax / norm / attention / rope
//! kernels) and compiles LIR into a [`CpuExecutable`], which runs the
//! schedule over one memory-planned arena with one kernel call per node.
//! Kernels live in [`kernels`], one module per op family.
#![deny(missing_docs)]

mod aligned_buf;
mod executor;
pub mod kernels;
mod profile;
pub mod splat;
mod storage;
pub(crate) mod team;
mod threads;

pub use executor::CpuExecutable;
pub use threads::num_threads;

use rlx_compile::LirModule;
use rlx_driver::{Backend, BackendError, Device, Executable};
use rlx_ir::Op;

/// The CPU backend.
#[derive(Debug, Default, Clone, Copy)]
pub struct CpuBackend;

/// The ops the CPU runs natively (also what control-flow bodies are lowered against).
pub(crate) fn claims(op: &Op) -> bool {
    // A weight format without a native quantized kernel runs decomposed.
    match op {
        Op::DequantMatMul { scheme, .. } => kernels::quant_matmul::supports(*scheme),
        // A custom op runs only where its extension registers a cpu kernel.
        Op::Custom(c) => {
            // Splat ops run on the registered splat executors (checked at compile).
            splat::is_splat_op(&c.name)
                || rlx_ir::custom::lookup_op(&c.name).is_some_and(|e| e.kernel("cpu").is_some())
        }
        _ => true,
    }
}

impl Backend for CpuBackend {
    fn device(&self) -> Device {
        Device::Cpu
    }

    fn name(&self) -> &'static str {
        "cpu"
    }

    fn claims(&self, op: &Op) -> bool {
        claims(op)
    }

    fn compile(&self, lir: LirModule) -> Result<Box<dyn Executable>, BackendError> {
        Ok(Box::new(CpuExecutable::new(lir)?))
    }
}
