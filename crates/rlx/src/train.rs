//! A training step over compiled graphs: forward + [`grad_with_loss`](crate::autodiff::grad_with_loss) +
//! optimizer update, with gradient clipping and the optimizer's schedule.
//!
//! [`TrainStep::new`] differentiates a loss graph with respect to the
//! params you name (the others stay frozen), compiles the result once, and
//! keeps every param's values. [`TrainStep::step`] runs forward and
//! backward on a batch, clips the gradients by their global norm if asked,
//! lets the optimizer update the trainable params in place, uploads them,
//! and ends the optimizer's iteration (which advances its schedule).
//!
//! The step lives in `rlx-tensor` ([`crate::tensor::train_step`] builds one
//! from a loss closure over `Tensor`s); this module re-exports it.
//!
//! ```
//! use rlx::prelude::*;
//! use rlx::optim::{Sgd, SgdConfig};
//! use rlx::train::TrainStep;
//!
//! // loss = sum((x * w - 1)^2): w -> 1 / x.
//! let mut g = Graph::new("fit");
//! let x = g.input("x", Shape::new(&[2], DType::F32));
//! let w = g.param("w", Shape::new(&[2], DType::F32));
//! let r = g.mul(x, w);
//! let r = g.sub(r, 1.0);
//! let r2 = g.mul(r, r);
//! let loss = g.sum(r2, &[0], false);
//! g.set_outputs(vec![loss]);
//!
//! let sgd = Sgd::new(SgdConfig { lr: 0.02, ..Default::default() })?;
//! let mut t = TrainStep::new(&g, &["w"], sgd)?;
//! t.set_param("w", &[0.0, 0.0])?;
//! for _ in 0..100 {
//!     t.step(&[("x", &[2.0, 4.0])])?;
//! }
//! let w = t.param("w").unwrap();
//! assert!((w[0] - 0.5).abs() < 1e-4 && (w[1] - 0.25).abs() < 1e-4);
//! # Ok::<(), anyhow::Error>(())
//! ```

pub mod digits;

pub use rlx_tensor::{train_step, train_step_with, StepOutput, TrainStep};
