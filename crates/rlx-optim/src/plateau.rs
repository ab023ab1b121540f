//! `torch.optim.lr_scheduler.ReduceLROnPlateau`: a learning rate driven by a
//! metric (a validation loss, an accuracy) rather than by the iteration.

use crate::error::{OptimError, Result};
use crate::optimizer::Optimizer;

/// Whether a lower or a higher metric is better (torch's `mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlateauMode {
    /// `"min"`: the metric is a loss; lower is better.
    Min,
    /// `"max"`: the metric is a score; higher is better.
    Max,
}

/// How `threshold` defines a significant improvement (torch's
/// `threshold_mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ThresholdMode {
    /// `"rel"`: better than `best * (1 - threshold)` (mode min) or
    /// `best * (1 + threshold)` (mode max).
    Rel,
    /// `"abs"`: better than `best - threshold` (mode min) or
    /// `best + threshold` (mode max).
    Abs,
}

/// Hyperparameters of [`ReduceLrOnPlateau`]; `Default` is torch's.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PlateauConfig {
    /// Lower or higher is better (torch: min).
    pub mode: PlateauMode,
    /// Factor the rate is multiplied by on a plateau; must be < 1
    /// (torch: 0.1).
    pub factor: f64,
    /// Steps without significant improvement tolerated; the rate is reduced
    /// on the next one (torch: 10).
    pub patience: u64,
    /// Size of a significant improvement (torch: 1e-4).
    pub threshold: f64,
    /// Relative or absolute `threshold` (torch: rel).
    pub threshold_mode: ThresholdMode,
    /// Steps after a reduction during which bad steps are not counted
    /// (torch: 0).
    pub cooldown: u64,
    /// Lower bound of the rate (torch: 0).
    pub min_lr: f64,
    /// A reduction smaller than this is not applied (torch: 1e-8).
    pub eps: f64,
}

impl Default for PlateauConfig {
    fn default() -> Self {
        PlateauConfig {
            mode: PlateauMode::Min,
            factor: 0.1,
            patience: 10,
            threshold: 1e-4,
            threshold_mode: ThresholdMode::Rel,
            cooldown: 0,
            min_lr: 0.0,
            eps: 1e-8,
        }
    }
}

/// `torch.optim.lr_scheduler.ReduceLROnPlateau` for one rate (one param
/// group): call [`ReduceLrOnPlateau::step`] once per evaluation with the
/// metric; after more than `patience` steps in a row without a significant
/// improvement on the best metric so far, the rate is multiplied by `factor`
/// (not below `min_lr`, and only if it drops by more than `eps`), and the
/// next `cooldown` steps count no bad steps.
///
/// ```
/// use rlx_optim::{Optimizer, PlateauConfig, ReduceLrOnPlateau, Sgd, SgdConfig};
///
/// let mut opt = Sgd::new(SgdConfig { lr: 0.1, ..Default::default() })?;
/// let mut plateau = ReduceLrOnPlateau::new(0.1, PlateauConfig { patience: 1, factor: 0.5, ..Default::default() })?;
/// for loss in [1.0, 0.9, 0.9, 0.9] {
///     plateau.step_optimizer(&mut opt, loss);
/// }
/// assert_eq!(opt.lr(), 0.05); // the second 0.9 in a row is one bad step too many
/// # Ok::<(), rlx_optim::OptimError>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct ReduceLrOnPlateau {
    cfg: PlateauConfig,
    lr: f64,
    best: f64,
    num_bad: u64,
    cooldown_counter: u64,
    steps: u64,
}

impl ReduceLrOnPlateau {
    /// A scheduler starting at rate `lr`; checks the configuration (as torch:
    /// `factor < 1`; also `factor >= 0`, `threshold`, `min_lr` and `eps`
    /// finite and not negative).
    pub fn new(lr: f64, cfg: PlateauConfig) -> Result<Self> {
        let bad = |name, value, why| Err(OptimError::InvalidHyperparameter { name, value, why });
        if !(cfg.factor >= 0.0 && cfg.factor < 1.0) {
            return bad(
                "factor",
                cfg.factor,
                "must be in [0, 1) (torch: factor < 1)",
            );
        }
        for (name, v) in [
            ("threshold", cfg.threshold),
            ("min_lr", cfg.min_lr),
            ("eps", cfg.eps),
        ] {
            if !(v.is_finite() && v >= 0.0) {
                return bad(name, v, "must be finite and >= 0");
            }
        }
        if !lr.is_finite() {
            return bad("lr", lr, "must be finite");
        }
        Ok(ReduceLrOnPlateau {
            cfg,
            lr,
            best: Self::worst(cfg.mode),
            num_bad: 0,
            cooldown_counter: 0,
            steps: 0,
        })
    }

