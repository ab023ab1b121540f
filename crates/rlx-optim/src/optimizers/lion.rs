//! Lion (Chen et al. 2023, "Symbolic Discovery of Optimization Algorithms"),
//! as the authors' `lion_pytorch.py` (google/automl).

use crate::error::Result;
use crate::float::{ema_into, Float};
use crate::optimizer::{optimizer, Core, Rule};
use crate::optimizers::{apply_weight_decay, check_common};
use crate::state::ParamState;

/// Hyperparameters of [`Lion`]; defaults are the reference's.
#[derive(Debug, Clone, PartialEq)]
pub struct LionConfig {
    /// Learning rate (1e-4).
    pub lr: f64,
    /// `(beta1, beta2)`: interpolation for the update, decay of the momentum ((0.9, 0.99)).
    pub betas: (f64, f64),
    /// Decoupled weight decay (0).
    pub weight_decay: f64,
}

impl Default for LionConfig {
    fn default() -> Self {
        LionConfig {
            lr: 1e-4,
            betas: (0.9, 0.99),
            weight_decay: 0.0,
        }
    }
}

optimizer! {
    /// Lion: `p *= 1 - lr wd; p -= lr sign(beta1 m + (1 - beta1) g); m = beta2 m + (1 - beta2) g`.
    Lion, LionConfig, "Lion"
}

impl Lion {
    /// The optimizer; errors on invalid hyperparameters.
    pub fn new(cfg: LionConfig) -> Result<Self> {
        check_common(
            cfg.lr,
            0.0,
            cfg.weight_decay,
            &[("betas[0]", cfg.betas.0), ("betas[1]", cfg.betas.1)],
        )?;
        Ok(Lion {
            core: Core::new(cfg.lr),
            cfg,
        })
    }
}

/// `sign` with `sign(0) = 0`, as `torch.sign`.
pub(crate) fn sign<T: Float>(x: T) -> T {
    if x > T::zero() {
        T::one()
    } else if x < T::zero() {
        -T::one()
    } else {
        T::zero()
    }
}

impl Rule for Lion {
    fn update<T: Float>(
        &self,
        lr: f64,
        _: &str,
        st: &mut ParamState,
        p: &mut [T],
        g: &[T],
    ) -> Result<()> {
        let c = &self.cfg;
        let specs = [("exp_avg", p.len())];
        let mut bufs = st.take_all::<T>(&specs)?;
        apply_weight_decay(p, &mut [], lr, c.weight_decay, true);
        let (b1, b2) = (T::c(c.betas.0), T::c(c.betas.1));
        let (one_b1, neg_lr) = (T::c(1.0 - c.betas.0), T::c(-lr));
        for ((pi, &m), &gi) in p.iter_mut().zip(&bufs[0]).zip(g) {
            *pi = *pi + neg_lr * sign(m * b1 + gi * one_b1);
        }
        ema_into(&mut bufs[0], g, b2, T::c(1.0 - c.betas.1));
        st.put_all(&specs, bufs);
        Ok(())
    }
}
