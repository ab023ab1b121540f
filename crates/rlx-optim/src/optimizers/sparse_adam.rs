//! SparseAdam, as `torch.optim.SparseAdam`, on dense buffers with the set of
//! elements that have a gradient.

use crate::error::{OptimError, Result};
use crate::float::Float;
use crate::optimizer::{optimizer, Core, HasCore, Rule};
use crate::optimizers::check;
use crate::state::ParamState;

/// Hyperparameters of [`SparseAdam`]; defaults are `torch.optim.SparseAdam`'s.
#[derive(Debug, Clone, PartialEq)]
pub struct SparseAdamConfig {
    /// Learning rate (1e-3).
    pub lr: f64,
    /// `(beta1, beta2)` ((0.9, 0.999)).
    pub betas: (f64, f64),
    /// Added to `sqrt(v)` (1e-8).
    pub eps: f64,
    /// Ascend instead of descend (false).
    pub maximize: bool,
}

impl Default for SparseAdamConfig {
    fn default() -> Self {
        SparseAdamConfig {
            lr: 1e-3,
            betas: (0.9, 0.999),
            eps: 1e-8,
            maximize: false,
        }
    }
}

optimizer! {
    /// SparseAdam (`torch.optim.SparseAdam`): Adam that updates the moments
    /// and the parameter only where the gradient is present, as torch does
    /// for a sparse gradient (an `nn.Embedding(sparse=True)` one, say).
    /// [`SparseAdam::step_sparse`] takes the dense gradient buffer and the
    /// flat indices of the elements present (torch's coalesced sparse
    /// indices; [`SparseAdam::row_elements`] turns the rows of a row-sparse
    /// gradient into them); elements not listed keep their parameter and
    /// moments. [`crate::Optimizer::step`] takes every element as present.
    ///
    /// For each present element, in torch's operation order:
    /// `du = (g - m) (1 - beta1)`, `m += du`, `dv = (g^2 - v) (1 - beta2)`,
    /// `v += dv`, `p += -(lr sqrt(1 - beta2^t) / (1 - beta1^t)) (du + m_old) /
    /// (sqrt(dv + v_old) + eps)`; the step `t` of a parameter counts every
    /// call, also one with no element present (torch counts a gradient with
    /// no values too). No weight decay (torch has none).
    SparseAdam, SparseAdamConfig, "SparseAdam"
}

impl SparseAdam {
    /// The optimizer; as torch, errors unless `lr > 0`, `eps > 0` and both
    /// betas are in `[0, 1)`.
    pub fn new(cfg: SparseAdamConfig) -> Result<Self> {
        check("lr", cfg.lr, cfg.lr > 0.0, "must be > 0")?;
        check("eps", cfg.eps, cfg.eps > 0.0, "must be > 0")?;
        for (name, b) in [("betas[0]", cfg.betas.0), ("betas[1]", cfg.betas.1)] {
            check(name, b, (0.0..1.0).contains(&b), "must be in [0, 1)")?;
        }
        Ok(SparseAdam {
            core: Core::new(cfg.lr),
            cfg,
        })
    }

    /// The flat element indices of `rows` of a row-major buffer of `shape`
    /// (rows along the first dimension, as in an embedding's sparse
    /// gradient); a 0-dimensional shape has the one row 0.
    pub fn row_elements(shape: &[usize], rows: &[usize]) -> Vec<usize> {
        let width: usize = shape.iter().skip(1).product();
        rows.iter()
            .flat_map(|&r| r.saturating_mul(width)..r.saturating_mul(width).saturating_add(width))
            .collect()
    }

    /// Steps parameter `name` with the gradient present at the flat indices
    /// `elements` of `grad` (any order; a repeated index counts once; the
    /// other gradient values are ignored). Errors, changing nothing, on an
    /// index out of range or the errors of [`crate::Optimizer::step`].
    pub fn step_sparse<T: Float>(
        &mut self,
        name: &str,
        shape: &[usize],
        param: &mut [T],
        grad: &[T],
        elements: &[usize],
    ) -> Result<()> {
        let mut idx = elements.to_vec();
        idx.sort_unstable();
        idx.dedup();
        let lr = self.core.lr;
        let prepared = self.core_mut().prepare(name, shape, param, grad)?;
        if let Some(&bad) = idx.last().filter(|&&i| i >= param.len()) {
            return Err(OptimError::LengthMismatch {
                name: name.into(),
                what: "sparse element index (one past the largest)",
                expected: param.len(),
                given: bad + 1,
                shape: shape.to_vec(),
            });
        }
        if prepared.step == u64::MAX {
            return Err(OptimError::BadState(format!(
                "parameter `{name}`: step counter at its maximum"
            )));
        }
        let mut st = std::mem::take(prepared);
        st.step += 1;
        let res = self.apply(lr, &mut st, param, grad, Some(&idx));
        if res.is_err() {
            st.step -= 1;
        }
        *self
            .core
            .params
            .get_mut(name)
            .expect("state prepared above") = st;
        res
    }

    fn apply<T: Float>(
        &self,
        lr: f64,
        st: &mut ParamState,
        p: &mut [T],
        grad: &[T],
        elements: Option<&[usize]>,
    ) -> Result<()> {
        let c = &self.cfg;
        let n = p.len();
        let specs = [("exp_avg", n), ("exp_avg_sq", n)];
        let mut bufs = st.take_all::<T>(&specs)?;
        let (b1, b2) = c.betas;
        let t = st.step as f64;
        let step_size = lr * (1.0 - b2.powf(t)).sqrt() / (1.0 - b1.powf(t));
        let (c1, c2, eps, neg) = (
            T::c(1.0 - b1),
            T::c(1.0 - b2),
            T::c(c.eps),
            T::c(-step_size),
        );
        let (m, v) = bufs.split_at_mut(1);
        let (m, v) = (&mut m[0], &mut v[0]);
        let mut one = |i: usize| {
            let g = if c.maximize { -grad[i] } else { grad[i] };
            let (m_old, v_old) = (m[i], v[i]);
            let du = (g - m_old) * c1;
            m[i] = m_old + du;
            let dv = (g * g - v_old) * c2;
            v[i] = v_old + dv;
            let numer = du + m_old;
            let denom = (dv + v_old).sqrt() + eps;
            p[i] = p[i] + neg * (numer / denom);
        };
        match elements {
            Some(idx) => idx.iter().for_each(|&i| one(i)),
            None => (0..n).for_each(one),
        }
        st.put_all(&specs, bufs);
        Ok(())
    }
}

impl Rule for SparseAdam {
    fn update<T: Float>(
        &self,
        lr: f64,
        _: &str,
        st: &mut ParamState,
        p: &mut [T],
        grad: &[T],
    ) -> Result<()> {
        self.apply(lr, st, p, grad, None)
    }
}
