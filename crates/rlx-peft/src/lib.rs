//! # rlx-peft — parameter-efficient adapters, as HuggingFace PEFT defines them
//!
//! LoRA and rsLoRA, DoRA, IA3, AdaLoRA (with its rank allocator) and OFT,
//! each in two forms that compute the same thing:
//!
//! - **host arithmetic**: [`LoraAdapter`], [`DoraAdapter`], [`Ia3Adapter`],
//!   [`AdaLoraAdapter`], [`OftAdapter`] implement [`Adapter`] (`forward`,
//!   `merge`, `unmerge`) over a base [`Linear`], plus `delta_weight` /
//!   `rotation`; [`RankAllocator`] is AdaLoRA's budget schedule and masking;
//! - **graph builders** ([`graph`]): wrap a linear layer of an
//!   [`rlx_ir::Graph`] with the adapter, its tensors as graph params, for
//!   training with `rlx_autodiff` and running on any backend.
//!
//! [`AdapterSet::load`] reads what PEFT's `save_pretrained` wrote
//! (`adapter_config.json` + `adapter_model.safetensors`).
//!
//! Conventions: f32 host tensors ([`rlx_ir::HostTensor`]), row-major,
//! PyTorch's `Linear` layout (`weight [out, in]`, `y = x W^T + b`); inputs
//! `x [..., in]`. Every definition follows PEFT 0.21 (dropout off, as in
//! eval mode) and is checked against PEFT's outputs, gradients and merged
//! weights in `tests/`.
//!
//! ```
//! use rlx_ir::HostTensor;
//! use rlx_peft::{Adapter, Linear, LoraAdapter, LoraConfig};
//!
//! let base = Linear::new(HostTensor::from_vec(vec![1.0f32, 0.0, 0.0, 1.0], &[2, 2])?, None)?;
//! let cfg = LoraConfig { r: 1, lora_alpha: 2.0, use_rslora: false }; // scaling 2
//! let a = HostTensor::from_vec(vec![1.0f32, 1.0], &[1, 2])?;
//! let b = HostTensor::from_vec(vec![0.5f32, 0.0], &[2, 1])?;
//! let lora = LoraAdapter::new(cfg, &a, &b)?;
//! let x = HostTensor::from_vec(vec![1.0f32, 2.0], &[1, 2])?;
//! // y = x + 2 * (x·[1, 1]) * [0.5, 0]
//! assert_eq!(lora.forward(&x, &base)?.to_vec::<f32>()?, vec![4.0, 2.0]);
//! let mut merged = base.clone();
//! lora.merge(&mut merged)?;
//! assert_eq!(merged.forward(&x)?.to_vec::<f32>()?, vec![4.0, 2.0]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![deny(missing_docs)]

mod adalora;
pub mod allocator;
mod config;
mod error;
pub mod graph;
mod ia3;
mod linear;
mod load;
mod lora;
mod mat;
mod oft;
mod save;

pub use adalora::{AdaLoraAdapter, AdaLoraConfig, RANKNUM_EPS};
pub use allocator::{AllocatorConfig, RankAllocator, RankPattern, TripletMut};
pub use config::{AdapterConfig, AdapterKind};
pub use error::{PeftError, Result};
pub use ia3::Ia3Adapter;
pub use linear::{Adapter, Linear, Merged};
pub use load::{AdapterSet, AnyAdapter, KEY_PREFIX};
pub use lora::{DoraAdapter, LoraAdapter, LoraConfig};
pub use oft::{OftAdapter, OftConfig};
