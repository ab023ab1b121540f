//! The six executor slots, their argument structs and the process-wide registry.

use rlx_ir::ops::splat::{
    GaussianSplatBackwardParams, GaussianSplatInputs, GaussianSplatRenderParams,
};
use std::fmt;
use std::sync::{Arc, RwLock};

/// Arguments of the `Render` executor: the `splat.render` node's inputs and
/// its `[h, w, 3]` output buffer to fill.
pub struct ArenaRenderArgs<'a> {
    /// Camera and image.
    pub params: &'a GaussianSplatRenderParams,
    /// The five Gaussian tensors (lengths already checked).
    pub inputs: GaussianSplatInputs<&'a [f32]>,
    /// The image to fill, `height · width · 3` floats.
    pub image: &'a mut [f32],
    /// Where the executor reports invalid input ([`ExecError::fail`]);
    /// the node then fails with that message instead of returning the buffer.
    pub error: ExecError<'a>,
}

/// Arguments of the `RenderBwd` executor: the forward inputs, the image
/// cotangent and the packed gradient buffer to fill.
pub struct ArenaRenderBwdArgs<'a> {
    /// Forward parameters and Gaussian count.
    pub params: &'a GaussianSplatBackwardParams,
    /// The five Gaussian tensors.
    pub inputs: GaussianSplatInputs<&'a [f32]>,
    /// Cotangent of the image, `height · width · 3` floats.
    pub d_image: &'a [f32],
    /// The packed gradient to fill (`gaussian_splat_packed_grad_len(n)` floats).
    pub grads: &'a mut [f32],
    /// Where the executor reports invalid input ([`ExecError::fail`]);
    /// the node then fails with that message instead of returning the buffer.
    pub error: ExecError<'a>,
}

/// Arguments of the `Prepare` executor: the inputs and the prep buffer to fill.
pub struct ArenaPrepareArgs<'a> {
    /// Camera and image.
    pub params: &'a GaussianSplatRenderParams,
    /// The five Gaussian tensors.
    pub inputs: GaussianSplatInputs<&'a [f32]>,
    /// The prep buffer to fill (`gaussian_splat_prep_packed_len(n, w, h)` floats).
    pub prep: &'a mut [f32],
    /// Where the executor reports invalid input ([`ExecError::fail`]);
    /// the node then fails with that message instead of returning the buffer.
    pub error: ExecError<'a>,
}

/// Arguments of the `Rasterize` executor: a prep buffer and the image to fill.
pub struct ArenaRasterizeArgs<'a> {
    /// Camera and image.
    pub params: &'a GaussianSplatRenderParams,
    /// A buffer `Prepare` filled.
    pub prep: &'a [f32],
    /// The image to fill, `height · width · 3` floats.
    pub image: &'a mut [f32],
    /// Where the executor reports invalid input ([`ExecError::fail`]);
    /// the node then fails with that message instead of returning the buffer.
    pub error: ExecError<'a>,
}

/// The error slot of an executor: the arena executors return nothing and
/// the host ones a vector, so one that meets invalid input (a zero quaternion, a corrupt prep buffer)
/// says so here and the backend turns it into the node's error.
pub struct ExecError<'a>(pub(crate) &'a mut Option<String>);

impl ExecError<'_> {
    /// Reports why the executor could not fill its output.
    pub fn fail(&mut self, message: impl Into<String>) {
        *self.0 = Some(message.into());
    }
}

/// Arguments of the `HostRender` executor.
pub struct HostRenderArgs<'a> {
    /// Camera and image.
    pub params: &'a GaussianSplatRenderParams,
    /// The five Gaussian tensors.
    pub inputs: GaussianSplatInputs<&'a [f32]>,
    /// Where the executor reports invalid input ([`ExecError::fail`]).
    pub error: ExecError<'a>,
}

/// Arguments of the `HostBackward` executor.
pub struct HostBackwardArgs<'a> {
    /// Forward parameters and Gaussian count.
    pub params: &'a GaussianSplatBackwardParams,
    /// The five Gaussian tensors.
    pub inputs: GaussianSplatInputs<&'a [f32]>,
    /// Cotangent of the image.
    pub d_image: &'a [f32],
    /// Where the executor reports invalid input ([`ExecError::fail`]).
    pub error: ExecError<'a>,
}

