//! # rlx-driver — devices and backends
//!
//! The [`Device`] enum and its text form, the [`Backend`] / [`Executable`]
//! traits every backend implements, and the process-wide backend
//! [`registry`]. A backend compiles an [`rlx_compile::LirModule`] into an
//! executable and runs it over [`rlx_ir::HostTensor`]s.
#![deny(missing_docs)]

mod backend;
mod device;
pub mod registry;

pub use backend::{check_output_tensors, Backend, BackendError, Executable, SharedParam};
pub use device::{device_label, parse_device, parse_device_list, Device, ParseDeviceError};
