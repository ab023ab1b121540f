//! MARS (Yuan et al. 2024, "MARS: Unleashing the Power of Variance Reduction
//! for Training Large Models"), as the authors' `MARS` (AGI-Arena/MARS,
//! `MARS/optimizers/mars.py`, approximate form `is_approx=True`).

use crate::error::Result;
use crate::float::{ema_into, ema_sq_into, norm, Float};
use crate::optimizer::{optimizer, Core, Rule};
use crate::optimizers::{check, check_common};
use crate::state::ParamState;

/// Which MARS instance.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MarsType {
    /// MARS-AdamW (the reference default).
    AdamW,
    /// MARS-Lion: the step is `sign(m)`.
    Lion,
}

/// Hyperparameters of [`Mars`]; defaults are the reference's.
#[derive(Debug, Clone, PartialEq)]
pub struct MarsConfig {
    /// Learning rate of matrix parameters (3e-3).
    pub lr: f64,
    /// `(beta1, beta2)` ((0.95, 0.99)).
    pub betas: (f64, f64),
    /// Added to the denominator (1e-8).
    pub eps: f64,
    /// Weight decay of MARS parameters (0).
    pub weight_decay: f64,
    /// Use the running maximum of the second moment (false).
    pub amsgrad: bool,
    /// Scale `gamma` of the gradient correction (0.025).
    pub gamma: f64,
    /// Instance (MARS-AdamW).
    pub mars_type: MarsType,
    /// Also use MARS for non-matrix parameters (false: they get AdamW).
    pub optimize_1d: bool,
    /// Learning rate of the AdamW fallback (3e-3); scales with `lr` under a schedule.
    pub lr_1d: f64,
    /// Betas of the AdamW fallback ((0.9, 0.95)).
    pub betas_1d: (f64, f64),
    /// Weight decay of the AdamW fallback (0.1).
    pub weight_decay_1d: f64,
}

impl Default for MarsConfig {
    fn default() -> Self {
        MarsConfig {
            lr: 3e-3,
            betas: (0.95, 0.99),
            eps: 1e-8,
            weight_decay: 0.0,
            amsgrad: false,
            gamma: 0.025,
            mars_type: MarsType::AdamW,
            optimize_1d: false,
            lr_1d: 3e-3,
            betas_1d: (0.9, 0.95),
            weight_decay_1d: 0.1,
        }
    }
}

optimizer! {
    /// MARS: variance-reduced momentum on `c = g + gamma beta1/(1-beta1) (g - g_prev)`
    /// (`c` rescaled to norm 1 when larger), then an AdamW- or Lion-type step.
    /// Matrix (2-D) parameters use MARS; others the AdamW fallback unless
    /// `optimize_1d`.
    Mars, MarsConfig, "Mars"
}

impl Mars {
    /// The optimizer; errors on invalid hyperparameters.
    pub fn new(cfg: MarsConfig) -> Result<Self> {
        check_common(
            cfg.lr,
            cfg.eps,
            cfg.weight_decay,
            &[("betas[0]", cfg.betas.0), ("betas[1]", cfg.betas.1)],
        )?;
        check_common(
            cfg.lr_1d,
            cfg.eps,
            cfg.weight_decay_1d,
            &[
                ("betas_1d[0]", cfg.betas_1d.0),
                ("betas_1d[1]", cfg.betas_1d.1),
            ],
        )?;
        check(
            "lr",
            cfg.lr,
            cfg.lr > 0.0,
            "must be > 0 (the 1-D rate is a multiple of it)",
        )?;
        check("gamma", cfg.gamma, cfg.gamma >= 0.0, "must be >= 0")?;
        Ok(Mars {
            core: Core::new(cfg.lr),
            cfg,
        })
    }
}

/// `exp_avg / ((sqrt(v) / sqrt(bc2) + eps) bc1)` of the reference.
fn adam_dir<T: Float>(m: T, v: T, bc1: f64, bc2: f64, eps: f64) -> T {
    m / ((v.sqrt() * T::c(1.0 / bc2.sqrt()) + T::c(eps)) * T::c(bc1))
}

impl Rule for Mars {
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
        let mut specs = vec![("exp_avg", n), ("exp_avg_sq", n), ("last_grad", n)];
        if c.amsgrad {
            specs.push(("max_exp_avg_sq", n));
        }
        let mut bufs = st.take_all::<T>(&specs)?;
        let t = st.step as f64;
        let mars = c.optimize_1d || st.shape.len() == 2;
        let (b1, b2) = if mars { c.betas } else { c.betas_1d };
        let (bc1, bc2) = (1.0 - b1.powf(t), 1.0 - b2.powf(t));
        let (input, lr_eff, wd) = if mars {
            let k = T::c(c.gamma * (b1 / (1.0 - b1)));
            let mut ct: Vec<T> = g
                .iter()
                .zip(&bufs[2])
                .map(|(&gi, &li)| (gi - li) * k + gi)
                .collect();
            let cn = norm(&ct);
            if cn > T::one() {
                ct.iter_mut().for_each(|x| *x = *x / cn);
            }
            (ct, lr, c.weight_decay)
        } else {
            (g.to_vec(), lr * (c.lr_1d / c.lr), c.weight_decay_1d)
        };
        ema_into(&mut bufs[0], &input, T::c(b1), T::c(1.0 - b1));
        let lion = mars && c.mars_type == MarsType::Lion;
        if !lion {
            ema_sq_into(&mut bufs[1], &input, T::c(b2), T::c(1.0 - b2));
            if c.amsgrad {
                let (head, tail) = bufs.split_at_mut(3);
                tail[0]
                    .iter_mut()
                    .zip(&head[1])
                    .for_each(|(mx, &v)| *mx = mx.max(v));
            }
        }
        let second = if c.amsgrad { 3 } else { 1 };
        let (neg_lr, wd) = (T::c(-lr_eff), T::c(wd));
        for (i, pi) in p.iter_mut().enumerate() {
            let dir = if lion {
                crate::optimizers::lion::sign(bufs[0][i])
            } else {
                adam_dir(bufs[0][i], bufs[second][i], bc1, bc2, c.eps)
            };
            *pi = *pi + neg_lr * (*pi * wd + dir);
        }
        bufs[2].copy_from_slice(g);
        st.put_all(&specs, bufs);
        Ok(())
    }
}
