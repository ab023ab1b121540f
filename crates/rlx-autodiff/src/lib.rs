//! # rlx-autodiff — graph transforms
//!
//! JAX-style transforms as graph -> graph functions on MIR:
//! [`grad_with_loss`] / [`grad`] (reverse mode), [`jvp`] (forward mode),
//! [`hvp`] (forward over reverse), [`nth_order_grad`], and [`vmap`].
//! Each op family's derivative rules live in one file under `rules/`.
//! A transform never panics on a well-formed graph: an unsupported case is
//! an [`AutodiffError`] naming the node.
#![deny(missing_docs)]

mod emit;
mod error;
mod forward;
mod higher;
mod prepare;
mod reverse;
pub mod rules;
mod subgraph;
mod vmap;

pub use error::{AutodiffError, Result};
pub use forward::{hvp, jvp, TANGENT_PREFIX};
pub use higher::{nth_order_grad, HigherOrderOptions};
pub use prepare::prepare_graph_for_ad;
pub use reverse::{grad, grad_with_loss, grad_with_loss_opts, GradWithLossOptions, D_OUTPUT};
pub use vmap::{vmap, vmap_axes};
