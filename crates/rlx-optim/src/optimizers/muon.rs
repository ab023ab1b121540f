//! Muon (Jordan et al. 2024, "Muon: An optimizer for hidden layers"), as
//! Keller Jordan's reference `SingleDeviceMuonWithAuxAdam` (KellerJordan/Muon,
//! `muon.py`): Newton–Schulz-orthogonalised Nesterov momentum for matrix
//! parameters, Adam for the rest.

use crate::error::Result;
use crate::float::{lerp, lerp_into, Float};
use crate::linalg::{newton_schulz, Mat};
use crate::optimizer::{optimizer, Core, Rule};
use crate::optimizers::{check, check_common};
use crate::state::ParamState;

/// Hyperparameters of [`Muon`]; defaults are the reference's.
#[derive(Debug, Clone, PartialEq)]
pub struct MuonConfig {
    /// Learning rate of matrix parameters, in units of spectral norm per update (0.02).
    pub lr: f64,
    /// Momentum (0.95).
    pub momentum: f64,
    /// Nesterov momentum (true).
    pub nesterov: bool,
    /// Decoupled weight decay of matrix parameters (0).
    pub weight_decay: f64,
    /// Newton–Schulz iterations (5).
    pub ns_steps: usize,
    /// Quintic coefficients `(a, b, c)` ((3.4445, -4.7750, 2.0315)).
    pub ns_coefficients: (f64, f64, f64),
    /// Learning rate of the Adam fallback (3e-4); scales with `lr` under a schedule.
    pub adam_lr: f64,
    /// Betas of the Adam fallback ((0.9, 0.95)).
    pub adam_betas: (f64, f64),
    /// Epsilon of the Adam fallback (1e-10).
    pub adam_eps: f64,
    /// Decoupled weight decay of the Adam fallback (0).
    pub adam_weight_decay: f64,
}

impl Default for MuonConfig {
    fn default() -> Self {
        MuonConfig {
            lr: 0.02,
            momentum: 0.95,
            nesterov: true,
            weight_decay: 0.0,
            ns_steps: 5,
            ns_coefficients: (3.4445, -4.7750, 2.0315),
            adam_lr: 3e-4,
            adam_betas: (0.9, 0.95),
            adam_eps: 1e-10,
            adam_weight_decay: 0.0,
        }
    }
}

optimizer! {
    /// Muon. For a parameter of two or more dimensions (viewed as
    /// `[shape[0], rest]`): `m = lerp(m, g, 1-mu)`, `u = lerp(g, m, mu)` (Nesterov)
    /// or `m`, `O = NS5(u) * sqrt(max(1, rows/cols))`, `p *= 1 - lr wd`,
    /// `p -= lr O`. Other parameters get the reference's Adam. The reference
    /// runs Newton–Schulz in bfloat16; here it runs in the parameter's precision.
    Muon, MuonConfig, "Muon"
}

impl Muon {
    /// The optimizer; errors on invalid hyperparameters.
    pub fn new(cfg: MuonConfig) -> Result<Self> {
        check_common(
            cfg.lr,
            cfg.adam_eps,
            cfg.weight_decay,
            &[("momentum", cfg.momentum)],
        )?;
        check_common(
            cfg.adam_lr,
            cfg.adam_eps,
            cfg.adam_weight_decay,
            &[
                ("adam_betas[0]", cfg.adam_betas.0),
                ("adam_betas[1]", cfg.adam_betas.1),
            ],
        )?;
        check(
            "lr",
            cfg.lr,
            cfg.lr > 0.0,
            "must be > 0 (the Adam rate is a multiple of it)",
        )?;
        Ok(Muon {
            core: Core::new(cfg.lr),
            cfg,
        })
    }
}

impl Rule for Muon {
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
        if st.shape.len() >= 2 && n > 0 {
            let specs = [("momentum_buffer", n)];
            let mut bufs = st.take_all::<T>(&specs)?;
            let mu = T::c(c.momentum);
            lerp_into(&mut bufs[0], g, T::c(1.0 - c.momentum));
            let u: Vec<T> = if c.nesterov {
                g.iter()
                    .zip(&bufs[0])
                    .map(|(&gi, &m)| lerp(gi, m, mu))
                    .collect()
            } else {
                bufs[0].clone()
            };
            let rows = st.shape[0];
            let cols = n / rows;
            let o = newton_schulz(
                &Mat::from(rows, cols, u),
                c.ns_steps,
                c.ns_coefficients,
                1e-7,
            );
            let scale = T::c((rows as f64 / cols as f64).max(1.0).powf(0.5));
            let decay = T::c(1.0 - lr * c.weight_decay);
            let neg_lr = T::c(-lr);
            for (pi, &oi) in p.iter_mut().zip(&o.data) {
                *pi = *pi * decay;
                *pi = *pi + neg_lr * (oi * scale);
            }
            st.put_all(&specs, bufs);
        } else {
            let specs = [("exp_avg", n), ("exp_avg_sq", n)];
            let mut bufs = st.take_all::<T>(&specs)?;
            let (b1, b2) = c.adam_betas;
            let t = st.step as f64;
            let lr_adam = lr * (c.adam_lr / c.lr);
            lerp_into(&mut bufs[0], g, T::c(1.0 - b1));
            let g2: Vec<T> = g.iter().map(|&x| x * x).collect();
            lerp_into(&mut bufs[1], &g2, T::c(1.0 - b2));
            let (bc1, bc2) = (T::c(1.0 - b1.powf(t)), T::c(1.0 - b2.powf(t)));
            let (eps, decay, neg_lr) = (
                T::c(c.adam_eps),
                T::c(1.0 - lr_adam * c.adam_weight_decay),
                T::c(-lr_adam),
            );
            for ((pi, &m), &v) in p.iter_mut().zip(&bufs[0]).zip(&bufs[1]) {
                let upd = (m / bc1) / ((v / bc2).sqrt() + eps);
                *pi = *pi * decay;
                *pi = *pi + neg_lr * upd;
            }
            st.put_all(&specs, bufs);
        }
        Ok(())
    }
}
