//! [`CudaBackend`]: the `rlx_driver::Backend` of `Device::Cuda(n)`.
//! Compiling plans the LIR ([`crate::plan::plan`]), opens the device (once
//! per process and ordinal: NVRTC compiles the kernel modules then) and
//! uploads the constants; a run uploads the inputs into the arena, issues
//! every launch on the device's stream and downloads the outputs.
//!
//! Nothing here calls cudarc before [`crate::probe()`] has succeeded
//! ([`CudaGpu::new`] probes first): cudarc panics on a missing library.

mod launch_step;
mod updates;

use crate::gemm::CudaGemm;
use crate::gpu::{CudaGpu, GpuError};
use crate::plan::{plan, Buf, Kernel, LaunchPlan, Region, UpdatePlan, UpdateRule};
use cudarc::driver::{CudaSlice, DevicePtr};
use launch_step::launch_step;
use rlx_compile::LirModule;
use rlx_driver::{Backend, BackendError, Device, Executable};
use rlx_ir::{HostTensor, Op};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

/// The CUDA backend for one device ordinal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CudaBackend {
    ordinal: u32,
}

impl CudaBackend {
    /// The backend of CUDA device `ordinal`.
    pub fn new(ordinal: u32) -> CudaBackend {
        CudaBackend { ordinal }
    }
}

/// True for the composites with a CUDA kernel (the others are decomposed
/// into primitives before compiling); a fused matmul is one cuBLASLt GEMM
/// with its epilogue, or the GEMM and its epilogue's kernels, and an
/// elementwise region its steps' kernels (`plan/fused.rs`).
fn native_composite(op: &Op) -> bool {
    matches!(
        op,
        Op::Softmax { .. }
            | Op::LogSoftmax { .. }
            | Op::LayerNorm { .. }
            | Op::RmsNorm { .. }
            | Op::FusedMatMul { .. }
            | Op::ElementwiseRegion { .. }
    )
}

/// The claims of [`CudaBackend`] (no device needed): every primitive (one
/// without a kernel fails planning by name) and the native composites.
pub fn cuda_claims(op: &Op) -> bool {
    !matches!(op, Op::Custom(_)) && (native_composite(op) || !op.kind().is_composite())
}

/// The process's open device of `ordinal` (opened on first use).
fn shared_gpu(ordinal: u32) -> Result<Arc<CudaGpu>, GpuError> {
    static GPUS: OnceLock<Mutex<HashMap<u32, Arc<CudaGpu>>>> = OnceLock::new();
    let mut open = GPUS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    if let Some(g) = open.get(&ordinal) {
        return Ok(g.clone());
    }
    let g = Arc::new(CudaGpu::new(ordinal as usize)?);
    open.insert(ordinal, g.clone());
    Ok(g)
}

impl CudaBackend {
    /// [`Backend::compile`] returning the concrete executable (for its
    /// CUDA-only entry points such as
    /// [`CudaExecutable::run_training_step`]).
    pub fn compile_cuda(&self, lir: LirModule) -> Result<CudaExecutable, BackendError> {
        let launches = plan(&lir, self.ordinal)?;
        let gpu = shared_gpu(self.ordinal).map_err(|e| BackendError::Unsupported {
            device: self.device(),
            node: format!("the whole graph: {e}"),
        })?;
        CudaExecutable::new(lir, launches, gpu)
    }
}

impl Backend for CudaBackend {
    fn device(&self) -> Device {
        Device::Cuda(self.ordinal)
    }

    fn name(&self) -> &'static str {
        "cuda"
    }

    fn claims(&self, op: &Op) -> bool {
        cuda_claims(op)
    }

    fn compile(&self, lir: LirModule) -> Result<Box<dyn Executable>, BackendError> {
        Ok(Box::new(self.compile_cuda(lir)?))
    }
}

/// A graph compiled for one CUDA device.
pub struct CudaExecutable {
    lir: LirModule,
    plan: LaunchPlan,
    gpu: Arc<CudaGpu>,
    gemm: CudaGemm,
    /// The arena (absent after `release_scratch` until the next run).
    arena: Option<CudaSlice<u8>>,
    params: Vec<Option<CudaSlice<u8>>>,
    constants: Vec<CudaSlice<u8>>,
    /// One bad-index flag per index-checking step (by step index).
    flags: HashMap<usize, CudaSlice<i64>>,
}

impl std::fmt::Debug for CudaExecutable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "CudaExecutable({} launches, arena {} bytes)",
            self.plan.steps.len(),
            self.plan.arena_bytes
        )
    }
}

