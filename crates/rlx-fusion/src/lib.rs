//! # rlx-fusion — fusion passes
//!
//! Graph -> graph passes that fuse MIR into larger ops a backend runs in one
//! go, and the [`FusionReport`] that says what fused and what did not.
//! Today: erf-spelled GELUs ([`fuse_gelu`], the native `Unary(Gelu)`),
//! attention blocks written out of primitives ([`fuse_attention`],
//! `Op::Attention`, reading `[.., S, H, D]` heads in place where they were
//! transposed for it), residual add + norm ([`fuse_add_norm`], `Op::AddNorm`),
//! gated MLPs ([`fuse_gated_matmul`], `Op::GatedMatMul`), shared-input
//! matmuls ([`fuse_shared_input_matmuls`], Q / K / V as one matmul over
//! stacked weights; param weights with [`fuse_shared_input_matmuls_with`]), elementwise
//! regions ([`fuse_elementwise`], `Op::ElementwiseRegion`) and matmul
//! and conv epilogues ([`fuse_epilogues`], `Op::FusedMatMul` /
//! `Op::FusedConv`), run in that
//! order (the pattern passes need the primitives the region pass swallows).
//! The pipeline in `rlx-compile` runs them when the target claims the fused
//! op; a target that does not gets nothing to decompose again.
#![deny(missing_docs)]

mod add_norm;
mod attention;
mod attention_layout;
mod elementwise;
mod gated;
mod gelu;
mod matmul;
mod report;
mod shared_input;
mod transposed;
mod uses;

pub use add_norm::fuse_add_norm;
pub use attention::fuse_attention;
pub use elementwise::fuse_elementwise;
pub use gated::fuse_gated_matmul;
pub use gelu::fuse_gelu;
pub use matmul::{fuse_epilogues, fuse_matmul_epilogues};
pub use report::{FusedRegion, FusionKind, FusionReport, MissReason, MissedFusion};
pub use shared_input::{fuse_shared_input_matmuls, fuse_shared_input_matmuls_with};
pub use transposed::fuse_transposed_operands;

/// What fusion does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FusionOptions {
    /// Fuse elementwise chains into regions.
    pub elementwise: bool,
    /// Smallest region worth fusing (nodes).
    pub min_region_nodes: usize,
    /// Fold elementwise tails (bias, activation, residual) into matmuls.
    pub matmul_epilogue: bool,
    /// Fuse residual adds into the layer / rms norms that read them.
    pub add_norm: bool,
    /// Fuse `act(x @ w_gate) * (x @ w_up)` into one gated matmul.
    pub gated_matmul: bool,
    /// Replace attention blocks written out of primitives by `Op::Attention`.
    pub attention: bool,
    /// Replace erf-spelled GELUs by the native `Unary(Gelu)`.
    pub gelu: bool,
    /// Stack the constant weights of matmuls sharing an input (Q / K / V).
    pub shared_input: bool,
    /// Let [`FusionOptions::shared_input`] stack param weights too, through
    /// a concat of the params: only worth it where the runtime computes
    /// param-only values once per param change (rlx-runtime hoists them),
    /// else the weights are copied on every run.
    pub stack_param_weights: bool,
    /// Read a transposed matmul operand in place (`x.T @ y` as a
    /// `dot_general` of `x`) instead of materialising the transpose.
    pub transposed_operands: bool,
}

impl Default for FusionOptions {
    fn default() -> Self {
        FusionOptions {
            elementwise: true,
            min_region_nodes: 2,
            matmul_epilogue: true,
            add_norm: true,
            gated_matmul: true,
            attention: true,
            gelu: true,
            shared_input: true,
            stack_param_weights: true,
            transposed_operands: true,
        }
    }
}

impl FusionOptions {
    /// The switches of a [`rlx_ir::FusionPolicy`]: everything for `Full`,
    /// elementwise regions and matmul epilogues for `LoopsOnly`, nothing for
    /// `Off`.
    pub fn for_policy(policy: rlx_ir::FusionPolicy) -> Self {
        match policy {
            rlx_ir::FusionPolicy::Full => FusionOptions::default(),
            rlx_ir::FusionPolicy::LoopsOnly => FusionOptions {
                elementwise: true,
                matmul_epilogue: true,
                ..FusionOptions::disabled()
            },
            rlx_ir::FusionPolicy::Off => FusionOptions::disabled(),
        }
    }

    /// No fusion at all.
    pub fn disabled() -> Self {
        FusionOptions {
            elementwise: false,
            matmul_epilogue: false,
            add_norm: false,
            gated_matmul: false,
            attention: false,
            gelu: false,
            shared_input: false,
            stack_param_weights: false,
            transposed_operands: false,
            ..FusionOptions::default()
        }
    }
}
