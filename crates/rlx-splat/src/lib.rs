//! # rlx-splat — a reference CPU 3D Gaussian splatting renderer
//!
//! The standard forward of 3D Gaussian splatting (Kerbl et al. 2023, as
//! the 3DGS reference rasterizer computes it) and its reverse mode, in f64,
//! small and readable rather than fast:
//!
//! * [`prepare`]: per Gaussian, the view-space mean under a pinhole camera,
//!   the covariance `R(q) S Sᵀ R(q)ᵀ` projected through the Jacobian of the
//!   projection (its point clamped to `1.3 tan(fov/2)`), the 0.3 EWA
//!   low-pass, the conic, a `3σ` screen radius and the 16×16 tiles it
//!   touches; the depth order; per-tile counts.
//! * [`Prepared::rasterize`]: per pixel, the Gaussians of its tile front to
//!   back, alpha clamped to 0.99, skipped below 1/255, stopping before
//!   transmittance drops below 1e-4; the background behind.
//! * [`backward`]: gradients w.r.t. means, scales, rotations, opacities and colors.
//!
//! [`register`] installs it as the six executors of `rlx_cpu::splat`, so
//! graphs with the `splat.*` ops of `rlx_ir::ops::splat` run on the CPU
//! backend (and `grad` through `splat.render` uses [`backward`]).
//!
//! Checked against an independent jax.numpy renderer (image and JAX
//! autodiff gradients, `tools/gen_splat_fixtures.py`) and finite differences.
#![deny(missing_docs)]

mod backward;
mod error;
mod executors;
mod gaussians;
mod mat;
mod project;
mod raster;

pub use backward::backward;
pub use error::SplatRenderError;
pub use executors::register;
pub use gaussians::Gaussians;
pub use project::Projected;
pub use raster::{prepare, render, Prepared};
