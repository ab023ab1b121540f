//! PSGD Kron (Li 2018, "Preconditioner on matrix Lie group for SGD";
//! Kronecker-factored preconditioner), as Evan Walters' `kron_torch`
//! (evanatyourservice/kron_torch, `kron_torch/kron.py`, commit d163b81), the
//! implementation of lixilinx/psgd_torch's Kron used in practice.

use crate::error::{OptimError, Result};
use crate::float::Float;
use crate::linalg::{inv_upper, mode_gram, mode_mul, mode_scale, Mat};
use crate::optimizer::{optimizer, Core, Rule};
use crate::optimizers::{check, check_common};
use crate::rand::{name_hash, normal, uniform};
use crate::state::ParamState;

/// How often the preconditioner is updated.
#[derive(Debug, Clone, PartialEq)]
pub enum PrecondUpdate {
    /// With probability `clamp(max_prob exp(-decay (n - flat_start)), min_prob, max_prob)`
    /// at iteration `n` (the reference default: 1, 0.03, 0.001, 250).
    Schedule {
        /// Upper bound.
        max_prob: f64,
        /// Lower bound.
        min_prob: f64,
        /// Exponential decay rate per iteration.
        decay: f64,
        /// Iterations before the decay starts.
        flat_start: f64,
    },
    /// With a fixed probability (1.0: every iteration).
    Probability(f64),
}

/// Which dimensions get a diagonal instead of a triangular factor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemorySaveMode {
    /// Triangular wherever the size rules allow.
    None,
    /// The largest dimension diagonal.
    OneDiag,
    /// All diagonal.
    AllDiag,
}

/// Hyperparameters of [`KronPsgd`]; defaults are the reference's.
#[derive(Debug, Clone, PartialEq)]
pub struct KronConfig {
    /// Learning rate (1e-3).
    pub lr: f64,
    /// Momentum (0.9).
    pub b1: f64,
    /// Weight decay, added to the preconditioned step of parameters with 2+ dimensions (0).
    pub weight_decay: f64,
    /// Preconditioner update frequency (the reference schedule).
    pub update: PrecondUpdate,
    /// Dimensions larger than this get a diagonal factor (8192).
    pub max_size_triangular: usize,
    /// Parameters with fewer dimensions get diagonal factors (2).
    pub min_ndim_triangular: usize,
    /// Diagonal factors to save memory (None).
    pub memory_save_mode: MemorySaveMode,
    /// Step size of the preconditioner fit (0.1).
    pub precond_lr: f64,
    /// Initial scale of the preconditioner (1.0).
    pub precond_init_scale: f64,
    /// Scale of the soft trust region on the preconditioned step (1.5).
    pub trust_region_scale: f64,
    /// Probability of rebalancing the factors' norms at an update (0.01).
    pub balance_probability: f64,
    /// Seed of the random stream (probe vectors, update / balance draws).
    pub seed: u64,
}

impl Default for KronConfig {
    fn default() -> Self {
        KronConfig {
            lr: 1e-3,
            b1: 0.9,
            weight_decay: 0.0,
            update: PrecondUpdate::Schedule {
                max_prob: 1.0,
                min_prob: 0.03,
                decay: 0.001,
                flat_start: 250.0,
            },
            max_size_triangular: 8192,
            min_ndim_triangular: 2,
            memory_save_mode: MemorySaveMode::None,
            precond_lr: 0.1,
            precond_init_scale: 1.0,
            trust_region_scale: 1.5,
            balance_probability: 0.01,
            seed: 5318008,
        }
    }
}

optimizer! {
    /// PSGD with a Kronecker-product preconditioner `P = Q^T Q`, one factor per
    /// dimension (upper-triangular, or diagonal for large dimensions / vectors),
    /// fitted each update on a random probe `v ~ N(0, I)` and the debiased
    /// momentum. The step is `P m` passed through the reference's soft trust
    /// region `s (0.1 sign(x) ln(|x| + 1) + 0.9 tanh(x))`, `x = (P m) / s`.
    ///
    /// Randomness (whether an iteration updates / rebalances the
    /// preconditioner, the probe vectors) comes from a counter-based SplitMix64
    /// stream keyed by `seed`, the iteration count and the parameter name (see
    /// the crate's `rand` module; the reference uses Python's `random` and
    /// `torch.randn`, which this does not reproduce).
    KronPsgd, KronConfig, "KronPsgd"
}

