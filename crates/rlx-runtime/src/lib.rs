//! # rlx-runtime — Session, CompiledGraph, devices
//!
//! The user-facing half of RLX: [`Session::new`] a [`Device`], compile a
//! graph ([`Session::compile`] / [`Session::compile_with`] with
//! [`CompileOptions`]), set params and run ([`CompiledGraph`]). Device
//! selection ([`available_devices`], [`fastest_device`], `RLX_DEVICE`,
//! fallback chains) lives in [`devices`]; measured choice in
//! [`benchmark_devices`], [`DevicePolicy`], [`DevicePickStrategy`],
//! [`DeviceRouter`] and [`FlexibleSession`]; what this build can run on in
//! [`BackendsManifest`]. Every fallible call has a `try_`
//! form returning [`RuntimeError`], whose message names the culprit; the
//! panicking forms panic with that same message.
#![deny(missing_docs)]

mod backends;
mod backends_manifest;
mod calibrate;
mod compiled;
mod config;
mod device_bench;
mod device_candidate;
mod device_policy;
mod device_router;
pub mod devices;
#[cfg(feature = "dist")]
pub mod dist;
mod dynamic;
mod error;
#[cfg(feature = "fpga")]
pub mod export;
mod flexible_session;
mod graph_devices;
pub mod hetero;
mod options;
mod params;
mod prelude;
mod session;
mod subgraph;
pub mod weights;

pub use backends_manifest::{BackendStatus, BackendsManifest};
pub use calibrate::{collect_calibration, collect_calibration_with};
pub use compiled::CompiledGraph;
pub use config::{effective_config, EffectiveConfig};
pub use device_bench::{
    benchmark_devices, benchmark_devices_with, benchmark_each, BenchOptions, DeviceBenchResult,
    Feeds,
};
pub use device_candidate::DeviceCandidate;
pub use device_policy::{devices_for_with_policy, DevicePickStrategy, DevicePolicy};
pub use device_router::DeviceRouter;
pub use devices::{
    available_devices, device_chain_from_env, device_from_env, device_report, devices_for,
    fastest_device, fastest_device_for, is_available, resolve_device, resolve_device_chain,
    run_with_fallback, run_with_policy, DeviceFallbackError,
};
pub use dynamic::{DynamicGraph, DEFAULT_PLAN_CACHE};
pub use error::{Result, RuntimeError};
#[cfg(feature = "fpga")]
pub use export::{
    export_graph, export_tinyconv_mnist, ExportOptions, ExportSession, ExportTarget,
    ExportedArtifacts,
};
pub use flexible_session::FlexibleSession;
pub use graph_devices::GraphDevices;
pub use hetero::{CpuPlacement, DeviceMap, FallbackReport, HeteroExecutable};
pub use options::CompileOptions;
pub use params::graph_param_names;
pub use rlx_compile::Precision;
pub use rlx_driver::{device_label, parse_device, parse_device_list, Device, ParseDeviceError};
pub use session::{fusion_target, Session};
pub use weights::{
    save_safetensors, serialize_safetensors, BytesWeightLoader, PieceSink, TensorMeta, WeightError,
    WeightLoader,
};
