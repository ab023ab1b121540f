//! Rectified Adam, as `torch.optim.RAdam` (single-tensor path).

use crate::error::Result;
use crate::float::{ema_sq_into, lerp_into, Float};
use crate::optimizer::{optimizer, Core, Rule};
use crate::optimizers::{apply_weight_decay, check_common, signed_grad};
use crate::state::ParamState;

/// Hyperparameters of [`RAdam`]; defaults are `torch.optim.RAdam`'s.
#[derive(Debug, Clone, PartialEq)]
pub struct RAdamConfig {
    /// Learning rate (1e-3).
    pub lr: f64,
    /// `(beta1, beta2)` ((0.9, 0.999)).
    pub betas: (f64, f64),
    /// Added to the denominator (1e-8).
    pub eps: f64,
    /// Weight decay (0).
    pub weight_decay: f64,
    /// Decoupled weight decay instead of an L2 term (false).
    pub decoupled_weight_decay: bool,
    /// Ascend instead of descend (false).
    pub maximize: bool,
}

impl Default for RAdamConfig {
    fn default() -> Self {
        RAdamConfig {
            lr: 1e-3,
            betas: (0.9, 0.999),
            eps: 1e-8,
            weight_decay: 0.0,
            decoupled_weight_decay: false,
            maximize: false,
        }
    }
}

optimizer! {
    /// RAdam (Liu et al. 2020): plain bias-corrected momentum while the
    /// variance estimate is unreliable (`rho_t <= 5`), rectified Adam after.
    RAdam, RAdamConfig, "RAdam"
}

impl RAdam {
    /// The optimizer; errors on invalid hyperparameters.
    pub fn new(cfg: RAdamConfig) -> Result<Self> {
        check_common(
            cfg.lr,
            cfg.eps,
            cfg.weight_decay,
            &[("betas[0]", cfg.betas.0), ("betas[1]", cfg.betas.1)],
        )?;
        Ok(RAdam {
            core: Core::new(cfg.lr),
            cfg,
        })
    }
}

impl Rule for RAdam {
    fn update<T: Float>(
        &self,
        lr: f64,
        _: &str,
        st: &mut ParamState,
        p: &mut [T],
        grad: &[T],
    ) -> Result<()> {
        let c = &self.cfg;
        let n = p.len();
        let specs = [("exp_avg", n), ("exp_avg_sq", n)];
        let mut bufs = st.take_all::<T>(&specs)?;
        let mut g = signed_grad(grad, c.maximize);
        apply_weight_decay(p, &mut g, lr, c.weight_decay, c.decoupled_weight_decay);
        let (b1, b2) = c.betas;
        lerp_into(&mut bufs[0], &g, T::c(1.0 - b1));
        ema_sq_into(&mut bufs[1], &g, T::c(b2), T::c(1.0 - b2));
        let t = st.step as f64;
        let bc1 = T::c(1.0 - b1.powf(t));
        let bc2 = 1.0 - b2.powf(t);
        let rho_inf = 2.0 / (1.0 - b2) - 1.0;
        let rho_t = rho_inf - 2.0 * t * b2.powf(t) / bc2;
        let lr_t = T::c(lr);
        if rho_t > 5.0 {
            let rect = ((rho_t - 4.0) * (rho_t - 2.0) * rho_inf
                / ((rho_inf - 4.0) * (rho_inf - 2.0) * rho_t))
                .powf(0.5);
            let (rect, bc2_sqrt, eps) = (T::c(rect), T::c(bc2.powf(0.5)), T::c(c.eps));
            for ((pi, &m), &v) in p.iter_mut().zip(&bufs[0]).zip(&bufs[1]) {
                let adaptive = bc2_sqrt / (v.sqrt() + eps);
                *pi = *pi - m / bc1 * lr_t * adaptive * rect;
            }
        } else {
            for (pi, &m) in p.iter_mut().zip(&bufs[0]) {
                *pi = *pi - m / bc1 * lr_t;
            }
        }
        st.put_all(&specs, bufs);
        Ok(())
    }
}
