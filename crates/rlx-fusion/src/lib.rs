//! # rlx-fusion — fusion passes
//!
//! Graph -> graph passes that fuse MIR into larger ops a backend runs in one
//! go, and the [`FusionReport`] that says what fused and what did not.
//! Today: elementwise regions ([`fuse_elementwise`], `Op::ElementwiseRegion`)
//! and matmul epilogues ([`fuse_matmul_epilogues`], `Op::FusedMatMul`).
//! The pipeline in `rlx-compile` runs them when the target claims the fused
//! op; a target that does not gets nothing to decompose again.
#![warn(missing_docs)]

mod elementwise;
mod matmul;
mod report;

pub use elementwise::fuse_elementwise;
pub use matmul::fuse_matmul_epilogues;
pub use report::{FusedRegion, FusionKind, FusionReport, MissReason, MissedFusion};

/// What fusion does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FusionOptions {
    /// Fuse elementwise chains into regions.
    pub elementwise: bool,
    /// Smallest region worth fusing (nodes).
    pub min_region_nodes: usize,
    /// Fold elementwise tails (bias, activation, residual) into matmuls.
    pub matmul_epilogue: bool,
}

impl Default for FusionOptions {
    fn default() -> Self {
        FusionOptions {
            elementwise: true,
            min_region_nodes: 2,
            matmul_epilogue: true,
        }
    }
}

impl FusionOptions {
    /// No fusion at all.
    pub fn disabled() -> Self {
        FusionOptions {
            elementwise: false,
            matmul_epilogue: false,
            ..FusionOptions::default()
        }
    }
}
