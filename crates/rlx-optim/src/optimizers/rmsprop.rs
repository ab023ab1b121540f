//! RMSprop, as `torch.optim.RMSprop` (single-tensor path): plain, centered,
//! with momentum and L2 weight decay.

use crate::error::Result;
use crate::float::{axpy, ema_sq_into, lerp_into, madd, Float};
use crate::optimizer::{optimizer, Core, Rule};
use crate::optimizers::{apply_weight_decay, check, check_common, signed_grad};
use crate::state::ParamState;

/// Hyperparameters of [`RmsProp`]; defaults are `torch.optim.RMSprop`'s.
#[derive(Debug, Clone, PartialEq)]
pub struct RmsPropConfig {
    /// Learning rate (1e-2).
    pub lr: f64,
    /// Smoothing constant of the squared-gradient average (0.99).
    pub alpha: f64,
    /// Added to the denominator (1e-8).
    pub eps: f64,
    /// L2 penalty added to the gradient (0).
    pub weight_decay: f64,
    /// Momentum factor (0).
    pub momentum: f64,
    /// Normalise by the estimated variance `E[g^2] - E[g]^2` (false).
    pub centered: bool,
    /// Ascend instead of descend (false).
    pub maximize: bool,
}

impl Default for RmsPropConfig {
    fn default() -> Self {
        RmsPropConfig {
            lr: 1e-2,
            alpha: 0.99,
            eps: 1e-8,
            weight_decay: 0.0,
            momentum: 0.0,
            centered: false,
            maximize: false,
        }
    }
}

optimizer! {
    /// RMSprop (`torch.optim.RMSprop`): `v = alpha v + (1 - alpha) g^2`;
    /// centered: `a = sqrt(v - m^2) + eps` with `m` the running mean of `g`,
    /// else `a = sqrt(v) + eps`; with momentum `b = mu b + g / a`,
    /// `p -= lr b`, else `p -= lr g / a`.
    RmsProp, RmsPropConfig, "RmsProp"
}

impl RmsProp {
    /// The optimizer; errors on a negative rate, alpha, eps, weight decay or
    /// momentum (as torch).
    pub fn new(cfg: RmsPropConfig) -> Result<Self> {
        check_common(cfg.lr, cfg.eps, cfg.weight_decay, &[])?;
        check("alpha", cfg.alpha, cfg.alpha >= 0.0, "must be >= 0")?;
        check(
            "momentum",
            cfg.momentum,
            cfg.momentum >= 0.0,
            "must be >= 0",
        )?;
        Ok(RmsProp {
            core: Core::new(cfg.lr),
            cfg,
        })
    }
}

impl Rule for RmsProp {
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
        let mut specs = vec![("square_avg", n)];
        if c.momentum > 0.0 {
            specs.push(("momentum_buffer", n));
        }
        if c.centered {
            specs.push(("grad_avg", n));
        }
        let mut bufs = st.take_all::<T>(&specs)?;
        let mut g = signed_grad(grad, c.maximize);
        apply_weight_decay(p, &mut g, lr, c.weight_decay, false);
        ema_sq_into(&mut bufs[0], &g, T::c(c.alpha), T::c(1.0 - c.alpha));
        let eps = T::c(c.eps);
        let avg: Vec<T> = if c.centered {
            let ga = bufs.last_mut().expect("grad_avg");
            lerp_into(ga, &g, T::c(1.0 - c.alpha));
            let ga = &bufs[specs.len() - 1];
            bufs[0]
                .iter()
                .zip(ga)
                .map(|(&v, &m)| madd(v, -m, m).sqrt() + eps)
                .collect()
        } else {
            bufs[0].iter().map(|&v| v.sqrt() + eps).collect()
        };
        if c.momentum > 0.0 {
            let mu = T::c(c.momentum);
            let buf = &mut bufs[1];
            for ((b, &gi), &a) in buf.iter_mut().zip(&g).zip(&avg) {
                *b = *b * mu + gi / a;
            }
            axpy(p, T::c(-lr), &bufs[1]);
        } else {
            let neg = T::c(-lr);
            for ((pi, &gi), &a) in p.iter_mut().zip(&g).zip(&avg) {
                *pi = *pi + neg * gi / a;
            }
        }
        st.put_all(&specs, bufs);
        Ok(())
    }
}
