//! Tile binning, depth order and front-to-back alpha compositing (3DGS
//! `render`), and the prep buffer that carries them between the
//! `splat.prepare` and `splat.rasterize` ops.

use crate::error::SplatRenderError;
use crate::gaussians::{Camera, Gaussians};
use crate::project::{project, Projected};
use rlx_ir::ops::splat::{
    gaussian_splat_prep_packed_len, gaussian_splat_prep_split, gaussian_splat_tiles, prep_field,
    GaussianSplatRenderParams, GAUSSIAN_SPLAT_PREP_RECORD_FLOATS, GAUSSIAN_SPLAT_TILE_SIZE,
};

/// Alpha is clamped to this (3DGS: keeps the transmittance invertible).
const ALPHA_MAX: f64 = 0.99;
/// A Gaussian adds nothing to a pixel where its alpha is below this.
const ALPHA_MIN: f64 = 1.0 / 255.0;
/// A pixel stops before the Gaussian that takes its transmittance below this.
const T_MIN: f64 = 1e-4;

/// Projected Gaussians, binned and depth-sorted: the content of the prep buffer.
#[derive(Clone, Debug, PartialEq)]
pub struct Prepared {
    /// Image width.
    pub width: usize,
    /// Image height.
    pub height: usize,
    /// Background color.
    pub background: [f64; 3],
    /// One per Gaussian, in input order.
    pub gaussians: Vec<Projected>,
    /// Gaussian indices, nearest first (stable: equal depths keep input order).
    pub order: Vec<usize>,
    /// Visible Gaussians overlapping each tile, row-major.
    pub tile_counts: Vec<usize>,
}

/// Projects, bins and sorts `g` (the `splat.prepare` op).
pub fn prepare(
    params: &GaussianSplatRenderParams,
    g: &Gaussians,
) -> Result<Prepared, SplatRenderError> {
    let cam = Camera::new(params)?;
    g.validate()?;
    let gaussians: Vec<Projected> = (0..g.len()).map(|i| project(&cam, g, i)).collect();
    let mut order: Vec<usize> = (0..g.len()).collect();
    order.sort_by(|&a, &b| gaussians[a].depth.total_cmp(&gaussians[b].depth));
    let (tx, ty) = gaussian_splat_tiles(params.width, params.height);
    let mut tile_counts = vec![0; tx * ty];
    for p in gaussians.iter().filter(|p| p.visible()) {
        for row in p.rect[1]..p.rect[3] {
            for col in p.rect[0]..p.rect[2] {
                tile_counts[row * tx + col] += 1;
            }
        }
    }
    Ok(Prepared {
        width: params.width,
        height: params.height,
        background: cam.background,
        gaussians,
        order,
        tile_counts,
    })
}

/// One Gaussian's share of one pixel.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Contribution {
    /// The Gaussian.
    pub index: usize,
    /// Its alpha at the pixel.
    pub alpha: f64,
    /// `exp(power)`.
    pub gauss: f64,
    /// Transmittance in front of it.
    pub t_before: f64,
    /// Whether alpha hit [`ALPHA_MAX`] (then it does not depend on the Gaussian).
    pub clamped: bool,
    /// Centre minus pixel.
    pub d: [f64; 2],
}

impl Prepared {
    /// For each tile (row-major), its visible Gaussians nearest first.
    pub(crate) fn tile_lists(&self) -> Vec<Vec<usize>> {
        let (tx, ty) = gaussian_splat_tiles(self.width, self.height);
        let mut lists = vec![Vec::new(); tx * ty];
        for &i in &self.order {
            let p = &self.gaussians[i];
            if !p.visible() {
                continue;
            }
            for row in p.rect[1]..p.rect[3] {
                for col in p.rect[0]..p.rect[2] {
                    lists[row * tx + col].push(i);
                }
            }
        }
        lists
    }

