//! [`CompiledGraph`]: set params, run, introspect. Every entry point checks
//! names, dtypes and shapes against the compiled signature before anything
//! changes, so a failed call leaves the graph as it was.

use crate::prelude::{Assembly, Piece, PreludeExec};
use crate::{Result, RuntimeError};
use rlx_compile::{IoManifest, LirModule};
use rlx_driver::{Device, Executable};
use rlx_ir::{DType, HostTensor, Shape};

/// A graph compiled for a device.
pub struct CompiledGraph {
    device: Device,
    exec: Box<dyn Executable>,
    /// The params callers set, in declaration order, and where each goes.
    params: Vec<ParamRoute>,
    param_set: Vec<bool>,
    /// The param has its buffers (set, reserved or being streamed in).
    allocated: Vec<bool>,
    prelude: Option<PreludeExec>,
    assembly: Assembly,
    /// Outputs bound as the next values of params ([`CompiledGraph::bind_update`]).
    updates: Vec<ParamUpdate>,
}

/// Output `output` of the manifest becomes param `param`'s value after each run.
#[derive(Clone, Copy, Debug)]
struct ParamUpdate {
    output: usize,
    /// Index into the caller-visible params.
    param: usize,
}

/// A caller-visible param: its name and shape, its index in the main
/// executable and in the prelude, and the pieces of assembled params its
/// bytes go to (a param may feed any of them).
#[derive(Clone, Debug)]
pub(crate) struct ParamRoute {
    pub(crate) name: String,
    pub(crate) shape: Shape,
    pub(crate) main: Option<usize>,
    pub(crate) prelude: Option<usize>,
    pub(crate) pieces: Vec<Piece>,
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

/// Checks `t` against `shape`; `what` names it in the error (built only on
/// failure: a run checks every input).
fn check_tensor(what: impl Fn() -> String, shape: &Shape, t: &HostTensor) -> Result<()> {
    if t.dtype() != shape.dtype() {
        return Err(RuntimeError::DType {
            what: what(),
            shape: shape.clone(),
            expected: shape.dtype(),
            given: t.dtype(),
        });
    }
    let dims = shape.dims();
    let same = dims.len() == t.dims().len()
        && dims
            .iter()
            .zip(t.dims())
            .all(|(d, &n)| d.as_static() == Some(n));
    if !same {
        return Err(RuntimeError::Shape {
            what: what(),
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
            .field("prelude", &self.prelude.is_some())
            .field("outputs", &self.output_shapes())
            .finish()
    }
}

impl CompiledGraph {
    /// A graph whose param-only part runs in `prelude` or is assembled
    /// (`assembly`); `params` routes each caller-visible param to the
    /// executables and pieces that read it.
    pub(crate) fn with_prelude(
        device: Device,
        exec: Box<dyn Executable>,
        params: Vec<ParamRoute>,
        prelude: Option<PreludeExec>,
        assembly: Assembly,
    ) -> CompiledGraph {
        CompiledGraph {
            device,
            exec,
            param_set: vec![false; params.len()],
            allocated: vec![false; params.len()],
            params,
            prelude,
            assembly,
            updates: Vec::new(),
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
    /// When part of the graph depends only on params, this is the main
    /// graph, which reads those values as derived params (named
    /// `hoisted.<n>`); see [`CompiledGraph::prelude_lir`].
    pub fn lir(&self) -> &LirModule {
        self.exec.lir()
    }

    /// The LIR of every control-flow sub-graph (If / While / Scan /
    /// CustomFn bodies) the backend compiled for the main graph, with the
    /// node that runs it: what the session's options did to the bodies.
    pub fn subgraph_lirs(&self) -> Vec<(rlx_ir::NodeId, &LirModule)> {
        self.exec.subgraph_lirs()
    }

    /// The hoisted param-only part of the graph, if any: it runs on the
    /// first run after a param it reads is set, not on every run. Derived
    /// params that only move param bytes (a stack of weights, a reshape or
    /// a unit-step slice of a param) are not in it: setting a param writes
    /// its bytes straight into them.
    pub fn prelude_lir(&self) -> Option<&LirModule> {
        self.prelude.as_ref().map(|p| p.lir())
    }

    /// How many times the param prelude ran (0 without one): once per run
    /// that follows a change of the params it reads.
    pub fn prelude_runs(&self) -> usize {
        self.prelude.as_ref().map_or(0, |p| p.runs())
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
        self.params.iter().map(|p| p.name.clone()).collect()
    }

    /// Params as (name, shape).
    pub fn param_shapes(&self) -> Vec<(String, Shape)> {
        self.params
            .iter()
            .map(|p| (p.name.clone(), p.shape.clone()))
            .collect()
    }

    /// Shapes of the outputs a run returns, in output order (outputs bound
    /// with [`CompiledGraph::bind_update`] are not returned).
    pub fn output_shapes(&self) -> Vec<Shape> {
        self.io()
            .outputs
            .iter()
            .enumerate()
            .filter(|(i, _)| !self.updates.iter().any(|u| u.output == *i))
            .map(|(_, o)| o.1.clone())
            .collect()
    }

    /// Makes graph output `output` (its index among the compiled graph's
    /// outputs) the new value of param `param` after every run, like a JAX
    /// step jitted with donated parameters or an optimizer's in-place
    /// update: a training step whose graph computes `p - lr * grad` keeps
    /// the parameters on the device, and a run returns only the other
    /// outputs. Every read of the param within a run sees its value from
    /// before the run. The output must have the param's dtype and dims; a
    /// param or output already bound is an error; an error changes nothing.
    ///
    /// ```
    /// use rlx_runtime::Session;
    /// use rlx_driver::Device;
    /// use rlx_ir::{DType, Graph, GraphExt, Shape};
    ///
    /// let mut g = Graph::new("accumulate");
    /// let x = g.input("x", Shape::new(&[2], DType::F32));
    /// let total = g.param("total", Shape::new(&[2], DType::F32));
    /// let next = g.add(total, x);
    /// let doubled = g.mul(next, g.constant(2.0, DType::F32));
    /// g.set_outputs(vec![doubled, next]);
    /// let mut c = Session::new(Device::Cpu).compile(g);
    /// c.set_param("total", &[0.0, 0.0]);
    /// c.bind_update(1, "total").unwrap();
    /// assert_eq!(c.run(&[("x", &[1.0, 2.0])]), vec![vec![2.0, 4.0]]);
    /// assert_eq!(c.run(&[("x", &[1.0, 2.0])]), vec![vec![4.0, 8.0]]);
    /// ```
    pub fn bind_update(&mut self, output: usize, param: &str) -> Result<()> {
        let outputs = self.io().outputs.len();
        let Some((_, shape)) = self.io().outputs.get(output) else {
            return Err(RuntimeError::UnknownOutput {
                index: output,
                outputs,
            });
        };
        let shape = shape.clone();
        let p = self.param_index(param)?;
        let conflict = |reason: String| RuntimeError::UpdateConflict {
            output,
            param: param.to_string(),
            reason,
        };
        for u in &self.updates {
            if u.param == p {
                let reason = format!("the param already takes output {}", u.output);
                return Err(conflict(reason));
            }
            if u.output == output {
                let other = &self.params[u.param].name;
                return Err(conflict(format!(
                    "the output already updates param \"{other}\""
                )));
            }
        }
        let expected = &self.params[p].shape;
        let what = format!("output {output} as the update of param \"{param}\"");
        if shape.dtype() != expected.dtype() {
            return Err(RuntimeError::DType {
                what,
                shape: expected.clone(),
                expected: expected.dtype(),
                given: shape.dtype(),
            });
        }
        if shape.dims() != expected.dims() {
            return Err(RuntimeError::Shape {
                what,
                expected: expected.clone(),
                given: shape.static_dims().unwrap_or_default(),
            });
        }
        self.updates.push(ParamUpdate { output, param: p });
        Ok(())
    }

    /// The current value of param `name`: as last set, or as the last run
    /// left it when an output is bound to it ([`CompiledGraph::bind_update`]),
    /// e.g. the weights after training steps.
    pub fn param_value(&self, name: &str) -> Result<HostTensor> {
        let i = self.param_index(name)?;
        let route = &self.params[i];
        if !self.param_set[i] {
            return Err(RuntimeError::ParamNotSet {
                name: route.name.clone(),
                shape: route.shape.clone(),
            });
        }
        match (route.main, route.prelude.zip(self.prelude.as_ref())) {
            (Some(m), _) => Ok(self.exec.param_value(m)?),
            (None, Some((p, prelude))) => prelude.param_value(p),
            (None, None) => Err(RuntimeError::Backend(rlx_driver::BackendError::Signature(
                format!("param \"{name}\" is not read by the compiled graph"),
            ))),
        }
    }

    /// The bound updates as (output index, param name), in binding order.
    pub fn param_updates(&self) -> Vec<(usize, String)> {
        self.updates
            .iter()
            .map(|u| (u.output, self.params[u.param].name.clone()))
            .collect()
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
        let shape = self.params[i].shape.clone();
        let t = values_to_tensor(&format!("param \"{name}\""), &shape, values)?;
        self.upload_param(i, &t)
    }

    /// Sets a param of any dtype from a tensor of exactly its dtype and dims.
    pub fn set_param_typed(&mut self, name: &str, value: &HostTensor) -> Result<()> {
        let i = self.param_index(name)?;
        let shape = self.params[i].shape.clone();
        check_tensor(|| format!("param \"{name}\""), &shape, value)?;
        self.upload_param(i, value)
    }

    /// Makes param `name` read `other`'s param `other_name` (already set,
    /// same dtype and dims, same device) without a copy: e.g. the weights of
    /// a prefill and a decode graph held once. Later
    /// [`Self::set_param_typed`] calls give this graph its own copy again.
    /// A param that feeds this graph's param prelude must feed `other`'s
    /// too (values derived from it are this graph's own). A param whose
    /// bytes this graph stacks into a derived param (Q / K / V weights
    /// stacked into one matmul) has no buffer of its own to share: that is
    /// an error, and [`Self::set_param_typed`] sets it.
    pub fn share_param_from(
        &mut self,
        name: &str,
        other: &CompiledGraph,
        other_name: &str,
    ) -> Result<()> {
        let i = self.param_index(name)?;
        let j = other.param_index(other_name)?;
        let (shape, other_shape) = (&self.params[i].shape, &other.params[j].shape);
        if shape != other_shape {
            return Err(RuntimeError::Shape {
                what: format!("shared param \"{other_name}\" for param \"{name}\""),
                expected: shape.clone(),
                given: other_shape.static_dims().unwrap_or_default(),
            });
        }
        let not_shared = |why: &str| {
            RuntimeError::Backend(rlx_driver::BackendError::Signature(format!(
                "param \"{name}\" cannot share \"{other_name}\": {why}"
            )))
        };
        if self.device != other.device {
            return Err(not_shared("the graphs live on different devices"));
        }
        if !other.param_set[j] {
            return Err(not_shared("it is not set"));
        }
        let (mine, theirs) = (self.params[i].clone(), other.params[j].clone());
        if !mine.pieces.is_empty() {
            return Err(not_shared(
                "this graph stacks its bytes into a derived param (set it with set_param_typed)",
            ));
        }
        // Take every handle first, so a failure changes nothing.
        let main = match mine.main {
            Some(m) => {
                let handle = match theirs.main {
                    Some(o) => other.exec.share_param(o),
                    None => theirs
                        .prelude
                        .and_then(|o| other.prelude.as_ref()?.share_param(o)),
                };
                let why = if theirs.main.is_none() && theirs.prelude.is_none() {
                    "the other graph holds it only inside a stacked derived param"
                } else {
                    "the backend does not share"
                };
                Some((m, handle.ok_or_else(|| not_shared(why))?))
            }
            None => None,
        };
        let prelude = match mine.prelude {
            Some(p) => {
                let handle = theirs
                    .prelude
                    .and_then(|o| other.prelude.as_ref()?.share_param(o));
                let handle = handle.ok_or_else(|| {
                    not_shared("it feeds this graph's param prelude but not the other's")
                })?;
                Some((p, handle))
            }
            None => None,
        };
        if let Some((m, handle)) = main {
            self.exec.set_param_shared(m, &handle)?;
        }
        if let (Some((p, handle)), Some(prelude)) = (prelude, self.prelude.as_mut()) {
            prelude.set_param_shared(p, &handle)?;
        }
        self.param_set[i] = true;
        self.allocated[i] = true;
        Ok(())
    }

    /// Overwrites the param's bytes `offset .. offset + bytes.len()` in
    /// place (little-endian values of its dtype), keeping the rest: for
    /// persistent state such as a KV cache that each step extends by a
    /// row (values hoisted from it are recomputed on the next run). The
    /// param must be set; a range past its end is an error that changes
    /// nothing.
    pub fn write_param_bytes(&mut self, name: &str, offset: usize, bytes: &[u8]) -> Result<()> {
        let i = self.param_index(name)?;
        if !self.param_set[i] {
            let route = &self.params[i];
            return Err(RuntimeError::ParamNotSet {
                name: route.name.clone(),
                shape: route.shape.clone(),
            });
        }
        self.write_range(i, offset, bytes)
    }

    /// Writes bytes of allocated param `i` wherever it goes; a range past
    /// its end is an error that changes nothing.
    fn write_range(&mut self, i: usize, offset: usize, bytes: &[u8]) -> Result<()> {
        let route = &self.params[i];
        let len = route.shape.size_bytes().unwrap_or(0);
        if offset.checked_add(bytes.len()).is_none_or(|end| end > len) {
            return Err(RuntimeError::Backend(rlx_driver::BackendError::Signature(
                format!(
                    "write of {} bytes at byte {offset} past the end of param \"{}\" ({len} bytes)",
                    bytes.len(),
                    route.name
                ),
            )));
        }
        if let Some(m) = route.main {
            self.exec.write_param_bytes(m, offset, bytes)?;
        }
        self.assembly
            .write(self.exec.as_mut(), &route.pieces, offset, bytes)?;
        if let (Some(p), Some(prelude)) = (route.prelude, self.prelude.as_mut()) {
            prelude.write_param_bytes(p, offset, bytes)?;
        }
        Ok(())
    }

    /// Allocates the buffers of every param that has none yet, zero-filled;
    /// they still count as unset (a run asks for them). Loading a model
    /// piece by piece after this ([`Self::set_param_from`]) allocates
    /// nothing more: the large buffers are not interleaved with the
    /// loader's short-lived copies, which the allocator can then give back.
    pub fn reserve_params(&mut self) -> Result<()> {
        for i in 0..self.params.len() {
            self.allocate(i)?;
        }
        Ok(())
    }

    /// Gives param `i` its (zero) buffers when it has none, keeping
    /// whether it is set.
    fn allocate(&mut self, i: usize) -> Result<()> {
        if self.allocated[i] {
            return Ok(());
        }
        let route = &self.params[i];
        if let Some(m) = route.main {
            self.exec.alloc_param(m)?;
        }
        self.assembly.allocate(self.exec.as_mut(), &route.pieces)?;
        if let (Some(p), Some(prelude)) = (route.prelude, self.prelude.as_mut()) {
            prelude.alloc_param(p)?;
        }
        self.allocated[i] = true;
        Ok(())
    }

    /// Fills param `i` from `fill`, which writes its bytes through the
    /// given writer (offset, bytes) in any order and must cover them all.
    /// Until `fill` returns Ok the param counts as unset: a failure leaves
    /// it unset, never half-old, half-new.
    pub(crate) fn fill_param(
        &mut self,
        i: usize,
        fill: impl FnOnce(&mut dyn FnMut(usize, &[u8]) -> Result<()>) -> Result<()>,
    ) -> Result<()> {
        self.allocate(i)?;
        self.param_set[i] = false;
        let mut written = 0;
        fill(&mut |offset, bytes| {
            written += bytes.len();
            self.write_range(i, offset, bytes)
        })?;
        let route = &self.params[i];
        let len = route.shape.size_bytes().unwrap_or(0);
        if written != len {
            return Err(RuntimeError::Backend(rlx_driver::BackendError::Signature(
                format!(
                    "param \"{}\" was given {written} bytes in pieces, it holds {len}",
                    route.name
                ),
            )));
        }
        self.param_set[i] = true;
        Ok(())
    }

    pub(crate) fn param_index(&self, name: &str) -> Result<usize> {
        self.params
            .iter()
            .position(|p| p.name == name)
            .ok_or_else(|| RuntimeError::UnknownParam {
                name: name.to_string(),
                known: self.param_names(),
            })
    }

    fn upload_param(&mut self, i: usize, t: &HostTensor) -> Result<()> {
        let route = &self.params[i];
        if let Some(m) = route.main {
            self.exec.set_param(m, t)?;
        }
        self.assembly
            .write(self.exec.as_mut(), &route.pieces, 0, t.bytes())?;
        if let (Some(p), Some(prelude)) = (route.prelude, self.prelude.as_mut()) {
            prelude.set_param(p, t)?;
        }
        self.param_set[i] = true;
        self.allocated[i] = true;
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
        let tensors = self.checked_inputs(inputs)?;
        self.execute(&tensors)
    }

    /// Zero-filled tensors of the outputs a run returns, in output order:
    /// the `outputs` of [`CompiledGraph::try_run_into`].
    pub fn output_tensors(&self) -> Vec<HostTensor> {
        self.output_shapes()
            .iter()
            .map(|s| HostTensor::zeros(s.dtype(), &s.static_dims().unwrap_or_default()))
            .collect()
    }

    /// Runs like [`CompiledGraph::try_run_typed`], writing the outputs
    /// into `outputs` (one tensor of each returned output's dtype and dims,
    /// e.g. from [`CompiledGraph::output_tensors`]) instead of returning
    /// new tensors, like numpy's `out=` or ONNX Runtime's bound outputs: a
    /// loop of runs allocates nothing for its outputs, and the CPU backend
    /// computes an output straight into its tensor. An error leaves the
    /// outputs' values unspecified.
    ///
    /// ```
    /// use rlx_runtime::Session;
    /// use rlx_driver::Device;
    /// use rlx_ir::{DType, Graph, GraphExt, HostTensor, Shape};
    ///
    /// let mut g = Graph::new("double");
    /// let x = g.input("x", Shape::new(&[2], DType::F32));
    /// let y = g.mul(x, g.constant(2.0, DType::F32));
    /// g.set_outputs(vec![y]);
    /// let mut c = Session::new(Device::Cpu).compile(g);
    /// let mut out = c.output_tensors();
    /// let x = HostTensor::from_vec(vec![1.0f32, 2.0], &[2]).unwrap();
    /// c.try_run_into(&[("x", &x)], &mut out).unwrap();
    /// assert_eq!(out[0].to_vec::<f32>().unwrap(), vec![2.0, 4.0]);
    /// ```
    pub fn try_run_into(
        &mut self,
        inputs: &[(&str, &HostTensor)],
        outputs: &mut [HostTensor],
    ) -> Result<()> {
        let tensors = self.checked_inputs(inputs)?;
        let returned = self
            .io()
            .outputs
            .iter()
            .enumerate()
            .filter(|(i, _)| !self.updates.iter().any(|u| u.output == *i));
        if returned.clone().count() != outputs.len() {
            return Err(RuntimeError::OutputCount {
                expected: returned.count(),
                given: outputs.len(),
            });
        }
        for (j, ((_, (_, shape)), t)) in returned.zip(outputs.iter()).enumerate() {
            check_tensor(|| format!("output {j}"), shape, t)?;
        }
        if !self.updates.is_empty() {
            let outs = self.execute(&tensors)?;
            for (o, v) in outputs.iter_mut().zip(outs) {
                o.bytes_mut().copy_from_slice(v.bytes());
            }
            return Ok(());
        }
        self.ready_to_run()?;
        Ok(self.exec.run_into(&tensors, outputs)?)
    }

    /// The manifest-ordered inputs of named `inputs`, each checked against
    /// its input's dtype and dims.
    fn checked_inputs<'t>(&self, inputs: &[(&str, &'t HostTensor)]) -> Result<Vec<&'t HostTensor>> {
        let order = self.order_inputs(inputs.iter().map(|(n, _)| *n))?;
        let mut tensors = Vec::with_capacity(order.len());
        for (slot, &given) in order.iter().enumerate() {
            let (_, name, shape) = &self.io().inputs[slot];
            check_tensor(|| format!("input \"{name}\""), shape, inputs[given].1)?;
            tensors.push(inputs[given].1);
        }
        Ok(tensors)
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

    /// Checks every param is set and brings the param prelude's values up
    /// to date.
    fn ready_to_run(&mut self) -> Result<()> {
        if let Some(i) = self.param_set.iter().position(|s| !s) {
            let p = &self.params[i];
            return Err(RuntimeError::ParamNotSet {
                name: p.name.clone(),
                shape: p.shape.clone(),
            });
        }
        if let Some(prelude) = self.prelude.as_mut() {
            prelude.refresh(self.exec.as_mut())?;
        }
        Ok(())
    }

    fn execute(&mut self, inputs: &[&HostTensor]) -> Result<Vec<HostTensor>> {
        self.ready_to_run()?;
        if self.updates.is_empty() {
            return Ok(self.exec.run(inputs)?);
        }
        // A param only the main executable reads is updated there; one the
        // param prelude reads too, or one whose bytes are pieces of an
        // assembled param, comes back and is set like any param, so the
        // values derived from it follow.
        let on_device: Vec<(usize, usize)> = self
            .updates
            .iter()
            .filter_map(|u| {
                let route = &self.params[u.param];
                match (route.main, route.prelude) {
                    (Some(m), None) if route.pieces.is_empty() => Some((u.output, m)),
                    _ => None,
                }
            })
            .collect();
        let outs = self.exec.run_updating(inputs, &on_device)?;
        let returned =
            (0..self.io().outputs.len()).filter(|o| !on_device.iter().any(|u| u.0 == *o));
        let mut kept = Vec::with_capacity(outs.len());
        for (output, value) in returned.zip(outs) {
            match self.updates.iter().find(|u| u.output == output) {
                Some(u) => self.upload_param(u.param, &value)?,
                None => kept.push(value),
            }
        }
        Ok(kept)
    }
}
