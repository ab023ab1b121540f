//! LAMB (You et al. 2020, "Large Batch Optimization for Deep Learning"), as
//! `pytorch_lamb.Lamb` (cybertronai/pytorch-lamb, the paper's v3: no bias
//! correction).

use crate::error::Result;
use crate::float::{ema_into, ema_sq_into, norm, Float};
use crate::optimizer::{optimizer, Core, Rule};
use crate::optimizers::check_common;
use crate::state::ParamState;

/// Hyperparameters of [`Lamb`]; defaults are the reference's.
#[derive(Debug, Clone, PartialEq)]
pub struct LambConfig {
    /// Learning rate (1e-3).
    pub lr: f64,
    /// `(beta1, beta2)` ((0.9, 0.999)).
    pub betas: (f64, f64),
    /// Added to the denominator (1e-6).
    pub eps: f64,
    /// Weight decay, added to the Adam step before the trust ratio (0).
    pub weight_decay: f64,
    /// Trust ratio fixed at 1 (plain Adam without bias correction) (false).
    pub adam: bool,
}

impl Default for LambConfig {
    fn default() -> Self {
        LambConfig {
            lr: 1e-3,
            betas: (0.9, 0.999),
            eps: 1e-6,
            weight_decay: 0.0,
            adam: false,
        }
    }
}

optimizer! {
    /// LAMB: `u = m / (sqrt(v) + eps) + wd p`, `p -= lr (||p|| / ||u||) u`
    /// (trust ratio 1 where either norm is zero; the reference divides by zero).
    Lamb, LambConfig, "Lamb"
}

impl Lamb {
    /// The optimizer; errors on invalid hyperparameters.
    pub fn new(cfg: LambConfig) -> Result<Self> {
        check_common(
            cfg.lr,
            cfg.eps,
            cfg.weight_decay,
            &[("betas[0]", cfg.betas.0), ("betas[1]", cfg.betas.1)],
        )?;
        Ok(Lamb {
            core: Core::new(cfg.lr),
            cfg,
        })
    }
}

impl Rule for Lamb {
    fn update<T: Float>(
        &self,
        lr: f64,
        _: &str,
        st: &mut ParamState,
        p: &mut [T],
        g: &[T],
    ) -> Result<()> {
        let c = &self.cfg;
        let n = p.len();
        let specs = [("exp_avg", n), ("exp_avg_sq", n)];
        let mut bufs = st.take_all::<T>(&specs)?;
        let (b1, b2) = c.betas;
        ema_into(&mut bufs[0], g, T::c(b1), T::c(1.0 - b1));
        ema_sq_into(&mut bufs[1], g, T::c(b2), T::c(1.0 - b2));
        let weight_norm = norm(p);
        let eps = T::c(c.eps);
        let mut step: Vec<T> = bufs[0]
            .iter()
            .zip(&bufs[1])
            .map(|(&m, &v)| m / (v.sqrt() + eps))
            .collect();
        if c.weight_decay != 0.0 {
            let wd = T::c(c.weight_decay);
            step.iter_mut()
                .zip(p.iter())
                .for_each(|(s, &pi)| *s = *s + wd * pi);
        }
        let adam_norm = norm(&step);
        let trust = if c.adam || weight_norm == T::zero() || adam_norm == T::zero() {
            T::one()
        } else {
            weight_norm / adam_norm
        };
        let scale = T::c(-lr) * trust;
        p.iter_mut()
            .zip(&step)
            .for_each(|(pi, &s)| *pi = *pi + scale * s);
        st.put_all(&specs, bufs);
        Ok(())
    }
}
