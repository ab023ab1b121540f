//! NAdam with optional decoupled weight decay (NAdamW), as
//! `torch.optim.NAdam` (single-tensor path).

use crate::error::Result;
use crate::float::{ema_sq_into, lerp_into, Float};
use crate::optimizer::{optimizer, Core, Rule};
use crate::optimizers::{apply_weight_decay, check, check_common, signed_grad};
use crate::state::ParamState;

/// Hyperparameters of [`NAdamW`]; defaults are `torch.optim.NAdam`'s except
/// `decoupled_weight_decay`, which is on (that is the "W").
#[derive(Debug, Clone, PartialEq)]
pub struct NAdamConfig {
    /// Learning rate (2e-3).
    pub lr: f64,
    /// `(beta1, beta2)` ((0.9, 0.999)).
    pub betas: (f64, f64),
    /// Added to the denominator (1e-8).
    pub eps: f64,
    /// Weight decay (0).
    pub weight_decay: f64,
    /// Momentum decay `psi` of the `mu_t` schedule (4e-3).
    pub momentum_decay: f64,
    /// Decoupled (AdamW-style) weight decay instead of an L2 term (true).
    pub decoupled_weight_decay: bool,
    /// Ascend instead of descend (false).
    pub maximize: bool,
}

impl NAdamConfig {
    /// `torch.optim.NAdam`'s defaults exactly (L2 weight decay, not
    /// decoupled).
    pub fn nadam() -> Self {
        NAdamConfig {
            decoupled_weight_decay: false,
            ..Default::default()
        }
    }
}

impl Default for NAdamConfig {
    fn default() -> Self {
        NAdamConfig {
            lr: 2e-3,
            betas: (0.9, 0.999),
            eps: 1e-8,
            weight_decay: 0.0,
            momentum_decay: 4e-3,
            decoupled_weight_decay: true,
            maximize: false,
        }
    }
}

optimizer! {
    /// NAdam (Dozat 2016, torch's form) with `mu_t = beta1 (1 - 0.5 * 0.96^(t psi))`.
    /// As in torch, the running product of the `mu_t` is kept in `f32` for both
    /// precisions (torch keeps it in a default-dtype scalar tensor).
    NAdamW, NAdamConfig, "NAdamW"
}

impl NAdamW {
    /// The optimizer; errors on invalid hyperparameters.
    pub fn new(cfg: NAdamConfig) -> Result<Self> {
        check_common(
            cfg.lr,
            cfg.eps,
            cfg.weight_decay,
            &[("betas[0]", cfg.betas.0), ("betas[1]", cfg.betas.1)],
        )?;
        check(
            "momentum_decay",
            cfg.momentum_decay,
            cfg.momentum_decay >= 0.0,
            "must be >= 0",
        )?;
        Ok(NAdamW {
            core: Core::new(cfg.lr),
            cfg,
        })
    }
}

impl Rule for NAdamW {
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
        let (b1, b2) = c.betas;
        let t = st.step as f64;
        let bc2 = 1.0 - b2.powf(t);
        apply_weight_decay(p, &mut g, lr, c.weight_decay, c.decoupled_weight_decay);
        let mu = b1 * (1.0 - 0.5 * 0.96f64.powf(t * c.momentum_decay));
        let mu_next = b1 * (1.0 - 0.5 * 0.96f64.powf((t + 1.0) * c.momentum_decay));
        let mu_product = (st.scalar("mu_product", 1.0) as f32 * mu as f32) as f64;
        st.scalars.insert("mu_product".into(), mu_product);
        lerp_into(&mut bufs[0], &g, T::c(1.0 - b1));
        ema_sq_into(&mut bufs[1], &g, T::c(b2), T::c(1.0 - b2));
        let mu_product_next = mu_product * mu_next;
        let (bc2, eps) = (T::c(bc2), T::c(c.eps));
        let wg = T::c(-lr * (1.0 - mu) / (1.0 - mu_product));
        let wm = T::c((-lr * mu_next) / (1.0 - mu_product_next));
        for (((pi, &gi), &m), &v) in p.iter_mut().zip(&g).zip(&bufs[0]).zip(&bufs[1]) {
            let denom = (v / bc2).sqrt() + eps;
            *pi = *pi + wg * gi / denom;
            *pi = *pi + wm * m / denom;
        }
        st.put_all(&specs, bufs);
        Ok(())
    }
}
