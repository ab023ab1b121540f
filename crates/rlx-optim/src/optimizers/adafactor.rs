//! Adafactor, as `torch.optim.Adafactor` (single-tensor path): factored
//! second moments for parameters of two or more dimensions.

use crate::error::Result;
use crate::float::{axpy, lerp, norm, Float};
use crate::optimizer::{optimizer, Core, Rule};
use crate::optimizers::{apply_weight_decay, check, check_common, signed_grad};
use crate::state::ParamState;

/// Hyperparameters of [`Adafactor`]; defaults are `torch.optim.Adafactor`'s.
#[derive(Debug, Clone, PartialEq)]
pub struct AdafactorConfig {
    /// Learning rate, the cap of the relative step size (1e-2).
    pub lr: f64,
    /// Decay exponent: `1 - beta2_t = t^beta2_decay` (-0.8).
    pub beta2_decay: f64,
    /// Floor of the second moment; `None` is the dtype's machine epsilon (None).
    pub eps1: Option<f64>,
    /// Floor of the parameter RMS in the step size (1e-3).
    pub eps2: f64,
    /// Clipping threshold of the update RMS (1.0).
    pub d: f64,
    /// Decoupled weight decay (0).
    pub weight_decay: f64,
    /// Ascend instead of descend (false).
    pub maximize: bool,
}

impl Default for AdafactorConfig {
    fn default() -> Self {
        AdafactorConfig {
            lr: 1e-2,
            beta2_decay: -0.8,
            eps1: None,
            eps2: 1e-3,
            d: 1.0,
            weight_decay: 0.0,
            maximize: false,
        }
    }
}

optimizer! {
    /// Adafactor (Shazeer & Stern 2018) in torch's form: no first moment; for a
    /// parameter of shape `[..., R, C]` the second moment is the outer product
    /// of per-row and per-column means (normalised by the row mean), for a
    /// vector it is kept whole; the step is `max(eps2, rms(p)) min(lr, 1/sqrt(t))`
    /// times the update, whose RMS is clipped to `d`.
    Adafactor, AdafactorConfig, "Adafactor"
}

impl Adafactor {
    /// The optimizer; errors on invalid hyperparameters.
    pub fn new(cfg: AdafactorConfig) -> Result<Self> {
        check_common(cfg.lr, cfg.eps2, cfg.weight_decay, &[])?;
        check(
            "beta2_decay",
            cfg.beta2_decay,
            cfg.beta2_decay <= 0.0,
            "must be <= 0",
        )?;
        if let Some(e) = cfg.eps1 {
            check("eps1", e, e >= 0.0, "must be >= 0")?;
        }
        check("d", cfg.d, cfg.d >= 1.0, "must be >= 1 (as torch)")?;
        Ok(Adafactor {
            core: Core::new(cfg.lr),
            cfg,
        })
    }
}

impl Rule for Adafactor {
    fn update<T: Float>(
        &self,
        lr: f64,
        _: &str,
        st: &mut ParamState,
        p: &mut [T],
        grad: &[T],
    ) -> Result<()> {
        let c = &self.cfg;
        let shape = st.shape.clone();
        let n = p.len();
        let factored = shape.len() >= 2;
        let (rows, cols) = if factored {
            (shape[shape.len() - 2], shape[shape.len() - 1])
        } else {
            (1, n)
        };
        let batch = n.checked_div(rows * cols).unwrap_or(0);
        let specs: Vec<(&str, usize)> = if factored {
            vec![("row_var", batch * rows), ("col_var", batch * cols)]
        } else {
            vec![("variance", n)]
        };
        let mut bufs = st.take_all::<T>(&specs)?;
        let mut g = signed_grad(grad, c.maximize);
        let eps1 = c.eps1.unwrap_or(T::epsilon().f64());
        let t = st.step as f64;
        let one_minus_beta2 = T::c(t.powf(c.beta2_decay));
        let rho_t = lr.min(1.0 / t.powf(0.5));
        let alpha = c.eps2.max(norm(p).f64() / (n as f64).powf(0.5)) * rho_t;
        apply_weight_decay(p, &mut g, lr, c.weight_decay, true);
        let mut var = vec![T::zero(); n];
        if factored {
            let (row_var, col_var) = bufs.split_at_mut(1);
            let (row_var, col_var) = (&mut row_var[0], &mut col_var[0]);
            for b in 0..batch {
                let gm = &g[b * rows * cols..(b + 1) * rows * cols];
                let rv = &mut row_var[b * rows..(b + 1) * rows];
                let cv = &mut col_var[b * cols..(b + 1) * cols];
                for (r, x) in rv.iter_mut().enumerate() {
                    let nr = norm(&gm[r * cols..(r + 1) * cols]);
                    *x = lerp(*x, nr * nr / T::c(cols as f64), one_minus_beta2);
                }
                for (j, x) in cv.iter_mut().enumerate() {
                    let col: Vec<T> = (0..rows).map(|r| gm[r * cols + j]).collect();
                    let nc = norm(&col);
                    *x = lerp(*x, nc * nc / T::c(rows as f64), one_minus_beta2);
                }
                let mean = rv.iter().fold(T::zero(), |s, &v| s + v) / T::c(rows as f64);
                let mean = mean.max(T::c(eps1));
                for r in 0..rows {
                    for j in 0..cols {
                        var[b * rows * cols + r * cols + j] = rv[r] * cv[j] / mean;
                    }
                }
            }
        } else {
            for ((v, x), &gi) in var.iter_mut().zip(bufs[0].iter_mut()).zip(&g) {
                *x = lerp(*x, gi * gi, one_minus_beta2);
                *v = *x;
            }
        }
        let floor = T::c(eps1 * eps1);
        let update: Vec<T> = var
            .iter()
            .zip(&g)
            .map(|(&v, &gi)| T::one() / v.max(floor).sqrt() * gi)
            .collect();
        let denom = 1.0f64.max(norm(&update).f64() / ((n as f64).powf(0.5) * c.d));
        axpy(p, T::c(-alpha / denom), &update);
        st.put_all(&specs, bufs);
        Ok(())
    }
}
