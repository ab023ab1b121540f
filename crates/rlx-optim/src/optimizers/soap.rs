//! SOAP (Vyas et al. 2024, "SOAP: Improving and Stabilizing Shampoo using
//! Adam"), as the authors' `soap.py` (nikhilvyas/SOAP, commit f42d296), without
//! `merge_dims`: Adam run in the eigenbasis of Shampoo's preconditioner.

use crate::error::Result;
use crate::float::Float;
use crate::linalg::{eigh_desc, mode_gram, mode_mul, qr, Mat};
use crate::optimizer::{optimizer, Core, Rule};
use crate::optimizers::{check, check_common};
use crate::state::ParamState;

/// Hyperparameters of [`Soap`]; defaults are the reference's.
#[derive(Debug, Clone, PartialEq)]
pub struct SoapConfig {
    /// Learning rate (3e-3).
    pub lr: f64,
    /// Adam's `(beta1, beta2)` ((0.95, 0.95)).
    pub betas: (f64, f64),
    /// Decay of the preconditioner statistics; `None` uses `betas.1` (None).
    pub shampoo_beta: Option<f64>,
    /// Adam's epsilon (1e-8).
    pub eps: f64,
    /// Decoupled weight decay, applied after the step (0.01).
    pub weight_decay: f64,
    /// Steps between eigenbasis refreshes (10).
    pub precondition_frequency: u64,
    /// Dimensions larger than this are not rotated (10000).
    pub max_precond_dim: usize,
    /// Also rotate 1-D parameters (false).
    pub precondition_1d: bool,
    /// Normalise each update to unit RMS (false).
    pub normalize_grads: bool,
    /// Adam bias correction (true).
    pub correct_bias: bool,
}

impl Default for SoapConfig {
    fn default() -> Self {
        SoapConfig {
            lr: 3e-3,
            betas: (0.95, 0.95),
            shampoo_beta: None,
            eps: 1e-8,
            weight_decay: 0.01,
            precondition_frequency: 10,
            max_precond_dim: 10000,
            precondition_1d: false,
            normalize_grads: false,
            correct_bias: true,
        }
    }
}

optimizer! {
    /// SOAP. Per rotated dimension `d` it keeps `GG_d`, a moving average of the
    /// mode-`d` Gram matrix of the gradient, and `Q_d`, its eigenbasis (from an
    /// eigendecomposition on the first step, then every `precondition_frequency`
    /// steps one power iteration + QR); Adam runs on the gradient rotated into
    /// that basis and the step is rotated back. The first call only collects
    /// statistics (the parameter does not move), as the reference.
    Soap, SoapConfig, "Soap"
}

impl Soap {
    /// The optimizer; errors on invalid hyperparameters.
    pub fn new(cfg: SoapConfig) -> Result<Self> {
        check_common(
            cfg.lr,
            cfg.eps,
            cfg.weight_decay,
            &[("betas[0]", cfg.betas.0), ("betas[1]", cfg.betas.1)],
        )?;
        if let Some(b) = cfg.shampoo_beta {
            check(
                "shampoo_beta",
                b,
                (0.0..1.0).contains(&b),
                "must be in [0, 1)",
            )?;
        }
        check(
            "precondition_frequency",
            cfg.precondition_frequency as f64,
            cfg.precondition_frequency >= 1,
            "must be >= 1",
        )?;
        Ok(Soap {
            core: Core::new(cfg.lr),
            cfg,
        })
    }

    /// The dimensions that get a rotation.
    fn rotated(&self, shape: &[usize]) -> Vec<usize> {
        if shape.len() == 1 && !self.cfg.precondition_1d {
            return vec![];
        }
        (0..shape.len())
            .filter(|&d| shape[d] <= self.cfg.max_precond_dim)
            .collect()
    }
}

const GG: [&str; 8] = ["GG0", "GG1", "GG2", "GG3", "GG4", "GG5", "GG6", "GG7"];
const QS: [&str; 8] = ["Q0", "Q1", "Q2", "Q3", "Q4", "Q5", "Q6", "Q7"];

/// Rotates `x` into the bases (`back = false`: `Q_d^T` along each rotated
/// dimension) or back (`Q_d`).
fn project<T: Float>(x: &[T], shape: &[usize], qs: &[(usize, Mat<T>)], back: bool) -> Vec<T> {
    let mut out = x.to_vec();
    for (d, q) in qs {
        let m = if back { q.clone() } else { q.t() };
        out = mode_mul(&out, shape, *d, &m).0;
    }
    out
}

