//! Shape rules, registration, graph builders and the vjp of `splat.render`.

use super::layout::{
    gaussian_splat_packed_grad_len, gaussian_splat_prep_packed_len, grad_blocks,
    GAUSSIAN_SPLAT_PREP_RASTER_PARAMS_FLOATS, GAUSSIAN_SPLAT_PREP_RECORD_FLOATS,
};
use super::params::{GaussianSplatInputs, GaussianSplatRenderParams, INPUT_NAMES, INPUT_WIDTHS};
use super::{PREPARE, RASTERIZE, RENDER, RENDER_BWD};
use crate::custom::{register_op, CustomOp, OpExtension};
use crate::{Arity, DType, Graph, GraphExt, IrError, NodeId, Shape};

fn static_f32(s: &Shape, what: &str) -> Result<Vec<usize>, String> {
    if s.dtype() != DType::F32 {
        return Err(format!("{what} must be F32, given {s}"));
    }
    s.static_dims()
        .ok_or_else(|| format!("{what} must have a static shape, given {s}"))
}

/// The Gaussian count of the five input shapes, or which one is wrong.
fn gaussian_count(s: &[&Shape]) -> Result<usize, String> {
    let n = match static_f32(s[0], "means")?.as_slice() {
        &[n, 3] => n,
        _ => return Err(format!("means must be [n, 3], given {}", s[0])),
    };
    for ((shape, w), name) in s.iter().zip(INPUT_WIDTHS).zip(INPUT_NAMES).skip(1) {
        let dims = static_f32(shape, name)?;
        let want: &[usize] = if w == 1 { &[n] } else { &[n, w] };
        if dims != want {
            return Err(format!("{name} must be {want:?} (n = {n}), given {shape}"));
        }
    }
    Ok(n)
}

fn image_shape(p: &GaussianSplatRenderParams) -> Shape {
    Shape::new(&[p.height, p.width, 3], DType::F32)
}

fn render_shape(op: &CustomOp, s: &[&Shape]) -> Result<Shape, String> {
    let p = GaussianSplatRenderParams::from_attrs(&op.attrs)?;
    gaussian_count(s)?;
    Ok(image_shape(&p))
}

fn render_bwd_shape(op: &CustomOp, s: &[&Shape]) -> Result<Shape, String> {
    let p = GaussianSplatRenderParams::from_attrs(&op.attrs)?;
    let n = gaussian_count(&s[..5])?;
    let img = image_shape(&p);
    if static_f32(s[5], "d_image")? != img.static_dims().unwrap_or_default() {
        return Err(format!("d_image must be {img}, given {}", s[5]));
    }
    Ok(Shape::new(&[gaussian_splat_packed_grad_len(n)], DType::F32))
}

fn prepare_shape(op: &CustomOp, s: &[&Shape]) -> Result<Shape, String> {
    let p = GaussianSplatRenderParams::from_attrs(&op.attrs)?;
    let n = gaussian_count(s)?;
    Ok(Shape::new(
        &[gaussian_splat_prep_packed_len(n, p.width, p.height)],
        DType::F32,
    ))
}

fn rasterize_shape(op: &CustomOp, s: &[&Shape]) -> Result<Shape, String> {
    let p = GaussianSplatRenderParams::from_attrs(&op.attrs)?;
    let len = match static_f32(s[0], "prep buffer")?.as_slice() {
        &[len] => len,
        _ => return Err(format!("the prep buffer must be 1-D, given {}", s[0])),
    };
    let fixed = gaussian_splat_prep_packed_len(0, p.width, p.height);
    let per = GAUSSIAN_SPLAT_PREP_RECORD_FLOATS + 1;
    if len < fixed || !(len - fixed).is_multiple_of(per) {
        return Err(format!(
            "a prep buffer for {}x{} holds {fixed} + {per}·n floats \
             ({GAUSSIAN_SPLAT_PREP_RASTER_PARAMS_FLOATS} header), given {len}",
            p.width, p.height
        ));
    }
    Ok(image_shape(&p))
}

