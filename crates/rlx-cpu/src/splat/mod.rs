//! The Gaussian-splat executor registry: the CPU backend runs the `splat.*`
//! ops of `rlx_ir::ops::splat` by calling executors a renderer registers
//! at startup ([`register_splat_executors`]). Six slots: four arena
//! executors (one per op, writing into the output buffer the memory plan
//! gave the node) and two host executors (render / backward of plain
//! slices, [`render_host_slices`] / [`backward_host_slices`]).
//!
//! A graph with a splat op whose slot is empty fails at compile time with
//! an error naming the slot; the renderer is never silently skipped.

mod dispatch;
mod registry;

pub use dispatch::{backward_host_slices, render_host_slices, SplatError};
pub(crate) use dispatch::{check_compilable, is_splat_op, run};
pub use registry::{
    register_splat_executors, registered_slots, ArenaPrepareArgs, ArenaRasterizeArgs,
    ArenaRenderArgs, ArenaRenderBwdArgs, ExecError, HostBackwardArgs, HostBackwardExec,
    HostRenderArgs, HostRenderExec, PrepareExec, RasterizeExec, RenderBwdExec, RenderExec,
    SplatSlot,
};
