//! Learning-rate schedules: the factor applied to the base rate at each
//! iteration, with `torch.optim.lr_scheduler` semantics where torch has the
//! schedule.
//!
//! [`LrSchedule::lr_at`] is a closed form in the iteration. Where torch's
//! scheduler is recursive (it multiplies or rescales the optimizer's current
//! rate: `StepLR`, `MultiStepLR`, `ExponentialLR`, `LinearLR`,
//! `CosineAnnealingLR`), the closed form equals torch's rates to rounding
//! (the tests hold them to 1e-12 relative over 80 iterations); it differs
//! from torch only if something else changes the optimizer's rate while the
//! schedule runs (torch's recursion then carries the change on, here
//! [`crate::Optimizer::set_lr`] sets the base rate the schedule scales).
//! `ReduceLROnPlateau` is driven by a metric, not by the iteration: it is
//! [`crate::ReduceLrOnPlateau`].

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
    /// `eta_min + (base - eta_min) (1 + cos(pi t / t_max)) / 2`, also past
    /// `t_max` (it rises again, period `2 t_max`, as torch's recursive form
    /// does). `t_max` 0 is taken as 1.
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
    /// `torch.optim.lr_scheduler.MultiStepLR`: multiply by `gamma` at each
    /// milestone (a milestone listed `n` times multiplies by `gamma^n`); the
    /// milestones need not be sorted.
    MultiStep {
        /// Iterations at which the rate decays.
        milestones: Vec<u64>,
        /// Decay factor.
        gamma: f64,
    },
    /// `torch.optim.lr_scheduler.ExponentialLR`: `base * gamma^t`.
    Exponential {
        /// Decay factor per iteration.
        gamma: f64,
    },
    /// `torch.optim.lr_scheduler.CosineAnnealingWarmRestarts` (stepped once
    /// per iteration, without an explicit epoch): cosine from `base` towards
    /// `eta_min` over a period of `t_i` iterations, then a restart at `base`;
    /// the first period is `t_0`, each next one `t_mult` times longer:
    /// `eta_min + (base - eta_min) (1 + cos(pi t_cur / t_i)) / 2`.
    /// `t_0` 0 is taken as 1 and `t_mult` 0 as 1 (torch refuses both).
    CosineWarmRestarts {
        /// Iterations of the first period.
        t_0: u64,
        /// Growth factor of the period after each restart.
        t_mult: u64,
        /// Rate approached at the end of each period.
        eta_min: f64,
    },
    /// `torch.optim.lr_scheduler.OneCycleLR` with `max_lr` the base rate
    /// (the optimizer's configured rate; torch overrides the optimizer's rate
    /// with `max_lr / div_factor` at construction, and so does
    /// [`crate::Optimizer::set_schedule`] through `lr_at(base, 0)`).
    ///
    /// Phases (fractional end steps as torch computes them, `n = total_steps`):
    /// from `initial = base / div_factor` up to `base` by iteration
    /// `pct_start n - 1`, then down to `min = initial / final_div_factor` at
    /// `n - 1`; with `three_phase`, up to `base` by `pct_start n - 1`, back to
    /// `initial` by `2 pct_start n - 2`, then down to `min` at `n - 1`.
    /// Iterations past `n` (where torch raises an error) keep the rate of
    /// iteration `n`.
    ///
    /// Momentum cycling (`cycle_momentum`, torch's default) is given by
    /// [`LrSchedule::momentum_at`]: the optimizers here fix their momentum /
    /// `beta1` at construction and do not cycle it; a caller that wants it
    /// reads it from there.
    OneCycle {
        /// Total iterations of the cycle (torch's `total_steps`, or
        /// `epochs * steps_per_epoch`).
        total_steps: u64,
        /// Fraction of the cycle spent increasing the rate (torch: 0.3).
        pct_start: f64,
        /// Interpolation within each phase (torch: cosine).
        anneal: Anneal,
        /// `initial = base / div_factor` (torch: 25).
        div_factor: f64,
        /// `min = initial / final_div_factor` (torch: 1e4).
        final_div_factor: f64,
        /// Three phases instead of two (torch: false).
        three_phase: bool,
        /// Momentum (or `beta1`) at the peak rate (torch: 0.85).
        base_momentum: f64,
        /// Momentum (or `beta1`) at the lowest rates (torch: 0.95).
        max_momentum: f64,
    },
}

/// How [`LrSchedule::OneCycle`] interpolates within a phase (torch's
/// `anneal_strategy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Anneal {
    /// `"cos"`: `end + (start - end) / 2 (cos(pi p) + 1)`.
    Cos,
    /// `"linear"`: `(end - start) p + start`.
    Linear,
}

