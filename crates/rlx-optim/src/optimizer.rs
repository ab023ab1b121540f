//! The [`Optimizer`] trait and the bookkeeping every optimizer shares
//! ([`Core`]: learning rate, schedule, iteration count, per-name state).

use std::collections::BTreeMap;

use crate::error::{OptimError, Result};
use crate::float::Float;
use crate::schedule::LrSchedule;
use crate::state::{OptimState, ParamState, SavedParam};

/// A training-step optimizer. One instance serves a whole model: each call
/// steps one named parameter buffer with its gradient, and the optimizer
/// keeps that parameter's state (moments, preconditioners) under its name.
///
/// Call [`Optimizer::step`] once per parameter, then
/// [`Optimizer::end_iteration`] once per training iteration (it advances an
/// attached [`LrSchedule`]).
pub trait Optimizer {
    /// Steps an `f32` parameter of `shape` (row-major) in place.
    fn step_f32(
        &mut self,
        name: &str,
        shape: &[usize],
        param: &mut [f32],
        grad: &[f32],
    ) -> Result<()>;
    /// Steps an `f64` parameter of `shape` (row-major) in place.
    fn step_f64(
        &mut self,
        name: &str,
        shape: &[usize],
        param: &mut [f64],
        grad: &[f64],
    ) -> Result<()>;
    /// Ends a training iteration: counts it and, if a schedule is attached,
    /// sets the learning rate it gives for the next iteration.
    fn end_iteration(&mut self);
    /// The learning rate in force.
    fn lr(&self) -> f64;
    /// Sets the learning rate (and the base rate an attached schedule scales).
    fn set_lr(&mut self, lr: f64);
    /// Attaches a learning-rate schedule that scales the current base rate;
    /// its iteration 0 is the current iteration. The schedule is taken as
    /// it is; [`Optimizer::try_set_schedule`] checks it first.
    fn set_schedule(&mut self, schedule: LrSchedule);
    /// [`Optimizer::set_schedule`] after [`LrSchedule::validate`]; on an
    /// error nothing changes.
    fn try_set_schedule(&mut self, schedule: LrSchedule) -> crate::error::Result<()> {
        schedule.validate()?;
        self.set_schedule(schedule);
        Ok(())
    }
    /// Iterations ended so far.
    fn iteration(&self) -> u64;
    /// A snapshot of all per-parameter state.
    fn save_state(&self) -> OptimState;
    /// Replaces all per-parameter state with `state` (made by an optimizer
    /// of the same type). Nothing changes on error.
    fn load_state(&mut self, state: &OptimState) -> Result<()>;

    /// Steps a parameter of either precision.
    fn step<T: Float>(
        &mut self,
        name: &str,
        shape: &[usize],
        param: &mut [T],
        grad: &[T],
    ) -> Result<()>
    where
        Self: Sized,
    {
        T::step_on(self, name, shape, param, grad)
    }

    /// Steps many parameters, `(name, shape, param, grad)` each, in order;
    /// stops at the first error (earlier parameters stay stepped).
    fn step_all<'a, T, I>(&mut self, params: I) -> Result<()>
    where
        Self: Sized,
        T: Float,
        I: IntoIterator<Item = (&'a str, &'a [usize], &'a mut [T], &'a [T])>,
    {
        for (name, shape, p, g) in params {
            self.step(name, shape, p, g)?;
        }
        Ok(())
    }
}

/// What every optimizer keeps besides its hyperparameters.
#[derive(Debug, Clone)]
pub(crate) struct Core {
    pub lr: f64,
    base_lr: f64,
    schedule: Option<LrSchedule>,
    iteration: u64,
    schedule_start: u64,
    pub params: BTreeMap<String, ParamState>,
}

impl Core {
    pub fn new(lr: f64) -> Self {
        Core {
            lr,
            base_lr: lr,
            schedule: None,
            iteration: 0,
            schedule_start: 0,
            params: BTreeMap::new(),
        }
    }

    pub fn end_iteration(&mut self) {
        self.iteration = self.iteration.saturating_add(1);
        if let Some(s) = &self.schedule {
            self.lr = s.lr_at(self.base_lr, self.iteration - self.schedule_start);
        }
    }

    pub fn set_lr(&mut self, lr: f64) {
        self.lr = lr;
        self.base_lr = lr;
    }

    pub fn set_schedule(&mut self, s: LrSchedule) {
        self.schedule_start = self.iteration;
        self.lr = s.lr_at(self.base_lr, 0);
        self.schedule = Some(s);
    }

    pub fn iteration(&self) -> u64 {
        self.iteration
    }

    pub fn save(&self, optimizer: &str) -> OptimState {
        OptimState {
            optimizer: optimizer.to_string(),
            iteration: self.iteration,
            lr: self.lr,
            params: self
                .params
                .iter()
                .map(|(k, v)| (k.clone(), SavedParam::from_state(v)))
                .collect(),
        }
    }

    pub fn load(&mut self, optimizer: &str, st: &OptimState) -> Result<()> {
        if st.optimizer != optimizer {
            return Err(OptimError::BadState(format!(
                "written by {}, loading into {optimizer}",
                st.optimizer
            )));
        }
        let mut params = BTreeMap::new();
        for (name, p) in &st.params {
            params.insert(name.clone(), p.to_state(name)?);
        }
        self.params = params;
        self.iteration = st.iteration;
        self.lr = st.lr;
        if let Some(s) = &self.schedule {
            self.lr = s.lr_at(
                self.base_lr,
                self.iteration.saturating_sub(self.schedule_start),
            );
        }
        Ok(())
    }

