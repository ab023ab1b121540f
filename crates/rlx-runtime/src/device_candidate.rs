//! [`DeviceCandidate`]: a device plus how it is configured (for the CPU,
//! its thread count), the unit the policy, benchmark and router pick among.

use crate::{devices, CompileOptions, CompiledGraph, Result, Session};
use rlx_driver::Device;
use rlx_ir::Graph;
use std::fmt;

/// One device a graph can run on: a [`Device`] and, for a backend with
/// host threads, how many it uses. The CPU at one thread and at every core
/// are two candidates, measured and routed apart.
///
/// ```
/// use rlx_runtime::{Device, DeviceCandidate};
/// let one = DeviceCandidate::cpu_threads(1);
/// assert_eq!(one.to_string(), "cpu(threads=1)");
/// assert_eq!(DeviceCandidate::new(Device::Cpu).to_string(), "cpu");
/// assert!(DeviceCandidate::available().contains(&DeviceCandidate::new(Device::Cpu)));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DeviceCandidate {
    /// The device.
    pub device: Device,
    /// Host threads its kernels use (`None`: the backend's default).
    pub threads: Option<usize>,
}

impl DeviceCandidate {
    /// `device` with its default configuration.
    pub fn new(device: Device) -> DeviceCandidate {
        DeviceCandidate {
            device,
            threads: None,
        }
    }

    /// The CPU limited to `threads` threads.
    pub fn cpu_threads(threads: usize) -> DeviceCandidate {
        DeviceCandidate {
            device: Device::Cpu,
            threads: Some(threads),
        }
    }

    /// Every available device with its default configuration, fastest
    /// first by the static cost model, and the CPU at one thread too when
    /// the machine has more than one core.
    pub fn available() -> Vec<DeviceCandidate> {
        let mut out: Vec<DeviceCandidate> = devices::available_devices()
            .into_iter()
            .map(DeviceCandidate::new)
            .collect();
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        if cores > 1 && devices::is_available(Device::Cpu) {
            out.push(DeviceCandidate::cpu_threads(1));
        }
        out
    }

    /// `base` with this candidate's thread count.
    pub fn options(&self, base: &CompileOptions) -> CompileOptions {
        base.clone().threads(self.threads)
    }

    /// Compiles `graph` for this candidate with `base` options.
    pub fn compile(&self, graph: Graph, base: &CompileOptions) -> Result<CompiledGraph> {
        Session::new(self.device).try_compile_with(graph, &self.options(base))
    }
}

impl DeviceCandidate {
    /// An attempt on this candidate for a [`crate::DeviceFallbackError`]:
    /// the device, and why, naming the thread count when it is not the default.
    pub(crate) fn attempt(&self, why: impl fmt::Display) -> (Device, String) {
        match self.threads {
            None => (self.device, why.to_string()),
            Some(_) => (self.device, format!("{self}: {why}")),
        }
    }
}

impl From<Device> for DeviceCandidate {
    fn from(device: Device) -> DeviceCandidate {
        DeviceCandidate::new(device)
    }
}

impl fmt::Display for DeviceCandidate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.threads {
            None => write!(f, "{}", self.device),
            Some(n) => write!(f, "{}(threads={n})", self.device),
        }
    }
}
