//! Adagrad, as `torch.optim.Adagrad` (single-tensor path, dense gradients).

use crate::error::Result;
use crate::float::{ema_sq_into, Float};
use crate::optimizer::{optimizer, Core, Rule};
use crate::optimizers::{apply_weight_decay, check, check_common, signed_grad};
use crate::state::ParamState;

/// Hyperparameters of [`Adagrad`]; defaults are `torch.optim.Adagrad`'s.
#[derive(Debug, Clone, PartialEq)]
pub struct AdagradConfig {
    /// Learning rate (1e-2).
    pub lr: f64,
    /// Learning-rate decay: step `t` uses `lr / (1 + (t - 1) lr_decay)` (0).
    pub lr_decay: f64,
    /// L2 penalty added to the gradient (0).
    pub weight_decay: f64,
    /// Starting value of the sum of squared gradients (0).
    pub initial_accumulator_value: f64,
    /// Added to the denominator (1e-10).
    pub eps: f64,
    /// Ascend instead of descend (false).
    pub maximize: bool,
}

impl Default for AdagradConfig {
    fn default() -> Self {
        AdagradConfig {
            lr: 1e-2,
            lr_decay: 0.0,
            weight_decay: 0.0,
            initial_accumulator_value: 0.0,
            eps: 1e-10,
            maximize: false,
        }
    }
}

optimizer! {
    /// Adagrad (`torch.optim.Adagrad`): `s += g^2`,
    /// `p -= lr / (1 + (t - 1) lr_decay) * g / (sqrt(s) + eps)`, the sum `s`
    /// starting at `initial_accumulator_value`; weight decay is an L2 term.
    Adagrad, AdagradConfig, "Adagrad"
}

impl Adagrad {
    /// The optimizer; errors on a negative rate, decay, eps, weight decay or
    /// initial accumulator value (as torch).
    pub fn new(cfg: AdagradConfig) -> Result<Self> {
        check_common(cfg.lr, cfg.eps, cfg.weight_decay, &[])?;
        check(
            "lr_decay",
            cfg.lr_decay,
            cfg.lr_decay >= 0.0,
            "must be >= 0",
        )?;
        check(
            "initial_accumulator_value",
            cfg.initial_accumulator_value,
            cfg.initial_accumulator_value >= 0.0,
            "must be >= 0",
        )?;
        Ok(Adagrad {
            core: Core::new(cfg.lr),
            cfg,
        })
    }
}

impl Rule for Adagrad {
    fn update<T: Float>(
        &self,
        lr: f64,
        _: &str,
        st: &mut ParamState,
        p: &mut [T],
        grad: &[T],
    ) -> Result<()> {
        let c = &self.cfg;
        let fresh = !st.has::<T>("sum");
        let mut sum = st.take_all::<T>(&[("sum", p.len())])?.remove(0);
        if fresh {
            sum.fill(T::c(c.initial_accumulator_value));
        }
        let mut g = signed_grad(grad, c.maximize);
        apply_weight_decay(p, &mut g, lr, c.weight_decay, false);
        // torch keeps the step in a float32 tensor.
        let t = st.step as f32 as f64;
        let clr = lr / (1.0 + (t - 1.0) * c.lr_decay);
        ema_sq_into(&mut sum, &g, T::one(), T::one());
        let (eps, neg) = (T::c(c.eps), T::c(-clr));
        for ((pi, &gi), &s) in p.iter_mut().zip(&g).zip(&sum) {
            let std = s.sqrt() + eps;
            *pi = *pi + neg * gi / std;
        }
        st.put("sum", sum);
        Ok(())
    }
}
