//! [`CompiledGraph`]: set params, run, introspect. Every entry point checks
//! names, dtypes and shapes against the compiled signature before anything
//! changes, so a failed call leaves the graph as it was.

use crate::{Result, RuntimeError};
use rlx_compile::{IoManifest, LirModule};
use rlx_driver::{Device, Executable};
use rlx_ir::{DType, HostTensor, Shape};

/// A graph compiled for a device.
pub struct CompiledGraph {
    device: Device,
    exec: Box<dyn Executable>,
    param_set: Vec<bool>,
}

fn values_to_tensor(what: &str, shape: &Shape, values: &[f32]) -> Result<HostTensor> {
    let dims = shape.static_dims().expect("compiled shapes are static");
    let expected: usize = dims.iter().product();
    if values.len() != expected {
        return Err(RuntimeError::Length {
            what: what.to_string(),
            shape: shape.clone(),
            expected,
            given: values.len(),
        });
    }
    let t = match shape.dtype() {
        DType::F32 => HostTensor::from_slice(values, &dims),
        DType::F64 => HostTensor::from_vec(values.iter().map(|&v| v as f64).collect(), &dims),
        DType::F16 => HostTensor::from_vec(
            values.iter().map(|&v| rlx_ir::f16::from_f32(v)).collect(),
            &dims,
        ),
        DType::BF16 => HostTensor::from_vec(
            values.iter().map(|&v| rlx_ir::bf16::from_f32(v)).collect(),
            &dims,
        ),
        given => {
            return Err(RuntimeError::DType {
                what: format!("{what} (f32 values; use the typed API for non-float data)"),
                shape: shape.clone(),
                expected: given,
                given: DType::F32,
            })
        }
    };
    Ok(t?)
}

fn check_tensor(what: &str, shape: &Shape, t: &HostTensor) -> Result<()> {
    if t.dtype() != shape.dtype() {
        return Err(RuntimeError::DType {
            what: what.to_string(),
            shape: shape.clone(),
            expected: shape.dtype(),
            given: t.dtype(),
        });
    }
    if Some(t.dims().to_vec()) != shape.static_dims() {
        return Err(RuntimeError::Shape {
            what: what.to_string(),
            expected: shape.clone(),
            given: t.dims().to_vec(),
        });
    }
    Ok(())
}

impl std::fmt::Debug for CompiledGraph {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompiledGraph")
            .field("device", &self.device)
            .field("graph", &self.lir().graph.name())
            .field("inputs", &self.input_shapes())
            .field("params", &self.param_shapes())
            .field("outputs", &self.output_shapes())
            .finish()
    }
}

impl CompiledGraph {
    pub(crate) fn new(device: Device, exec: Box<dyn Executable>) -> CompiledGraph {
        let n = exec.lir().io.params.len();
        CompiledGraph {
            device,
            exec,
            param_set: vec![false; n],
        }
    }

    fn io(&self) -> &IoManifest {
        &self.exec.lir().io
    }

    /// The device it runs on.
    pub fn device(&self) -> Device {
        self.device
    }

    /// The lowered module (graph after passes, memory plan, manifest).
    pub fn lir(&self) -> &LirModule {
        self.exec.lir()
    }

    /// Input names in declaration order.
    pub fn input_names(&self) -> Vec<String> {
        self.io().inputs.iter().map(|i| i.1.clone()).collect()
    }

    /// Inputs as (name, shape).
    pub fn input_shapes(&self) -> Vec<(String, Shape)> {
        self.io()
            .inputs
            .iter()
            .map(|i| (i.1.clone(), i.2.clone()))
            .collect()
    }

    /// Param names in declaration order.
    pub fn param_names(&self) -> Vec<String> {
        self.io().params.iter().map(|p| p.1.clone()).collect()
    }

    /// Params as (name, shape).
    pub fn param_shapes(&self) -> Vec<(String, Shape)> {
        self.io()
            .params
            .iter()
            .map(|p| (p.1.clone(), p.2.clone()))
            .collect()
    }

    /// Output shapes in output order.
    pub fn output_shapes(&self) -> Vec<Shape> {
        self.io().outputs.iter().map(|o| o.1.clone()).collect()
    }

    fn param_index(&self, name: &str) -> Result<usize> {
        self.io()
            .params
            .iter()
            .position(|p| p.1 == name)
            .ok_or_else(|| RuntimeError::UnknownParam {
                name: name.to_string(),
                known: self.param_names(),
            })
    }

    /// Sets a float param from f32 values (converted to the param's float dtype);
    /// panics with the error message on failure.
    pub fn set_param(&mut self, name: &str, values: &[f32]) {
        self.try_set_param(name, values)
            .unwrap_or_else(|e| panic!("{e}"))
    }

    /// Sets a float param from f32 values; on error the old value is kept.
    pub fn try_set_param(&mut self, name: &str, values: &[f32]) -> Result<()> {
        let i = self.param_index(name)?;
        let shape = self.io().params[i].2.clone();
        let t = values_to_tensor(&format!("param \"{name}\""), &shape, values)?;
        self.upload_param(i, &t)
    }

    /// Sets a param of any dtype from a tensor of exactly its dtype and dims.
    pub fn set_param_typed(&mut self, name: &str, value: &HostTensor) -> Result<()> {
        let i = self.param_index(name)?;
        let shape = self.io().params[i].2.clone();
        check_tensor(&format!("param \"{name}\""), &shape, value)?;
        self.upload_param(i, value)
    }