    fn worst(mode: PlateauMode) -> f64 {
        match mode {
            PlateauMode::Min => f64::INFINITY,
            PlateauMode::Max => f64::NEG_INFINITY,
        }
    }

    fn is_better(&self, a: f64) -> bool {
        let (best, th) = (self.best, self.cfg.threshold);
        match (self.cfg.mode, self.cfg.threshold_mode) {
            (PlateauMode::Min, ThresholdMode::Rel) => a < best * (1.0 - th),
            (PlateauMode::Min, ThresholdMode::Abs) => a < best - th,
            (PlateauMode::Max, ThresholdMode::Rel) => a > best * (th + 1.0),
            (PlateauMode::Max, ThresholdMode::Abs) => a > best + th,
        }
    }

    /// One evaluation with metric `metric`; returns the rate in force after
    /// it. A NaN metric is never an improvement (as in torch).
    pub fn step(&mut self, metric: f64) -> f64 {
        self.steps = self.steps.saturating_add(1);
        if self.is_better(metric) {
            self.best = metric;
            self.num_bad = 0;
        } else {
            self.num_bad = self.num_bad.saturating_add(1);
        }
        if self.cooldown_counter > 0 {
            self.cooldown_counter -= 1;
            self.num_bad = 0;
        }
        if self.num_bad > self.cfg.patience {
            let new_lr = (self.lr * self.cfg.factor).max(self.cfg.min_lr);
            if self.lr - new_lr > self.cfg.eps {
                self.lr = new_lr;
            }
            self.cooldown_counter = self.cfg.cooldown;
            self.num_bad = 0;
        }
        self.lr
    }

    /// [`ReduceLrOnPlateau::step`] on the rate of `opt`: takes the
    /// optimizer's current rate (as torch reads the param group's), steps,
    /// and sets the optimizer's rate if it was reduced. [`Optimizer::set_lr`]
    /// also sets the base rate an attached [`crate::LrSchedule`] scales.
    pub fn step_optimizer<O: Optimizer + ?Sized>(&mut self, opt: &mut O, metric: f64) -> f64 {
        self.lr = opt.lr();
        let lr = self.step(metric);
        if lr != opt.lr() {
            opt.set_lr(lr);
        }
        lr
    }

    /// The current rate.
    pub fn lr(&self) -> f64 {
        self.lr
    }

    /// Sets the current rate (keeps the best metric and counters).
    pub fn set_lr(&mut self, lr: f64) {
        self.lr = lr;
    }

    /// The best metric so far (infinitely bad before the first step).
    pub fn best(&self) -> f64 {
        self.best
    }

    /// Bad steps counted since the last improvement or reduction.
    pub fn num_bad_steps(&self) -> u64 {
        self.num_bad
    }

    /// Whether the next step is in the cooldown after a reduction.
    pub fn in_cooldown(&self) -> bool {
        self.cooldown_counter > 0
    }

    /// Steps taken (torch's `last_epoch`).
    pub fn steps(&self) -> u64 {
        self.steps
    }

    /// The configuration.
    pub fn config(&self) -> &PlateauConfig {
        &self.cfg
    }

    /// Cooldown steps left (torch's `cooldown_counter`).
    pub fn cooldown_left(&self) -> u64 {
        self.cooldown_counter
    }

    pub(crate) fn restore_counters(&mut self, best: f64, num_bad: u64, cooldown: u64, steps: u64) {
        self.best = best;
        self.num_bad = num_bad;
        self.cooldown_counter = cooldown;
        self.steps = steps;
    }

    /// Forgets the best metric and the counters (torch's `_reset`), keeping
    /// the rate.
    pub fn reset(&mut self) {
        self.best = Self::worst(self.cfg.mode);
        self.num_bad = 0;
        self.cooldown_counter = 0;
    }
}
