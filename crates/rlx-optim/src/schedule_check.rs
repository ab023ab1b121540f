//! [`LrSchedule::validate`]: the arguments torch's schedulers refuse, and
//! those on which their formulas divide by zero.

use crate::error::{OptimError, Result};
use crate::schedule::LrSchedule;

fn bad(name: &'static str, value: f64, why: &'static str) -> Result<()> {
    Err(OptimError::InvalidHyperparameter { name, value, why })
}

fn finite(name: &'static str, v: f64) -> Result<()> {
    if v.is_finite() {
        Ok(())
    } else {
        bad(name, v, "must be finite")
    }
}

fn positive_count(name: &'static str, v: u64, why: &'static str) -> Result<()> {
    if v > 0 {
        Ok(())
    } else {
        bad(name, 0.0, why)
    }
}

impl LrSchedule {
    /// Checks the schedule's arguments as torch's constructors do (with
    /// their messages' ranges), plus the cases where torch's formula divides
    /// by zero at run time (`Cosine { t_max: 0 }`, `Step { step_size: 0 }`,
    /// a `OneCycle` phase of zero length where torch's `get_lr` enters it).
    /// [`crate::Optimizer::try_set_schedule`] calls it.
    pub fn validate(&self) -> Result<()> {
        match *self {
            LrSchedule::Constant => Ok(()),
            LrSchedule::Linear {
                start_factor,
                end_factor,
                ..
            } => {
                if !(start_factor > 0.0 && start_factor <= 1.0) {
                    return bad("start_factor", start_factor, "must be in (0, 1] (LinearLR)");
                }
                if !(0.0..=1.0).contains(&end_factor) {
                    return bad("end_factor", end_factor, "must be in [0, 1] (LinearLR)");
                }
                Ok(())
            }
            LrSchedule::Cosine { t_max, eta_min } => {
                positive_count(
                    "t_max",
                    t_max,
                    "must be > 0 (CosineAnnealingLR divides by it)",
                )?;
                finite("eta_min", eta_min)
            }
            LrSchedule::WarmupCosine {
                warmup,
                total,
                min_factor,
            } => {
                positive_count("total", total, "must be > 0")?;
                if warmup > total {
                    return bad("warmup", warmup as f64, "must not exceed total");
                }
                if !(0.0..=1.0).contains(&min_factor) {
                    return bad("min_factor", min_factor, "must be in [0, 1]");
                }
                Ok(())
            }
            LrSchedule::Step { step_size, gamma } => {
                positive_count("step_size", step_size, "must be > 0 (StepLR divides by it)")?;
                finite("gamma", gamma)
            }
            LrSchedule::MultiStep { gamma, .. } | LrSchedule::Exponential { gamma } => {
                finite("gamma", gamma)
            }
            LrSchedule::CosineWarmRestarts {
                t_0,
                t_mult,
                eta_min,
            } => {
                positive_count(
                    "T_0",
                    t_0,
                    "expected a positive integer (CosineAnnealingWarmRestarts)",
                )?;
                if t_mult < 1 {
                    return bad(
                        "T_mult",
                        t_mult as f64,
                        "expected an integer >= 1 (CosineAnnealingWarmRestarts)",
                    );
                }
                finite("eta_min", eta_min)
            }
            LrSchedule::OneCycle {
                total_steps,
                pct_start,
                div_factor,
                final_div_factor,
                three_phase,
                base_momentum,
                max_momentum,
                ..
            } => {
                positive_count(
                    "total_steps",
                    total_steps,
                    "expected a positive integer (OneCycleLR)",
                )?;
                if !(0.0..=1.0).contains(&pct_start) {
                    return bad(
                        "pct_start",
                        pct_start,
                        "expected a float between 0 and 1 (OneCycleLR)",
                    );
                }
                for (name, v) in [
                    ("div_factor", div_factor),
                    ("final_div_factor", final_div_factor),
                ] {
                    if !(v.is_finite() && v > 0.0) {
                        return bad(name, v, "must be finite and > 0");
                    }
                }
                finite("base_momentum", base_momentum)?;
                finite("max_momentum", max_momentum)?;
                // Phase ends as torch computes them. torch's get_lr divides by
                // a phase's length where it enters it: the first phase at step 0
                // when it ends at 0, the last whenever it is empty (a negative
                // first phase is just skipped, as torch skips it).
                let n = total_steps as f64;
                let up = pct_start * n - 1.0;
                let ends: &[f64] = if three_phase {
                    &[up, 2.0 * pct_start * n - 2.0, n - 1.0]
                } else {
                    &[up, n - 1.0]
                };
                let last_empty = ends[ends.len() - 1] == ends[ends.len() - 2];
                if up == 0.0 || last_empty {
                    return bad(
                        "pct_start",
                        pct_start,
                        "leaves a OneCycleLR phase of zero length for this total_steps (torch divides by zero)",
                    );
                }
                Ok(())
            }
        }
    }
}