    /// Makes param `name` read `other`'s param `other_name` (already set,
    /// same dtype and dims, same device) without a copy: e.g. the weights of
    /// a prefill and a decode graph held once. Later
    /// [`Self::set_param_typed`] calls give this graph its own copy again.
    pub fn share_param_from(
        &mut self,
        name: &str,
        other: &CompiledGraph,
        other_name: &str,
    ) -> Result<()> {
        let i = self.param_index(name)?;
        let j = other.param_index(other_name)?;
        let (shape, other_shape) = (&self.io().params[i].2, &other.io().params[j].2);
        if shape != other_shape {
            return Err(RuntimeError::Shape {
                what: format!("shared param \"{other_name}\" for param \"{name}\""),
                expected: shape.clone(),
                given: other_shape.static_dims().unwrap_or_default(),
            });
        }
        let not_shared = |why: String| {
            RuntimeError::Backend(rlx_driver::BackendError::Signature(format!(
                "param \"{name}\" cannot share \"{other_name}\": {why}"
            )))
        };
        if self.device != other.device {
            return Err(not_shared(format!(
                "it lives on {:?}, this graph on {:?}",
                other.device, self.device
            )));
        }
        let shared = other
            .exec
            .share_param(j)
            .ok_or_else(|| not_shared("it is not set or the backend does not share".into()))?;
        self.exec.set_param_shared(i, &shared)?;
        self.param_set[i] = true;
        Ok(())
    }

    /// Overwrites the param's bytes `offset .. offset + bytes.len()` in
    /// place (little-endian values of its dtype), keeping the rest: for
    /// persistent state such as a KV cache that each step extends by a
    /// row. The param must be set; a range past its end is an error that
    /// changes nothing.
    pub fn write_param_bytes(&mut self, name: &str, offset: usize, bytes: &[u8]) -> Result<()> {
        let i = self.param_index(name)?;
        if !self.param_set[i] {
            let (_, name, shape) = &self.io().params[i];
            return Err(RuntimeError::ParamNotSet {
                name: name.clone(),
                shape: shape.clone(),
            });
        }
        Ok(self.exec.write_param_bytes(i, offset, bytes)?)
    }

    fn upload_param(&mut self, i: usize, t: &HostTensor) -> Result<()> {
        self.exec.set_param(i, t)?;
        self.param_set[i] = true;
        Ok(())
    }

    /// Runs on named f32 inputs and returns every output as f32 values;
    /// panics with the error message on failure.
    pub fn run(&mut self, inputs: &[(&str, &[f32])]) -> Vec<Vec<f32>> {
        self.try_run(inputs).unwrap_or_else(|e| panic!("{e}"))
    }

    /// Runs on named f32 inputs (converted to each input's float dtype);
    /// outputs are converted to f32.
    pub fn try_run(&mut self, inputs: &[(&str, &[f32])]) -> Result<Vec<Vec<f32>>> {
        let order = self.order_inputs(inputs.iter().map(|(n, _)| *n))?;
        let mut tensors = Vec::with_capacity(order.len());
        for (slot, &given) in order.iter().enumerate() {
            let (_, name, shape) = &self.io().inputs[slot];
            tensors.push(values_to_tensor(
                &format!("input \"{name}\""),
                shape,
                inputs[given].1,
            )?);
        }
        let outs = self.execute(&tensors.iter().collect::<Vec<_>>())?;
        Ok(outs
            .iter()
            .map(|t| match t.dtype() {
                DType::F32 => t.to_vec::<f32>().expect("f32 output"),
                _ => t.to_f64_lossy().into_iter().map(|v| v as f32).collect(),
            })
            .collect())
    }

    /// Runs on named typed inputs; panics with the error message on failure.
    pub fn run_typed(&mut self, inputs: &[(&str, &HostTensor)]) -> Vec<HostTensor> {
        self.try_run_typed(inputs).unwrap_or_else(|e| panic!("{e}"))
    }

    /// Runs on named typed inputs (dtype and dims must match exactly).
    pub fn try_run_typed(&mut self, inputs: &[(&str, &HostTensor)]) -> Result<Vec<HostTensor>> {
        let order = self.order_inputs(inputs.iter().map(|(n, _)| *n))?;
        let mut tensors = Vec::with_capacity(order.len());
        for (slot, &given) in order.iter().enumerate() {
            let (_, name, shape) = &self.io().inputs[slot];
            check_tensor(&format!("input \"{name}\""), shape, inputs[given].1)?;
            tensors.push(inputs[given].1);
        }
        self.execute(&tensors)
    }

    /// For each manifest input, the position of its value among `names`.
    fn order_inputs<'a>(&self, names: impl Iterator<Item = &'a str>) -> Result<Vec<usize>> {
        let io = self.io();
        let mut order = vec![usize::MAX; io.inputs.len()];
        for (pos, name) in names.enumerate() {
            let slot = io.inputs.iter().position(|i| i.1 == name).ok_or_else(|| {
                RuntimeError::UnknownInput {
                    name: name.to_string(),
                    known: self.input_names(),
                }
            })?;
            if order[slot] != usize::MAX {
                return Err(RuntimeError::DuplicateInput {
                    name: name.to_string(),
                });
            }
            order[slot] = pos;
        }
        if let Some(slot) = order.iter().position(|&o| o == usize::MAX) {
            let (_, name, shape) = &io.inputs[slot];
            return Err(RuntimeError::MissingInput {
                name: name.clone(),
                shape: shape.clone(),
            });
        }
        Ok(order)
    }

    fn execute(&mut self, inputs: &[&HostTensor]) -> Result<Vec<HostTensor>> {
        if let Some(i) = self.param_set.iter().position(|s| !s) {
            let (_, name, shape) = &self.io().params[i];
            return Err(RuntimeError::ParamNotSet {
                name: name.clone(),
                shape: shape.clone(),
            });
        }
        Ok(self.exec.run(inputs)?)
    }
}
