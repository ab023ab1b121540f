//! Reverse mode of the render (3DGS `renderCUDA` / `preprocessCUDA`
//! backward): per pixel back to front over the Gaussians that contributed,
//! then per Gaussian through the projection.

use crate::error::SplatRenderError;
use crate::gaussians::{Camera, Gaussians};
use crate::project::{project_vjp, ScreenGrad};
use crate::raster::{prepare, Contribution};
use rlx_ir::ops::splat::{GaussianSplatInputs, GaussianSplatRenderParams};

/// Gradients of `sum(image · d_image)` w.r.t. the five inputs, flattened
/// like them: means `3n`, scales `3n`, rotations `4n`, opacities `n`, colors `3n`.
///
/// Where alpha hits its 0.99 clamp the Gaussian's share of that pixel does
/// not depend on its opacity or shape (the exact derivative; the 3DGS
/// kernels ignore the clamp). The discrete decisions (tiles, the 1/255 skip,
/// the 1e-4 stop) are piecewise constant and contribute nothing.
pub fn backward(
    params: &GaussianSplatRenderParams,
    g: &Gaussians,
    d_image: &[f64],
) -> Result<GaussianSplatInputs<Vec<f64>>, SplatRenderError> {
    if d_image.len() != params.image_len() {
        return Err(SplatRenderError::Buffer(format!(
            "d_image holds {} floats, the {}x{} image {}",
            d_image.len(),
            params.width,
            params.height,
            params.image_len()
        )));
    }
    let cam = Camera::new(params)?;
    let prep = prepare(params, g)?;
    let n = g.len();
    let mut screen = vec![ScreenGrad::default(); n];
    let mut d_opacity = vec![0.0; n];
    let mut d_color = vec![[0.0; 3]; n];
    let mut contribs: Vec<Contribution> = Vec::new();
    prep.for_each_pixel(|x, y, list| {
        contribs.clear();
        let t_final = prep.walk(list, x, y, |c| contribs.push(c));
        let dc = &d_image[(y * prep.width + x) * 3..][..3];
        // Light from behind each Gaussian: the later ones and the background.
        let mut behind: [f64; 3] = std::array::from_fn(|k| t_final * prep.background[k]);
        for c in contribs.iter().rev() {
            let p = &prep.gaussians[c.index];
            let w = c.alpha * c.t_before;
            let mut d_alpha = 0.0;
            for k in 0..3 {
                d_color[c.index][k] += w * dc[k];
                d_alpha += dc[k] * (p.color[k] * c.t_before - behind[k] / (1.0 - c.alpha));
                behind[k] += w * p.color[k];
            }
            if c.clamped {
                continue;
            }
            d_opacity[c.index] += c.gauss * d_alpha;
            // dL/dpower = dL/dalpha · opacity · exp(power).
            let d_power = d_alpha * p.opacity * c.gauss;
            let [a, b, cc] = p.conic;
            let [dx, dy] = c.d;
            let s = &mut screen[c.index];
            s.mean[0] += d_power * -(a * dx + b * dy);
            s.mean[1] += d_power * -(b * dx + cc * dy);
            s.conic[0] += d_power * -0.5 * dx * dx;
            s.conic[1] += d_power * -0.5 * dx * dy;
            s.conic[2] += d_power * -0.5 * dy * dy;
        }
    });
    let mut out = GaussianSplatInputs {
        means: vec![0.0; 3 * n],
        scales: vec![0.0; 3 * n],
        rotations: vec![0.0; 4 * n],
        opacities: d_opacity,
        colors: d_color.concat(),
    };
    for (i, p) in prep.gaussians.iter().enumerate() {
        if !p.visible() {
            continue;
        }
        let gr = project_vjp(&cam, g, i, p, &screen[i]);
        out.means[3 * i..3 * i + 3].copy_from_slice(&gr.mean);
        out.scales[3 * i..3 * i + 3].copy_from_slice(&gr.scale);
        out.rotations[4 * i..4 * i + 4].copy_from_slice(&gr.rotation);
    }
    Ok(out)
}