/// A device failure of the whole graph as a [`BackendError`].
fn whole(plan: &LaunchPlan, e: GpuError) -> BackendError {
    BackendError::Kernel {
        node: format!("graph {}", plan.name),
        message: e.to_string(),
    }
}

fn base(slice: &CudaSlice<u8>, gpu: &CudaGpu) -> u64 {
    let (ptr, _sync) = slice.device_ptr(gpu.stream());
    ptr
}

impl CudaExecutable {
    /// Uploads the constants and makes the gather flags of `plan`.
    pub fn new(
        lir: LirModule,
        plan: LaunchPlan,
        gpu: Arc<CudaGpu>,
    ) -> Result<CudaExecutable, BackendError> {
        let gemm = CudaGemm::new(&gpu).map_err(|e| whole(&plan, e))?;
        let constants = plan
            .constants
            .iter()
            .map(|c| {
                // A zero-byte allocation is none: an empty constant gets one byte.
                let bytes: &[u8] = if c.is_empty() { &[0] } else { c };
                gpu.upload(bytes)
            })
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| whole(&plan, e))?;
        let mut flags = HashMap::new();
        for (k, s) in plan.steps.iter().enumerate() {
            if s.kernel.checks_indices() {
                flags.insert(k, gpu.zeros::<i64>(1).map_err(|e| whole(&plan, e))?);
            }
        }
        Ok(CudaExecutable {
            params: vec![None; plan.params.len()],
            lir,
            plan,
            gpu,
            gemm,
            arena: None,
            constants,
            flags,
        })
    }

    /// The launch plan it runs.
    pub fn plan(&self) -> &LaunchPlan {
        &self.plan
    }

    /// The device address of a place (0 in a buffer not allocated yet:
    /// the arena before the first run, a param not set).
    fn address(&self, b: &Buf) -> u64 {
        let buffer = match b.region {
            Region::Arena => self.arena.as_ref(),
            Region::Param(i) => self.params[i].as_ref(),
            Region::Const(i) => Some(&self.constants[i]),
        };
        buffer.map_or(0, |s| base(s, &self.gpu) + b.byte as u64)
    }

    fn device_err(&self, e: GpuError) -> BackendError {
        whole(&self.plan, e)
    }

    /// Runs every launch over the uploaded inputs; the outputs stay in the arena.
    fn launch_all(&mut self, inputs: &[&HostTensor]) -> Result<(), BackendError> {
        if inputs.len() != self.plan.inputs.len() {
            return Err(BackendError::Signature(format!(
                "{} inputs given, the graph takes {}",
                inputs.len(),
                self.plan.inputs.len()
            )));
        }
        if let Some(k) = self.params.iter().position(Option::is_none) {
            return Err(BackendError::Signature(format!(
                "param {} is not set",
                self.plan.params[k].0
            )));
        }
        let gpu = self.gpu.clone();
        if self.arena.is_none() {
            let a = gpu
                .take_bytes(self.plan.arena_bytes.max(1))
                .map_err(|e| self.device_err(e))?;
            self.arena = Some(a);
        }
        let arena = self.arena.as_mut().expect("allocated above");
        for ((name, b), t) in self.plan.inputs.iter().zip(inputs) {
            if t.bytes().len() != b.bytes || t.dtype() != b.dtype {
                return Err(BackendError::Signature(format!(
                    "input {name}: {} bytes of {} given for {} bytes of {}",
                    t.bytes().len(),
                    t.dtype(),
                    b.bytes,
                    b.dtype
                )));
            }
            if b.bytes > 0 {
                let mut dst = arena.slice_mut(b.byte..b.byte + b.bytes);
                gpu.stream()
                    .memcpy_htod(t.bytes(), &mut dst)
                    .map_err(|e| whole(&self.plan, e.into()))?;
            }
        }
        let addr = |b: &Buf| self.address(b);
        for (k, step) in self.plan.steps.iter().enumerate() {
            let flag = self.flags.get(&k).map_or(0, |f| {
                let (p, _sync) = f.device_ptr(gpu.stream());
                p
            });
            launch_step(&gpu, &self.gemm, step, &addr, flag).map_err(|e| BackendError::Kernel {
                node: step.label.clone(),
                message: e.to_string(),
            })?;
        }
        self.check_flags()
    }

    /// Turns a gather's bad-index flag into an error naming its node (and
    /// clears it for the next run).
    fn check_flags(&mut self) -> Result<(), BackendError> {
        for (&k, flag) in self.flags.iter_mut() {
            let v = self.gpu.download(flag).map_err(|e| whole(&self.plan, e))?[0];
            if v != 0 {
                self.gpu
                    .stream()
                    .memset_zeros(flag)
                    .map_err(|e| whole(&self.plan, e.into()))?;
                let step = &self.plan.steps[k];
                let place = match &step.kernel {
                    Kernel::Gather { rows, .. } => format!("a table of {rows} rows"),
                    Kernel::GatherElements(a) | Kernel::ScatterAdd(a) => {
                        format!("an axis of length {}", a.len)
                    }
                    _ => "its range".into(),
                };
                return Err(BackendError::Kernel {
                    node: step.label.clone(),
                    message: format!("index at position {} is outside {place}", v - 1),
                });
            }
        }
        Ok(())
    }

    fn read_back(&self, b: &Buf, dims: &[usize]) -> Result<HostTensor, BackendError> {
        let mut bytes = vec![0u8; b.bytes];
        if b.bytes > 0 {
            let stream = self.gpu.stream();
            let res = match b.region {
                Region::Arena => {
                    let a = self.arena.as_ref().expect("a run allocated the arena");
                    stream.memcpy_dtoh(&a.slice(b.byte..b.byte + b.bytes), &mut bytes)
                }
                Region::Param(i) => match &self.params[i] {
                    Some(p) => stream.memcpy_dtoh(&p.slice(b.byte..b.byte + b.bytes), &mut bytes),
                    None => {
                        return Err(BackendError::Signature(format!(
                            "param {} is not set",
                            self.plan.params[i].0
                        )))
                    }
                },
                Region::Const(i) => {
                    let c = &self.constants[i];
                    stream.memcpy_dtoh(&c.slice(b.byte..b.byte + b.bytes), &mut bytes)
                }
            };
            res.and_then(|()| stream.synchronize())
                .map_err(|e| whole(&self.plan, e.into()))?;
        }
        HostTensor::from_bytes(b.dtype, dims, bytes).map_err(|e| BackendError::Kernel {
            node: b.node.to_string(),
            message: e.to_string(),
        })
    }
}

