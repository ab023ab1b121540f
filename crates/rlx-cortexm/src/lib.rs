//! INT8 kernels for ARM Cortex-M (ARMv7E-M), bit-exact with TFLite's /
//! CMSIS-NN's integer semantics.
//!
//! `#![no_std]` and allocation-free: every kernel writes into a slice the
//! caller owns and checks the slice lengths first ([`KernelError`]). No
//! `Backend` implementation: these are kernels a firmware calls, either one
//! by one or through [`model::run_layers`] over a layer list that
//! `rlx-quant-int8` generates as `model_weights.rs`.
//!
//! Arithmetic (`fixed`): int32 accumulators, per-channel requantization by
//! a Q0.31 multiplier and a power-of-two shift (`SaturatingRoundingDoublingHighMul`
//! then `RoundingDivideByPOT`, round half away from zero), output zero point,
//! clamp to the activation range.
//!
//! Inner products go through [`mac::dot_offset`]: pairs of 16-bit values
//! multiplied and accumulated by `SMLAD` on cores with the DSP extension
//! (`cfg(rlx_dsp)`, set by `build.rs` for `thumbv7em` or `+dsp`) and by an
//! emulation of the same instruction elsewhere, so both paths give the same
//! bits.
#![no_std]
#![deny(missing_docs)]

#[cfg(test)]
extern crate std;

pub mod activation;
pub mod conv;
pub mod dense;
mod error;
pub mod fixed;
pub mod mac;
pub mod model;
pub mod pool;
mod qparams;
pub mod softmax;

pub use activation::{argmax, relu};
pub use conv::{conv2d, depthwise_conv2d, Conv2dGeometry};
pub use dense::dense;
pub use error::KernelError;
pub use pool::{avgpool, maxpool, PoolGeometry};
pub use qparams::{ChannelQuant, QParams};
pub use softmax::{softmax, SoftmaxParams};
