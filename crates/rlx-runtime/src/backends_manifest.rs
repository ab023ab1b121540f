//! [`BackendsManifest`]: for every device kind, whether this build has its
//! backend, whether it is usable now, and why not.

use crate::devices::{self, ensure_builtin_backends};
use rlx_driver::{device_label, registry, Device};
use std::fmt;

/// One device kind's entry of a [`BackendsManifest`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BackendStatus {
    /// The device (ordinal 0 where the kind has ordinals).
    pub device: Device,
    /// Human label (`CPU`, `CUDA:0`, ...).
    pub label: String,
    /// The `rlx` cargo feature that builds its backend.
    pub feature: &'static str,
    /// This build has a backend for it: built in by a feature, or
    /// registered by another crate at run time.
    pub compiled_in: bool,
    /// A backend is registered and compiles graphs now.
    pub available: bool,
    /// Why it is not available (`None` when it is).
    pub reason: Option<String>,
}

/// What this build and machine can run on: one [`BackendStatus`] per
/// device kind ([`Device::KINDS`]), the available devices fastest first,
/// and the host's thread count. Printed for humans by `Display`, for
/// scripts by [`BackendsManifest::to_json`] (`rlx info --json`).
///
/// ```
/// use rlx_runtime::{BackendsManifest, Device};
/// let m = BackendsManifest::current();
/// assert!(m.status(Device::Cpu).unwrap().available);
/// let cuda = m.status(Device::Cuda(0)).unwrap();
/// assert!(!cuda.available && cuda.reason.as_deref().unwrap().starts_with("compiled out"));
/// assert_eq!(m.to_json()["backends"][0]["device"], "cpu");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BackendsManifest {
    /// The RLX version.
    pub version: &'static str,
    /// One entry per device kind, in [`Device::KINDS`] order.
    pub backends: Vec<BackendStatus>,
    /// Available devices, fastest first by the static cost model.
    pub available: Vec<Device>,
    /// Threads the CPU backend uses by default (`RLX_NUM_THREADS` or the
    /// cores); `None` without a CPU backend.
    pub cpu_threads: Option<usize>,
}

/// True when this build carries `device`'s backend through a feature of its own.
fn built_in(device: Device) -> bool {
    match device {
        Device::Cpu => cfg!(feature = "cpu"),
        Device::Gpu => cfg!(feature = "gpu"),
        d => crate::backends::feature_on(d),
    }
}

impl BackendsManifest {
    /// The manifest of this process, now.
    pub fn current() -> BackendsManifest {
        ensure_builtin_backends();
        let backends = Device::KINDS
            .iter()
            .map(|&device| {
                let registered = registry::backend_for(device).is_some();
                let compiled_in = registered || built_in(device);
                let reason = match (registered, compiled_in) {
                    (true, _) => None,
                    (false, _) if crate::backends::accelerator_reason(device).is_some() => {
                        crate::backends::accelerator_reason(device)
                    }
                    (false, false) => Some(format!(
                        "compiled out: {}",
                        devices::unavailable_reason(device)
                    )),
                    (false, true) => Some(format!(
                        "driver missing: the {} backend is built in but did not register (no usable device found)",
                        device.kind_name()
                    )),
                };
                BackendStatus {
                    device,
                    label: device_label(device),
                    feature: device.feature(),
                    compiled_in,
                    available: registered,
                    reason,
                }
            })
            .collect();
        BackendsManifest {
            version: env!("CARGO_PKG_VERSION"),
            backends,
            available: devices::available_devices(),
            cpu_threads: cpu_threads(),
        }
    }

    /// The entry for `device`'s kind.
    pub fn status(&self, device: Device) -> Option<&BackendStatus> {
        self.backends
            .iter()
            .find(|b| b.device.kind_name() == device.kind_name())
    }

    /// The manifest as JSON: `{"version", "cpu_threads", "available":
    /// ["cpu"], "backends": [{"device", "label", "feature", "compiled_in",
    /// "available", "reason"}]}` (devices in their text form).
    pub fn to_json(&self) -> serde_json::Value {
        let backends: Vec<serde_json::Value> = self
            .backends
            .iter()
            .map(|b| {
                serde_json::json!({
                    "device": b.device.to_string(),
                    "label": b.label,
                    "feature": b.feature,
                    "compiled_in": b.compiled_in,
                    "available": b.available,
                    "reason": b.reason,
                })
            })
            .collect();
        serde_json::json!({
            "version": self.version,
            "cpu_threads": self.cpu_threads,
            "available": self.available.iter().map(Device::to_string).collect::<Vec<_>>(),
            "backends": backends,
        })
    }
}

#[cfg(feature = "cpu")]
fn cpu_threads() -> Option<usize> {
    Some(rlx_cpu::num_threads())
}

#[cfg(not(feature = "cpu"))]
fn cpu_threads() -> Option<usize> {
    None
}

impl fmt::Display for BackendsManifest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "RLX {} backends:", self.version)?;
        for b in &self.backends {
            let built = if b.compiled_in { "built" } else { "absent" };
            match &b.reason {
                None => writeln!(
                    f,
                    "  {:<8} {built:<6} available ({})",
                    b.device.kind_name(),
                    b.label
                )?,
                Some(why) => writeln!(
                    f,
                    "  {:<8} {built:<6} unavailable: {why}",
                    b.device.kind_name()
                )?,
            }
        }
        let avail: Vec<String> = self.available.iter().map(Device::to_string).collect();
        write!(f, "  available (fastest first): {}", avail.join(", "))?;
        if let Some(n) = self.cpu_threads {
            write!(f, "\n  cpu threads: {n}")?;
        }
        Ok(())
    }
}