impl KronPsgd {
    /// The optimizer; errors on invalid hyperparameters.
    pub fn new(cfg: KronConfig) -> Result<Self> {
        check_common(cfg.lr, 0.0, cfg.weight_decay, &[("b1", cfg.b1)])?;
        check(
            "precond_lr",
            cfg.precond_lr,
            cfg.precond_lr >= 0.0,
            "must be >= 0",
        )?;
        check(
            "precond_init_scale",
            cfg.precond_init_scale,
            cfg.precond_init_scale > 0.0,
            "must be > 0",
        )?;
        check(
            "trust_region_scale",
            cfg.trust_region_scale,
            cfg.trust_region_scale > 0.0,
            "must be > 0",
        )?;
        Ok(KronPsgd {
            core: Core::new(cfg.lr),
            cfg,
        })
    }

    /// Whether iteration `n` updates (and rebalances) the preconditioner.
    fn draws(&self, n: u64) -> (bool, bool) {
        let prob = match self.cfg.update {
            PrecondUpdate::Schedule {
                max_prob,
                min_prob,
                decay,
                flat_start,
            } => (max_prob * (-decay * (n as f64 - flat_start)).exp()).clamp(min_prob, max_prob),
            PrecondUpdate::Probability(p) => p,
        };
        let update = uniform(self.cfg.seed, 0, n, 0) < prob;
        let balance = uniform(self.cfg.seed, 0, n, 1) < self.cfg.balance_probability && update;
        (update, balance)
    }

    /// Per dimension: whether its factor is diagonal.
    fn diagonal(&self, shape: &[usize]) -> Vec<bool> {
        let c = &self.cfg;
        let largest = (0..shape.len()).rev().max_by_key(|&d| shape[d]);
        (0..shape.len())
            .map(|d| {
                let save = match c.memory_save_mode {
                    MemorySaveMode::None => false,
                    MemorySaveMode::OneDiag => Some(d) == largest,
                    MemorySaveMode::AllDiag => true,
                };
                shape[d] == 1
                    || shape[d] > c.max_size_triangular
                    || shape.len() < c.min_ndim_triangular
                    || save
            })
            .collect()
    }
}

const QS: [&str; 8] = ["Q0", "Q1", "Q2", "Q3", "Q4", "Q5", "Q6", "Q7"];

/// A factor: upper-triangular `s x s` or the diagonal of one.
enum Factor<T> {
    Tri(Mat<T>),
    Diag(Vec<T>),
}

impl<T: Float> Factor<T> {
    fn max_abs(&self) -> T {
        let d = match self {
            Factor::Tri(m) => &m.data,
            Factor::Diag(v) => v,
        };
        d.iter().fold(T::zero(), |a, &x| a.max(x.abs()))
    }

    fn scale(&mut self, s: T) {
        let d = match self {
            Factor::Tri(m) => &mut m.data,
            Factor::Diag(v) => v,
        };
        d.iter_mut().for_each(|x| *x = *x * s);
    }

    fn into_data(self) -> Vec<T> {
        match self {
            Factor::Tri(m) => m.data,
            Factor::Diag(v) => v,
        }
    }
}

