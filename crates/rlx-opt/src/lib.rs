//! # rlx-opt — one door to the graph -> graph machinery
//!
//! Re-exports the compile pipeline ([`rlx_compile`]) and, as they land, the
//! fusion passes and transforms, so users depend on one crate.
#![deny(missing_docs)]

pub use rlx_autodiff as autodiff;
pub use rlx_autodiff::{
    grad, grad_with_loss, grad_with_loss_opts, hvp, jvp, nth_order_grad, prepare_graph_for_ad,
    vmap, vmap_axes, AutodiffError, GradWithLossOptions, HigherOrderOptions,
};
/// Pass-level precision: the class the AMP pass gives each op (distinct from
/// the session [`rlx_compile::Precision`]).
pub use rlx_compile::PassPrecision as Precision;
pub use rlx_compile::{auto_mixed_precision, PassPrecision, PrecisionPolicy};
pub use rlx_compile::{
    check_plan, inspect_pipeline, lir_text, lower, lower_with, maybe_dump_pipeline, passes,
    plan_memory, plan_memory_with, runs_in_place, CompileError, CompilePipeline, CompileResult,
    ConstEvalError, ConstEvaluator, Dispatch, DispatchReport, FnPass, FoldOptions, FusionKind,
    FusionOptions, FusionReport, IoManifest, LirModule, LowerOptions, MemoryPlan, MemoryReport,
    MissReason, MissedFusion, Pass, PassRecord, PipelineInspect, Slot,
};
pub use rlx_compile::{
    fingerprint, fusion_passes, fusion_passes_for_supported, inspect_hir_pipeline, inspect_lir,
    supported_for_target, supports_op, DispatchPolicy, FusionPass, FusionTarget,
};
pub use rlx_compile::{
    insert_fake_quant, quant_params, quant_targets, CalibrationCollector, CalibrationMethod,
    CalibrationOptions, CalibrationRecord, Histogram, QuantConfig, QuantMode, QuantRole,
    TensorStats,
};
pub use rlx_compile::{legalize_layout, LayoutClaims, LegalizeLayout};
pub use rlx_compile::{split_param_prelude, ParamPrelude, DERIVED_PARAM_PREFIX};
pub use rlx_fusion as fusion;
