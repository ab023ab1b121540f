//! The Gaussians and camera in f64, converted from the f32 tensors the ops carry.

use crate::error::SplatRenderError;
use rlx_ir::ops::splat::{GaussianSplatInputs, GaussianSplatRenderParams};

/// A set of 3D Gaussians (f64; the render math runs in f64).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Gaussians {
    /// World-space centres.
    pub means: Vec<[f64; 3]>,
    /// Per-axis standard deviations (> 0).
    pub scales: Vec<[f64; 3]>,
    /// Rotation quaternions `(w, x, y, z)`, normalized when used.
    pub rotations: Vec<[f64; 4]>,
    /// Opacities in `[0, 1]`.
    pub opacities: Vec<f64>,
    /// RGB colors.
    pub colors: Vec<[f64; 3]>,
}

fn rows<const W: usize>(v: &[f32]) -> Vec<[f64; W]> {
    v.chunks_exact(W)
        .map(|c| std::array::from_fn(|k| c[k] as f64))
        .collect()
}

impl Gaussians {
    /// From the five f32 tensors (lengths checked).
    pub fn from_slices(inputs: GaussianSplatInputs<&[f32]>) -> Result<Gaussians, SplatRenderError> {
        inputs.num_gaussians().map_err(SplatRenderError::Input)?;
        Ok(Gaussians {
            means: rows(inputs.means),
            scales: rows(inputs.scales),
            rotations: rows(inputs.rotations),
            opacities: inputs.opacities.iter().map(|&o| o as f64).collect(),
            colors: rows(inputs.colors),
        })
    }

    /// Number of Gaussians.
    pub fn len(&self) -> usize {
        self.means.len()
    }

    /// True when there are none.
    pub fn is_empty(&self) -> bool {
        self.means.is_empty()
    }

    /// Why the set cannot be rendered: mismatched lengths, a zero
    /// quaternion, a negative scale or non-finite values.
    pub fn validate(&self) -> Result<(), SplatRenderError> {
        let n = self.len();
        let lens = [
            self.scales.len(),
            self.rotations.len(),
            self.opacities.len(),
            self.colors.len(),
        ];
        if lens.iter().any(|&l| l != n) {
            return Err(SplatRenderError::Input(format!(
                "{n} means but {lens:?} scales / rotations / opacities / colors"
            )));
        }
        for i in 0..n {
            let q = self.rotations[i];
            let all = self.means[i]
                .iter()
                .chain(&self.scales[i])
                .chain(&q)
                .chain(&self.colors[i])
                .chain(std::iter::once(&self.opacities[i]));
            if !all.clone().all(|v| v.is_finite()) {
                return Err(SplatRenderError::Input(format!(
                    "Gaussian {i} has a non-finite value"
                )));
            }
            if q.iter().all(|&v| v == 0.0) {
                return Err(SplatRenderError::Input(format!(
                    "Gaussian {i} has a zero rotation quaternion"
                )));
            }
            if self.scales[i].iter().any(|&s| s < 0.0) {
                return Err(SplatRenderError::Input(format!(
                    "Gaussian {i} has a negative scale {:?}",
                    self.scales[i]
                )));
            }
        }
        Ok(())
    }
}

/// The camera and image of a render, in f64.
#[derive(Clone, Debug)]
pub(crate) struct Camera {
    pub width: usize,
    pub height: usize,
    pub fx: f64,
    pub fy: f64,
    pub cx: f64,
    pub cy: f64,
    pub near: f64,
    /// World-to-view rotation / linear part.
    pub rot: [[f64; 3]; 3],
    /// World-to-view translation.
    pub trans: [f64; 3],
    /// `1.3 tan(fov_x / 2)`: the x/z clamp of the projection Jacobian.
    pub lim_x: f64,
    /// `1.3 tan(fov_y / 2)`.
    pub lim_y: f64,
    pub background: [f64; 3],
}

impl Camera {
    /// From validated parameters.
    pub fn new(p: &GaussianSplatRenderParams) -> Result<Camera, SplatRenderError> {
        p.validate().map_err(SplatRenderError::Params)?;
        let v = p.view.map(|x| x as f64);
        let (fx, fy) = (p.fx as f64, p.fy as f64);
        Ok(Camera {
            width: p.width,
            height: p.height,
            fx,
            fy,
            cx: p.cx as f64,
            cy: p.cy as f64,
            near: p.near as f64,
            rot: std::array::from_fn(|i| std::array::from_fn(|j| v[4 * i + j])),
            trans: [v[3], v[7], v[11]],
            lim_x: 1.3 * p.width as f64 / (2.0 * fx),
            lim_y: 1.3 * p.height as f64 / (2.0 * fy),
            background: p.background.map(|x| x as f64),
        })
    }
}
