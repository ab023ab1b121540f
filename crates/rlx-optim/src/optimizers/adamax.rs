//! Adamax, as `torch.optim.Adamax` (single-tensor path).

use crate::error::Result;
use crate::float::{lerp_into, Float};
use crate::optimizer::{optimizer, Core, Rule};
use crate::optimizers::{apply_weight_decay, check_common, max_nan, signed_grad};
use crate::state::ParamState;

/// Hyperparameters of [`Adamax`]; defaults are `torch.optim.Adamax`'s.
#[derive(Debug, Clone, PartialEq)]
pub struct AdamaxConfig {
    /// Learning rate (2e-3).
    pub lr: f64,
    /// `(beta1, beta2)` ((0.9, 0.999)).
    pub betas: (f64, f64),
    /// Added to `|g|` in the infinity norm (1e-8).
    pub eps: f64,
    /// L2 penalty added to the gradient (0).
    pub weight_decay: f64,
    /// Ascend instead of descend (false).
    pub maximize: bool,
}

impl Default for AdamaxConfig {
    fn default() -> Self {
        AdamaxConfig {
            lr: 2e-3,
            betas: (0.9, 0.999),
            eps: 1e-8,
            weight_decay: 0.0,
            maximize: false,
        }
    }
}

optimizer! {
    /// Adamax (`torch.optim.Adamax`, Adam with the infinity norm):
    /// `m = lerp(m, g, 1 - beta1)`, `u = max(beta2 u, |g| + eps)`,
    /// `p -= lr / (1 - beta1^t) * m / u`; weight decay is an L2 term.
    Adamax, AdamaxConfig, "Adamax"
}

impl Adamax {
    /// The optimizer; errors on a negative rate / eps / decay or a beta
    /// outside `[0, 1)`.
    pub fn new(cfg: AdamaxConfig) -> Result<Self> {
        check_common(
            cfg.lr,
            cfg.eps,
            cfg.weight_decay,
            &[("betas[0]", cfg.betas.0), ("betas[1]", cfg.betas.1)],
        )?;
        Ok(Adamax {
            core: Core::new(cfg.lr),
            cfg,
        })
    }
}

impl Rule for Adamax {
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
        let specs = [("exp_avg", n), ("exp_inf", n)];
        let mut bufs = st.take_all::<T>(&specs)?;
        let mut g = signed_grad(grad, c.maximize);
        apply_weight_decay(p, &mut g, lr, c.weight_decay, false);
        let (b1, b2) = c.betas;
        lerp_into(&mut bufs[0], &g, T::c(1.0 - b1));
        let (b2t, eps) = (T::c(b2), T::c(c.eps));
        for (u, &gi) in bufs[1].iter_mut().zip(&g) {
            *u = max_nan(*u * b2t, gi.abs() + eps);
        }
        // torch keeps the step in a float32 tensor.
        let t = st.step as f32 as f64;
        let clr = lr / (1.0 - b1.powf(t));
        let neg = T::c(-clr);
        for ((pi, &m), &u) in p.iter_mut().zip(&bufs[0]).zip(&bufs[1]) {
            *pi = *pi + neg * m / u;
        }
        st.put_all(&specs, bufs);
        Ok(())
    }
}