/// Executor of `splat.render` into the arena.
pub type RenderExec = Box<dyn Fn(ArenaRenderArgs<'_>) + Send + Sync>;
/// Executor of `splat.render_bwd` into the arena.
pub type RenderBwdExec = Box<dyn Fn(ArenaRenderBwdArgs<'_>) + Send + Sync>;
/// Executor of `splat.prepare` into the arena.
pub type PrepareExec = Box<dyn Fn(ArenaPrepareArgs<'_>) + Send + Sync>;
/// Executor of `splat.rasterize` into the arena.
pub type RasterizeExec = Box<dyn Fn(ArenaRasterizeArgs<'_>) + Send + Sync>;
/// Host render: returns the `height · width · 3` image.
pub type HostRenderExec = Box<dyn Fn(HostRenderArgs<'_>) -> Vec<f32> + Send + Sync>;
/// Host backward: returns the packed gradient.
pub type HostBackwardExec = Box<dyn Fn(HostBackwardArgs<'_>) -> Vec<f32> + Send + Sync>;

/// One of the six executor slots (named as its executor type, less `Exec`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SplatSlot {
    /// [`RenderExec`].
    Render,
    /// [`RenderBwdExec`].
    RenderBwd,
    /// [`PrepareExec`].
    Prepare,
    /// [`RasterizeExec`].
    Rasterize,
    /// [`HostRenderExec`].
    HostRender,
    /// [`HostBackwardExec`].
    HostBackward,
}

impl SplatSlot {
    /// All six, in registration order.
    pub const ALL: [SplatSlot; 6] = [
        SplatSlot::Render,
        SplatSlot::RenderBwd,
        SplatSlot::Prepare,
        SplatSlot::Rasterize,
        SplatSlot::HostRender,
        SplatSlot::HostBackward,
    ];
}

impl fmt::Display for SplatSlot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

/// The registered executors (`Arc` so a call runs outside the lock and an
/// executor may itself call the host functions).
#[derive(Default)]
pub(crate) struct Executors {
    pub render: Option<Arc<RenderExec>>,
    pub render_bwd: Option<Arc<RenderBwdExec>>,
    pub prepare: Option<Arc<PrepareExec>>,
    pub rasterize: Option<Arc<RasterizeExec>>,
    pub host_render: Option<Arc<HostRenderExec>>,
    pub host_backward: Option<Arc<HostBackwardExec>>,
}

impl Executors {
    fn has(&self, slot: SplatSlot) -> bool {
        match slot {
            SplatSlot::Render => self.render.is_some(),
            SplatSlot::RenderBwd => self.render_bwd.is_some(),
            SplatSlot::Prepare => self.prepare.is_some(),
            SplatSlot::Rasterize => self.rasterize.is_some(),
            SplatSlot::HostRender => self.host_render.is_some(),
            SplatSlot::HostBackward => self.host_backward.is_some(),
        }
    }
}

static EXECUTORS: RwLock<Executors> = RwLock::new(Executors {
    render: None,
    render_bwd: None,
    prepare: None,
    rasterize: None,
    host_render: None,
    host_backward: None,
});

/// Reads the registry (a poisoned lock still holds valid executors).
pub(crate) fn with_executors<R>(f: impl FnOnce(&Executors) -> R) -> R {
    f(&EXECUTORS.read().unwrap_or_else(|p| p.into_inner()))
}

/// Installs the six executors, replacing any registered before (a renderer
/// calls this once at startup; thread-safe).
pub fn register_splat_executors(
    render: RenderExec,
    render_bwd: RenderBwdExec,
    prepare: PrepareExec,
    rasterize: RasterizeExec,
    host_render: HostRenderExec,
    host_backward: HostBackwardExec,
) {
    let mut e = EXECUTORS.write().unwrap_or_else(|p| p.into_inner());
    *e = Executors {
        render: Some(Arc::new(render)),
        render_bwd: Some(Arc::new(render_bwd)),
        prepare: Some(Arc::new(prepare)),
        rasterize: Some(Arc::new(rasterize)),
        host_render: Some(Arc::new(host_render)),
        host_backward: Some(Arc::new(host_backward)),
    };
}

/// The slots that hold an executor.
pub fn registered_slots() -> Vec<SplatSlot> {
    with_executors(|e| SplatSlot::ALL.into_iter().filter(|&s| e.has(s)).collect())
}

/// True when `slot` holds an executor.
pub(crate) fn is_registered(slot: SplatSlot) -> bool {
    with_executors(|e| e.has(slot))
}
