//! Riemannian SGD / Adam on the Stiefel manifold `{W : W^T W = I}`, as
//! geoopt's `RiemannianSGD` / `RiemannianAdam` on `EuclideanStiefel`
//! (Kochurov et al., geoopt/geoopt; Bécigneul & Ganea 2019 for Riemannian
//! Adam): tangent projection `u - W sym(W^T u)`, QR retraction with
//! `diag(R) > 0`, transport by projection at the new point.

use crate::error::{OptimError, Result};
use crate::float::Float;
use crate::linalg::{qr, Mat};
use crate::optimizer::{optimizer, Core, Rule};
use crate::optimizers::{check, check_common};
use crate::state::ParamState;

/// The Euclidean-space method run on the manifold.
#[derive(Debug, Clone, PartialEq)]
pub enum StiefelMethod {
    /// Riemannian SGD with momentum / dampening / Nesterov.
    Sgd {
        /// Momentum (0 for plain Riemannian gradient descent).
        momentum: f64,
        /// Dampening of the momentum.
        dampening: f64,
        /// Nesterov momentum.
        nesterov: bool,
    },
    /// Riemannian Adam.
    Adam {
        /// `(beta1, beta2)`.
        betas: (f64, f64),
        /// Added to the denominator.
        eps: f64,
        /// Running maximum of the second moment.
        amsgrad: bool,
    },
}

/// Hyperparameters of [`Stiefel`].
#[derive(Debug, Clone, PartialEq)]
pub struct StiefelConfig {
    /// Learning rate (1e-3).
    pub lr: f64,
    /// Euclidean L2 term added to the gradient before projection (0).
    pub weight_decay: f64,
    /// SGD or Adam (Adam with torch's defaults).
    pub method: StiefelMethod,
}

impl Default for StiefelConfig {
    fn default() -> Self {
        StiefelConfig {
            lr: 1e-3,
            weight_decay: 0.0,
            method: StiefelMethod::Adam {
                betas: (0.9, 0.999),
                eps: 1e-8,
                amsgrad: false,
            },
        }
    }
}

optimizer! {
    /// Riemannian optimisation of matrices with orthonormal columns (`[n, p]`,
    /// `n >= p`); every step ends on the manifold (`W^T W = I` to rounding).
    /// The starting parameter must be on it (e.g. the `Q` of a QR).
    Stiefel, StiefelConfig, "Stiefel"
}

impl Stiefel {
    /// The optimizer; errors on invalid hyperparameters.
    pub fn new(cfg: StiefelConfig) -> Result<Self> {
        check_common(cfg.lr, 0.0, cfg.weight_decay, &[])?;
        match cfg.method {
            StiefelMethod::Sgd {
                momentum,
                dampening,
                nesterov,
            } => {
                check("momentum", momentum, momentum >= 0.0, "must be >= 0")?;
                if nesterov {
                    check(
                        "momentum",
                        momentum,
                        momentum > 0.0 && dampening == 0.0,
                        "nesterov needs momentum > 0 and dampening 0",
                    )?;
                }
            }
            StiefelMethod::Adam { betas, eps, .. } => {
                check_common(
                    cfg.lr,
                    eps,
                    0.0,
                    &[("betas[0]", betas.0), ("betas[1]", betas.1)],
                )?;
            }
        }
        Ok(Stiefel {
            core: Core::new(cfg.lr),
            cfg,
        })
    }
}

impl Stiefel {
    /// Moves a `[n, p]` matrix (`n >= p`) onto the manifold: the `Q` of its
    /// QR factorisation with `diag(R) > 0` (a starting point for the optimizer).
    pub fn orthonormalize<T: Float>(shape: &[usize], w: &mut [T]) -> Result<()> {
        let ok = shape.len() == 2
            && shape[0] >= shape[1]
            && shape[0].checked_mul(shape[1]) == Some(w.len());
        if !ok {
            return Err(OptimError::UnsupportedShape {
                name: "orthonormalize".into(),
                optimizer: "Stiefel",
                need: "a matrix [n, p] with n >= p holding n * p values",
                shape: shape.to_vec(),
            });
        }
        let (q, _) = qr(&Mat::from(shape[0], shape[1], w.to_vec()));
        w.copy_from_slice(&q.data);
        Ok(())
    }
}

