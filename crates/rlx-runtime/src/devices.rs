//! Device selection: what is available, which is fastest, environment
//! overrides (`RLX_DEVICE`, `RLX_DEVICE_CHAIN`) and fallback chains.
//!
//! Only backends compiled into this build and registered count as
//! available; asking for any other device is an error that says why.

use crate::{CompileOptions, CompiledGraph, DevicePolicy, Result, RuntimeError, Session};
use rlx_driver::{
    device_label, parse_device, parse_device_list, registry, Device, ParseDeviceError,
};
use rlx_ir::env::vars;
use rlx_ir::Graph;
use std::sync::Once;
use thiserror::Error;

/// Registers the backends compiled into this build (once per process).
pub fn ensure_builtin_backends() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        #[cfg(feature = "cpu")]
        registry::register_backend(std::sync::Arc::new(rlx_cpu::CpuBackend));
        // Registered only when an adapter is found: the manifest then says why not.
        #[cfg(feature = "gpu")]
        if rlx_wgpu::is_available().is_ok() {
            registry::register_backend(std::sync::Arc::new(rlx_wgpu::WgpuBackend));
        }
        // Registered only when `rlx_cuda::probe` finds a device.
        #[cfg(feature = "cuda")]
        crate::backends::register_cuda();
    });
}

/// Why `d` cannot be used in this build / on this machine.
pub fn unavailable_reason(d: Device) -> String {
    if let Some(why) = crate::backends::accelerator_reason(d) {
        return why;
    }
    match d {
        Device::Cpu => "this build has no CPU backend (enable the `cpu` feature)".into(),
        #[cfg(feature = "gpu")]
        Device::Gpu => match rlx_wgpu::is_available() {
            Ok(()) => "the wgpu backend is built in but not registered".into(),
            Err(why) => why,
        },
        #[cfg(not(feature = "gpu"))]
        Device::Gpu => "this build has no wgpu backend (enable the `gpu` feature of rlx / rlx-runtime)".into(),
        _ => format!(
            "no {} backend is registered in this build (RLX {} has no `{}` backend yet; register one with rlx_driver::registry::register_backend)",
            device_label(d),
            env!("CARGO_PKG_VERSION"),
            d.feature()
        ),
    }
}

/// Devices with a registered backend, fastest first.
pub fn available_devices() -> Vec<Device> {
    ensure_builtin_backends();
    let mut d = registry::registered_devices();
    d.sort_by_key(|&x| std::cmp::Reverse(speed_rank(x)));
    d
}

/// True when `d` has a registered backend.
pub fn is_available(d: Device) -> bool {
    ensure_builtin_backends();
    registry::backend_for(d).is_some()
}

/// Static cost-model rank: accelerators before the CPU.
fn speed_rank(d: Device) -> u32 {
    match d {
        Device::Cuda(_) | Device::Rocm(_) | Device::Tpu(_) => 4,
        Device::Mlx | Device::Metal => 3,
        Device::Gpu => 2,
        Device::Cpu => 1,
    }
}

/// The fastest available device by the static cost model (the CPU if nothing else).
pub fn fastest_device() -> Device {
    available_devices()
        .into_iter()
        .next()
        .unwrap_or(Device::Cpu)
}

/// Work (multiply-adds) a graph does, roughly: what the cost model weighs.
pub fn estimated_flops(g: &Graph) -> f64 {
    g.nodes()
        .iter()
        .map(|n| n.shape.numel().unwrap_or(0) as f64)
        .sum()
}

/// The fastest available device for `g`: an accelerator only pays off
/// above a transfer / launch overhead, so small graphs stay on the CPU.
pub fn fastest_device_for(g: &Graph) -> Device {
    const ACCELERATOR_MIN_WORK: f64 = 1e6;
    let best = fastest_device();
    if best != Device::Cpu && estimated_flops(g) < ACCELERATOR_MIN_WORK && is_available(Device::Cpu)
    {
        Device::Cpu
    } else {
        best
    }
}

/// Available devices that can compile `g`, fastest first.
pub fn devices_for(g: &Graph) -> Vec<Device> {
    available_devices()
        .into_iter()
        .filter(|&d| Session::new(d).try_compile(g.clone()).is_ok())
        .collect()
}

/// `RLX_DEVICE`, parsed (`None` when unset).
pub fn device_from_env() -> std::result::Result<Option<Device>, ParseDeviceError> {
    // A string variable always reads (`get` fails only in parsing).
    let s = vars::DEVICE.get().ok().flatten();
    s.map(|s| parse_device(&s)).transpose()
}

/// `RLX_DEVICE_CHAIN`, parsed (empty when unset).
pub fn device_chain_from_env() -> std::result::Result<Vec<Device>, ParseDeviceError> {
    let s = vars::DEVICE_CHAIN.get().ok().flatten();
    s.map_or(Ok(Vec::new()), |s| parse_device_list(&s))
}

fn parse_err(e: ParseDeviceError) -> RuntimeError {
    RuntimeError::DeviceUnavailable {
        device: Device::Cpu,
        reason: e.to_string(),
    }
}