/// The reference's cheap lower bound of the spectral norm of `a`.
fn norm_lower_bound<T: Float>(a: &Mat<T>) -> T {
    let max_abs = a.data.iter().fold(T::zero(), |m, &x| m.max(x.abs()));
    if max_abs <= T::zero() {
        return max_abs;
    }
    let n = a.rows;
    let b = a.scale(T::one() / max_abs);
    let col = |j: usize| (0..n).fold(T::zero(), |s, i| s + b.at(i, j) * b.at(i, j));
    let row = |i: usize| (0..n).fold(T::zero(), |s, j| s + b.at(i, j) * b.at(i, j));
    let argmax = |f: &dyn Fn(usize) -> T| {
        (0..n).fold((T::neg_infinity(), 0), |(bv, bi), k| {
            if f(k) > bv {
                (f(k), k)
            } else {
                (bv, bi)
            }
        })
    };
    let ((v0, i), (v1, j)) = (argmax(&col), argmax(&row));
    let y: Vec<T> = if v0 > v1 {
        let x: Vec<T> = (0..n)
            .map(|k| (0..n).fold(T::zero(), |s, r| s + b.at(r, i) * b.at(r, k)))
            .collect();
        let nx = crate::float::norm(&x);
        (0..n)
            .map(|r| (0..n).fold(T::zero(), |s, k| s + x[k] / nx * b.at(r, k)))
            .collect()
    } else {
        let x: Vec<T> = (0..n)
            .map(|r| (0..n).fold(T::zero(), |s, k| s + b.at(r, k) * b.at(j, k)))
            .collect();
        let nx = crate::float::norm(&x);
        (0..n)
            .map(|k| (0..n).fold(T::zero(), |s, r| s + b.at(r, k) * (x[r] / nx)))
            .collect()
    };
    max_abs * crate::float::norm(&y)
}