/// `u - x sym(x^T u)`.
fn proju<T: Float>(x: &Mat<T>, u: &Mat<T>) -> Mat<T> {
    let xtu = x.t().mm(u);
    let half = T::c(0.5);
    let sym = xtu.axpby(half, &xtu.t(), half);
    u.axpby(T::one(), &x.mm(&sym), -T::one())
}

impl Rule for Stiefel {
    fn update<T: Float>(
        &self,
        lr: f64,
        name: &str,
        st: &mut ParamState,
        p: &mut [T],
        grad: &[T],
    ) -> Result<()> {
        let shape = st.shape.clone();
        if shape.len() != 2 || shape[0] < shape[1] || shape[1] == 0 {
            return Err(OptimError::UnsupportedShape {
                name: name.into(),
                optimizer: "Stiefel",
                need: "a matrix [n, p] with n >= p >= 1",
                shape,
            });
        }
        let (n, k) = (shape[0], shape[1]);
        let specs: Vec<(&str, usize)> = match self.cfg.method {
            StiefelMethod::Sgd { momentum, .. } if momentum > 0.0 => {
                vec![("momentum_buffer", n * k)]
            }
            StiefelMethod::Sgd { .. } => vec![],
            StiefelMethod::Adam { amsgrad, .. } => {
                let mut s = vec![("exp_avg", n * k), ("exp_avg_sq", n * k)];
                if amsgrad {
                    s.push(("max_exp_avg_sq", n * k));
                }
                s
            }
        };
        let fresh = specs.first().is_some_and(|(key, _)| !st.has::<T>(key));
        let mut bufs = st.take_all::<T>(&specs)?;
        let x = Mat::from(n, k, p.to_vec());
        let wd = T::c(self.cfg.weight_decay);
        let g = Mat::from(
            n,
            k,
            grad.iter()
                .zip(p.iter())
                .map(|(&g, &pi)| g + wd * pi)
                .collect(),
        );
        let rgrad = proju(&x, &g);
        let neg_lr = T::c(-lr);
        let (dir, carried) = match self.cfg.method {
            StiefelMethod::Sgd { momentum: 0.0, .. } => (rgrad, None),
            StiefelMethod::Sgd {
                momentum,
                dampening,
                nesterov,
            } => {
                if fresh {
                    // geoopt starts the buffer at the raw (Euclidean) gradient.
                    bufs[0].copy_from_slice(grad);
                }
                let mut buf = Mat::from(n, k, std::mem::take(&mut bufs[0]));
                buf = buf.axpby(T::c(momentum), &rgrad, T::c(1.0 - dampening));
                let d = if nesterov {
                    rgrad.axpby(T::one(), &buf, T::c(momentum))
                } else {
                    buf.clone()
                };
                (d, Some((0, buf)))
            }
            StiefelMethod::Adam {
                betas: (b1, b2),
                eps,
                amsgrad,
            } => {
                let t = st.step as f64;
                let (m, rest) = bufs.split_at_mut(1);
                for ((mi, vi), &r) in m[0].iter_mut().zip(rest[0].iter_mut()).zip(&rgrad.data) {
                    *mi = *mi * T::c(b1) + T::c(1.0 - b1) * r;
                    *vi = *vi * T::c(b2) + T::c(1.0 - b2) * (r * r);
                }
                if amsgrad {
                    let (v, mx) = rest.split_at_mut(1);
                    mx[0]
                        .iter_mut()
                        .zip(&v[0])
                        .for_each(|(a, &b)| *a = a.max(b));
                }
                let second = if amsgrad { &rest[1] } else { &rest[0] };
                let (bc1, bc2) = (T::c(1.0 - b1.powf(t)), T::c(1.0 - b2.powf(t)));
                let d: Vec<T> = m[0]
                    .iter()
                    .zip(second)
                    .map(|(&mi, &vi)| (mi / bc1) / ((vi / bc2).sqrt() + T::c(eps)))
                    .collect();
                let carried = Mat::from(n, k, std::mem::take(&mut m[0]));
                (Mat::from(n, k, d), Some((0, carried)))
            }
        };
        let (y, _) = qr(&x.axpby(T::one(), &dir, neg_lr));
        if let Some((slot, v)) = carried {
            bufs[slot] = proju(&y, &v).data;
        }
        p.copy_from_slice(&y.data);
        st.put_all(&specs, bufs);
        Ok(())
    }
}
