//! The payloads of the splat ops: the five Gaussian tensors and the camera /
//! image parameters (stored as the custom op's attributes, so the textual
//! IR carries them).

use crate::custom::{CustomAttr, CustomAttrs};

/// The five per-Gaussian tensors of a splat op, in input order. Generic so
/// the same struct names graph nodes (`NodeId`), host slices (`&[f32]`),
/// shapes or gradients (`Vec<f32>`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct GaussianSplatInputs<T> {
    /// World-space centres `[n, 3]`.
    pub means: T,
    /// Per-axis standard deviations `[n, 3]` (already activated, > 0).
    pub scales: T,
    /// Rotation quaternions `[n, 4]`, `(w, x, y, z)`; normalized by the renderer.
    pub rotations: T,
    /// Opacities `[n]` in `[0, 1]`.
    pub opacities: T,
    /// RGB colors `[n, 3]`.
    pub colors: T,
}

/// Floats per Gaussian of each input, in input order.
pub(crate) const INPUT_WIDTHS: [usize; 5] = [3, 3, 4, 1, 3];
/// Input names, in input order.
pub(crate) const INPUT_NAMES: [&str; 5] = ["means", "scales", "rotations", "opacities", "colors"];

impl<T> GaussianSplatInputs<T> {
    /// Applies `f` to each field.
    pub fn map<U>(self, mut f: impl FnMut(T) -> U) -> GaussianSplatInputs<U> {
        GaussianSplatInputs {
            means: f(self.means),
            scales: f(self.scales),
            rotations: f(self.rotations),
            opacities: f(self.opacities),
            colors: f(self.colors),
        }
    }

    /// The fields in input order.
    pub fn into_array(self) -> [T; 5] {
        [
            self.means,
            self.scales,
            self.rotations,
            self.opacities,
            self.colors,
        ]
    }

    /// From the fields in input order.
    pub fn from_array([means, scales, rotations, opacities, colors]: [T; 5]) -> Self {
        GaussianSplatInputs {
            means,
            scales,
            rotations,
            opacities,
            colors,
        }
    }
}

impl GaussianSplatInputs<&[f32]> {
    /// The number of Gaussians, or what is inconsistent: every slice must
    /// hold `n` times its per-Gaussian width (3, 3, 4, 1, 3 floats).
    pub fn num_gaussians(&self) -> Result<usize, String> {
        let lens = self.into_array().map(<[f32]>::len);
        let n = lens[0] / 3;
        for ((len, w), name) in lens.iter().zip(INPUT_WIDTHS).zip(INPUT_NAMES) {
            if *len != n * w {
                return Err(format!(
                    "{name} holds {len} floats; {n} Gaussians (from means: {} floats) need {}",
                    lens[0],
                    n * w
                ));
            }
        }
        Ok(n)
    }
}

/// Camera and image of a render: a pinhole camera `px = fx·x/z + cx`,
/// `py = fy·y/z + cy` over view-space points `view · [p, 1]`, pixel
/// centres at integer coordinates.
#[derive(Clone, Debug, PartialEq)]
pub struct GaussianSplatRenderParams {
    /// Image width in pixels.
    pub width: usize,
    /// Image height in pixels.
    pub height: usize,
    /// Focal length in pixels, x.
    pub fx: f32,
    /// Focal length in pixels, y.
    pub fy: f32,
    /// Principal point, x.
    pub cx: f32,
    /// Principal point, y.
    pub cy: f32,
    /// Gaussians with view depth `z <= near` are culled (3DGS: 0.2).
    pub near: f32,
    /// World-to-view matrix, row-major 4×4 (the last row is `0 0 0 1`).
    pub view: [f32; 16],
    /// Background color composited behind the Gaussians.
    pub background: [f32; 3],
}

