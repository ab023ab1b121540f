//! Optimizer updates on the device (`optim.cu`): SGD (momentum, dampening,
//! Nesterov, L2 weight decay) and Adam / AdamW (amsgrad) steps that update
//! a parameter in place from its gradient, with their state buffers kept
//! on the device, so a training loop's parameters never leave it. The
//! arithmetic is torch's single-tensor path in f32, as `rlx-optim`'s.

use crate::gpu::{CudaGpu, GpuError};
use crate::launch::grid_stride;
use crate::step_launch::{KernelArg, KernelLaunch};
use cudarc::driver::{CudaSlice, DevicePtr, DevicePtrMut};
use std::collections::HashMap;

/// SGD hyperparameters (`torch.optim.SGD`'s meaning).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SgdUpdate {
    /// Learning rate.
    pub lr: f32,
    /// Momentum factor (0: none, no state).
    pub momentum: f32,
    /// Dampening of the momentum.
    pub dampening: f32,
    /// L2 penalty added to the gradient.
    pub weight_decay: f32,
    /// Nesterov momentum.
    pub nesterov: bool,
    /// Ascend instead of descend.
    pub maximize: bool,
}

/// Adam / AdamW hyperparameters (`torch.optim.Adam` / `AdamW`'s meaning).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AdamUpdate {
    /// Learning rate.
    pub lr: f64,
    /// `(beta1, beta2)`.
    pub betas: (f64, f64),
    /// Added to the denominator.
    pub eps: f32,
    /// Weight decay: an L2 term, or decoupled (AdamW).
    pub weight_decay: f64,
    /// Decoupled weight decay `p *= 1 - lr wd` (AdamW).
    pub decoupled: bool,
    /// Use the running maximum of the second moment.
    pub amsgrad: bool,
    /// Ascend instead of descend.
    pub maximize: bool,
}

/// One parameter's SGD state on the device.
#[derive(Debug, Default)]
pub struct SgdState {
    momentum: Option<CudaSlice<f32>>,
}

/// One parameter's Adam state on the device.
#[derive(Debug, Default)]
pub struct AdamState {
    moments: Option<[CudaSlice<f32>; 2]>,
    max_second: Option<CudaSlice<f32>>,
    /// Steps taken.
    pub step: u64,
}

fn same_len(p: usize, g: usize) -> Result<(), GpuError> {
    if p != g {
        return Err(GpuError::BadInput(format!(
            "optimizer step: a parameter of {p} elements with a gradient of {g}"
        )));
    }
    Ok(())
}

impl CudaGpu {
    /// One SGD step of `p` by `grad`, in place.
    pub fn sgd_step(
        &self,
        cfg: &SgdUpdate,
        state: &mut SgdState,
        p: &mut CudaSlice<f32>,
        grad: &CudaSlice<f32>,
    ) -> Result<(), GpuError> {
        // SAFETY: `on_slices` passes addresses of n f32s each.
        self.on_slices(p, grad, |p, g, n| unsafe {
            self.sgd_at(cfg, state, p, g, n)
        })
    }

    /// One Adam (or AdamW) step of `p` by `grad`, in place.
    pub fn adam_step(
        &self,
        cfg: &AdamUpdate,
        state: &mut AdamState,
        p: &mut CudaSlice<f32>,
        grad: &CudaSlice<f32>,
    ) -> Result<(), GpuError> {
        // SAFETY: `on_slices` passes addresses of n f32s each.
        self.on_slices(p, grad, |p, g, n| unsafe {
            self.adam_at(cfg, state, p, g, n)
        })
    }

    /// Runs `step` on the addresses of `p` and `grad` and their length,
    /// once their lengths are checked equal.
    fn on_slices(
        &self,
        p: &mut CudaSlice<f32>,
        grad: &CudaSlice<f32>,
        step: impl FnOnce(u64, u64, usize) -> Result<(), GpuError>,
    ) -> Result<(), GpuError> {
        let n = p.len();
        same_len(n, grad.len())?;
        let (p_at, _p) = p.device_ptr_mut(self.stream());
        let (g_at, _g) = grad.device_ptr(self.stream());
        step(p_at, g_at, n)
    }

