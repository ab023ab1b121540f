//! Stochastic gradient descent, as `torch.optim.SGD` (single-tensor path).

use crate::error::Result;
use crate::float::{axpy, ema_into, Float};
use crate::optimizer::{optimizer, Core, Rule};
use crate::optimizers::{apply_weight_decay, check, check_common, signed_grad};
use crate::state::ParamState;

/// Hyperparameters of [`Sgd`]; defaults are `torch.optim.SGD`'s.
#[derive(Debug, Clone, PartialEq)]
pub struct SgdConfig {
    /// Learning rate (1e-3).
    pub lr: f64,
    /// Momentum factor (0).
    pub momentum: f64,
    /// Dampening of the momentum (0).
    pub dampening: f64,
    /// L2 penalty added to the gradient (0).
    pub weight_decay: f64,
    /// Nesterov momentum (false; needs momentum > 0 and dampening 0).
    pub nesterov: bool,
    /// Ascend instead of descend (false).
    pub maximize: bool,
}

impl Default for SgdConfig {
    fn default() -> Self {
        SgdConfig {
            lr: 1e-3,
            momentum: 0.0,
            dampening: 0.0,
            weight_decay: 0.0,
            nesterov: false,
            maximize: false,
        }
    }
}

optimizer! {
    /// SGD with momentum, dampening, Nesterov and L2 weight decay
    /// (`torch.optim.SGD`): `b = mu b + (1 - dampening) g` (`b = g` on the first
    /// step), `p -= lr (g + mu b)` with Nesterov, else `p -= lr b`.
    Sgd, SgdConfig, "Sgd"
}

impl Sgd {
    /// An SGD optimizer; errors on a negative rate / momentum / decay, or
    /// Nesterov without momentum or with dampening (as torch).
    pub fn new(cfg: SgdConfig) -> Result<Self> {
        check_common(cfg.lr, 0.0, cfg.weight_decay, &[])?;
        check(
            "momentum",
            cfg.momentum,
            cfg.momentum >= 0.0,
            "must be >= 0",
        )?;
        if cfg.nesterov {
            check(
                "momentum",
                cfg.momentum,
                cfg.momentum > 0.0,
                "nesterov needs momentum > 0",
            )?;
            check(
                "dampening",
                cfg.dampening,
                cfg.dampening == 0.0,
                "nesterov needs dampening 0",
            )?;
        }
        Ok(Sgd {
            core: Core::new(cfg.lr),
            cfg,
        })
    }
}

impl Rule for Sgd {
    fn update<T: Float>(
        &self,
        lr: f64,
        _: &str,
        st: &mut ParamState,
        p: &mut [T],
        grad: &[T],
    ) -> Result<()> {
        let c = &self.cfg;
        let mut g = signed_grad(grad, c.maximize);
        apply_weight_decay(p, &mut g, lr, c.weight_decay, false);
        if c.momentum != 0.0 {
            let mu = T::c(c.momentum);
            let had = st.has::<T>("momentum_buffer");
            let mut buf = st.take_all::<T>(&[("momentum_buffer", p.len())])?.remove(0);
            if had {
                ema_into(&mut buf, &g, mu, T::c(1.0 - c.dampening));
            } else {
                buf.copy_from_slice(&g);
            }
            if c.nesterov {
                axpy(&mut g, mu, &buf);
            } else {
                g.copy_from_slice(&buf);
            }
            st.put("momentum_buffer", buf);
        }
        axpy(p, T::c(-lr), &g);
        Ok(())
    }
}