/// The device to use: `RLX_DEVICE` when set (an error if it is unparsable or
/// unavailable: an explicit request is never silently replaced), else the fastest.
pub fn resolve_device() -> Result<Device> {
    match device_from_env().map_err(parse_err)? {
        Some(d) if is_available(d) => Ok(d),
        Some(d) => Err(RuntimeError::DeviceUnavailable {
            device: d,
            reason: format!("requested by RLX_DEVICE, but {}", unavailable_reason(d)),
        }),
        None => Ok(fastest_device()),
    }
}

/// The first available device of `RLX_DEVICE_CHAIN`, else [`resolve_device`].
/// A chain with no available device is an error listing why each failed.
pub fn resolve_device_chain() -> Result<Device> {
    let chain = device_chain_from_env().map_err(parse_err)?;
    if chain.is_empty() {
        return resolve_device();
    }
    chain
        .iter()
        .copied()
        .find(|&d| is_available(d))
        .ok_or_else(|| RuntimeError::DeviceUnavailable {
            device: chain[0],
            reason: format!(
                "no device of RLX_DEVICE_CHAIN is available: {}",
                chain
                    .iter()
                    .map(|&d| format!("{d}: {}", unavailable_reason(d)))
                    .collect::<Vec<_>>()
                    .join("; ")
            ),
        })
}

/// One line per device kind: available, or why not.
pub fn device_report() -> String {
    ensure_builtin_backends();
    let mut s = String::from("RLX devices:\n");
    for d in Device::KINDS {
        let line = if is_available(d) {
            format!("  {:<10} available ({})", d.to_string(), device_label(d))
        } else {
            format!(
                "  {:<10} unavailable: {}",
                d.to_string(),
                unavailable_reason(d)
            )
        };
        s.push_str(&line);
        s.push('\n');
    }
    s.push_str(&format!("  fastest: {}\n", fastest_device()));
    s
}

/// Every device of a fallback chain failed.
#[derive(Debug, Clone, PartialEq, Error)]
#[error("every device failed: {}", attempts.iter().map(|(d, e)| format!("{d}: {e}")).collect::<Vec<_>>().join("; "))]
pub struct DeviceFallbackError {
    /// Each device tried, with its error.
    pub attempts: Vec<(Device, String)>,
}

/// Compiles and runs `g` on the first device of `chain` that succeeds.
/// Returns the device used and the outputs. [`run_with_policy`] with the
/// default policy (any device, fallback on).
pub fn run_with_fallback(
    g: &Graph,
    chain: &[Device],
    params: &[(&str, &[f32])],
    inputs: &[(&str, &[f32])],
) -> std::result::Result<(Device, Vec<Vec<f32>>), DeviceFallbackError> {
    run_with_policy(g, chain, &DevicePolicy::default(), params, inputs)
}

/// Compiles and runs `g` on the devices of `chain` in order, skipping those
/// `policy` refuses, at the policy's precision, until one succeeds; with
/// the policy's fallback off, the first permitted device's failure is
/// final. The error lists every device of the chain considered and why it
/// was not used.
///
/// ```
/// use rlx_runtime::{run_with_policy, Device, DevicePolicy};
/// use rlx_ir::{DType, Graph, GraphExt, Shape};
/// let mut g = Graph::new("neg");
/// let x = g.input("x", Shape::new(&[2], DType::F32));
/// let y = g.neg(x);
/// g.set_outputs(vec![y]);
/// let chain = [Device::Cuda(0), Device::Cpu];
/// let (d, out) = run_with_policy(&g, &chain, &DevicePolicy::default(), &[], &[("x", &[1.0, -2.0])]).unwrap();
/// assert_eq!((d, out), (Device::Cpu, vec![vec![-1.0, 2.0]]));
/// let e = run_with_policy(&g, &chain, &DevicePolicy::default().fallback(false), &[], &[("x", &[1.0, -2.0])]);
/// assert_eq!(e.unwrap_err().attempts.len(), 1);
/// ```
pub fn run_with_policy(
    g: &Graph,
    chain: &[Device],
    policy: &DevicePolicy,
    params: &[(&str, &[f32])],
    inputs: &[(&str, &[f32])],
) -> std::result::Result<(Device, Vec<Vec<f32>>), DeviceFallbackError> {
    let opts = policy.options(&CompileOptions::default());
    let mut attempts = Vec::new();
    for &d in chain {
        if let Err(why) = policy.check(d) {
            attempts.push((d, why));
            continue;
        }
        let attempt = || -> Result<Vec<Vec<f32>>> {
            let mut c: CompiledGraph = Session::new(d).try_compile_with(g.clone(), &opts)?;
            for (name, v) in params {
                c.try_set_param(name, v)?;
            }
            c.try_run(inputs)
        };
        match attempt() {
            Ok(out) => return Ok((d, out)),
            Err(e) => attempts.push((d, e.to_string())),
        }
        if !policy.fallback {
            break;
        }
    }
    if attempts.is_empty() {
        attempts.push((Device::Cpu, "the device chain is empty".into()));
    }
    Err(DeviceFallbackError { attempts })
}
