//! Adam and AdamW, as `torch.optim.Adam` / `torch.optim.AdamW`
//! (single-tensor path, including `amsgrad` and `maximize`).

use crate::error::Result;
use crate::float::{ema_sq_into, lerp_into, Float};
use crate::optimizer::{optimizer, Core, Rule};
use crate::optimizers::{apply_weight_decay, check_common, signed_grad};
use crate::state::ParamState;

/// Hyperparameters of [`Adam`] and [`AdamW`]; `Default` is `torch.optim.Adam`'s,
/// [`AdamConfig::adamw`] is `torch.optim.AdamW`'s.
#[derive(Debug, Clone, PartialEq)]
pub struct AdamConfig {
    /// Learning rate (1e-3).
    pub lr: f64,
    /// `(beta1, beta2)` ((0.9, 0.999)).
    pub betas: (f64, f64),
    /// Added to the denominator (1e-8).
    pub eps: f64,
    /// Weight decay (Adam: 0, as an L2 term; AdamW: 1e-2, decoupled).
    pub weight_decay: f64,
    /// Use the running maximum of the second moment (false).
    pub amsgrad: bool,
    /// Ascend instead of descend (false).
    pub maximize: bool,
}

impl Default for AdamConfig {
    fn default() -> Self {
        AdamConfig {
            lr: 1e-3,
            betas: (0.9, 0.999),
            eps: 1e-8,
            weight_decay: 0.0,
            amsgrad: false,
            maximize: false,
        }
    }
}

impl AdamConfig {
    /// `torch.optim.AdamW`'s defaults (Adam's, with weight decay 1e-2).
    pub fn adamw() -> Self {
        AdamConfig {
            weight_decay: 1e-2,
            ..Default::default()
        }
    }

    fn check(&self) -> Result<()> {
        check_common(
            self.lr,
            self.eps,
            self.weight_decay,
            &[("betas[0]", self.betas.0), ("betas[1]", self.betas.1)],
        )
    }
}

/// One Adam step on one buffer (torch's `_single_tensor_adam`).
pub(crate) fn adam_step<T: Float>(
    c: &AdamConfig,
    decoupled: bool,
    lr: f64,
    st: &mut ParamState,
    p: &mut [T],
    grad: &[T],
) -> Result<()> {
    let n = p.len();
    let mut specs = vec![("exp_avg", n), ("exp_avg_sq", n)];
    if c.amsgrad {
        specs.push(("max_exp_avg_sq", n));
    }
    let mut bufs = st.take_all::<T>(&specs)?;
    let mut g = signed_grad(grad, c.maximize);
    apply_weight_decay(p, &mut g, lr, c.weight_decay, decoupled);
    let (b1, b2) = c.betas;
    lerp_into(&mut bufs[0], &g, T::c(1.0 - b1));
    ema_sq_into(&mut bufs[1], &g, T::c(b2), T::c(1.0 - b2));
    let t = st.step as f64;
    let bc1 = 1.0 - b1.powf(t);
    let bc2 = 1.0 - b2.powf(t);
    let step_size = lr / bc1;
    let bc2_sqrt = T::c(bc2.powf(0.5));
    if c.amsgrad {
        let (head, tail) = bufs.split_at_mut(2);
        for (m, &v) in tail[0].iter_mut().zip(&head[1]) {
            *m = m.max(v);
        }
    }
    let second = if c.amsgrad { &bufs[2] } else { &bufs[1] };
    let (eps, neg_step) = (T::c(c.eps), T::c(-step_size));
    for ((pi, &m), &v) in p.iter_mut().zip(&bufs[0]).zip(second) {
        let denom = v.sqrt() / bc2_sqrt + eps;
        *pi = *pi + neg_step * m / denom;
    }
    st.put_all(&specs, bufs);
    Ok(())
}

macro_rules! adam_like {
    ($ty:ident, $name:literal, $decoupled:expr, $default:expr, $doc:literal) => {
        optimizer! {
            #[doc = $doc]
            $ty, AdamConfig, $name
        }

        impl $ty {
            /// The optimizer; errors on a negative rate / eps / decay or a
            /// beta outside `[0, 1)`.
            pub fn new(cfg: AdamConfig) -> Result<Self> {
                cfg.check()?;
                Ok($ty {
                    core: Core::new(cfg.lr),
                    cfg,
                })
            }

            /// With the reference defaults and learning rate `lr`.
            pub fn with_lr(lr: f64) -> Result<Self> {
                Self::new(AdamConfig { lr, ..$default })
            }
        }

        impl Rule for $ty {
            fn update<T: Float>(
                &self,
                lr: f64,
                _: &str,
                st: &mut ParamState,
                p: &mut [T],
                g: &[T],
            ) -> Result<()> {
                adam_step(&self.cfg, $decoupled, lr, st, p, g)
            }
        }
    };
}

adam_like!(
    Adam,
    "Adam",
    false,
    AdamConfig::default(),
    "Adam (`torch.optim.Adam`): weight decay is an L2 term added to the gradient."
);
adam_like!(
    AdamW,
    "AdamW",
    true,
    AdamConfig::adamw(),
    "AdamW (`torch.optim.AdamW`): Adam with decoupled weight decay `p *= 1 - lr wd`."
);
