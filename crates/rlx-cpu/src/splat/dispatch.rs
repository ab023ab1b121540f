//! Running `splat.*` nodes and host slices through the registered
//! executors, after checking every buffer length against the layout helpers.

use super::registry::{
    is_registered, with_executors, ArenaPrepareArgs, ArenaRasterizeArgs, ArenaRenderArgs,
    ArenaRenderBwdArgs, ExecError, HostBackwardArgs, HostRenderArgs, SplatSlot,
};
use crate::kernels::{KernelError, KernelResult, View, ViewMut};
use rlx_ir::custom::CustomOp;
use rlx_ir::ops::splat::{
    gaussian_splat_packed_grad_len, gaussian_splat_prep_packed_len, GaussianSplatBackwardParams,
    GaussianSplatInputs, GaussianSplatRenderParams, PREPARE, RASTERIZE, RENDER, RENDER_BWD,
};
use rlx_ir::{DType, Op};

/// Why a host splat call failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SplatError {
    /// The executor slot the call needs is empty.
    #[error("the splat `{slot}` executor is not registered (call register_splat_executors first)")]
    Unregistered {
        /// The empty slot.
        slot: SplatSlot,
    },
    /// The parameters or slices are inconsistent.
    #[error("splat: {0}")]
    Invalid(String),
    /// An executor reported invalid input.
    #[error("the splat `{slot}` executor failed: {message}")]
    Executor {
        /// The slot.
        slot: SplatSlot,
        /// What it reported.
        message: String,
    },
    /// An executor returned a buffer of the wrong length.
    #[error("the splat `{slot}` executor returned {given} floats, expected {expected}")]
    ExecutorOutput {
        /// The slot whose executor misbehaved.
        slot: SplatSlot,
        /// Floats the layout requires.
        expected: usize,
        /// Floats returned.
        given: usize,
    },
}

/// The slot that runs op `name`, if it is a splat op.
fn slot_of(name: &str) -> Option<SplatSlot> {
    match name {
        RENDER => Some(SplatSlot::Render),
        RENDER_BWD => Some(SplatSlot::RenderBwd),
        PREPARE => Some(SplatSlot::Prepare),
        RASTERIZE => Some(SplatSlot::Rasterize),
        _ => None,
    }
}

/// True for the four `splat.*` ops (the backend claims them and runs them here).
pub(crate) fn is_splat_op(name: &str) -> bool {
    slot_of(name).is_some()
}

/// Compile-time check of one op: a splat op whose slot is empty is refused,
/// naming the slot.
pub(crate) fn check_compilable(op: &Op) -> Result<(), String> {
    let Op::Custom(c) = op else { return Ok(()) };
    match slot_of(&c.name) {
        Some(slot) if !is_registered(slot) => Err(format!(
            "`{}` runs on the splat `{slot}` executor ({slot}Exec), which is not registered: \
             a renderer must call register_splat_executors before compiling",
            c.name
        )),
        _ => Ok(()),
    }
}

fn f32_view<'a>(v: &View<'a>, what: &str) -> Result<&'a [f32], String> {
    if v.dtype != DType::F32 {
        return Err(format!("{what} must be F32, given {}", v.dtype));
    }
    Ok(v.slice::<f32>())
}

fn five<'a>(ins: &[View<'a>]) -> Result<(GaussianSplatInputs<&'a [f32]>, usize), String> {
    let names = ["means", "scales", "rotations", "opacities", "colors"];
    let mut s: [&[f32]; 5] = [&[]; 5];
    for (i, name) in names.iter().enumerate() {
        s[i] = f32_view(&ins[i], name)?;
    }
    let inputs = GaussianSplatInputs::from_array(s);
    let n = inputs.num_gaussians()?;
    Ok((inputs, n))
}

fn check_len(what: &str, given: usize, expected: usize) -> Result<(), String> {
    if given != expected {
        return Err(format!("{what} holds {given} floats, expected {expected}"));
    }
    Ok(())
}

/// Runs splat node `c` through its executor; `None` when `c` is not a splat op.
pub(crate) fn run(c: &CustomOp, ins: &[View], out: &mut ViewMut) -> Option<KernelResult> {
    let slot = slot_of(&c.name)?;
    Some(run_slot(slot, c, ins, out).map_err(|e| KernelError::Message(format!("{}: {e}", c.name))))
}

