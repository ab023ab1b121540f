//! Adadelta, as `torch.optim.Adadelta` (single-tensor path).

use crate::error::Result;
use crate::float::{axpy, ema_sq_into, Float};
use crate::optimizer::{optimizer, Core, Rule};
use crate::optimizers::{apply_weight_decay, check, check_common, signed_grad};
use crate::state::ParamState;

/// Hyperparameters of [`Adadelta`]; defaults are `torch.optim.Adadelta`'s.
#[derive(Debug, Clone, PartialEq)]
pub struct AdadeltaConfig {
    /// Learning rate scaling the delta (1.0).
    pub lr: f64,
    /// Decay of the running averages (0.9).
    pub rho: f64,
    /// Added inside both square roots (1e-6).
    pub eps: f64,
    /// L2 penalty added to the gradient (0).
    pub weight_decay: f64,
    /// Ascend instead of descend (false).
    pub maximize: bool,
}

impl Default for AdadeltaConfig {
    fn default() -> Self {
        AdadeltaConfig {
            lr: 1.0,
            rho: 0.9,
            eps: 1e-6,
            weight_decay: 0.0,
            maximize: false,
        }
    }
}

optimizer! {
    /// Adadelta (`torch.optim.Adadelta`): `v = rho v + (1 - rho) g^2`,
    /// `d = sqrt(u + eps) / sqrt(v + eps) * g`, `u = rho u + (1 - rho) d^2`,
    /// `p -= lr d`; weight decay is an L2 term.
    Adadelta, AdadeltaConfig, "Adadelta"
}

impl Adadelta {
    /// The optimizer; errors on a negative rate / eps / decay or `rho`
    /// outside `[0, 1]` (as torch).
    pub fn new(cfg: AdadeltaConfig) -> Result<Self> {
        check_common(cfg.lr, cfg.eps, cfg.weight_decay, &[])?;
        check(
            "rho",
            cfg.rho,
            (0.0..=1.0).contains(&cfg.rho),
            "must be in [0, 1]",
        )?;
        Ok(Adadelta {
            core: Core::new(cfg.lr),
            cfg,
        })
    }
}

impl Rule for Adadelta {
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
        let specs = [("square_avg", n), ("acc_delta", n)];
        let mut bufs = st.take_all::<T>(&specs)?;
        let mut g = signed_grad(grad, c.maximize);
        apply_weight_decay(p, &mut g, lr, c.weight_decay, false);
        let (rho, rho1, eps) = (T::c(c.rho), T::c(1.0 - c.rho), T::c(c.eps));
        ema_sq_into(&mut bufs[0], &g, rho, rho1);
        let delta: Vec<T> = bufs[0]
            .iter()
            .zip(&bufs[1])
            .zip(&g)
            .map(|((&v, &u), &gi)| (u + eps).sqrt() / (v + eps).sqrt() * gi)
            .collect();
        ema_sq_into(&mut bufs[1], &delta, rho, rho1);
        axpy(p, T::c(-lr), &delta);
        st.put_all(&specs, bufs);
        Ok(())
    }
}