impl GaussianSplatRenderParams {
    /// A `width × height` render with focal length `focal`, the principal
    /// point at the image centre, identity view, near plane 0.2, black background.
    pub fn new(width: usize, height: usize, focal: f32) -> GaussianSplatRenderParams {
        let mut view = [0.0; 16];
        for i in 0..4 {
            view[5 * i] = 1.0;
        }
        GaussianSplatRenderParams {
            width,
            height,
            fx: focal,
            fy: focal,
            cx: (width as f32 - 1.0) / 2.0,
            cy: (height as f32 - 1.0) / 2.0,
            near: 0.2,
            view,
            background: [0.0; 3],
        }
    }

    /// Floats in the rendered image (`height · width · 3`).
    pub fn image_len(&self) -> usize {
        self.width * self.height * 3
    }

    /// Why the parameters cannot render, if they cannot.
    pub fn validate(&self) -> Result<(), String> {
        if self.width == 0 || self.height == 0 {
            return Err(format!(
                "image size must be positive, given {}x{}",
                self.width, self.height
            ));
        }
        if !(self.fx > 0.0 && self.fy > 0.0 && self.fx.is_finite() && self.fy.is_finite()) {
            return Err(format!(
                "focal lengths must be finite and > 0, given fx={} fy={}",
                self.fx, self.fy
            ));
        }
        if !(self.near > 0.0 && self.near.is_finite()) {
            return Err(format!("near must be finite and > 0, given {}", self.near));
        }
        let finite = |v: &[f32]| v.iter().all(|x| x.is_finite());
        if !finite(&[self.cx, self.cy]) || !finite(&self.view) || !finite(&self.background) {
            return Err("cx, cy, view and background must be finite".into());
        }
        Ok(())
    }

    /// The parameters as custom-op attributes.
    pub fn to_attrs(&self) -> CustomAttrs {
        let f = |x: f32| CustomAttr::Float(x as f64);
        let list = |v: &[f32]| CustomAttr::Floats(v.iter().map(|&x| x as f64).collect());
        CustomAttrs::new()
            .with("width", CustomAttr::Int(self.width as i64))
            .with("height", CustomAttr::Int(self.height as i64))
            .with("fx", f(self.fx))
            .with("fy", f(self.fy))
            .with("cx", f(self.cx))
            .with("cy", f(self.cy))
            .with("near", f(self.near))
            .with("view", list(&self.view))
            .with("background", list(&self.background))
    }

    /// The parameters from custom-op attributes (all required), validated.
    pub fn from_attrs(a: &CustomAttrs) -> Result<GaussianSplatRenderParams, String> {
        let size = |k: &str| -> Result<usize, String> {
            let v = a.int_or(k, -1)?;
            usize::try_from(v).map_err(|_| format!("attribute `{k}` must be a size, given {v}"))
        };
        let float = |k: &str| -> Result<f32, String> {
            match a.get(k) {
                None => Err(format!("attribute `{k}` is missing")),
                Some(_) => Ok(a.float_or(k, 0.0)? as f32),
            }
        };
        let p = GaussianSplatRenderParams {
            width: size("width")?,
            height: size("height")?,
            fx: float("fx")?,
            fy: float("fy")?,
            cx: float("cx")?,
            cy: float("cy")?,
            near: float("near")?,
            view: float_list(a, "view")?,
            background: float_list(a, "background")?,
        };
        p.validate()?;
        Ok(p)
    }
}

fn float_list<const N: usize>(a: &CustomAttrs, k: &str) -> Result<[f32; N], String> {
    match a.get(k) {
        Some(CustomAttr::Floats(v)) if v.len() == N => {
            let mut out = [0.0; N];
            out.iter_mut().zip(v).for_each(|(o, x)| *o = *x as f32);
            Ok(out)
        }
        Some(other) => Err(format!(
            "attribute `{k}` must be a list of {N} floats, given {other}"
        )),
        None => Err(format!("attribute `{k}` is missing")),
    }
}

/// What the backward of a render needs besides its tensors.
#[derive(Clone, Debug, PartialEq)]
pub struct GaussianSplatBackwardParams {
    /// The forward render's parameters.
    pub render: GaussianSplatRenderParams,
    /// Number of Gaussians (the packed gradient holds
    /// [`gaussian_splat_packed_grad_len`](super::gaussian_splat_packed_grad_len)`(n)` floats).
    pub num_gaussians: usize,
}
