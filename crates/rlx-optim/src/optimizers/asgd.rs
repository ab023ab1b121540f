//! Averaged SGD, as `torch.optim.ASGD` (single-tensor path).

use crate::error::Result;
use crate::float::{axpy, Float};
use crate::optimizer::{optimizer, Core, Rule};
use crate::optimizers::{apply_weight_decay, check, check_common, signed_grad};
use crate::state::ParamState;

/// Hyperparameters of [`Asgd`]; defaults are `torch.optim.ASGD`'s.
#[derive(Debug, Clone, PartialEq)]
pub struct AsgdConfig {
    /// Learning rate (1e-2).
    pub lr: f64,
    /// Decay term `lambda` (1e-4).
    pub lambd: f64,
    /// Power of the `eta` update (0.75).
    pub alpha: f64,
    /// Step at which averaging starts (1e6).
    pub t0: f64,
    /// L2 penalty added to the gradient (0).
    pub weight_decay: f64,
    /// Ascend instead of descend (false).
    pub maximize: bool,
}

impl Default for AsgdConfig {
    fn default() -> Self {
        AsgdConfig {
            lr: 1e-2,
            lambd: 1e-4,
            alpha: 0.75,
            t0: 1e6,
            weight_decay: 0.0,
            maximize: false,
        }
    }
}

optimizer! {
    /// Averaged SGD (`torch.optim.ASGD`): `p *= 1 - lambd eta`, `p -= eta g`,
    /// then the average `ax += mu (p - ax)` (`ax = p` while `mu = 1`), with
    /// `eta = lr / (1 + lambd lr t)^alpha` and `mu = 1 / max(1, t - t0)` for
    /// the next step. As in torch, `eta` and `mu` are kept in `f32` for both
    /// precisions (torch keeps them in default-dtype scalar tensors). The
    /// average is in the state as buffer `ax` ([`Asgd::average`]).
    Asgd, AsgdConfig, "Asgd"
}

impl Asgd {
    /// The optimizer; errors on a negative rate or weight decay, or a
    /// non-finite `lambd`, `alpha` or `t0`.
    pub fn new(cfg: AsgdConfig) -> Result<Self> {
        check_common(cfg.lr, 0.0, cfg.weight_decay, &[])?;
        for (name, v) in [("lambd", cfg.lambd), ("alpha", cfg.alpha), ("t0", cfg.t0)] {
            check(name, v, v.is_finite(), "must be finite")?;
        }
        Ok(Asgd {
            core: Core::new(cfg.lr),
            cfg,
        })
    }

    /// The running average `ax` of parameter `name` (`f32` or `f64`, as the
    /// parameter), once it has been stepped.
    pub fn average<T: Float>(&self, name: &str) -> Option<&[T]> {
        self.core
            .params
            .get(name)
            .and_then(|st| T::bufs_ref(st).get("ax"))
            .map(Vec::as_slice)
    }
}

impl Rule for Asgd {
    fn update<T: Float>(
        &self,
        lr: f64,
        _: &str,
        st: &mut ParamState,
        p: &mut [T],
        grad: &[T],
    ) -> Result<()> {
        let c = &self.cfg;
        let mut ax = st.take_all::<T>(&[("ax", p.len())])?.remove(0);
        let eta = st.scalar("eta", lr as f32 as f64);
        let mu = st.scalar("mu", 1.0);
        let mut g = signed_grad(grad, c.maximize);
        apply_weight_decay(p, &mut g, lr, c.weight_decay, false);
        let decay = T::c(1.0 - c.lambd * eta);
        p.iter_mut().for_each(|x| *x = *x * decay);
        axpy(p, T::c(-eta), &g);
        if mu != 1.0 {
            let m = T::c(mu);
            for (a, &pi) in ax.iter_mut().zip(p.iter()) {
                *a = *a + (pi - *a) * m;
            }
        } else {
            ax.copy_from_slice(p);
        }
        // torch keeps the step in a float32 tensor.
        let t = st.step as f32 as f64;
        let new_eta = lr / (1.0 + c.lambd * lr * t).powf(c.alpha);
        let new_mu = 1.0 / (t - c.t0).max(1.0);
        st.scalars.insert("eta".into(), new_eta as f32 as f64);
        st.scalars.insert("mu".into(), new_mu as f32 as f64);
        st.put("ax", ax);
        Ok(())
    }
}
