//! # rlx-compile — from MIR to LIR
//!
//! The passes every backend needs before it can run a graph: decomposition
//! of composites the target does not claim ([`passes::decompose`]),
//! dead-code elimination ([`passes::dce`]), common-subexpression
//! elimination ([`passes::cse`]), algebraic simplification
//! ([`passes::simplify`]), constant folding ([`passes::fold`]), the session
//! precision rewrite ([`passes::precision`]), and the liveness-based arena
//! plan ([`memory`]), and the split of a graph's param-only part into a
//! prelude the runtime evaluates once per param change ([`split_param_prelude`]). A [`CompilePipeline`] runs [`Pass`]es in order and
//! records what each did; [`lower`] / [`lower_with`] build the standard
//! pipeline and produce a [`LirModule`]: MIR + buffer plan + schedule + I/O
//! manifest.
//!
//! Invariants: passes are graph -> graph and never mutate their input; every
//! emitted graph verifies; the memory plan never overlaps two live buffers
//! ([`memory::check_plan`] proves it).
#![deny(missing_docs)]

pub mod concat_slots;
mod hoist;
mod inspect;
mod lir;
pub mod memory;
pub mod passes;
mod pipeline;
mod report;
mod stage;
mod target;

pub use hoist::{
    split_param_prelude, AssembledParam, ParamPiece, ParamPrelude, DERIVED_PARAM_PREFIX,
};
pub use inspect::{
    inspect_hir_pipeline, inspect_pipeline, lir_text, maybe_dump_pipeline, PipelineInspect,
};
pub use lir::{
    lower, lower_with, optimize_with, plan_optimized, IoManifest, LirModule, LowerOptions,
    OptimizedGraph, Precision,
};
pub use memory::{check_plan, plan_memory, plan_memory_with, runs_in_place, MemoryPlan, Slot};
pub use passes::amp::{auto_mixed_precision, PassPrecision, PrecisionPolicy};
pub use passes::calibration::{
    CalibrationCollector, CalibrationMethod, CalibrationOptions, Histogram,
};
pub use passes::fold::{ConstEvalError, ConstEvaluator, FoldOptions};
pub use passes::legalize::{legalize_layout, LayoutClaims, LegalizeLayout};
pub use passes::quantize::{
    insert_fake_quant, quant_params, quant_targets, CalibrationRecord, QuantConfig, QuantMode,
    QuantRole, TensorStats,
};
pub use pipeline::{CompilePipeline, CompileResult, FnPass, Pass, PassRecord};
pub use report::{Dispatch, DispatchReport, MemoryReport};
pub use rlx_fusion::{FusionKind, FusionOptions, FusionReport, MissReason, MissedFusion};
pub use stage::{fingerprint, inspect_lir};
pub use target::{
    fusion_passes, fusion_passes_for_supported, supported_for_target, supports_op, DispatchPolicy,
    FusionPass, FusionTarget,
};

/// `Ok` when `g` verifies, else a [`CompileError::Verify`] listing every problem.
pub(crate) fn verified(g: &rlx_ir::Graph) -> Result<(), CompileError> {
    let errors = rlx_ir::verify_all(g);
    if errors.is_empty() {
        return Ok(());
    }
    Err(CompileError::Verify {
        graph: g.name().to_string(),
        errors: errors
            .iter()
            .map(|e| format!("  {e}"))
            .collect::<Vec<_>>()
            .join("\n"),
    })
}

/// An error raised by a pass or by lowering.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CompileError {
    /// The graph failed verification.
    #[error("graph \"{graph}\" does not verify:\n{errors}")]
    Verify {
        /// Graph name.
        graph: String,
        /// One problem per line.
        errors: String,
    },
    /// A custom op the target has no kernel for (or that is not registered).
    #[error("custom op `{op}` {}", if *registered { "registers no kernel for this backend" } else { "is not registered (call its crate's `register()` first)" })]
    UnclaimedCustomOp {
        /// The op's name.
        op: String,
        /// Whether its extension is registered at all.
        registered: bool,
    },
    /// A pass could not rebuild a node.
    #[error("{pass}: {source}")]
    Pass {
        /// The pass.
        pass: &'static str,
        /// The IR error.
        #[source]
        source: rlx_ir::IrError,
    },
    /// Constant folding could not evaluate a constant sub-graph.
    #[error("constant folding of graph \"{graph}\": {reason}")]
    Fold {
        /// Graph name.
        graph: String,
        /// What went wrong.
        reason: String,
    },
    /// Constant folding's evaluator failed (lowering, compiling or running
    /// the constant sub-graph); the evaluator's error is the source.
    #[error("constant folding of graph \"{graph}\": {source}")]
    FoldEval {
        /// Graph name.
        graph: String,
        /// The evaluator's error.
        #[source]
        source: rlx_ir::ErrorSource,
    },
    /// Post-training quantisation: bad or missing calibration data.
    #[error("calibration: {reason}")]
    Calibration {
        /// What is wrong, naming the node.
        reason: String,
    },
    /// A shape is still symbolic where a static one is needed.
    #[error("{what}: shape {shape} has unbound symbols {symbols:?}; bind them (CompileOptions::bind_dim) before planning memory")]
    Unbound {
        /// What needed it.
        what: String,
        /// The shape.
        shape: rlx_ir::Shape,
        /// The unbound symbols.
        symbols: Vec<String>,
    },
    /// An `RLX_*` variable the compile reads has a bad value.
    #[error(transparent)]
    Env(#[from] rlx_ir::env::EnvError),
}
