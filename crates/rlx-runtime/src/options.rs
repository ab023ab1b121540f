//! [`CompileOptions`]: the typed source of truth for how a graph compiles.

use crate::Result;
use rlx_compile::{DispatchPolicy, FusionOptions, LowerOptions, Precision, PrecisionPolicy};
use rlx_ir::env::{vars, EnvError, RuntimeOverrides};
use rlx_ir::FusionPolicy;

/// How [`crate::Session::compile_with`] compiles a graph: the lowering
/// options plus what only the runtime decides (dispatch policy, fusion
/// assertion, param hoisting).
///
/// ```
/// use rlx_runtime::{CompileOptions, Precision};
/// let opts = CompileOptions::default().precision(Precision::F16).bind_dim("batch", 8);
/// assert_eq!(opts.lower.precision, Precision::F16);
/// assert_eq!(opts.lower.bindings["batch"], 8);
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct CompileOptions {
    /// Precision, passes, fusion, dim bindings and alignment, as the
    /// compiler takes them. `lower.layout` is replaced by the backend's
    /// layout claims at compile.
    pub lower: LowerOptions,
    /// What to do with ops the backend has no native kernel for.
    pub dispatch: DispatchPolicy,
    /// Fail the compile when the fusion report lists a missed fusion.
    pub assert_fusion_clean: bool,
    /// Compute what depends only on params (weight transposes, casts,
    /// stacked Q / K / V weights) once per param change instead of on
    /// every run (on by default). Also lets fusion stack param weights.
    pub hoist_params: bool,
    /// Host threads the compiled graph's kernels use (`None`: the backend's
    /// default, for the CPU `RLX_NUM_THREADS` or every core). Per compile,
    /// so one process can hold a 1-thread and an all-cores CPU "device"
    /// ([`crate::DeviceCandidate`]). Backends without host threads refuse it.
    pub threads: Option<usize>,
}

impl Default for CompileOptions {
    fn default() -> Self {
        CompileOptions {
            lower: LowerOptions::default(),
            dispatch: DispatchPolicy::default(),
            assert_fusion_clean: false,
            hoist_params: true,
            threads: None,
        }
    }
}

impl CompileOptions {
    /// Limits the compiled graph's kernels to `threads` host threads
    /// (`None`: the backend's default).
    pub fn threads(mut self, threads: Option<usize>) -> Self {
        self.threads = threads;
        self
    }

    /// Sets the session precision.
    pub fn precision(mut self, p: Precision) -> Self {
        self.lower.precision = p;
        self
    }

    /// Forces (or not) decomposition of every composite op.
    pub fn decompose_composites(mut self, on: bool) -> Self {
        self.lower.decompose_composites = on;
        self
    }

    /// Binds a symbolic dim.
    pub fn bind_dim(mut self, name: &str, size: usize) -> Self {
        self.lower.bindings.insert(name.to_string(), size);
        self
    }

    /// Sets the arena alignment.
    pub fn alignment(mut self, bytes: usize) -> Self {
        self.lower.alignment = bytes;
        self
    }

    /// Turns algebraic simplification on or off.
    pub fn simplify(mut self, on: bool) -> Self {
        self.lower.simplify = on;
        self
    }

    /// Turns common-subexpression elimination on or off.
    pub fn cse(mut self, on: bool) -> Self {
        self.lower.cse = on;
        self
    }

    /// Turns constant folding on or off.
    pub fn fold_constants(mut self, on: bool) -> Self {
        self.lower.fold_constants = on;
        self
    }

    /// Sets the automatic-mixed-precision policy (graph I/O stays F32).
    pub fn precision_policy(mut self, policy: PrecisionPolicy) -> Self {
        self.lower.precision_policy = policy;
        self
    }

    /// Turns fusion on (default options) or off.
    pub fn fusion(mut self, on: bool) -> Self {
        self.lower.fusion = if on {
            FusionOptions::default()
        } else {
            FusionOptions::disabled()
        };
        self
    }

    /// Sets how much to fuse in one word ([`FusionPolicy`]); `.fusion(false)`
    /// is `FusionPolicy::Off`, the default `FusionPolicy::Full`.
    pub fn fusion_policy(mut self, policy: FusionPolicy) -> Self {
        self.lower.fusion = FusionOptions::for_policy(policy);
        self
    }

    /// Sets what to fuse, pass by pass.
    pub fn fusion_options(mut self, fusion: FusionOptions) -> Self {
        self.lower.fusion = fusion;
        self
    }

    /// Turns every optimising pass (simplify, CSE, folding, DCE, fusion) on or off.
    pub fn optimize(self, on: bool) -> Self {
        let mut o = self.simplify(on).cse(on).fold_constants(on).fusion(on);
        o.lower.keep_dead_code = !on;
        o
    }

    /// Keeps the graph after every pass for inspection.
    pub fn keep_stages(mut self, on: bool) -> Self {
        self.lower.keep_stages = on;
        self
    }

    /// Turns dead-code elimination on (default) or off.
    pub fn dce(mut self, on: bool) -> Self {
        self.lower.keep_dead_code = !on;
        self
    }

    /// Sets the kernel dispatch policy.
    pub fn dispatch(mut self, policy: DispatchPolicy) -> Self {
        self.dispatch = policy;
        self
    }

    /// Turns param hoisting on (default) or off (see [`CompileOptions::hoist_params`]).
    pub fn hoist_params(mut self, on: bool) -> Self {
        self.hoist_params = on;
        self
    }

    /// Makes a missed fusion a compile error (`RuntimeError::FusionNotClean`).
    pub fn assert_fusion_clean(mut self, on: bool) -> Self {
        self.assert_fusion_clean = on;
        self
    }

    /// These options with the environment laid over them: the
    /// [`RuntimeOverrides`] read now (`RLX_DISPATCH_POLICY`,
    /// `RLX_ASSERT_FUSION_CLEAN`, `RLX_NO_DCE`, `RLX_NO_FUSION`,
    /// `RLX_ARENA_ALIGN`). A bad value is [`crate::RuntimeError::Env`].
    pub fn with_env_overlay(self) -> Result<Self> {
        self.with_overrides(&RuntimeOverrides::current()?)
    }

    /// These options with `o` laid over them (what [`Self::with_env_overlay`]
    /// does with the environment's overrides).
    pub fn with_overrides(mut self, o: &RuntimeOverrides) -> Result<Self> {
        if let Some(v) = &o.dispatch_policy {
            self.dispatch = v.parse().map_err(|reason| EnvError {
                name: vars::DISPATCH_POLICY.name,
                value: v.clone(),
                reason,
            })?;
        }
        if o.assert_fusion_clean {
            self.assert_fusion_clean = true;
        }
        if o.no_dce {
            self.lower.keep_dead_code = true;
        }
        if o.no_fusion {
            self.lower.fusion = FusionOptions::disabled();
        }
        if let Some(n) = o.arena_align {
            self.lower.alignment = n;
        }
        Ok(self)
    }

    /// The options the compiler runs with (without the backend's layout):
    /// `DecomposeAll` decomposes every composite, and stacked param weights
    /// need param hoisting.
    pub(crate) fn lower_options(&self) -> LowerOptions {
        let mut lower = self.lower.clone();
        lower.decompose_composites |= self.dispatch == DispatchPolicy::DecomposeAll;
        // Stacked param weights are only free when the stack is hoisted.
        lower.fusion.stack_param_weights &= self.hoist_params;
        lower
    }
}
