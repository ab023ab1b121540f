//! # rlx-geo — exact 2D Delaunay triangulation and discrete Voronoi grids
//!
//! * [`delaunay`] / [`delaunay_i64`]: the Delaunay triangulation of f64 or
//!   integer points with exact predicates; degenerate input (duplicates,
//!   collinear, cocircular) handled deterministically; [`Triangulation::padded`]
//!   is the `geo.delaunay` op's `[2n, 3]` I32 layout (rows of `-1` after the
//!   last triangle).
//! * [`voronoi_grid`]: the nearest site of every pixel of a grid, exact or
//!   by jump flooding ([`VoronoiMode`]).
//!
//! [`ops`] registers both as custom ops (`geo.delaunay`,
//! `geo.voronoi_grid`) with CPU kernels, for use inside graphs.
//!
//! Checked against `scipy.spatial.Delaunay` (triangles as sets on random
//! points), an exact empty-circumcircle test on degenerate sets, and a numpy
//! brute-force nearest-site grid (`tools/gen_geo_fixtures.py`).
#![deny(missing_docs)]

mod delaunay;
mod error;
pub mod ops;
mod voronoi;

pub use delaunay::{delaunay, delaunay_i64, Triangulation};
pub use error::{GeoError, Result};
pub use voronoi::{voronoi_grid, VoronoiMode};
