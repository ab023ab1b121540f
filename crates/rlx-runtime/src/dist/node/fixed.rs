//! [`FixedFunction`]: a device that can run exactly one compiled function
//! (an FPGA bitstream, an accelerator with a baked-in model), and serving
//! one to a peer with [`serve_fixed_function_n`].

use super::control::NodeControl;
use super::serve::NodeReport;
use crate::dist::activation::{recv_activation, send_activation};
use crate::dist::error::{DistError, DistResult};
use crate::{CompiledGraph, Device, Session};
use rlx_collectives::ProcessGroup;
use rlx_ir::{Graph, HostTensor, Shape};
use std::sync::Arc;

/// One compiled function with fixed input and output shapes.
pub trait FixedFunction: Send {
    /// The shapes (and dtypes) of its inputs, in order.
    fn input_shapes(&self) -> Vec<Shape>;
    /// The shapes of its outputs, in order.
    fn output_shapes(&self) -> Vec<Shape>;
    /// Runs the function on inputs that match [`FixedFunction::input_shapes`].
    fn call(&mut self, inputs: &[HostTensor]) -> DistResult<Vec<HostTensor>>;
}

/// A named [`FixedFunction`] whose calls are checked against its shapes
/// (a mismatch is an error, never passed to the device).
pub struct FixedFunctionDevice {
    name: String,
    function: Box<dyn FixedFunction>,
}

impl FixedFunctionDevice {
    /// Wraps `function` under `name`.
    pub fn new(name: impl Into<String>, function: Box<dyn FixedFunction>) -> Self {
        FixedFunctionDevice {
            name: name.into(),
            function,
        }
    }

    /// The device's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The wrapped function.
    pub fn function(&self) -> &dyn FixedFunction {
        &*self.function
    }

    /// Checks `inputs` against the input shapes, calls, checks the outputs.
    pub fn call(&mut self, inputs: &[HostTensor]) -> DistResult<Vec<HostTensor>> {
        let err = |reason: String| DistError::FixedFunction {
            device: self.name.clone(),
            reason,
        };
        let want = self.function.input_shapes();
        if inputs.len() != want.len() {
            return Err(err(format!(
                "{} inputs, it takes {}",
                inputs.len(),
                want.len()
            )));
        }
        for (i, (x, s)) in inputs.iter().zip(&want).enumerate() {
            if x.shape() != *s {
                return Err(err(format!("input {i} is {:?}, it takes {s:?}", x.shape())));
            }
        }
        let out = self.function.call(inputs)?;
        let want = self.function.output_shapes();
        if out.len() != want.len() || out.iter().zip(&want).any(|(y, s)| y.shape() != *s) {
            return Err(err(
                "its outputs do not match its declared output shapes".into()
            ));
        }
        Ok(out)
    }
}

/// A [`FixedFunction`] that is a graph compiled on this process's CPU
/// (a stand-in for a real fixed-function device, and its reference).
pub struct LoopbackFixedFunction {
    compiled: CompiledGraph,
    inputs: Vec<(String, Shape)>,
    outputs: Vec<Shape>,
}

impl LoopbackFixedFunction {
    /// Compiles `graph` (params set from `params`) on the CPU.
    pub fn new(graph: Graph, params: &[(String, HostTensor)]) -> DistResult<Self> {
        let mut compiled = Session::new(Device::Cpu)
            .try_compile(graph)
            .map_err(|e| DistError::graph("compiling the fixed function", e))?;
        for (n, t) in params {
            compiled
                .set_param_typed(n, t)
                .map_err(|e| DistError::graph(format!("setting param {n:?}"), e))?;
        }
        Ok(LoopbackFixedFunction {
            inputs: compiled.input_shapes(),
            outputs: compiled.output_shapes(),
            compiled,
        })
    }
}

impl FixedFunction for LoopbackFixedFunction {
    fn input_shapes(&self) -> Vec<Shape> {
        self.inputs.iter().map(|(_, s)| s.clone()).collect()
    }
    fn output_shapes(&self) -> Vec<Shape> {
        self.outputs.clone()
    }
    fn call(&mut self, inputs: &[HostTensor]) -> DistResult<Vec<HostTensor>> {
        let named: Vec<(&str, &HostTensor)> = self
            .inputs
            .iter()
            .map(|(n, _)| n.as_str())
            .zip(inputs)
            .collect();
        self.compiled
            .try_run_typed(&named)
            .map_err(|e| DistError::graph("running the fixed function", e))
    }
}

/// Serves up to `n` calls of `device` for rank `client`: receive an
/// activation, call, send the outputs back. Returns early on the client's
/// stop frame or a stop request.
pub fn serve_fixed_function_n(
    group: &Arc<dyn ProcessGroup>,
    client: usize,
    device: &mut FixedFunctionDevice,
    n: usize,
    control: &NodeControl,
) -> DistResult<NodeReport> {
    control.attach(group.clone());
    let mut report = NodeReport::default();
    while report.activations < n && !control.is_stopped() {
        let x = match recv_activation(&**group, client) {
            Ok(Some(x)) => x,
            Ok(None) => return Ok(report),
            Err(_) if control.is_stopped() => break,
            Err(e) => return Err(e),
        };
        let y = device.call(&x)?;
        send_activation(&**group, client, &y)?;
        report.activations += 1;
    }
    report.stopped = control.is_stopped();
    Ok(report)
}
