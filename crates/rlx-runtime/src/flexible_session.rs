//! [`FlexibleSession`]: one compiled model that can move to another device.

use crate::{CompileOptions, CompiledGraph, DeviceCandidate, Result};
use rlx_driver::Device;
use rlx_ir::{Graph, HostTensor};

/// A graph compiled on one device, with its params, that
/// [`FlexibleSession::move_to`] recompiles on another device carrying the
/// params' current values over: callers keep one object while the device
/// underneath changes.
///
/// ```
/// use rlx_runtime::{DeviceCandidate, FlexibleSession};
/// use rlx_ir::{DType, Graph, GraphExt, Shape};
/// let mut g = Graph::new("scale");
/// let x = g.input("x", Shape::new(&[2], DType::F32));
/// let w = g.param("w", Shape::new(&[2], DType::F32));
/// let y = g.mul(x, w);
/// g.set_outputs(vec![y]);
/// let mut s = FlexibleSession::new(g, DeviceCandidate::cpu_threads(1)).unwrap();
/// s.set_param("w", &[3.0, 4.0]).unwrap();
/// s.move_to(DeviceCandidate::cpu_threads(2)).unwrap();
/// assert_eq!(s.candidate(), DeviceCandidate::cpu_threads(2));
/// assert_eq!(s.run(&[("x", &[1.0, 2.0])]).unwrap(), vec![vec![3.0, 8.0]]);
/// ```
pub struct FlexibleSession {
    graph: Graph,
    options: CompileOptions,
    candidate: DeviceCandidate,
    compiled: CompiledGraph,
    /// Params set so far, in the order set (moved by name).
    set: Vec<String>,
}

impl FlexibleSession {
    /// Compiles `graph` for `candidate` with default options.
    pub fn new(graph: Graph, candidate: DeviceCandidate) -> Result<FlexibleSession> {
        FlexibleSession::with_options(graph, candidate, CompileOptions::default())
    }

    /// Compiles `graph` for `candidate` with `options` (their thread count
    /// is replaced by each candidate's).
    pub fn with_options(
        graph: Graph,
        candidate: DeviceCandidate,
        options: CompileOptions,
    ) -> Result<FlexibleSession> {
        let compiled = candidate.compile(graph.clone(), &options)?;
        Ok(FlexibleSession {
            graph,
            options,
            candidate,
            compiled,
            set: Vec::new(),
        })
    }

    /// Where the model is now.
    pub fn candidate(&self) -> DeviceCandidate {
        self.candidate
    }

    /// The device the model is on now.
    pub fn device(&self) -> Device {
        self.candidate.device
    }

    /// The compiled model on the current device.
    pub fn compiled(&self) -> &CompiledGraph {
        &self.compiled
    }

    /// Sets an f32 param.
    pub fn set_param(&mut self, name: &str, values: &[f32]) -> Result<()> {
        self.compiled.try_set_param(name, values)?;
        self.remember(name);
        Ok(())
    }

    /// Sets a param of any dtype.
    pub fn set_param_typed(&mut self, name: &str, value: &HostTensor) -> Result<()> {
        self.compiled.set_param_typed(name, value)?;
        self.remember(name);
        Ok(())
    }

    fn remember(&mut self, name: &str) {
        if !self.set.iter().any(|n| n == name) {
            self.set.push(name.to_string());
        }
    }

    /// Runs on named f32 inputs.
    pub fn run(&mut self, inputs: &[(&str, &[f32])]) -> Result<Vec<Vec<f32>>> {
        self.compiled.try_run(inputs)
    }

    /// Runs on named typed inputs.
    pub fn run_typed(&mut self, inputs: &[(&str, &HostTensor)]) -> Result<Vec<HostTensor>> {
        self.compiled.try_run_typed(inputs)
    }

    /// Recompiles the model on `to` and copies every param set so far, at
    /// its current value on the old device. On any error the session stays
    /// where it was, unchanged.
    pub fn move_to(&mut self, to: DeviceCandidate) -> Result<()> {
        if to == self.candidate {
            return Ok(());
        }
        let mut moved = to.compile(self.graph.clone(), &self.options)?;
        for name in &self.set {
            moved.set_param_typed(name, &self.compiled.param_value(name)?)?;
        }
        self.compiled = moved;
        self.candidate = to;
        Ok(())
    }
}
