//! # rlx-opt — one door to the graph -> graph machinery
//!
//! Re-exports the compile pipeline ([`rlx_compile`]) and, as they land, the
//! fusion passes and transforms, so users depend on one crate.
#![warn(missing_docs)]

pub use rlx_autodiff as autodiff;
/// Pass-level precision (the session precision enum until the AMP pass lands).
pub use rlx_compile::Precision;
pub use rlx_compile::{
    check_plan, lower, passes, plan_memory, CompileError, IoManifest, LirModule, LowerOptions,
    MemoryPlan, Slot,
};
pub use rlx_fusion as fusion;