    /// Checks the buffers against the shape and finds (or makes) the
    /// parameter's state; counts the step only once the update succeeds.
    pub fn prepare<T: Float>(
        &mut self,
        name: &str,
        shape: &[usize],
        param: &[T],
        grad: &[T],
    ) -> Result<&mut ParamState> {
        let n = shape
            .iter()
            .try_fold(1usize, |a, &d| a.checked_mul(d))
            .ok_or_else(|| OptimError::UnsupportedShape {
                name: name.into(),
                optimizer: "optimizer",
                need: "a shape whose element count fits in usize",
                shape: shape.to_vec(),
            })?;
        for (what, given) in [("param", param.len()), ("grad", grad.len())] {
            if given != n {
                return Err(OptimError::LengthMismatch {
                    name: name.into(),
                    what,
                    expected: n,
                    given,
                    shape: shape.to_vec(),
                });
            }
        }
        let st = self
            .params
            .entry(name.to_string())
            .or_insert_with(|| ParamState {
                shape: shape.to_vec(),
                dtype: T::NAME,
                ..Default::default()
            });
        if st.shape != shape || st.dtype != T::NAME {
            return Err(OptimError::StateMismatch {
                name: name.into(),
                expected: format!("{:?} {}", st.shape, st.dtype),
                given: format!("{:?} {}", shape, T::NAME),
            });
        }
        Ok(st)
    }
}

/// The bookkeeping half of an optimizer, written by [`optimizer!`].
pub(crate) trait HasCore {
    /// The optimizer's name in saved states and errors.
    const NAME: &'static str;
    fn core(&self) -> &Core;
    fn core_mut(&mut self) -> &mut Core;
}

/// The per-optimizer update rule; with [`HasCore`] it makes an [`Optimizer`].
pub(crate) trait Rule: HasCore {
    /// One update of `param` with `grad`; `st.step` is already the step
    /// being taken (1 on the first call). Must check everything it can fail
    /// on before changing `param` or `st`.
    fn update<T: Float>(
        &self,
        lr: f64,
        name: &str,
        st: &mut ParamState,
        param: &mut [T],
        grad: &[T],
    ) -> Result<()>;
}

pub(crate) fn step_rule<R: Rule, T: Float>(
    r: &mut R,
    name: &str,
    shape: &[usize],
    param: &mut [T],
    grad: &[T],
) -> Result<()> {
    let lr = r.core().lr;
    let prepared = r.core_mut().prepare(name, shape, param, grad)?;
    if prepared.step == u64::MAX {
        return Err(OptimError::BadState(format!(
            "parameter `{name}`: step counter at its maximum"
        )));
    }
    if param.is_empty() {
        // Nothing to update; the step still counts.
        prepared.step += 1;
        return Ok(());
    }
    // Take the state out so the rule can read `self` while mutating it.
    let mut st = std::mem::take(prepared);
    st.step += 1;
    let res = r.update(lr, name, &mut st, param, grad);
    if res.is_err() {
        st.step -= 1;
    }
    *r.core_mut()
        .params
        .get_mut(name)
        .expect("state prepared above") = st;
    res
}

/// Declares an optimizer type `{ cfg, core }` with its `config()`, its
/// [`HasCore`] and its [`Optimizer`] impl (the type implements [`Rule`]).
macro_rules! optimizer {
    ($(#[$doc:meta])* $ty:ident, $cfg:ty, $name:expr) => {
        $(#[$doc])*
        #[derive(Debug, Clone)]
        pub struct $ty {
            cfg: $cfg,
            core: $crate::optimizer::Core,
        }

        impl $ty {
            /// The hyperparameters.
            pub fn config(&self) -> &$cfg {
                &self.cfg
            }
        }

        impl $crate::optimizer::HasCore for $ty {
            const NAME: &'static str = $name;
            fn core(&self) -> &$crate::optimizer::Core {
                &self.core
            }
            fn core_mut(&mut self) -> &mut $crate::optimizer::Core {
                &mut self.core
            }
        }

        impl $crate::optimizer::Optimizer for $ty {
            fn step_f32(
                &mut self,
                name: &str,
                shape: &[usize],
                param: &mut [f32],
                grad: &[f32],
            ) -> $crate::error::Result<()> {
                $crate::optimizer::step_rule(self, name, shape, param, grad)
            }
            fn step_f64(
                &mut self,
                name: &str,
                shape: &[usize],
                param: &mut [f64],
                grad: &[f64],
            ) -> $crate::error::Result<()> {
                $crate::optimizer::step_rule(self, name, shape, param, grad)
            }
            fn end_iteration(&mut self) {
                <Self as $crate::optimizer::HasCore>::core_mut(self).end_iteration()
            }
            fn lr(&self) -> f64 {
                <Self as $crate::optimizer::HasCore>::core(self).lr
            }
            fn set_lr(&mut self, lr: f64) {
                <Self as $crate::optimizer::HasCore>::core_mut(self).set_lr(lr)
            }
            fn set_schedule(&mut self, s: $crate::schedule::LrSchedule) {
                <Self as $crate::optimizer::HasCore>::core_mut(self).set_schedule(s)
            }
            fn iteration(&self) -> u64 {
                <Self as $crate::optimizer::HasCore>::core(self).iteration()
            }
            fn save_state(&self) -> $crate::state::OptimState {
                let name = <Self as $crate::optimizer::HasCore>::NAME;
                <Self as $crate::optimizer::HasCore>::core(self).save(name)
            }
            fn load_state(&mut self, st: &$crate::state::OptimState) -> $crate::error::Result<()> {
                let name = <Self as $crate::optimizer::HasCore>::NAME;
                <Self as $crate::optimizer::HasCore>::core_mut(self).load(name, st)
            }
        }
    };
}
pub(crate) use optimizer;
