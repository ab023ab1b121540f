//! [`DevicePolicy`] (which devices may run a graph, at what precision,
//! whether to fall back) and [`DevicePickStrategy`] (how to choose one).

use crate::device_bench::{benchmark_devices_with, BenchOptions, Feeds};
use crate::devices::{self, DeviceFallbackError};
use crate::{CompileOptions, DeviceCandidate, Precision, Session};
use rlx_driver::Device;
use rlx_ir::Graph;

/// Which devices may run a graph and how.
///
/// ```
/// use rlx_runtime::{Device, DevicePolicy, Precision};
/// let p = DevicePolicy::default().deny(Device::Cuda(0)).require_precision(Precision::F16);
/// assert!(p.check(Device::Cpu).is_ok());
/// assert_eq!(p.check(Device::Cuda(0)).unwrap_err(), "denied by the device policy");
/// assert!(p.fallback);
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct DevicePolicy {
    /// The only devices allowed (`None`: any).
    pub allowed: Option<Vec<Device>>,
    /// Devices never used, even when allowed.
    pub denied: Vec<Device>,
    /// The precision every device must compile the graph at (`None`: the
    /// options' own); a device that cannot is passed over with its error.
    pub precision: Option<Precision>,
    /// On a compile or run failure, try the next device (on by default);
    /// off, the first permitted device's failure is final.
    pub fallback: bool,
}

impl Default for DevicePolicy {
    fn default() -> Self {
        DevicePolicy {
            allowed: None,
            denied: Vec::new(),
            precision: None,
            fallback: true,
        }
    }
}

impl DevicePolicy {
    /// Allows only `devices`.
    pub fn allow(mut self, devices: &[Device]) -> Self {
        self.allowed = Some(devices.to_vec());
        self
    }

    /// Denies `device`.
    pub fn deny(mut self, device: Device) -> Self {
        self.denied.push(device);
        self
    }

    /// Requires compiling at `precision`.
    pub fn require_precision(mut self, precision: Precision) -> Self {
        self.precision = Some(precision);
        self
    }

    /// Turns falling back to the next device on or off.
    pub fn fallback(mut self, on: bool) -> Self {
        self.fallback = on;
        self
    }

    /// Why the policy refuses `device`, if it does.
    pub fn check(&self, device: Device) -> std::result::Result<(), String> {
        if self.denied.contains(&device) {
            return Err("denied by the device policy".into());
        }
        match &self.allowed {
            Some(allowed) if !allowed.contains(&device) => Err(format!(
                "not in the device policy's allowed list ({})",
                allowed
                    .iter()
                    .map(Device::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
            _ => Ok(()),
        }
    }

    /// `base` with the required precision applied.
    pub fn options(&self, base: &CompileOptions) -> CompileOptions {
        match self.precision {
            Some(p) => base.clone().precision(p),
            None => base.clone(),
        }
    }
}

/// Available devices the policy permits that compile `g` (at the policy's
/// precision), fastest first.
///
/// ```
/// use rlx_runtime::{devices_for_with_policy, Device, DevicePolicy};
/// use rlx_ir::{DType, Graph, GraphExt, Shape};
/// let mut g = Graph::new("id");
/// let x = g.input("x", Shape::new(&[2], DType::F32));
/// g.set_outputs(vec![x]);
/// assert_eq!(devices_for_with_policy(&g, &DevicePolicy::default()), vec![Device::Cpu]);
/// assert!(devices_for_with_policy(&g, &DevicePolicy::default().deny(Device::Cpu)).is_empty());
/// ```
pub fn devices_for_with_policy(g: &Graph, policy: &DevicePolicy) -> Vec<Device> {
    let opts = policy.options(&CompileOptions::default());
    devices::available_devices()
        .into_iter()
        .filter(|&d| policy.check(d).is_ok())
        .filter(|&d| Session::new(d).try_compile_with(g.clone(), &opts).is_ok())
        .collect()
}

/// How to choose among the candidates a policy permits.
#[derive(Clone, Debug, PartialEq, Default)]
pub enum DevicePickStrategy {
    /// The first candidate, in the order given, that compiles.
    #[default]
    FirstAvailable,
    /// The candidate with the lowest median run time, measured now
    /// ([`crate::benchmark_devices`]).
    FastestMeasured(BenchOptions),
    /// The static cost model of [`crate::fastest_device_for`]: accelerators
    /// before the CPU, small graphs on the CPU.
    CostModel,
}

impl DevicePickStrategy {
    /// Picks one of `candidates` for `graph` under `policy`. `feeds` (every
    /// input and param by name) are only run by [`Self::FastestMeasured`].
    /// None usable: the error lists each candidate and why.
    pub fn pick(
        &self,
        graph: &Graph,
        feeds: Feeds<'_>,
        candidates: &[DeviceCandidate],
        policy: &DevicePolicy,
    ) -> std::result::Result<DeviceCandidate, DeviceFallbackError> {
        let mut attempts = Vec::new();
        let mut permitted = Vec::new();
        for &c in candidates {
            match policy.check(c.device) {
                Ok(()) => permitted.push(c),
                Err(why) => attempts.push(c.attempt(why)),
            }
        }
        let opts = policy.options(&CompileOptions::default());
        let picked = match self {
            DevicePickStrategy::FirstAvailable => {
                permitted
                    .iter()
                    .copied()
                    .find(|c| match c.compile(graph.clone(), &opts) {
                        Ok(_) => true,
                        Err(e) => {
                            attempts.push(c.attempt(e));
                            false
                        }
                    })
            }
            DevicePickStrategy::CostModel => {
                let best = devices::fastest_device_for(graph);
                permitted
                    .iter()
                    .copied()
                    .filter(|c| c.device == best)
                    .min_by_key(|c| c.threads.is_some())
                    .or_else(|| permitted.first().copied())
            }
            DevicePickStrategy::FastestMeasured(bench) => {
                // One candidate at a time: a failing one is passed over, with its reason.
                let mut rows = Vec::new();
                for &c in &permitted {
                    match benchmark_devices_with(graph, feeds, &[c], &opts, bench) {
                        Ok(mut r) => rows.append(&mut r),
                        Err(e) => attempts.push(c.attempt(e)),
                    }
                }
                crate::DeviceBenchResult::fastest(&rows).map(|r| r.candidate)
            }
        };
        picked.ok_or_else(|| {
            if attempts.is_empty() {
                attempts.push((Device::Cpu, "no candidate device was given".into()));
            }
            DeviceFallbackError { attempts }
        })
    }
}
