//! Sophia-G (Liu et al. 2023, "Sophia: A Scalable Stochastic Second-order
//! Optimizer"), as the authors' `SophiaG` (Liuhong99/Sophia, `sophia.py`).

use crate::error::{OptimError, Result};
use crate::float::{ema_into, ema_sq_into, Float};
use crate::optimizer::{optimizer, Core, Rule};
use crate::optimizers::{apply_weight_decay, check, check_common};
use crate::state::ParamState;

/// Hyperparameters of [`Sophia`]; defaults are the reference's.
#[derive(Debug, Clone, PartialEq)]
pub struct SophiaConfig {
    /// Learning rate (1e-4).
    pub lr: f64,
    /// `(beta1, beta2)`: momentum and Hessian-estimate decay ((0.965, 0.99)).
    pub betas: (f64, f64),
    /// Clipping scale `rho` (0.04).
    pub rho: f64,
    /// Decoupled weight decay (0.1).
    pub weight_decay: f64,
    /// Tokens per batch `bs` of the reference's `step(bs=...)` (5120).
    pub bs: f64,
    /// Ascend instead of descend (false).
    pub maximize: bool,
}

impl Default for SophiaConfig {
    fn default() -> Self {
        SophiaConfig {
            lr: 1e-4,
            betas: (0.965, 0.99),
            rho: 0.04,
            weight_decay: 0.1,
            bs: 5120.0,
            maximize: false,
        }
    }
}

optimizer! {
    /// Sophia-G: `m = beta1 m + (1-beta1) g`,
    /// `p -= lr sign(m) min(|m| / (rho bs h + 1e-15), 1)`, with the diagonal
    /// Hessian estimate `h` refreshed by [`Sophia::update_hessian`] (every `k`
    /// iterations in the reference training loop) from the gradient of the loss
    /// on labels sampled from the model (the Gauss–Newton–Bartlett estimator):
    /// `h = beta2 h + (1-beta2) g_hat^2`.
    Sophia, SophiaConfig, "Sophia"
}

impl Sophia {
    /// The optimizer; errors on invalid hyperparameters.
    pub fn new(cfg: SophiaConfig) -> Result<Self> {
        check_common(
            cfg.lr,
            0.0,
            cfg.weight_decay,
            &[("betas[0]", cfg.betas.0), ("betas[1]", cfg.betas.1)],
        )?;
        check("rho", cfg.rho, cfg.rho >= 0.0, "must be >= 0")?;
        check("bs", cfg.bs, cfg.bs > 0.0, "must be > 0")?;
        Ok(Sophia {
            core: Core::new(cfg.lr),
            cfg,
        })
    }

    /// Folds `g_hat` (the gradient on sampled labels) into the Hessian
    /// estimate of parameter `name` (reference `update_hessian`).
    pub fn update_hessian<T: Float>(
        &mut self,
        name: &str,
        shape: &[usize],
        g_hat: &[T],
    ) -> Result<()> {
        let b2 = self.cfg.betas.1;
        let st = self.core.prepare(name, shape, g_hat, g_hat)?;
        let specs = [("hessian", g_hat.len())];
        let mut bufs = st.take_all::<T>(&specs).map_err(|e| match e {
            OptimError::BadState(m) => OptimError::BadState(format!("parameter `{name}`: {m}")),
            e => e,
        })?;
        ema_sq_into(&mut bufs[0], g_hat, T::c(b2), T::c(1.0 - b2));
        st.put_all(&specs, bufs);
        Ok(())
    }
}

impl Rule for Sophia {
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
        let specs = [("exp_avg", n), ("hessian", n)];
        let mut bufs = st.take_all::<T>(&specs)?;
        let g = crate::optimizers::signed_grad(grad, c.maximize);
        apply_weight_decay(p, &mut [], lr, c.weight_decay, true);
        ema_into(&mut bufs[0], &g, T::c(c.betas.0), T::c(1.0 - c.betas.0));
        let (k, tiny, neg_lr) = (T::c(c.rho * c.bs), T::c(1e-15), T::c(-lr));
        for ((pi, &m), &h) in p.iter_mut().zip(&bufs[0]).zip(&bufs[1]) {
            let ratio = (m.abs() / (k * h + tiny)).min(T::one());
            *pi = *pi + neg_lr * crate::optimizers::lion::sign(m) * ratio;
        }
        st.put_all(&specs, bufs);
        Ok(())
    }
}
