//! [`CompileOptions`]: the typed source of truth for how a graph compiles.

use crate::{Result, RuntimeError};
use rlx_compile::{DispatchPolicy, FusionOptions, LowerOptions, Precision, PrecisionPolicy};
use std::collections::HashMap;

/// How [`crate::Session::compile_with`] compiles a graph.
///
/// ```
/// use rlx_runtime::{CompileOptions, Precision};
/// let opts = CompileOptions::default().precision(Precision::F16).bind_dim("batch", 8);
/// assert_eq!(opts.precision, Precision::F16);
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct CompileOptions {
    /// Session precision (F32 I/O either way).
    pub precision: Precision,
    /// Decompose every composite op into primitives even where the backend has a native kernel.
    pub decompose_composites: bool,
    /// Values for symbolic dims.
    pub dim_bindings: HashMap<String, usize>,
    /// Arena alignment in bytes (0 = 64).
    pub alignment: usize,
    /// Keep nodes no output depends on.
    pub keep_dead_code: bool,
    /// Algebraic simplification (on by default).
    pub simplify: bool,
    /// Common-subexpression elimination (on by default).
    pub cse: bool,
    /// Constant folding, evaluated on the session's device (on by default).
    pub fold_constants: bool,
    /// Keep the graph after every pass (see `CompiledGraph::lir().passes`).
    pub keep_stages: bool,
    /// What to fuse (elementwise regions, ...).
    pub fusion: FusionOptions,
    /// Automatic mixed precision for F32 graphs (with `precision` F32).
    pub precision_policy: PrecisionPolicy,
    /// What to do with ops the backend has no native kernel for.
    pub dispatch: DispatchPolicy,
    /// Fail the compile when the fusion report lists a missed fusion.
    pub assert_fusion_clean: bool,
    /// Compute what depends only on params (weight transposes, casts,
    /// stacked Q / K / V weights) once per param change instead of on
    /// every run (on by default). Also lets fusion stack param weights.
    pub hoist_params: bool,
}

impl Default for CompileOptions {
    fn default() -> Self {
        let lower = LowerOptions::default();
        CompileOptions {
            precision: lower.precision,
            decompose_composites: lower.decompose_composites,
            dim_bindings: HashMap::new(),
            alignment: lower.alignment,
            keep_dead_code: lower.keep_dead_code,
            simplify: lower.simplify,
            cse: lower.cse,
            fold_constants: lower.fold_constants,
            keep_stages: lower.keep_stages,
            fusion: lower.fusion,
            precision_policy: lower.precision_policy,
            dispatch: DispatchPolicy::default(),
            assert_fusion_clean: false,
            hoist_params: true,
        }
    }
}

impl CompileOptions {
    /// Sets the session precision.
    pub fn precision(mut self, p: Precision) -> Self {
        self.precision = p;
        self
    }

    /// Forces (or not) decomposition of every composite op.
    pub fn decompose_composites(mut self, on: bool) -> Self {
        self.decompose_composites = on;
        self
    }

    /// Binds a symbolic dim.
    pub fn bind_dim(mut self, name: &str, size: usize) -> Self {
        self.dim_bindings.insert(name.to_string(), size);
        self
    }

    /// Sets the arena alignment.
    pub fn alignment(mut self, bytes: usize) -> Self {
        self.alignment = bytes;
        self
    }

    /// Turns algebraic simplification on or off.
    pub fn simplify(mut self, on: bool) -> Self {
        self.simplify = on;
        self
    }

    /// Turns common-subexpression elimination on or off.
    pub fn cse(mut self, on: bool) -> Self {
        self.cse = on;
        self
    }

    /// Turns constant folding on or off.
    pub fn fold_constants(mut self, on: bool) -> Self {
        self.fold_constants = on;
        self
    }

    /// Sets the automatic-mixed-precision policy (graph I/O stays F32).
    pub fn precision_policy(mut self, policy: PrecisionPolicy) -> Self {
        self.precision_policy = policy;
        self
    }

    /// Turns fusion on (default options) or off.
    pub fn fusion(mut self, on: bool) -> Self {
        self.fusion = if on {
            FusionOptions::default()
        } else {
            FusionOptions::disabled()
        };
        self
    }

    /// Turns every optimising pass (simplify, CSE, folding, DCE, fusion) on or off.
    pub fn optimize(self, on: bool) -> Self {
        let mut o = self.simplify(on).cse(on).fold_constants(on).fusion(on);
        o.keep_dead_code = !on;
        o
    }

    /// Keeps the graph after every pass for inspection.
    pub fn keep_stages(mut self, on: bool) -> Self {
        self.keep_stages = on;
        self
    }

    /// Turns dead-code elimination on (default) or off.
    pub fn dce(mut self, on: bool) -> Self {
        self.keep_dead_code = !on;
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

    /// These options with the environment laid over them (the one place the
    /// compile reads it): `RLX_DISPATCH_POLICY` (`native-first`,
    /// `decompose-all`, `error-on-unsupported`), `RLX_ASSERT_FUSION_CLEAN=1`,
    /// `RLX_NO_DCE=1`, `RLX_NO_FUSION=1`, `RLX_ARENA_ALIGN=<bytes>`.
    pub fn with_env_overlay(mut self) -> Result<Self> {
        use rlx_ir::env;
        if let Some(v) = env::var("RLX_DISPATCH_POLICY") {
            self.dispatch = v.parse().map_err(|reason| RuntimeError::Env {
                name: "RLX_DISPATCH_POLICY".into(),
                reason,
            })?;
        }
        if env::flag("RLX_ASSERT_FUSION_CLEAN") {
            self.assert_fusion_clean = true;
        }
        if env::flag("RLX_NO_DCE") {
            self.keep_dead_code = true;
        }
        if env::flag("RLX_NO_FUSION") {
            self.fusion = FusionOptions::disabled();
        }
        if let Some(v) = env::var("RLX_ARENA_ALIGN") {
            self.alignment = match v.trim().parse::<usize>() {
                Ok(n) if n.is_power_of_two() => n,
                _ => {
                    return Err(RuntimeError::Env {
                        name: "RLX_ARENA_ALIGN".into(),
                        reason: format!("\"{v}\" is not a power of two"),
                    })
                }
            };
        }
        Ok(self)
    }

    pub(crate) fn lower_options(&self) -> LowerOptions {
        LowerOptions {
            precision: self.precision,
            decompose_composites: self.decompose_composites
                || self.dispatch == DispatchPolicy::DecomposeAll,
            bindings: self.dim_bindings.clone(),
            alignment: self.alignment,
            keep_dead_code: self.keep_dead_code,
            simplify: self.simplify,
            cse: self.cse,
            fold_constants: self.fold_constants,
            keep_stages: self.keep_stages,
            fusion: FusionOptions {
                // Stacked param weights are only free when the stack is hoisted.
                stack_param_weights: self.fusion.stack_param_weights && self.hoist_params,
                ..self.fusion.clone()
            },
            precision_policy: self.precision_policy.clone(),
            ..LowerOptions::default()
        }
    }
}
