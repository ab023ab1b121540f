//! # rlx-optim — training-step optimizers
//!
//! One [`Optimizer`] instance serves a whole model: [`Optimizer::step`]
//! updates one named parameter buffer (`f32` or `f64`, row-major, with its
//! shape) in place from its gradient and keeps that parameter's state
//! (moments, preconditioners) under its name; [`Optimizer::end_iteration`]
//! closes a training iteration and advances an attached [`LrSchedule`];
//! [`Optimizer::save_state`] / [`Optimizer::load_state`] snapshot and restore
//! all of it ([`OptimState`], JSON with exact floats).
//!
//! | optimizer | reference it reproduces |
//! |---|---|
//! | [`Sgd`] (momentum, dampening, Nesterov, weight decay) | `torch.optim.SGD` |
//! | [`Adam`], [`AdamW`] (amsgrad, maximize) | `torch.optim.Adam` / `AdamW` |
//! | [`NAdamW`] (decoupled or L2 decay, momentum decay) | `torch.optim.NAdam` |
//! | [`RAdam`] | `torch.optim.RAdam` |
//! | [`Adagrad`] (lr decay, initial accumulator, maximize) | `torch.optim.Adagrad` |
//! | [`RmsProp`] (centered, momentum) | `torch.optim.RMSprop` |
//! | [`Adamax`] | `torch.optim.Adamax` |
//! | [`Adadelta`] | `torch.optim.Adadelta` |
//! | [`Asgd`] (with its running average) | `torch.optim.ASGD` |
//! | [`Rprop`] (etas, step-size bounds) | `torch.optim.Rprop` |
//! | [`Lbfgs`] (history size, strong-Wolfe line search; closure API, not an [`Optimizer`]) | `torch.optim.LBFGS` |
//! | [`SparseAdam`] (moments and parameter updated only where the gradient is present) | `torch.optim.SparseAdam` |
//! | [`Adafactor`] (factored for 2+ dimensions) | `torch.optim.Adafactor` |
//! | [`QHAdamW`] | facebookresearch/qhoptim `QHAdamW` |
//! | [`Lamb`] | cybertronai/pytorch-lamb |
//! | [`Lion`] | google/automl `lion_pytorch.py` |
//! | [`Soap`] | nikhilvyas/SOAP `soap.py` |
//! | [`KronPsgd`] | evanatyourservice/kron_torch `kron.py` (PSGD Kron) |
//! | [`Muon`] (Newton–Schulz; Adam for non-matrices) | KellerJordan/Muon `muon.py` |
//! | [`Sophia`] (Sophia-G) | Liuhong99/Sophia `sophia.py` |
//! | [`Mars`] (MARS-AdamW / -Lion) | AGI-Arena/MARS `mars.py` |
//! | [`Stiefel`] (Riemannian SGD / Adam, QR retraction) | geoopt `RiemannianSGD` / `RiemannianAdam` on `EuclideanStiefel` |
//!
//! Updates are computed in the buffer's precision the way the reference
//! does (for torch, op by op, including its fused multiply-adds), so `f32`
//! trajectories follow torch's to ~1e-7 relative and `f64` ones to an ulp.
//! The tests compare 20-step trajectories (50 for the torch optimizers
//! from Adagrad down, with zero and sparse-ish gradients) with fixtures
//! written by `tools/gen_optim_fixtures.py` (torch for the torch optimizers, numpy
//! re-implementations of the authors' code for the others).
//!
//! Where this crate departs from a reference, on purpose:
//! - [`Muon`] runs Newton–Schulz in the parameter's precision (the reference
//!   casts to bfloat16), and [`Soap`] computes its eigenbases in the
//!   parameter's precision (the reference in float32);
//! - [`KronPsgd`] draws its randomness from a documented counter-based
//!   SplitMix64 stream (the reference uses Python's `random` and
//!   `torch.randn`) and solves its triangular systems in the parameter's
//!   precision (the reference in float32);
//! - [`Lamb`] uses a trust ratio of 1 where a norm is zero (the reference
//!   divides by zero);
//! - [`NAdamW`] keeps torch's quirk of a float32 running product of the
//!   momentum factors, also for `f64` parameters, and [`Asgd`] its quirk of
//!   float32 `eta` and `mu`.
//!
//! Also here: learning-rate schedules ([`LrSchedule`]: constant, linear,
//! cosine, warm-up + cosine, step, multi-step, exponential, cosine with warm
//! restarts, one-cycle; [`ReduceLrOnPlateau`], driven by a metric) and
//! global-norm clipping
//! ([`l2_norm`], [`global_grad_clip_scale`], [`clip_grad_norm`], as
//! `torch.nn.utils.clip_grad_norm_`). Bad input (a gradient of the wrong
//! length, a name reused with another shape, a hyperparameter out of range,
//! a malformed saved state) is an [`OptimError`] and changes nothing.
//!
//! ```
//! use rlx_optim::{AdamW, AdamConfig, LrSchedule, Optimizer, Sgd, SgdConfig};
//!
//! // torch.optim.SGD([p], lr=0.1, momentum=0.9): two steps with gradient 0.5.
//! let mut sgd = Sgd::new(SgdConfig { lr: 0.1, momentum: 0.9, ..Default::default() })?;
//! let mut p = vec![1.0f64];
//! sgd.step("p", &[1], &mut p, &[0.5])?; // buf = 0.5;            p = 1 - 0.05
//! sgd.step("p", &[1], &mut p, &[0.5])?; // buf = 0.9*0.5 + 0.5;  p = 0.95 - 0.095
//! assert!((p[0] - 0.855).abs() < 1e-15);
//!
//! // AdamW with a cosine schedule on a model with two parameters: minimise
//! // sum((w - 3)^2) + sum((b + 1)^2).
//! let mut opt = AdamW::new(AdamConfig { lr: 0.1, weight_decay: 0.0, ..AdamConfig::adamw() })?;
//! opt.set_schedule(LrSchedule::Cosine { t_max: 300, eta_min: 0.001 });
//! let (mut w, mut b) = (vec![0.0f32; 6], vec![0.0f32; 2]);
//! for _ in 0..300 {
//!     let gw: Vec<f32> = w.iter().map(|x| 2.0 * (x - 3.0)).collect();
//!     let gb: Vec<f32> = b.iter().map(|x| 2.0 * (x + 1.0)).collect();
//!     opt.step("w", &[2, 3], &mut w, &gw)?;
//!     opt.step("b", &[2], &mut b, &gb)?;
//!     opt.end_iteration();
//! }
//! assert!(w.iter().all(|x| (x - 3.0).abs() < 1e-2) && b.iter().all(|x| (x + 1.0).abs() < 1e-2));
//!
//! // Save, and resume in a fresh optimizer.
//! let saved = opt.save_state().to_json();
//! let mut resumed = AdamW::new(AdamConfig { lr: 0.1, weight_decay: 0.0, ..AdamConfig::adamw() })?;
//! resumed.load_state(&rlx_optim::OptimState::from_json(&saved)?)?;
//! assert_eq!(resumed.iteration(), 300);
//! # Ok::<(), rlx_optim::OptimError>(())
//! ```
#![deny(missing_docs)]