impl Rule for KronPsgd {
    fn update<T: Float>(
        &self,
        lr: f64,
        name: &str,
        st: &mut ParamState,
        p: &mut [T],
        grad: &[T],
    ) -> Result<()> {
        let c = &self.cfg;
        let n = p.len();
        // A scalar is a 1-element vector with a diagonal factor.
        let shape = if st.shape.is_empty() {
            vec![1]
        } else {
            st.shape.clone()
        };
        if shape.len() > QS.len() {
            return Err(OptimError::UnsupportedShape {
                name: name.into(),
                optimizer: "KronPsgd",
                need: "at most 8 dimensions",
                shape,
            });
        }
        let diag = self.diagonal(&shape);
        let mut specs = vec![("momentum_buffer", n)];
        for (d, &s) in shape.iter().enumerate() {
            specs.push((QS[d], if diag[d] { s } else { s * s }));
        }
        let iteration = self.core.iteration();
        let (do_update, balance) = self.draws(iteration);
        // Inverses of the stored triangular factors, before anything changes:
        // a singular factor (only a corrupted saved state has one) is an error
        // that leaves the state as it was.
        let fresh: Vec<bool> = (0..shape.len()).map(|d| !st.has::<T>(QS[d])).collect();
        let mut invs: Vec<Option<Mat<T>>> = vec![None; shape.len()];
        if do_update {
            for (d, &s) in shape.iter().enumerate() {
                if diag[d] || fresh[d] {
                    continue;
                }
                if let Some(q) = T::bufs_ref(st).get(QS[d]).filter(|q| q.len() == s * s) {
                    let inv = inv_upper(&Mat::from(s, s, q.clone())).ok_or_else(|| {
                        OptimError::BadState(format!(
                            "parameter `{name}`: Kron factor Q{d} is singular"
                        ))
                    })?;
                    invs[d] = Some(inv);
                }
            }
        }
        let mut bufs = st.take_all::<T>(&specs)?;
        let mut m = std::mem::take(&mut bufs[0]);
        let init = T::c(c.precond_init_scale.powf(1.0 / shape.len() as f64));
        let mut qs: Vec<Factor<T>> = shape
            .iter()
            .enumerate()
            .map(|(d, &s)| {
                let mut data = std::mem::take(&mut bufs[d + 1]);
                if fresh[d] {
                    data = if diag[d] {
                        vec![init; s]
                    } else {
                        Mat::<T>::eye(s).scale(init).data
                    };
                }
                if diag[d] {
                    Factor::Diag(data)
                } else {
                    Factor::Tri(Mat::from(s, s, data))
                }
            })
            .collect();
        let b1 = T::c(c.b1);
        for (mi, &g) in m.iter_mut().zip(grad) {
            *mi = *mi * b1 + T::c(1.0 - c.b1) * g;
        }
        let bc = T::c(1.0 - c.b1.powf(st.step as f64));
        let mom: Vec<T> = m.iter().map(|&x| x / bc).collect();

        if shape.len() > 1 && balance {
            let norms: Vec<T> = qs.iter().map(Factor::max_abs).collect();
            let gm = norms
                .iter()
                .fold(T::one(), |a, &x| a * x)
                .powf(T::c(1.0 / qs.len() as f64));
            let scales: Vec<T> = norms.iter().map(|&nrm| gm / nrm).collect();
            // (A zero or non-finite factor norm leaves the factors as they are.)
            if scales.iter().all(|&k| k.is_finite() && k > T::zero()) {
                for ((q, inv), &k) in qs.iter_mut().zip(invs.iter_mut()).zip(&scales) {
                    q.scale(k);
                    if let Some(inv) = inv {
                        *inv = inv.scale(T::one() / k);
                    }
                }
            }
        }

        if do_update {
            let h = name_hash(name);
            let v: Vec<T> = (0..n as u64)
                .map(|i| T::c(normal(c.seed, h, iteration, i)))
                .collect();
            let mut a = mom.clone();
            let mut conj_b = v;
            for (d, q) in qs.iter().enumerate() {
                match q {
                    Factor::Tri(qm) => {
                        a = mode_mul(&a, &shape, d, qm).0;
                        // A fresh factor is `init * I` (possibly rebalanced: use its diagonal).
                        let inv = match invs[d].take() {
                            Some(inv) => inv,
                            None => Mat::eye(qm.rows).scale(T::one() / qm.at(0, 0)),
                        };
                        conj_b = mode_mul(&conj_b, &shape, d, &inv.t()).0;
                    }
                    Factor::Diag(qv) => {
                        mode_scale(&mut a, &shape, d, |k, x| qv[k] * x);
                        mode_scale(&mut conj_b, &shape, d, |k, x| x / qv[k]);
                    }
                }
            }
            let terms: Vec<(Mat<T>, Mat<T>)> = (0..shape.len())
                .map(|d| {
                    (
                        mode_gram(&a, &a, &shape, d),
                        mode_gram(&conj_b, &conj_b, &shape, d),
                    )
                })
                .collect();
            let (step, tiny) = (T::c(c.precond_lr), T::c(f32::MIN_POSITIVE as f64));
            for (q, (t1, t2)) in qs.iter_mut().zip(terms) {
                let diff = t1.axpby(T::one(), &t2, -T::one());
                let sum = t1.axpby(T::one(), &t2, T::one());
                match q {
                    Factor::Tri(qm) => {
                        let s = qm.rows;
                        let denom = norm_lower_bound(&sum) + tiny;
                        let mut tmp = Mat::zeros(s, s);
                        for i in 0..s {
                            for j in i..s {
                                tmp.set(i, j, diff.at(i, j) * step / denom);
                            }
                        }
                        let upd = tmp.mm(qm);
                        qm.data
                            .iter_mut()
                            .zip(&upd.data)
                            .for_each(|(x, &u)| *x = *x - u);
                    }
                    Factor::Diag(qv) => {
                        let s = qv.len();
                        let denom =
                            (0..s).fold(T::zero(), |mx, k| mx.max(sum.at(k, k).abs())) + tiny;
                        for (k, x) in qv.iter_mut().enumerate() {
                            *x = *x - diff.at(k, k) * step * *x / denom;
                        }
                    }
                }
            }
        }

        let mut pre = mom;
        for (d, q) in qs.iter().enumerate() {
            match q {
                Factor::Tri(qm) => pre = mode_mul(&pre, &shape, d, &qm.t().mm(qm)).0,
                Factor::Diag(qv) => mode_scale(&mut pre, &shape, d, |k, x| qv[k] * qv[k] * x),
            }
        }
        let tr = T::c(c.trust_region_scale);
        let (w_log, w_tanh) = (T::c(0.1), T::c(0.9));
        let wd = T::c(if st.shape.len() >= 2 {
            c.weight_decay
        } else {
            0.0
        });
        let neg_lr = T::c(-lr);
        for (pi, &x) in p.iter_mut().zip(&pre) {
            let y = x / tr;
            let s = w_log * crate::optimizers::lion::sign(y) * (y.abs() + T::one()).ln()
                + w_tanh * y.tanh();
            let u = s * tr + wd * *pi;
            *pi = *pi + neg_lr * u;
        }
        let mut out = vec![m];
        out.extend(qs.into_iter().map(Factor::into_data));
        st.put_all(&specs, out);
        Ok(())
    }
}