impl Rule for Soap {
    fn update<T: Float>(
        &self,
        lr: f64,
        name: &str,
        st: &mut ParamState,
        p: &mut [T],
        g: &[T],
    ) -> Result<()> {
        let c = &self.cfg;
        let shape = st.shape.clone();
        let n = p.len();
        let dims = self.rotated(&shape);
        if dims.len() > GG.len() {
            return Err(crate::OptimError::UnsupportedShape {
                name: name.into(),
                optimizer: "Soap",
                need: "at most 8 dimensions",
                shape,
            });
        }
        let mut specs = vec![("exp_avg", n), ("exp_avg_sq", n)];
        for &d in &dims {
            specs.push((GG[d], shape[d] * shape[d]));
            specs.push((QS[d], shape[d] * shape[d]));
        }
        let mut bufs = st.take_all::<T>(&specs)?;
        let (mut m, mut v) = (std::mem::take(&mut bufs[0]), std::mem::take(&mut bufs[1]));
        let mut ggs: Vec<Mat<T>> = Vec::new();
        let mut qs: Vec<(usize, Mat<T>)> = Vec::new();
        for (k, &d) in dims.iter().enumerate() {
            ggs.push(Mat::from(
                shape[d],
                shape[d],
                std::mem::take(&mut bufs[2 + 2 * k]),
            ));
            qs.push((
                d,
                Mat::from(shape[d], shape[d], std::mem::take(&mut bufs[3 + 2 * k])),
            ));
        }
        let shampoo_w = T::c(1.0 - c.shampoo_beta.unwrap_or(c.betas.1));
        let accumulate = |ggs: &mut Vec<Mat<T>>| {
            for (gg, &d) in ggs.iter_mut().zip(&dims) {
                let outer = mode_gram(g, g, &shape, d);
                for (a, &b) in gg.data.iter_mut().zip(&outer.data) {
                    *a = crate::float::lerp(*a, b, shampoo_w);
                }
            }
        };
        let t = st.step - 1; // the reference's step: the first call does not count
        if t == 0 {
            accumulate(&mut ggs);
            for (gg, (_, q)) in ggs.iter().zip(qs.iter_mut()) {
                *q = eigh_desc(gg).1;
            }
        } else {
            let (b1, b2) = c.betas;
            let gp = project(g, &shape, &qs, false);
            for ((mi, vi), &x) in m.iter_mut().zip(v.iter_mut()).zip(&gp) {
                *mi = *mi * T::c(b1) + T::c(1.0 - b1) * x;
                *vi = *vi * T::c(b2) + T::c(1.0 - b2) * (x * x);
            }
            let mut step_size = lr;
            if c.correct_bias {
                let tt = t as f64;
                step_size = step_size * (1.0 - b2.powf(tt)).powf(0.5) / (1.0 - b1.powf(tt));
            }
            let eps = T::c(c.eps);
            let ratio: Vec<T> = m
                .iter()
                .zip(&v)
                .map(|(&mi, &vi)| mi / (vi.sqrt() + eps))
                .collect();
            let mut upd = project(&ratio, &shape, &qs, true);
            if c.normalize_grads {
                let rms = (upd.iter().fold(T::zero(), |s, &x| s + x * x) / T::c(n as f64)).sqrt();
                let den = T::c(1e-30) + rms;
                upd.iter_mut().for_each(|x| *x = *x / den);
            }
            let neg = T::c(-step_size);
            p.iter_mut()
                .zip(&upd)
                .for_each(|(pi, &u)| *pi = *pi + neg * u);
            if c.weight_decay > 0.0 {
                let k = T::c(-lr * c.weight_decay);
                p.iter_mut().for_each(|pi| *pi = *pi + k * *pi);
            }
            // update_preconditioner: back to the original space, new statistics, maybe new bases.
            m = project(&m, &shape, &qs, true);
            accumulate(&mut ggs);
            if t.is_multiple_of(c.precondition_frequency) {
                for (gg, (d, q)) in ggs.iter().zip(qs.iter_mut()) {
                    let s = shape[*d];
                    let est = q.t().mm(gg).mm(q);
                    let mut idx: Vec<usize> = (0..s).collect();
                    idx.sort_by(|&i, &j| {
                        est.at(j, j)
                            .partial_cmp(&est.at(i, i))
                            .unwrap_or(std::cmp::Ordering::Equal)
                    });
                    // exp_avg_sq follows the reordered basis along dimension d.
                    let inner: usize = shape[*d + 1..].iter().product();
                    let old = v.clone();
                    for (k, x) in v.iter_mut().enumerate() {
                        let (o, a, r) = (k / (s * inner), (k / inner) % s, k % inner);
                        *x = old[(o * s + idx[a]) * inner + r];
                    }
                    *q = qr(&gg.mm(&q.select_cols(&idx))).0;
                }
            }
            m = project(&m, &shape, &qs, false);
        }
        let mut out = vec![m, v];
        for (gg, (_, q)) in ggs.into_iter().zip(qs) {
            out.push(gg.data);
            out.push(q.data);
        }
        st.put_all(&specs, out);
        Ok(())
    }
}