    /// [`CudaGpu::sgd_step`] on raw addresses of `n` f32s each.
    ///
    /// # Safety
    /// `p` and `grad` must be live device addresses of `n` f32s on this
    /// device, `p` written by nothing else until the stream reaches it.
    pub(crate) unsafe fn sgd_at(
        &self,
        cfg: &SgdUpdate,
        state: &mut SgdState,
        p: u64,
        grad: u64,
        n: usize,
    ) -> Result<(), GpuError> {
        state.check_len(n)?;
        let first = state.momentum.is_none();
        if cfg.momentum != 0.0 && state.momentum.is_none() {
            state.momentum = Some(self.zeros::<f32>(n)?);
        }
        // A null momentum buffer: plain SGD.
        let buf = match (cfg.momentum != 0.0, state.momentum.as_mut()) {
            (true, Some(b)) => Some(b.device_ptr_mut(self.stream())),
            _ => None,
        };
        let buf_at = buf.as_ref().map_or(0, |b| b.0);
        let k = sgd_launch(cfg, first, [p, grad, buf_at], n);
        // SAFETY: `rlx_sgd_f32`'s arguments; p, grad (the caller's promise)
        // and the momentum buffer hold n f32s.
        unsafe { self.launch_described(&k) }?;
        Ok(())
    }

    /// [`CudaGpu::adam_step`] on raw addresses of `n` f32s each.
    ///
    /// # Safety
    /// As [`CudaGpu::sgd_at`].
    pub(crate) unsafe fn adam_at(
        &self,
        cfg: &AdamUpdate,
        state: &mut AdamState,
        p: u64,
        grad: u64,
        n: usize,
    ) -> Result<(), GpuError> {
        state.check_len(n)?;
        if state.moments.is_none() {
            state.moments = Some([self.zeros::<f32>(n)?, self.zeros::<f32>(n)?]);
        }
        if cfg.amsgrad && state.max_second.is_none() {
            state.max_second = Some(self.zeros::<f32>(n)?);
        }
        state.step += 1;
        let stream = self.stream();
        let Some([m, v]) = state.moments.as_mut() else {
            unreachable!("allocated above")
        };
        let (m_at, _m) = m.device_ptr_mut(stream);
        let (v_at, _v) = v.device_ptr_mut(stream);
        // A null running maximum: no amsgrad.
        let vmax = match (cfg.amsgrad, state.max_second.as_mut()) {
            (true, Some(b)) => Some(b.device_ptr_mut(stream)),
            _ => None,
        };
        let vmax_at = vmax.as_ref().map_or(0, |b| b.0);
        let k = adam_launch(cfg, state.step, [p, grad, m_at, v_at, vmax_at], n);
        // SAFETY: `rlx_adam_f32`'s arguments; p, grad (the caller's
        // promise) and every state buffer hold n f32s.
        unsafe { self.launch_described(&k) }?;
        Ok(())
    }
}

/// The `rlx_sgd_f32` launch of one SGD step over `n` f32s at `p` /
/// `grad` / `buf` (the momentum buffer, 0 without momentum); `first`: the
/// momentum buffer's first step.
pub fn sgd_launch(
    cfg: &SgdUpdate,
    first: bool,
    [p, grad, buf]: [u64; 3],
    n: usize,
) -> KernelLaunch {
    use KernelArg::{Ptr, F32, I32, I64};
    let args = vec![
        Ptr(p),
        Ptr(grad),
        Ptr(buf),
        I64(n as i64),
        F32(cfg.lr),
        F32(cfg.momentum),
        F32(cfg.dampening),
        F32(cfg.weight_decay),
        I32(cfg.nesterov as i32),
        I32(cfg.maximize as i32),
        I32(first as i32),
    ];
    described("rlx_sgd_f32", args, n)
}

