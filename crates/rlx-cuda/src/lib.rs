//! RLX's CUDA support on [`cudarc`], every CUDA library loaded at run time
//! (`dynamic-loading`), so this crate builds and its probes run on machines
//! without a CUDA toolkit or driver.
//!
//! - [`probe()`] / [`is_available`]: whether the driver, NVRTC and cuBLAS
//!   libraries load and a device answers, with the reason when not. Nothing
//!   here calls into cudarc before its library is known to be present (cudarc
//!   panics on a missing library).
//! - [`kernels`]: the CUDA C sources (no CUDA headers needed) of the core op set, compiled by NVRTC
//!   ([`kernels::compile_all`]); NVRTC runs without a driver, so the sources
//!   are checked wherever `libnvrtc` loads.
//! - [`gpu`]: a context on one device (stream, kernel modules, a caching
//!   allocator) and [`gemm`]: cuBLAS GEMMs in f32, TF32, f16 and bf16.
//! - [`plan`]: a graph (LIR) turned into launches over one arena, pure Rust
//!   and checked by simulation ([`plan::LaunchPlan::check`]) on any machine.
//!   Planned: unary / binary / compare / select (broadcasting), sum / mean /
//!   max / min over adjacent axes, last-axis softmax / log-softmax, layer
//!   and RMS norm, row gather, gather_elements, scatter_add, top-k,
//!   transpose / broadcast / slice / concat / pad / copies, casts, iota,
//!   argmax / argmin / cumsum, 1-d / 2-d conv, transposed conv and pooling,
//!   nearest / linear resize, GGUF Q4_0 / Q4_1 / Q5_0 / Q5_1 / Q8_0 / Q4_K /
//!   Q5_K / Q6_K dequantize (so a llama GGUF step graph plans whole:
//!   `tests/smollm2.rs`), matmul / leading-batch dot-general as strided-batched
//!   cuBLAS GEMMs, fused matmuls (a per-column bias, alone or under ReLU /
//!   tanh GELU, as one cuBLASLt GEMM with that epilogue: [`gemm_lt`]) and
//!   elementwise regions (their steps' kernels); anything else is a named
//!   `BackendError::Unsupported`.
//! - [`step_launch`]: a plan step as the launches computing it (entry
//!   points, argument values in parameter order, geometry; GEMMs), built
//!   without a device: what the executor launches, and what the tests run
//!   through the real kernel sources compiled for the CPU (`tests/host/`).
//! - [`optim`]: SGD / Adam / AdamW steps in place on the device, their
//!   state on the device ([`optim::DeviceOptimizer`]).
//! - [`executor`]: [`CudaBackend`], the `rlx_driver::Backend` of
//!   `Device::Cuda(n)`, which runs a plan on the device's stream;
//!   `run_updating` copies update outputs over their params on the device
//!   and [`CudaExecutable::run_training_step`] applies an optimizer step
//!   from gradient outputs there ([`plan::UpdatePlan`] orders both).
#![deny(missing_docs)]

pub mod executor;
pub mod gemm;
pub mod gemm_lt;
pub mod geometry;
pub mod gpu;
pub mod kernels;
pub mod launch;
pub mod libs;
pub mod optim;
pub mod plan;
pub mod pool;
pub mod probe;
pub mod step_launch;

pub use executor::{cuda_claims, CudaBackend, CudaExecutable};
pub use probe::{is_available, probe, CudaInfo, CudaUnavailable};
