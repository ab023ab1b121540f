//! One file per optimizer family.

pub mod adadelta;
pub mod adafactor;
pub mod adagrad;
pub mod adam;
pub mod adamax;
pub mod asgd;
pub mod kron;
pub mod lamb;
pub mod lbfgs;
pub mod lion;
pub mod mars;
pub mod muon;
pub mod nadam;
pub mod qhadam;
pub mod radam;
pub mod rmsprop;
pub mod rprop;
pub mod sgd;
pub mod soap;
pub mod sophia;
pub mod sparse_adam;
pub mod stiefel;

use crate::error::{OptimError, Result};

/// `Err(InvalidHyperparameter)` unless `ok`.
pub(crate) fn check(name: &'static str, value: f64, ok: bool, why: &'static str) -> Result<()> {
    if ok {
        Ok(())
    } else {
        Err(OptimError::InvalidHyperparameter { name, value, why })
    }
}

/// The usual checks: `lr >= 0`, `eps >= 0`, `weight_decay >= 0`, betas in [0, 1).
pub(crate) fn check_common(
    lr: f64,
    eps: f64,
    weight_decay: f64,
    betas: &[(&'static str, f64)],
) -> Result<()> {
    check("lr", lr, lr >= 0.0, "must be >= 0")?;
    check("eps", eps, eps >= 0.0, "must be >= 0")?;
    check(
        "weight_decay",
        weight_decay,
        weight_decay >= 0.0,
        "must be >= 0",
    )?;
    for &(name, b) in betas {
        check(name, b, (0.0..1.0).contains(&b), "must be in [0, 1)")?;
    }
    Ok(())
}

/// `-g` when maximizing, else `g` (a copy either way: the rules may modify it).
pub(crate) fn signed_grad<T: crate::Float>(grad: &[T], maximize: bool) -> Vec<T> {
    if maximize {
        grad.iter().map(|&g| -g).collect()
    } else {
        grad.to_vec()
    }
}

/// Weight decay the torch way: decoupled `p *= 1 - lr wd`, else L2 `g += wd p`.
pub(crate) fn apply_weight_decay<T: crate::Float>(
    p: &mut [T],
    g: &mut [T],
    lr: f64,
    wd: f64,
    decoupled: bool,
) {
    if wd == 0.0 {
        return;
    }
    if decoupled {
        let f = T::c(1.0 - lr * wd);
        p.iter_mut().for_each(|x| *x = *x * f);
    } else {
        crate::float::axpy(g, T::c(wd), p);
    }
}

/// `max(a, b)` propagating NaN, as `torch.maximum`.
pub(crate) fn max_nan<T: crate::Float>(a: T, b: T) -> T {
    if a.is_nan() || b.is_nan() {
        T::nan()
    } else {
        a.max(b)
    }
}