fn run_slot(slot: SplatSlot, c: &CustomOp, ins: &[View], out: &mut ViewMut) -> Result<(), String> {
    let params = GaussianSplatRenderParams::from_attrs(&c.attrs)?;
    if out.dtype != DType::F32 {
        return Err(format!("the output must be F32, given {}", out.dtype));
    }
    let out = out.slice::<f32>();
    let missing = || format!("the splat `{slot}` executor is not registered");
    let mut failed = None;
    match slot {
        SplatSlot::Render => {
            let (inputs, _) = five(ins)?;
            check_len("the image", out.len(), params.image_len())?;
            let exec = with_executors(|e| e.render.clone()).ok_or_else(missing)?;
            exec(ArenaRenderArgs {
                params: &params,
                inputs,
                image: out,
                error: ExecError(&mut failed),
            });
        }
        SplatSlot::RenderBwd => {
            let (inputs, n) = five(ins)?;
            let d_image = f32_view(&ins[5], "d_image")?;
            check_len("d_image", d_image.len(), params.image_len())?;
            check_len(
                "the packed gradient",
                out.len(),
                gaussian_splat_packed_grad_len(n),
            )?;
            let exec = with_executors(|e| e.render_bwd.clone()).ok_or_else(missing)?;
            let params = GaussianSplatBackwardParams {
                render: params,
                num_gaussians: n,
            };
            exec(ArenaRenderBwdArgs {
                params: &params,
                inputs,
                d_image,
                grads: out,
                error: ExecError(&mut failed),
            });
        }
        SplatSlot::Prepare => {
            let (inputs, n) = five(ins)?;
            let want = gaussian_splat_prep_packed_len(n, params.width, params.height);
            check_len("the prep buffer", out.len(), want)?;
            let exec = with_executors(|e| e.prepare.clone()).ok_or_else(missing)?;
            exec(ArenaPrepareArgs {
                params: &params,
                inputs,
                prep: out,
                error: ExecError(&mut failed),
            });
        }
        SplatSlot::Rasterize => {
            let prep = f32_view(&ins[0], "the prep buffer")?;
            check_len("the image", out.len(), params.image_len())?;
            let exec = with_executors(|e| e.rasterize.clone()).ok_or_else(missing)?;
            exec(ArenaRasterizeArgs {
                params: &params,
                prep,
                image: out,
                error: ExecError(&mut failed),
            });
        }
        SplatSlot::HostRender | SplatSlot::HostBackward => {
            return Err(format!("the `{slot}` slot runs no graph node"))
        }
    }
    match failed {
        Some(m) => Err(format!("the `{slot}` executor failed: {m}")),
        None => Ok(()),
    }
}

/// Renders host slices through the `HostRender` executor: the
/// `height · width · 3` image.
pub fn render_host_slices(
    params: &GaussianSplatRenderParams,
    inputs: GaussianSplatInputs<&[f32]>,
) -> Result<Vec<f32>, SplatError> {
    params.validate().map_err(SplatError::Invalid)?;
    inputs.num_gaussians().map_err(SplatError::Invalid)?;
    let slot = SplatSlot::HostRender;
    let exec =
        with_executors(|e| e.host_render.clone()).ok_or(SplatError::Unregistered { slot })?;
    let mut failed = None;
    let image = exec(HostRenderArgs {
        params,
        inputs,
        error: ExecError(&mut failed),
    });
    if let Some(message) = failed {
        return Err(SplatError::Executor { slot, message });
    }
    expect_len(slot, &image, params.image_len())?;
    Ok(image)
}

/// The packed gradient of the render of `inputs` w.r.t. them, given the
/// image cotangent `d_image`, through the `HostBackward` executor
/// (`rlx_ir::ops::splat::unpack_gaussian_splat_packed_grads` splits it).
pub fn backward_host_slices(
    params: &GaussianSplatRenderParams,
    inputs: GaussianSplatInputs<&[f32]>,
    d_image: &[f32],
) -> Result<Vec<f32>, SplatError> {
    params.validate().map_err(SplatError::Invalid)?;
    let n = inputs.num_gaussians().map_err(SplatError::Invalid)?;
    check_len("d_image", d_image.len(), params.image_len()).map_err(SplatError::Invalid)?;
    let slot = SplatSlot::HostBackward;
    let exec =
        with_executors(|e| e.host_backward.clone()).ok_or(SplatError::Unregistered { slot })?;
    let params = GaussianSplatBackwardParams {
        render: params.clone(),
        num_gaussians: n,
    };
    let mut failed = None;
    let grads = exec(HostBackwardArgs {
        params: &params,
        inputs,
        d_image,
        error: ExecError(&mut failed),
    });
    if let Some(message) = failed {
        return Err(SplatError::Executor { slot, message });
    }
    expect_len(slot, &grads, gaussian_splat_packed_grad_len(n))?;
    Ok(grads)
}

fn expect_len(slot: SplatSlot, v: &[f32], expected: usize) -> Result<(), SplatError> {
    if v.len() != expected {
        return Err(SplatError::ExecutorOutput {
            slot,
            expected,
            given: v.len(),
        });
    }
    Ok(())
}