impl Executable for CudaExecutable {
    fn set_param(&mut self, index: usize, value: &HostTensor) -> Result<(), BackendError> {
        let Some((name, b)) = self.plan.params.get(index) else {
            return Err(BackendError::Signature(format!(
                "param index {index} out of range ({} params)",
                self.plan.params.len()
            )));
        };
        if value.bytes().len() != b.bytes || value.dtype() != b.dtype {
            return Err(BackendError::Signature(format!(
                "param {name}: {} bytes of {} given for {} bytes of {}",
                value.bytes().len(),
                value.dtype(),
                b.bytes,
                b.dtype
            )));
        }
        let host = if b.bytes == 0 {
            vec![0u8]
        } else {
            value.bytes().to_vec()
        };
        let dev = self.gpu.upload(&host).map_err(|e| self.device_err(e))?;
        self.params[index] = Some(dev);
        Ok(())
    }

    fn run(&mut self, inputs: &[&HostTensor]) -> Result<Vec<HostTensor>, BackendError> {
        self.launch_all(inputs)?;
        let manifest = self.lir.io.outputs.clone();
        self.plan
            .outputs
            .iter()
            .zip(&manifest)
            .map(|(b, (_, shape))| self.read_back(b, &shape.static_dims().unwrap_or_default()))
            .collect()
    }

    /// Copies each update output over its param on the device (see
    /// [`UpdatePlan`] for the order), no host round trip.
    fn run_updating(
        &mut self,
        inputs: &[&HostTensor],
        updates: &[(usize, usize)],
    ) -> Result<Vec<HostTensor>, BackendError> {
        let updates = UpdatePlan::new(&self.plan, updates, UpdateRule::Assign)?;
        self.run_and_update(inputs, &updates, None)
    }

    fn lir(&self) -> &LirModule {
        &self.lir
    }

    fn param_value(&self, index: usize) -> Result<HostTensor, BackendError> {
        let Some((_, b)) = self.plan.params.get(index) else {
            return Err(BackendError::Signature(format!(
                "param index {index} out of range ({} params)",
                self.plan.params.len()
            )));
        };
        let dims = self.lir.io.params[index]
            .2
            .static_dims()
            .unwrap_or_default();
        self.read_back(b, &dims)
    }

    fn release_scratch(&mut self) {
        if let Some(a) = self.arena.take() {
            self.gpu.give_bytes(a);
        }
    }
}

impl Drop for CudaExecutable {
    fn drop(&mut self) {
        self.release_scratch();
    }
}
