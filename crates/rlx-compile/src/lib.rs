//! # rlx-compile — from MIR to LIR
//!
//! The passes every backend needs before it can run a graph: decomposition
//! of composites the target does not claim ([`passes::decompose`]),
//! dead-code elimination ([`passes::dce`]), the session precision rewrite
//! ([`passes::precision`]), and the liveness-based arena plan
//! ([`memory`]). [`lower`] strings them together into a [`LirModule`]:
//! MIR + buffer plan + schedule + I/O manifest.
//!
//! Invariants: passes are graph -> graph and never mutate their input; every
//! emitted graph verifies; the memory plan never overlaps two live buffers
//! ([`memory::check_plan`] proves it).
#![warn(missing_docs)]

mod lir;
pub mod memory;
pub mod passes;

pub use lir::{lower, IoManifest, LirModule, LowerOptions, Precision};
pub use memory::{check_plan, plan_memory, MemoryPlan, Slot};

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
    /// A pass could not rebuild a node.
    #[error("{pass}: {source}")]
    Pass {
        /// The pass.
        pass: &'static str,
        /// The IR error.
        #[source]
        source: rlx_ir::IrError,
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
}
