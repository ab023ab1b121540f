//! The reference renderer as the six splat executors of the CPU backend.

use crate::gaussians::Gaussians;
use crate::raster::{prepare, render, Prepared};
use crate::{backward, SplatRenderError};
use rlx_cpu::splat::{
    register_splat_executors, ArenaPrepareArgs, ArenaRasterizeArgs, ArenaRenderArgs,
    ArenaRenderBwdArgs, ExecError, HostBackwardArgs, HostRenderArgs,
};
use rlx_ir::ops::splat::{GaussianSplatInputs, GaussianSplatRenderParams};

fn fill(out: &mut [f32], v: &[f64]) {
    out.iter_mut().zip(v).for_each(|(o, x)| *o = *x as f32);
}

fn packed_grads(
    params: &GaussianSplatRenderParams,
    inputs: GaussianSplatInputs<&[f32]>,
    d_image: &[f32],
) -> Result<Vec<f64>, SplatRenderError> {
    let g = Gaussians::from_slices(inputs)?;
    let d: Vec<f64> = d_image.iter().map(|&v| v as f64).collect();
    Ok(backward(params, &g, &d)?.into_array().concat())
}

fn image(
    params: &GaussianSplatRenderParams,
    inputs: GaussianSplatInputs<&[f32]>,
) -> Result<Vec<f64>, SplatRenderError> {
    render(params, &Gaussians::from_slices(inputs)?)
}

/// Runs `f`; on error reports it and returns `fallback`.
fn or_report<T>(error: &mut ExecError, r: Result<T, SplatRenderError>, fallback: T) -> T {
    r.unwrap_or_else(|e| {
        error.fail(e.to_string());
        fallback
    })
}

fn run_render(mut a: ArenaRenderArgs) {
    if let Some(v) = or_report(&mut a.error, image(a.params, a.inputs).map(Some), None) {
        fill(a.image, &v);
    }
}

fn run_render_bwd(mut a: ArenaRenderBwdArgs) {
    let r = packed_grads(&a.params.render, a.inputs, a.d_image).map(Some);
    if let Some(v) = or_report(&mut a.error, r, None) {
        fill(a.grads, &v);
    }
}

fn run_prepare(mut a: ArenaPrepareArgs) {
    let r = Gaussians::from_slices(a.inputs)
        .and_then(|g| prepare(a.params, &g))
        .and_then(|p| p.write_packed(a.prep));
    or_report(&mut a.error, r, ());
}

fn run_rasterize(mut a: ArenaRasterizeArgs) {
    let r = Prepared::from_packed(a.prep).and_then(|p| {
        if (p.width, p.height) != (a.params.width, a.params.height) {
            return Err(SplatRenderError::Buffer(format!(
                "the prep buffer is for {}x{}, the node renders {}x{}",
                p.width, p.height, a.params.width, a.params.height
            )));
        }
        Ok(p.rasterize())
    });
    if let Some(v) = or_report(&mut a.error, r.map(Some), None) {
        fill(a.image, &v);
    }
}

fn to_f32(v: Vec<f64>) -> Vec<f32> {
    v.into_iter().map(|x| x as f32).collect()
}

fn run_host_render(mut a: HostRenderArgs) -> Vec<f32> {
    to_f32(or_report(
        &mut a.error,
        image(a.params, a.inputs),
        Vec::new(),
    ))
}

fn run_host_backward(mut a: HostBackwardArgs) -> Vec<f32> {
    let r = packed_grads(&a.params.render, a.inputs, a.d_image);
    to_f32(or_report(&mut a.error, r, Vec::new()))
}

/// Registers the reference renderer as all six splat executors (replacing
/// any registered before); graphs with `splat.*` ops then compile on the
/// CPU backend, and `rlx_cpu::splat::render_host_slices` /
/// `backward_host_slices` run it.
pub fn register() {
    register_splat_executors(
        Box::new(run_render),
        Box::new(run_render_bwd),
        Box::new(run_prepare),
        Box::new(run_rasterize),
        Box::new(run_host_render),
        Box::new(run_host_backward),
    );
}
