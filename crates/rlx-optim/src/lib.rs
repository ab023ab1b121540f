//! # rlx-optim — training-step optimizers
//!
//! (crate docs: see below)
#![warn(missing_docs)]

mod clip;
mod error;
mod float;
mod linalg;
mod optimizer;
mod optimizers;
mod rand;
mod schedule;
mod state;

pub use clip::{clip_grad_norm, global_grad_clip_scale, l2_norm};
pub use error::{OptimError, Result};
pub use float::Float;
pub use optimizer::Optimizer;
pub use optimizers::adafactor::{Adafactor, AdafactorConfig};
pub use optimizers::adam::{Adam, AdamConfig, AdamW};
pub use optimizers::kron::{KronConfig, KronPsgd, MemorySaveMode, PrecondUpdate};
pub use optimizers::lamb::{Lamb, LambConfig};
pub use optimizers::lion::{Lion, LionConfig};
pub use optimizers::mars::{Mars, MarsConfig, MarsType};
pub use optimizers::muon::{Muon, MuonConfig};
pub use optimizers::nadam::{NAdamConfig, NAdamW};
pub use optimizers::qhadam::{QHAdamConfig, QHAdamW};
pub use optimizers::radam::{RAdam, RAdamConfig};
pub use optimizers::sgd::{Sgd, SgdConfig};
pub use optimizers::soap::{Soap, SoapConfig};
pub use optimizers::sophia::{Sophia, SophiaConfig};
pub use optimizers::stiefel::{Stiefel, StiefelConfig, StiefelMethod};
pub use schedule::LrSchedule;
pub use state::{OptimState, ParamState, SavedParam};
