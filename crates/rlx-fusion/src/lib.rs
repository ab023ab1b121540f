//! # rlx-fusion — fusion passes
//!
//! Graph -> graph passes that fuse MIR into larger ops a backend runs in one
//! go, and the [`FusionReport`] that says what fused and what did not.
//! Today: elementwise regions ([`fuse_elementwise`], `Op::ElementwiseRegion`).
//! The pipeline in `rlx-compile` runs them when the target claims the fused
//! op; a target that does not gets nothing to decompose again.
#![warn(missing_docs)]

mod elementwise;
mod report;

pub use elementwise::fuse_elementwise;
pub use report::{FusedRegion, FusionReport, MissReason, MissedFusion};

/// What fusion does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FusionOptions {
    /// Fuse elementwise chains into regions.
    pub elementwise: bool,
    /// Smallest region worth fusing (nodes).
    pub min_region_nodes: usize,
}

impl Default for FusionOptions {
    fn default() -> Self {
        FusionOptions {
            elementwise: true,
            min_region_nodes: 2,
        }
    }
}

impl FusionOptions {
    /// No fusion at all.
    pub fn disabled() -> Self {
        FusionOptions {
            elementwise: false,
            ..FusionOptions::default()
        }
    }
}
