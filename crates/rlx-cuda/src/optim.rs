//! Optimizer updates on the device (`optim.cu`): SGD (momentum, dampening,
//! Nesterov, L2 weight decay) and Adam / AdamW (amsgrad) steps that update
//! a parameter in place from its gradient, with their state buffers kept
//! on the device, so a training loop's parameters never leave it. The
//! arithmetic is torch's single-tensor path in f32, as `rlx-optim`'s.

use crate::gpu::{CudaGpu, GpuError};
use crate::launch::grid_stride;
use cudarc::driver::{CudaSlice, PushKernelArg};

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
        same_len(p.len(), grad.len())?;
        let f = self.function("optim", "rlx_sgd_f32")?;
        let first = i32::from(state.momentum.is_none());
        if cfg.momentum != 0.0 && state.momentum.is_none() {
            state.momentum = Some(self.zeros::<f32>(p.len())?);
        }
        let n = p.len() as i64;
        let (nesterov, maximize) = (cfg.nesterov as i32, cfg.maximize as i32);
        let mut l = self.stream().launch_builder(&f);
        l.arg(&mut *p).arg(grad);
        // A null momentum buffer: plain SGD.
        let null = 0u64;
        match (cfg.momentum != 0.0, state.momentum.as_mut()) {
            (true, Some(buf)) => l.arg(buf),
            _ => l.arg(&null),
        };
        l.arg(&n)
            .arg(&cfg.lr)
            .arg(&cfg.momentum)
            .arg(&cfg.dampening)
            .arg(&cfg.weight_decay)
            .arg(&nesterov)
            .arg(&maximize)
            .arg(&first);
        // SAFETY: `rlx_sgd_f32`; p, grad and the buffer hold n f32s.
        unsafe { l.launch(grid_stride(n as usize)) }?;
        Ok(())
    }

    /// One Adam (or AdamW) step of `p` by `grad`, in place.
    pub fn adam_step(
        &self,
        cfg: &AdamUpdate,
        state: &mut AdamState,
        p: &mut CudaSlice<f32>,
        grad: &CudaSlice<f32>,
    ) -> Result<(), GpuError> {
        same_len(p.len(), grad.len())?;
        let f = self.function("optim", "rlx_adam_f32")?;
        if state.moments.is_none() {
            state.moments = Some([self.zeros::<f32>(p.len())?, self.zeros::<f32>(p.len())?]);
        }
        if cfg.amsgrad && state.max_second.is_none() {
            state.max_second = Some(self.zeros::<f32>(p.len())?);
        }
        state.step += 1;
        // Bias corrections in f64, as rlx-optim computes them.
        let t = state.step as f64;
        let (b1, b2) = cfg.betas;
        let step_size = (cfg.lr / (1.0 - b1.powf(t))) as f32;
        let bc2_sqrt = (1.0 - b2.powf(t)).sqrt() as f32;
        let decay = (1.0 - cfg.lr * cfg.weight_decay) as f32;
        let (b1f, b2f, wd) = (b1 as f32, b2 as f32, cfg.weight_decay as f32);
        let (decoupled, maximize) = (cfg.decoupled as i32, cfg.maximize as i32);
        let n = p.len() as i64;
        let null = 0u64;
        let Some([m, v]) = state.moments.as_mut() else {
            unreachable!("allocated above")
        };
        let mut l = self.stream().launch_builder(&f);
        l.arg(&mut *p).arg(grad).arg(m).arg(v);
        match (cfg.amsgrad, state.max_second.as_mut()) {
            (true, Some(vmax)) => l.arg(vmax),
            _ => l.arg(&null),
        };
        l.arg(&n)
            .arg(&b1f)
            .arg(&b2f)
            .arg(&cfg.eps)
            .arg(&wd)
            .arg(&decay)
            .arg(&decoupled)
            .arg(&maximize)
            .arg(&step_size)
            .arg(&bc2_sqrt);
        // SAFETY: `rlx_adam_f32`; p, grad and every state buffer hold n f32s.
        unsafe { l.launch(grid_stride(n as usize)) }?;
        Ok(())
    }
}