/// The input cotangents of `splat.render`: one `splat.render_bwd`, its
/// packed gradient sliced and reshaped per input.
fn render_vjp(
    g: &mut Graph,
    op: &CustomOp,
    x: &[NodeId],
    _y: NodeId,
    ct: NodeId,
) -> Result<Vec<Option<NodeId>>, IrError> {
    let mut ins = x.to_vec();
    ins.push(ct);
    let packed = g.custom(CustomOp::new(RENDER_BWD, op.attrs.clone()), &ins)?;
    let n = g.shape(x[0]).dim(0).unwrap_or(0);
    let blocks = grad_blocks(n).into_array();
    Ok(blocks
        .into_iter()
        .zip(x)
        .map(|(r, &xi)| {
            let dims: Vec<i64> = g
                .shape(xi)
                .static_dims()
                .unwrap_or_default()
                .iter()
                .map(|&d| d as i64)
                .collect();
            let part = g.slice_(packed, 0, r.start as i64, r.end as i64, 1);
            Some(g.reshape_(part, &dims))
        })
        .collect())
}

/// Registers the four `splat.*` ops (shape rules; `splat.render` with its
/// vjp). Idempotent and thread-safe; the builders call it. Their kernels
/// are the executors a renderer registers with the backend.
pub fn register() {
    let five = Arity::exactly(5);
    let exts = [
        OpExtension::new(
            RENDER,
            "render Gaussians to an [h, w, 3] image",
            five,
            render_shape,
        )
        .with_vjp(render_vjp),
        OpExtension::new(
            RENDER_BWD,
            "packed gradient of splat.render w.r.t. its five inputs",
            Arity::exactly(6),
            render_bwd_shape,
        ),
        OpExtension::new(
            PREPARE,
            "project, bin and depth-sort Gaussians",
            five,
            prepare_shape,
        ),
        OpExtension::new(
            RASTERIZE,
            "alpha-composite a prep buffer into an [h, w, 3] image",
            Arity::exactly(1),
            rasterize_shape,
        ),
    ];
    for e in exts {
        // A second registration of the same name keeps the first (ours).
        let _ = register_op(e);
    }
}

fn splat_node(
    g: &mut Graph,
    name: &str,
    params: &GaussianSplatRenderParams,
    ins: &[NodeId],
) -> Result<NodeId, IrError> {
    register();
    g.custom(CustomOp::new(name, params.to_attrs()), ins)
}

/// Adds `splat.render(inputs)` to `g`: the `[h, w, 3]` image.
pub fn splat_render(
    g: &mut Graph,
    inputs: GaussianSplatInputs<NodeId>,
    params: &GaussianSplatRenderParams,
) -> Result<NodeId, IrError> {
    splat_node(g, RENDER, params, &inputs.into_array())
}

/// Adds `splat.render_bwd(inputs, d_image)` to `g`: the packed gradient.
pub fn splat_render_bwd(
    g: &mut Graph,
    inputs: GaussianSplatInputs<NodeId>,
    d_image: NodeId,
    params: &GaussianSplatRenderParams,
) -> Result<NodeId, IrError> {
    let [a, b, c, d, e] = inputs.into_array();
    splat_node(g, RENDER_BWD, params, &[a, b, c, d, e, d_image])
}

/// Adds `splat.prepare(inputs)` to `g`: the packed prep buffer.
pub fn splat_prepare(
    g: &mut Graph,
    inputs: GaussianSplatInputs<NodeId>,
    params: &GaussianSplatRenderParams,
) -> Result<NodeId, IrError> {
    splat_node(g, PREPARE, params, &inputs.into_array())
}

/// Adds `splat.rasterize(prep)` to `g`: the `[h, w, 3]` image.
pub fn splat_rasterize(
    g: &mut Graph,
    prep: NodeId,
    params: &GaussianSplatRenderParams,
) -> Result<NodeId, IrError> {
    splat_node(g, RASTERIZE, params, &[prep])
}