/// The `rlx_adam_f32` launch of step `t` (from 1) over `n` f32s at `p`,
/// `grad`, the moments `m` / `v` and `vmax` (0 without amsgrad).
pub fn adam_launch(
    cfg: &AdamUpdate,
    t: u64,
    [p, grad, m, v, vmax]: [u64; 5],
    n: usize,
) -> KernelLaunch {
    use KernelArg::{Ptr, F32, I32, I64};
    // Bias corrections in f64, as rlx-optim computes them.
    let t = t as f64;
    let (b1, b2) = cfg.betas;
    let step_size = (cfg.lr / (1.0 - b1.powf(t))) as f32;
    let bc2_sqrt = (1.0 - b2.powf(t)).sqrt() as f32;
    let decay = (1.0 - cfg.lr * cfg.weight_decay) as f32;
    let args = vec![
        Ptr(p),
        Ptr(grad),
        Ptr(m),
        Ptr(v),
        Ptr(vmax),
        I64(n as i64),
        F32(b1 as f32),
        F32(b2 as f32),
        F32(cfg.eps),
        F32(cfg.weight_decay as f32),
        F32(decay),
        I32(cfg.decoupled as i32),
        I32(cfg.maximize as i32),
        F32(step_size),
        F32(bc2_sqrt),
    ];
    described("rlx_adam_f32", args, n)
}

fn described(entry: &str, args: Vec<KernelArg>, n: usize) -> KernelLaunch {
    let cfg = grid_stride(n);
    KernelLaunch {
        module: "optim",
        entry: entry.into(),
        args,
        grid: cfg.grid_dim,
        block: cfg.block_dim,
    }
}

impl SgdState {
    fn check_len(&self, n: usize) -> Result<(), GpuError> {
        match &self.momentum {
            Some(b) => same_len(b.len(), n),
            None => Ok(()),
        }
    }
}

impl AdamState {
    fn check_len(&self, n: usize) -> Result<(), GpuError> {
        match &self.moments {
            Some([m, _]) => same_len(m.len(), n),
            None => Ok(()),
        }
    }
}

/// Which optimizer a [`DeviceOptimizer`] applies.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum OptimizerRule {
    /// SGD.
    Sgd(SgdUpdate),
    /// Adam / AdamW.
    Adam(AdamUpdate),
}

/// An optimizer applied on the device to params from gradients a run
/// computed ([`crate::CudaExecutable::run_training_step`]), with each
/// param's state on the device, keyed by its manifest index.
#[derive(Debug)]
pub struct DeviceOptimizer {
    rule: OptimizerRule,
    sgd: HashMap<usize, SgdState>,
    adam: HashMap<usize, AdamState>,
}

impl DeviceOptimizer {
    /// A fresh optimizer (no state yet).
    pub fn new(rule: OptimizerRule) -> DeviceOptimizer {
        DeviceOptimizer {
            rule,
            sgd: HashMap::new(),
            adam: HashMap::new(),
        }
    }

    /// Its rule.
    pub fn rule(&self) -> &OptimizerRule {
        &self.rule
    }

    /// Steps applied to param `param` (Adam counts them; SGD reports 0).
    pub fn steps(&self, param: usize) -> u64 {
        self.adam.get(&param).map_or(0, |s| s.step)
    }

    /// One step of param `param` at device address `p` by `grad` (`n` f32s each).
    ///
    /// # Safety
    /// As [`CudaGpu::sgd_at`].
    pub(crate) unsafe fn step_at(
        &mut self,
        gpu: &CudaGpu,
        param: usize,
        p: u64,
        grad: u64,
        n: usize,
    ) -> Result<(), GpuError> {
        // SAFETY: forwarded from the caller.
        unsafe {
            match &self.rule {
                OptimizerRule::Sgd(c) => {
                    gpu.sgd_at(c, self.sgd.entry(param).or_default(), p, grad, n)
                }
                OptimizerRule::Adam(c) => {
                    gpu.adam_at(c, self.adam.entry(param).or_default(), p, grad, n)
                }
            }
        }
    }
}
