//! Learning-rate schedules: the factor applied to the base rate at each
//! iteration, with `torch.optim.lr_scheduler` semantics where torch has the
//! schedule.

use std::f64::consts::PI;

use crate::error::{OptimError, Result};

/// A learning-rate schedule. [`LrSchedule::lr_at`] gives the rate for
/// iteration `t` (0 before the first `end_iteration`), as torch's scheduler
/// gives it after `t` calls of `scheduler.step()`.
#[derive(Debug, Clone, PartialEq)]
pub enum LrSchedule {
    /// The base rate throughout.
    Constant,
    /// `torch.optim.lr_scheduler.LinearLR`: the factor goes linearly from
    /// `start_factor` to `end_factor` over `total_iters`, then stays.
    Linear {
        /// Factor at iteration 0.
        start_factor: f64,
        /// Factor from `total_iters` on.
        end_factor: f64,
        /// Iterations of the ramp.
        total_iters: u64,
    },
    /// `torch.optim.lr_scheduler.CosineAnnealingLR` (closed form):
    /// `eta_min + (base - eta_min) (1 + cos(pi t / t_max)) / 2`.
    Cosine {
        /// Half-period in iterations.
        t_max: u64,
        /// Rate at `t = t_max`.
        eta_min: f64,
    },
    /// Linear warm-up from 0 over `warmup` iterations, then cosine decay to
    /// `min_factor * base` at `total` (the `get_cosine_schedule_with_warmup`
    /// form of `transformers`, with a floor): factor `t / warmup` for
    /// `t < warmup`, else `min + (1 - min)(1 + cos(pi p)) / 2` with
    /// `p = min(1, (t - warmup) / (total - warmup))`.
    WarmupCosine {
        /// Warm-up iterations.
        warmup: u64,
        /// Iteration at which the decay ends.
        total: u64,
        /// Final factor.
        min_factor: f64,
    },
    /// `torch.optim.lr_scheduler.StepLR`: multiply by `gamma` every
    /// `step_size` iterations.
    Step {
        /// Iterations between decays.
        step_size: u64,
        /// Decay factor.
        gamma: f64,
    },
}

impl LrSchedule {
    /// Linear warm-up from `start_factor` to 1 over `warmup` iterations
    /// (`LinearLR(start_factor, 1.0, warmup)`); checks its arguments.
    pub fn linear_warmup(start_factor: f64, warmup: u64) -> Result<Self> {
        if !(start_factor > 0.0 && start_factor <= 1.0) {
            return Err(OptimError::InvalidHyperparameter {
                name: "start_factor",
                value: start_factor,
                why: "must be in (0, 1] (as torch's LinearLR)",
            });
        }
        Ok(LrSchedule::Linear {
            start_factor,
            end_factor: 1.0,
            total_iters: warmup,
        })
    }

    /// The learning rate at iteration `t` for base rate `base`.
    pub fn lr_at(&self, base: f64, t: u64) -> f64 {
        match *self {
            LrSchedule::Constant => base,
            LrSchedule::Linear {
                start_factor,
                end_factor,
                total_iters,
            } => {
                let frac = if total_iters == 0 {
                    1.0
                } else {
                    t.min(total_iters) as f64 / total_iters as f64
                };
                base * (start_factor + (end_factor - start_factor) * frac)
            }
            LrSchedule::Cosine { t_max, eta_min } => {
                let t_max = t_max.max(1) as f64;
                eta_min + (base - eta_min) * (1.0 + (PI * t as f64 / t_max).cos()) / 2.0
            }
            LrSchedule::WarmupCosine {
                warmup,
                total,
                min_factor,
            } => {
                if t < warmup {
                    return base * t as f64 / warmup as f64;
                }
                let span = total.saturating_sub(warmup).max(1) as f64;
                let p = ((t - warmup) as f64 / span).min(1.0);
                base * (min_factor + (1.0 - min_factor) * 0.5 * (1.0 + (PI * p).cos()))
            }
            LrSchedule::Step { step_size, gamma } => {
                base * gamma.powi((t / step_size.max(1)).min(i32::MAX as u64) as i32)
            }
        }
    }
}