    /// Walks pixel `(x, y)` front to back over `list`, calling `visit` for
    /// each contributing Gaussian; returns the final transmittance.
    pub(crate) fn walk(
        &self,
        list: &[usize],
        x: usize,
        y: usize,
        mut visit: impl FnMut(Contribution),
    ) -> f64 {
        let mut t = 1.0;
        for &index in list {
            let p = &self.gaussians[index];
            let d = [p.mean[0] - x as f64, p.mean[1] - y as f64];
            let [a, b, c] = p.conic;
            let power = -0.5 * (a * d[0] * d[0] + c * d[1] * d[1]) - b * d[0] * d[1];
            if power > 0.0 {
                continue;
            }
            let gauss = power.exp();
            let raw = p.opacity * gauss;
            let alpha = raw.min(ALPHA_MAX);
            if alpha < ALPHA_MIN {
                continue;
            }
            let next = t * (1.0 - alpha);
            if next < T_MIN {
                break;
            }
            visit(Contribution {
                index,
                alpha,
                gauss,
                t_before: t,
                clamped: raw > ALPHA_MAX,
                d,
            });
            t = next;
        }
        t
    }

    /// Calls `f(x, y, list)` for every pixel with its tile's list.
    pub(crate) fn for_each_pixel(&self, mut f: impl FnMut(usize, usize, &[usize])) {
        let lists = self.tile_lists();
        let (tx, _) = gaussian_splat_tiles(self.width, self.height);
        let ts = GAUSSIAN_SPLAT_TILE_SIZE;
        for y in 0..self.height {
            for x in 0..self.width {
                f(x, y, &lists[(y / ts) * tx + x / ts]);
            }
        }
    }

    /// The image, `height · width · 3` row-major RGB (the `splat.rasterize` op).
    pub fn rasterize(&self) -> Vec<f64> {
        let mut image = vec![0.0; self.width * self.height * 3];
        self.for_each_pixel(|x, y, list| {
            let mut rgb = [0.0; 3];
            let t = self.walk(list, x, y, |c| {
                let w = c.alpha * c.t_before;
                let col = self.gaussians[c.index].color;
                rgb.iter_mut().zip(col).for_each(|(o, v)| *o += w * v);
            });
            let px = &mut image[(y * self.width + x) * 3..][..3];
            for k in 0..3 {
                px[k] = rgb[k] + t * self.background[k];
            }
        });
        image
    }

    /// Writes the prep buffer (`rlx_ir::ops::splat` layout) into `out`,
    /// which holds `gaussian_splat_prep_packed_len(n, w, h)` floats.
    pub fn write_packed(&self, out: &mut [f32]) -> Result<(), SplatRenderError> {
        let n = self.gaussians.len();
        let want = gaussian_splat_prep_packed_len(n, self.width, self.height);
        if out.len() != want {
            return Err(SplatRenderError::Buffer(format!(
                "the prep buffer of {n} Gaussians on {}x{} holds {want} floats, given {}",
                self.width,
                self.height,
                out.len()
            )));
        }
        let s = gaussian_splat_prep_split(n, self.width, self.height);
        let (tx, ty) = gaussian_splat_tiles(self.width, self.height);
        let [r, g, b] = self.background;
        let header = [self.width, self.height, tx, ty, n].map(|v| v as f64);
        out[s.header.clone()]
            .iter_mut()
            .zip(header.iter().chain(&[r, g, b]))
            .for_each(|(o, v)| *o = *v as f32);
        for (rec, p) in out[s.records]
            .chunks_exact_mut(GAUSSIAN_SPLAT_PREP_RECORD_FLOATS)
            .zip(&self.gaussians)
        {
            use prep_field::*;
            rec[MEAN_X] = p.mean[0] as f32;
            rec[MEAN_Y] = p.mean[1] as f32;
            rec[CONIC_A] = p.conic[0] as f32;
            rec[CONIC_B] = p.conic[1] as f32;
            rec[CONIC_C] = p.conic[2] as f32;
            rec[DEPTH] = p.depth as f32;
            rec[RADIUS] = p.radius as f32;
            rec[OPACITY] = p.opacity as f32;
            for k in 0..3 {
                rec[COLOR + k] = p.color[k] as f32;
            }
            for (k, v) in p.rect.iter().enumerate() {
                rec[TILE_X0 + k] = *v as f32;
            }
        }
        out[s.order]
            .iter_mut()
            .zip(&self.order)
            .for_each(|(o, &i)| *o = i as f32);
        out[s.tiles]
            .iter_mut()
            .zip(&self.tile_counts)
            .for_each(|(o, &c)| *o = c as f32);
        Ok(())
    }

