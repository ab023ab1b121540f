//! Resilient backpropagation, as `torch.optim.Rprop` (single-tensor path).

use crate::error::Result;
use crate::float::{madd, Float};
use crate::optimizer::{optimizer, Core, Rule};
use crate::optimizers::{check, check_common, signed_grad};
use crate::state::ParamState;

/// Hyperparameters of [`Rprop`]; defaults are `torch.optim.Rprop`'s.
#[derive(Debug, Clone, PartialEq)]
pub struct RpropConfig {
    /// Learning rate: the initial step size of every element (1e-2).
    pub lr: f64,
    /// `(etaminus, etaplus)`: step-size factors on a sign change / no change
    /// ((0.5, 1.2)).
    pub etas: (f64, f64),
    /// `(min, max)` step size ((1e-6, 50)).
    pub step_sizes: (f64, f64),
    /// Ascend instead of descend (false).
    pub maximize: bool,
}

impl Default for RpropConfig {
    fn default() -> Self {
        RpropConfig {
            lr: 1e-2,
            etas: (0.5, 1.2),
            step_sizes: (1e-6, 50.0),
            maximize: false,
        }
    }
}

optimizer! {
    /// Rprop (`torch.optim.Rprop`): per element, the step size is multiplied
    /// by `etaplus` where `g * g_prev > 0`, by `etaminus` where it is `< 0`
    /// (and that element skips its update and forgets its gradient), then
    /// clamped to `step_sizes`; `p -= sign(g) step_size`. The step sizes
    /// start at `lr`, so a later learning rate (or schedule) does not change
    /// them, as in torch.
    Rprop, RpropConfig, "Rprop"
}

impl Rprop {
    /// The optimizer; errors unless `lr >= 0`, `0 < etaminus < 1 < etaplus`
    /// (as torch) and `0 <= min step <= max step`.
    pub fn new(cfg: RpropConfig) -> Result<Self> {
        check_common(cfg.lr, 0.0, 0.0, &[])?;
        let (em, ep) = cfg.etas;
        check("etas[0]", em, 0.0 < em && em < 1.0, "must be in (0, 1)")?;
        check("etas[1]", ep, ep > 1.0, "must be > 1")?;
        let (lo, hi) = cfg.step_sizes;
        check("step_sizes[0]", lo, lo >= 0.0, "must be >= 0")?;
        check("step_sizes[1]", hi, hi >= lo, "must be >= step_sizes[0]")?;
        Ok(Rprop {
            core: Core::new(cfg.lr),
            cfg,
        })
    }
}

impl Rule for Rprop {
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
        let fresh = !st.has::<T>("step_size");
        let specs = [("prev", n), ("step_size", n)];
        let mut bufs = st.take_all::<T>(&specs)?;
        if fresh {
            bufs[1].fill(T::c(lr));
        }
        let g = signed_grad(grad, c.maximize);
        let (em, ep) = (T::c(c.etas.0), T::c(c.etas.1));
        let (lo, hi) = (T::c(c.step_sizes.0), T::c(c.step_sizes.1));
        let (prev, sizes) = bufs.split_at_mut(1);
        for (((pi, &gi), pv), ss) in p.iter_mut().zip(&g).zip(&mut prev[0]).zip(&mut sizes[0]) {
            let s = gi * *pv;
            let factor = if s > T::zero() {
                ep
            } else if s < T::zero() {
                em
            } else if s == T::zero() {
                T::one()
            } else {
                s // NaN stays NaN
            };
            // torch: step_size.mul_(sign).clamp_(min, max) (NaN propagates)
            let m = *ss * factor;
            *ss = if m.is_nan() { m } else { m.max(lo).min(hi) };
            let gk = if factor == em { T::zero() } else { gi };
            let sg = if gk > T::zero() {
                T::one()
            } else if gk < T::zero() {
                -T::one()
            } else {
                gk // 0, -0 or NaN, as torch.sign
            };
            *pi = madd(*pi, -sg, *ss);
            *pv = gk;
        }
        st.put_all(&specs, bufs);
        Ok(())
    }
}
