//! 3D Gaussian splatting: the opcodes, their payloads and the packed buffer
//! layouts. The renderer is not here (nor in any backend): a renderer
//! registers executors with the CPU backend (`rlx_cpu::splat`), which
//! dispatches these ops to them. What lives here is what renderer and
//! runtime must agree on, so both call the same helpers.
//!
//! The ops are custom ops (`Op::Custom`, see [`crate::custom`]) named
//! `splat.*`: the registry already gives them textual IR, shape rules and a
//! named error when unregistered; [`register`] adds them (the builders call it).
//!
//! | op | inputs | output |
//! |----|--------|--------|
//! | [`RENDER`] | means `[n,3]`, scales `[n,3]`, rotations `[n,4]`, opacities `[n]`, colors `[n,3]` | image `[h,w,3]` |
//! | [`RENDER_BWD`] | the five inputs, then `d_image` `[h,w,3]` | packed grads `[`[`gaussian_splat_packed_grad_len`]`(n)]` |
//! | [`PREPARE`] | the five inputs | packed prep buffer `[`[`gaussian_splat_prep_packed_len`]`(n,w,h)]` |
//! | [`RASTERIZE`] | the prep buffer | image `[h,w,3]` |
//!
//! All tensors are F32. `render` is `rasterize(prepare(..))`; its vjp is
//! `render_bwd`, unpacked into the five input cotangents.

mod layout;
mod params;
mod rules;

pub use layout::prep_field;
pub use layout::{
    gaussian_splat_packed_grad_len, gaussian_splat_prep_packed_len, gaussian_splat_prep_split,
    gaussian_splat_tile_count, gaussian_splat_tiles, unpack_gaussian_splat_packed_grads,
    GaussianSplatPrepSplit, GAUSSIAN_SPLAT_GRAD_FLOATS_PER_GAUSSIAN,
    GAUSSIAN_SPLAT_PREP_RASTER_PARAMS_FLOATS, GAUSSIAN_SPLAT_PREP_RECORD_FLOATS,
    GAUSSIAN_SPLAT_TILE_SIZE,
};
pub use params::{GaussianSplatBackwardParams, GaussianSplatInputs, GaussianSplatRenderParams};
pub use rules::{register, splat_prepare, splat_rasterize, splat_render, splat_render_bwd};

/// `splat.render`: the five Gaussian tensors → the image `[h, w, 3]`.
pub const RENDER: &str = "splat.render";
/// `splat.render_bwd`: the five Gaussian tensors and `d_image` → packed grads.
pub const RENDER_BWD: &str = "splat.render_bwd";
/// `splat.prepare`: the five Gaussian tensors → the packed prep buffer.
pub const PREPARE: &str = "splat.prepare";
/// `splat.rasterize`: the packed prep buffer → the image `[h, w, 3]`.
pub const RASTERIZE: &str = "splat.rasterize";
/// The four op names.
pub const OPS: [&str; 4] = [RENDER, RENDER_BWD, PREPARE, RASTERIZE];