    /// Reads a prep buffer back, checking its header and indices.
    pub fn from_packed(buf: &[f32]) -> Result<Prepared, SplatRenderError> {
        let bad = |m: String| SplatRenderError::Buffer(m);
        let size = |v: f32, what: &str| -> Result<usize, SplatRenderError> {
            if v >= 0.0 && v.fract() == 0.0 && v < 16_777_216.0 {
                Ok(v as usize)
            } else {
                Err(bad(format!("prep buffer {what} is {v}, not a count")))
            }
        };
        if buf.len() < 8 {
            return Err(bad(format!(
                "a prep buffer holds a header of 8 floats, given {}",
                buf.len()
            )));
        }
        let (width, height, n) = (
            size(buf[0], "width")?,
            size(buf[1], "height")?,
            size(buf[4], "n")?,
        );
        let want = gaussian_splat_prep_packed_len(n, width, height);
        if buf.len() != want
            || (size(buf[2], "tiles_x")?, size(buf[3], "tiles_y")?)
                != gaussian_splat_tiles(width, height)
        {
            return Err(bad(format!(
                "the header says {n} Gaussians on {width}x{height} ({want} floats, {:?} tiles); the buffer holds {} floats and says {} x {} tiles",
                gaussian_splat_tiles(width, height), buf.len(), buf[2], buf[3]
            )));
        }
        let s = gaussian_splat_prep_split(n, width, height);
        let (tx, ty) = gaussian_splat_tiles(width, height);
        let mut gaussians = Vec::with_capacity(n);
        for rec in buf[s.records].chunks_exact(GAUSSIAN_SPLAT_PREP_RECORD_FLOATS) {
            use prep_field::*;
            let f = |k: usize| rec[k] as f64;
            let mut rect = [0; 4];
            for (k, lim) in [tx, ty, tx, ty].into_iter().enumerate() {
                rect[k] = size(rec[TILE_X0 + k], "tile bound")?.min(lim);
            }
            gaussians.push(Projected {
                mean: [f(MEAN_X), f(MEAN_Y)],
                conic: [f(CONIC_A), f(CONIC_B), f(CONIC_C)],
                depth: f(DEPTH),
                radius: f(RADIUS),
                opacity: f(OPACITY),
                color: [f(COLOR), f(COLOR + 1), f(COLOR + 2)],
                rect,
            });
        }
        let order = buf[s.order]
            .iter()
            .map(|&v| {
                size(v, "order index").and_then(|i| {
                    if i < n {
                        Ok(i)
                    } else {
                        Err(bad(format!("order index {i} >= n = {n}")))
                    }
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let tile_counts = buf[s.tiles]
            .iter()
            .map(|&v| size(v, "tile count"))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Prepared {
            width,
            height,
            background: [buf[5], buf[6], buf[7]].map(|v| v as f64),
            gaussians,
            order,
            tile_counts,
        })
    }
}

/// Renders `g` (prepare, then rasterize): `height · width · 3` RGB.
pub fn render(
    params: &GaussianSplatRenderParams,
    g: &Gaussians,
) -> Result<Vec<f64>, SplatRenderError> {
    Ok(prepare(params, g)?.rasterize())
}
