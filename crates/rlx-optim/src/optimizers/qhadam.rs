//! QHAdamW (Ma & Yarats 2019, "Quasi-hyperbolic momentum and Adam for deep
//! learning"), as the authors' `qhoptim.pyt.QHAdamW` (facebookresearch/qhoptim).

use crate::error::Result;
use crate::float::Float;
use crate::optimizer::{optimizer, Core, Rule};
use crate::optimizers::{apply_weight_decay, check_common};
use crate::state::ParamState;

/// Hyperparameters of [`QHAdamW`]; defaults are the reference's.
#[derive(Debug, Clone, PartialEq)]
pub struct QHAdamConfig {
    /// Learning rate (1e-3).
    pub lr: f64,
    /// `(beta1, beta2)` ((0.9, 0.999)).
    pub betas: (f64, f64),
    /// Immediate discount factors `(nu1, nu2)` ((1.0, 1.0); the paper
    /// recommends (0.7, 1.0)).
    pub nus: (f64, f64),
    /// Weight decay (0).
    pub weight_decay: f64,
    /// Decoupled weight decay (true: QHAdamW; false: QHAdam with an L2 term).
    pub decouple_weight_decay: bool,
    /// Added to the denominator (1e-8).
    pub eps: f64,
}

impl Default for QHAdamConfig {
    fn default() -> Self {
        QHAdamConfig {
            lr: 1e-3,
            betas: (0.9, 0.999),
            nus: (1.0, 1.0),
            weight_decay: 0.0,
            decouple_weight_decay: true,
            eps: 1e-8,
        }
    }
}

optimizer! {
    /// QHAdamW: bias-corrected moments through running weights
    /// `w_t = 1 + beta w_{t-1}`, and the step
    /// `p -= lr ((1-nu1) g + nu1 m) / (sqrt((1-nu2) g^2 + nu2 v) + eps)`.
    QHAdamW, QHAdamConfig, "QHAdamW"
}

impl QHAdamW {
    /// The optimizer; errors on invalid hyperparameters.
    pub fn new(cfg: QHAdamConfig) -> Result<Self> {
        check_common(
            cfg.lr,
            cfg.eps,
            cfg.weight_decay,
            &[("betas[0]", cfg.betas.0), ("betas[1]", cfg.betas.1)],
        )?;
        Ok(QHAdamW {
            core: Core::new(cfg.lr),
            cfg,
        })
    }
}

impl Rule for QHAdamW {
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
        let mut g = grad.to_vec();
        apply_weight_decay(p, &mut g, lr, c.weight_decay, c.decouple_weight_decay);
        let w1 = 1.0 + c.betas.0 * st.scalar("beta1_weight", 0.0);
        let w2 = 1.0 + c.betas.1 * st.scalar("beta2_weight", 0.0);
        st.scalars.insert("beta1_weight".into(), w1);
        st.scalars.insert("beta2_weight".into(), w2);
        let (adj1, adj2) = (1.0 - 1.0 / w1, 1.0 - 1.0 / w2);
        let (nu1, nu2) = (T::c(c.nus.0), T::c(c.nus.1));
        let (eps, neg_lr) = (T::c(c.eps), T::c(-lr));
        let (m, v) = bufs.split_at_mut(1);
        for (((pi, &gi), mi), vi) in p
            .iter_mut()
            .zip(&g)
            .zip(m[0].iter_mut())
            .zip(v[0].iter_mut())
        {
            let g2 = gi * gi;
            *mi = *mi * T::c(adj1) + T::c(1.0 - adj1) * gi;
            *vi = *vi * T::c(adj2) + T::c(1.0 - adj2) * g2;
            let mut avg = *mi * nu1;
            if c.nus.0 != 1.0 {
                avg = avg + T::c(1.0 - c.nus.0) * gi;
            }
            let mut rms = *vi * nu2;
            if c.nus.1 != 1.0 {
                rms = rms + T::c(1.0 - c.nus.1) * g2;
            }
            let rms = rms.sqrt() + eps;
            *pi = *pi + neg_lr * avg / rms;
        }
        st.put_all(&specs, bufs);
        Ok(())
    }
}