mod clip;
mod error;
mod float;
mod linalg;
mod optimizer;
mod optimizers;
mod plateau;
mod plateau_state;
mod rand;
mod schedule;
mod schedule_check;
mod state;

pub use clip::{clip_grad_norm, global_grad_clip_scale, l2_norm};
pub use error::{OptimError, Result};
pub use float::Float;
pub use optimizer::Optimizer;
pub use optimizers::adadelta::{Adadelta, AdadeltaConfig};
pub use optimizers::adafactor::{Adafactor, AdafactorConfig};
pub use optimizers::adagrad::{Adagrad, AdagradConfig};
pub use optimizers::adam::{Adam, AdamConfig, AdamW};
pub use optimizers::adamax::{Adamax, AdamaxConfig};
pub use optimizers::asgd::{Asgd, AsgdConfig};
pub use optimizers::kron::{KronConfig, KronPsgd, MemorySaveMode, PrecondUpdate};
pub use optimizers::lamb::{Lamb, LambConfig};
pub use optimizers::lbfgs::{Lbfgs, LbfgsConfig, LineSearch};
pub use optimizers::lion::{Lion, LionConfig};
pub use optimizers::mars::{Mars, MarsConfig, MarsType};
pub use optimizers::muon::{Muon, MuonConfig};
pub use optimizers::nadam::{NAdamConfig, NAdamW};
pub use optimizers::qhadam::{QHAdamConfig, QHAdamW};
pub use optimizers::radam::{RAdam, RAdamConfig};
pub use optimizers::rmsprop::{RmsProp, RmsPropConfig};
pub use optimizers::rprop::{Rprop, RpropConfig};
pub use optimizers::sgd::{Sgd, SgdConfig};
pub use optimizers::soap::{Soap, SoapConfig};
pub use optimizers::sophia::{Sophia, SophiaConfig};
pub use optimizers::sparse_adam::{SparseAdam, SparseAdamConfig};
pub use optimizers::stiefel::{Stiefel, StiefelConfig, StiefelMethod};
pub use plateau::{PlateauConfig, PlateauMode, ReduceLrOnPlateau, ThresholdMode};
pub use schedule::{Anneal, LrSchedule};
pub use state::{OptimState, ParamState, SavedParam};
