//! The packed buffers the splat ops exchange, and the length helpers both
//! sides must call (a renderer that computes its own would silently
//! disagree with the buffers the runtime allocated).

use super::params::GaussianSplatInputs;
use std::ops::Range;

/// Side of a square screen tile, in pixels (as in the 3DGS rasterizer).
pub const GAUSSIAN_SPLAT_TILE_SIZE: usize = 16;

/// Floats at the start of the prep buffer: the raster parameters
/// `[width, height, tiles_x, tiles_y, n, bg_r, bg_g, bg_b]`, so `rasterize`
/// needs nothing but the buffer.
pub const GAUSSIAN_SPLAT_PREP_RASTER_PARAMS_FLOATS: usize = 8;

/// Floats per Gaussian in the prep buffer's record block; the field
/// offsets are the `PREP_*` constants of [`prep_field`].
pub const GAUSSIAN_SPLAT_PREP_RECORD_FLOATS: usize = 15;

/// Floats per Gaussian in the packed gradient: 3 (mean) + 3 (scale) +
/// 4 (rotation) + 1 (opacity) + 3 (color).
pub const GAUSSIAN_SPLAT_GRAD_FLOATS_PER_GAUSSIAN: usize = 14;

/// Field offsets inside one prep record. A record with `RADIUS == 0` is
/// culled (behind the near plane, degenerate, or off screen).
pub mod prep_field {
    /// Projected centre, pixel x (pixel centres are at integer coordinates).
    pub const MEAN_X: usize = 0;
    /// Projected centre, pixel y.
    pub const MEAN_Y: usize = 1;
    /// Inverse 2D covariance `[[a, b], [b, c]]`: `a`.
    pub const CONIC_A: usize = 2;
    /// Conic `b`.
    pub const CONIC_B: usize = 3;
    /// Conic `c`.
    pub const CONIC_C: usize = 4;
    /// View-space depth `z`.
    pub const DEPTH: usize = 5;
    /// Screen radius in pixels (`ceil(3 sqrt(lambda_max))`), 0 when culled.
    pub const RADIUS: usize = 6;
    /// Opacity.
    pub const OPACITY: usize = 7;
    /// Red (green, blue follow).
    pub const COLOR: usize = 8;
    /// First tile column touched.
    pub const TILE_X0: usize = 11;
    /// First tile row touched.
    pub const TILE_Y0: usize = 12;
    /// One past the last tile column touched.
    pub const TILE_X1: usize = 13;
    /// One past the last tile row touched.
    pub const TILE_Y1: usize = 14;
}

/// Tiles per row and per column of a `width × height` image.
pub fn gaussian_splat_tiles(width: usize, height: usize) -> (usize, usize) {
    (
        width.div_ceil(GAUSSIAN_SPLAT_TILE_SIZE),
        height.div_ceil(GAUSSIAN_SPLAT_TILE_SIZE),
    )
}

/// Number of 16×16 tiles covering a `width × height` image.
pub fn gaussian_splat_tile_count(width: usize, height: usize) -> usize {
    let (tx, ty) = gaussian_splat_tiles(width, height);
    tx * ty
}

/// Length (floats) of the prep buffer of `n` Gaussians on a
/// `width × height` image: header, `n` records, the depth order (`n`
/// Gaussian indices, nearest first) and one overlap count per tile.
pub fn gaussian_splat_prep_packed_len(n: usize, width: usize, height: usize) -> usize {
    GAUSSIAN_SPLAT_PREP_RASTER_PARAMS_FLOATS
        + n * (GAUSSIAN_SPLAT_PREP_RECORD_FLOATS + 1)
        + gaussian_splat_tile_count(width, height)
}

/// Where each block of a prep buffer lies.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GaussianSplatPrepSplit {
    /// Number of Gaussians.
    pub n: usize,
    /// The raster parameter header.
    pub header: Range<usize>,
    /// `n` records of [`GAUSSIAN_SPLAT_PREP_RECORD_FLOATS`].
    pub records: Range<usize>,
    /// `n` Gaussian indices, nearest first.
    pub order: Range<usize>,
    /// One overlap count per tile, row-major.
    pub tiles: Range<usize>,
}

/// The blocks of the prep buffer of `n` Gaussians on `width × height`.
pub fn gaussian_splat_prep_split(n: usize, width: usize, height: usize) -> GaussianSplatPrepSplit {
    let h = GAUSSIAN_SPLAT_PREP_RASTER_PARAMS_FLOATS;
    let r = h + n * GAUSSIAN_SPLAT_PREP_RECORD_FLOATS;
    let o = r + n;
    GaussianSplatPrepSplit {
        n,
        header: 0..h,
        records: h..r,
        order: r..o,
        tiles: o..o + gaussian_splat_tile_count(width, height),
    }
}

/// Length (floats) of the packed gradient of `n` Gaussians.
pub fn gaussian_splat_packed_grad_len(n: usize) -> usize {
    n * GAUSSIAN_SPLAT_GRAD_FLOATS_PER_GAUSSIAN
}

/// The packed gradient's blocks, in order: means `3n`, scales `3n`,
/// rotations `4n`, opacities `n`, colors `3n`.
pub(crate) fn grad_blocks(n: usize) -> GaussianSplatInputs<Range<usize>> {
    let ends = [3 * n, 6 * n, 10 * n, 11 * n, 14 * n];
    GaussianSplatInputs {
        means: 0..ends[0],
        scales: ends[0]..ends[1],
        rotations: ends[1]..ends[2],
        opacities: ends[2]..ends[3],
        colors: ends[3]..ends[4],
    }
}

/// Splits a packed gradient into the five per-input gradients; `None`
/// when its length is not a multiple of
/// [`GAUSSIAN_SPLAT_GRAD_FLOATS_PER_GAUSSIAN`].
pub fn unpack_gaussian_splat_packed_grads(packed: &[f32]) -> Option<GaussianSplatInputs<Vec<f32>>> {
    if !packed
        .len()
        .is_multiple_of(GAUSSIAN_SPLAT_GRAD_FLOATS_PER_GAUSSIAN)
    {
        return None;
    }
    let b = grad_blocks(packed.len() / GAUSSIAN_SPLAT_GRAD_FLOATS_PER_GAUSSIAN);
    Some(b.map(|r| packed[r].to_vec()))
}
