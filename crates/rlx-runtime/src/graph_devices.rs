//! [`GraphDevices`]: one graph, compiled lazily per device, params shared.

use crate::{devices, CompileOptions, CompiledGraph, DeviceCandidate, Result};
use rlx_driver::Device;
use rlx_ir::Graph;
use std::collections::HashMap;

/// Runs one graph on whichever device is asked, compiling on first use and
/// replaying the params set so far.
pub struct GraphDevices {
    graph: Graph,
    params: Vec<(String, Vec<f32>)>,
    compiled: HashMap<DeviceCandidate, CompiledGraph>,
}

impl GraphDevices {
    /// Wraps a graph.
    pub fn new(graph: Graph) -> GraphDevices {
        GraphDevices {
            graph,
            params: Vec::new(),
            compiled: HashMap::new(),
        }
    }

    /// The fastest available device for this graph.
    pub fn fastest(&self) -> Device {
        devices::fastest_device_for(&self.graph)
    }

    /// Available devices that compile this graph.
    pub fn devices(&self) -> Vec<Device> {
        devices::devices_for(&self.graph)
    }

    /// Sets a param on every compiled device now and on later ones when they compile.
    /// Checked on the already-compiled devices; on error nothing changes.
    pub fn set_param(&mut self, name: &str, values: &[f32]) -> Result<()> {
        if self.compiled.is_empty() {
            // Check against a CPU-independent view: compile lazily on the fastest device.
            let d = self.fastest();
            self.compiled_for(d.into())?;
        }
        for c in self.compiled.values_mut() {
            c.try_set_param(name, values)?;
        }
        self.params.retain(|(n, _)| n != name);
        self.params.push((name.to_string(), values.to_vec()));
        Ok(())
    }

    fn compiled_for(&mut self, device: DeviceCandidate) -> Result<&mut CompiledGraph> {
        if !self.compiled.contains_key(&device) {
            let mut c = device.compile(self.graph.clone(), &CompileOptions::default())?;
            for (n, v) in &self.params {
                c.try_set_param(n, v)?;
            }
            self.compiled.insert(device, c);
        }
        Ok(self.compiled.get_mut(&device).expect("just inserted"))
    }

    /// Runs on `device` with named f32 inputs.
    pub fn run(&mut self, device: Device, inputs: &[(&str, &[f32])]) -> Result<Vec<Vec<f32>>> {
        self.run_on(device.into(), inputs)
    }

    /// Runs on `candidate` (a device and its thread count) with named f32 inputs.
    pub fn run_on(
        &mut self,
        candidate: DeviceCandidate,
        inputs: &[(&str, &[f32])],
    ) -> Result<Vec<Vec<f32>>> {
        self.compiled_for(candidate)?.try_run(inputs)
    }
}