impl Anneal {
    fn apply(self, start: f64, end: f64, pct: f64) -> f64 {
        match self {
            Anneal::Cos => end + (start - end) / 2.0 * ((PI * pct).cos() + 1.0),
            Anneal::Linear => (end - start) * pct + start,
        }
    }
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

    /// `OneCycleLR(max_lr=base, total_steps)` with torch's defaults
    /// (`pct_start` 0.3, cosine, `div_factor` 25, `final_div_factor` 1e4,
    /// two phases, momentum 0.85 to 0.95).
    pub fn one_cycle(total_steps: u64) -> Self {
        LrSchedule::OneCycle {
            total_steps,
            pct_start: 0.3,
            anneal: Anneal::Cos,
            div_factor: 25.0,
            final_div_factor: 1e4,
            three_phase: false,
            base_momentum: 0.85,
            max_momentum: 0.95,
        }
    }

    /// The phase of a [`LrSchedule::OneCycle`] holding iteration `t`:
    /// `(pct, phase index)`, as torch's `OneCycleLR.get_lr` finds it.
    fn one_cycle_phase(
        total_steps: u64,
        pct_start: f64,
        three_phase: bool,
        t: u64,
    ) -> (f64, usize) {
        let n = total_steps as f64;
        let ends: &[f64] = if three_phase {
            &[pct_start * n - 1.0, 2.0 * pct_start * n - 2.0, n - 1.0]
        } else {
            &[pct_start * n - 1.0, n - 1.0]
        };
        let step = t.min(total_steps) as f64;
        let mut start = 0.0;
        for (i, &end) in ends.iter().enumerate() {
            if step <= end || i == ends.len() - 1 {
                return ((step - start) / (end - start), i);
            }
            start = end;
        }
        unreachable!("the last phase always matches")
    }

    /// The momentum (SGD's `momentum`, or Adam's `beta1`) that torch's
    /// `OneCycleLR(cycle_momentum=True)` sets for iteration `t`; `None` for
    /// the other schedules (they leave momentum alone). It goes from
    /// `max_momentum` down to `base_momentum` while the rate rises, and back.
    pub fn momentum_at(&self, t: u64) -> Option<f64> {
        match *self {
            LrSchedule::OneCycle {
                total_steps,
                pct_start,
                anneal,
                three_phase,
                base_momentum,
                max_momentum,
                ..
            } => {
                let (pct, phase) = Self::one_cycle_phase(total_steps, pct_start, three_phase, t);
                let (start, end) = match (three_phase, phase) {
                    (_, 0) => (max_momentum, base_momentum),
                    (false, _) | (true, 1) => (base_momentum, max_momentum),
                    (true, _) => (max_momentum, max_momentum),
                };
                Some(anneal.apply(start, end, pct))
            }
            _ => None,
        }
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
            LrSchedule::MultiStep {
                ref milestones,
                gamma,
            } => {
                // torch: at each distinct milestone m <= t, lr *= gamma ** count(m).
                let mut ms: Vec<u64> = milestones.iter().copied().filter(|&m| m <= t).collect();
                ms.sort_unstable();
                let mut lr = base;
                let mut i = 0;
                while i < ms.len() {
                    let j = ms[i..].iter().take_while(|&&m| m == ms[i]).count();
                    lr *= gamma.powi(j.min(i32::MAX as usize) as i32);
                    i += j;
                }
                lr
            }
            LrSchedule::Exponential { gamma } => base * gamma.powf(t as f64),
            LrSchedule::CosineWarmRestarts {
                t_0,
                t_mult,
                eta_min,
            } => {
                let (mut t_cur, mut t_i) = (t, t_0.max(1));
                let t_mult = t_mult.max(1);
                if t_mult == 1 {
                    t_cur %= t_i;
                } else {
                    while t_cur >= t_i {
                        t_cur -= t_i;
                        t_i = t_i.saturating_mul(t_mult);
                    }
                }
                eta_min + (base - eta_min) * (1.0 + (PI * t_cur as f64 / t_i as f64).cos()) / 2.0
            }
            LrSchedule::OneCycle {
                total_steps,
                pct_start,
                anneal,
                div_factor,
                final_div_factor,
                three_phase,
                ..
            } => {
                let initial = base / div_factor;
                let min = initial / final_div_factor;
                let (pct, phase) = Self::one_cycle_phase(total_steps, pct_start, three_phase, t);
                let (start, end) = match (three_phase, phase) {
                    (_, 0) => (initial, base),
                    (false, _) => (base, min),
                    (true, 1) => (base, initial),
                    (true, _) => (initial, min),
                };
                anneal.apply(start, end, pct)
            }
        }
    }
}
