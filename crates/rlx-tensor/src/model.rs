//! Models declared with `#[rlx_model]` (crate `rlx-macros`): a struct of
//! param [`Tensor`]s with a `forward` method is a [`ModelDef`]; a
//! [`Model`] holds its param values, traces and compiles `forward` on the
//! first call (again only for new input shapes, as [`crate::jit`]) and runs
//! it on host tensors.

use crate::error::{Result, TensorError};
use crate::scope::{graph_with, GraphScope, Outputs, ScopeOptions};
use crate::tensor::Tensor;
use crate::transform::{compile_on, JitOptions};
use rlx_ir::{Graph, HostTensor, Shape};
use rlx_runtime::{BytesWeightLoader, CompiledGraph, WeightLoader};
use std::collections::HashMap;
use std::marker::PhantomData;
use std::path::Path;

/// A model definition: its params and how to trace its forward pass.
/// `#[rlx_model]` implements it; writing it by hand works too.
pub trait ModelDef: Sized {
    /// The model's name (the traced graph's name).
    const NAME: &'static str;
    /// Every param: name and shape, in field order.
    fn param_specs() -> Vec<(String, Shape)>;
    /// The struct with each field a param of `scope`.
    fn declare(scope: &GraphScope) -> Self;
    /// Calls `forward` on inputs of the active scope.
    fn trace(&self, inputs: &[Tensor]) -> Result<Vec<Tensor>>;
}

/// A `forward` method `fn(&S, &Tensor, ..) -> O` callable on a slice of
/// inputs (one to three `&Tensor`s, or `&[Tensor]`); `M` tells the impls
/// apart.
pub trait Forward<S, M> {
    /// The number of inputs, when fixed.
    fn arity(&self) -> Option<usize>;
    /// Calls it (the arity was checked).
    fn call(&self, model: &S, inputs: &[Tensor]) -> Vec<Tensor>;
}

impl<S, O: Outputs, F: Fn(&S, &Tensor) -> O> Forward<S, (Tensor,)> for F {
    fn arity(&self) -> Option<usize> {
        Some(1)
    }
    fn call(&self, m: &S, x: &[Tensor]) -> Vec<Tensor> {
        self(m, &x[0]).into_tensors()
    }
}

impl<S, O: Outputs, F: Fn(&S, &Tensor, &Tensor) -> O> Forward<S, (Tensor, Tensor)> for F {
    fn arity(&self) -> Option<usize> {
        Some(2)
    }
    fn call(&self, m: &S, x: &[Tensor]) -> Vec<Tensor> {
        self(m, &x[0], &x[1]).into_tensors()
    }
}

impl<S, O: Outputs, F: Fn(&S, &Tensor, &Tensor, &Tensor) -> O> Forward<S, (Tensor, Tensor, Tensor)>
    for F
{
    fn arity(&self) -> Option<usize> {
        Some(3)
    }
    fn call(&self, m: &S, x: &[Tensor]) -> Vec<Tensor> {
        self(m, &x[0], &x[1], &x[2]).into_tensors()
    }
}

impl<S, O: Outputs, F: Fn(&S, &[Tensor]) -> O> Forward<S, Vec<Tensor>> for F {
    fn arity(&self) -> Option<usize> {
        None
    }
    fn call(&self, m: &S, x: &[Tensor]) -> Vec<Tensor> {
        self(m, x).into_tensors()
    }
}

/// Calls `forward` with `inputs`, checking their number (what
/// `#[rlx_model]`'s [`ModelDef::trace`] does).
pub fn call_forward<S: ModelDef, M, F: Forward<S, M>>(
    forward: F,
    model: &S,
    inputs: &[Tensor],
) -> Result<Vec<Tensor>> {
    if let Some(n) = forward.arity() {
        if n != inputs.len() {
            return Err(TensorError::Model {
                model: S::NAME.into(),
                reason: format!("forward takes {n} inputs, given {}", inputs.len()),
            });
        }
    }
    Ok(forward.call(model, inputs))
}

/// A [`ModelDef`] with its param values and compiled forward passes (one
/// per input signature). Not `Sync`; `forward` takes `&mut self`.
pub struct Model<D: ModelDef> {
    opts: JitOptions,
    specs: Vec<(String, Shape)>,
    values: Vec<Option<HostTensor>>,
    compiled: HashMap<Vec<Shape>, CompiledGraph>,
    traces: usize,
    _def: PhantomData<fn() -> D>,
}

impl<D: ModelDef> Default for Model<D> {
    fn default() -> Self {
        Self::new()
    }
}

impl<D: ModelDef> Model<D> {
    /// The model on the CPU with default compile options.
    pub fn new() -> Self {
        Self::with_options(JitOptions::default())
    }

    /// The model on `opts.device`, compiled with `opts.compile`.
    pub fn with_options(opts: JitOptions) -> Self {
        let specs = D::param_specs();
        Model {
            opts,
            values: vec![None; specs.len()],
            specs,
            compiled: HashMap::new(),
            traces: 0,
            _def: PhantomData,
        }
    }

    fn error(reason: String) -> TensorError {
        TensorError::Model {
            model: D::NAME.into(),
            reason,
        }
    }

    /// Every param: name and shape.
    pub fn params(&self) -> &[(String, Shape)] {
        &self.specs
    }

    /// A param's values, once set.
    pub fn param(&self, name: &str) -> Option<&HostTensor> {
        let i = self.specs.iter().position(|(n, _)| n == name)?;
        self.values[i].as_ref()
    }

    /// Sets a param; an unknown name or a value of another shape or dtype
    /// is an error naming it.
    pub fn set_param(&mut self, name: &str, value: &HostTensor) -> Result<()> {
        let i = self.check_value(name, value)?;
        for c in self.compiled.values_mut() {
            c.set_param_typed(name, value)
                .map_err(|e| runtime("set_param", e))?;
        }
        self.values[i] = Some(value.clone());
        Ok(())
    }

    /// The index of param `name` if `value` fits it.
    fn check_value(&self, name: &str, value: &HostTensor) -> Result<usize> {
        let i = self
            .specs
            .iter()
            .position(|(n, _)| n == name)
            .ok_or_else(|| {
                let known: Vec<&str> = self.specs.iter().map(|(n, _)| n.as_str()).collect();
                Self::error(format!("no param named \"{name}\" (params: {known:?})"))
            })?;
        let want = &self.specs[i].1;
        if value.shape() != *want {
            return Err(Self::error(format!(
                "param \"{name}\" is {want}, given a value of {}",
                value.shape()
            )));
        }
        Ok(i)
    }

    /// Sets every param from the safetensors file at `path` (converted to
    /// the param's dtype). A param missing from the file, a tensor of the
    /// file that is no param, or a shape mismatch is an error naming the
    /// tensor, and then no param changes.
    pub fn load_safetensors(&mut self, path: impl AsRef<Path>) -> Result<()> {
        let weights = |e| TensorError::Weights {
            model: D::NAME.into(),
            source: Box::new(e),
        };
        let loader = BytesWeightLoader::open(path.as_ref()).map_err(weights)?;
        let names = loader.names();
        if let Some(extra) = names
            .iter()
            .find(|n| !self.specs.iter().any(|(p, _)| p == *n))
        {
            return Err(Self::error(format!(
                "{}: tensor \"{extra}\" is not a param of the model",
                loader.source_name()
            )));
        }
        let mut staged = Vec::with_capacity(self.specs.len());
        for (name, shape) in &self.specs {
            if !names.contains(name) {
                return Err(Self::error(format!(
                    "{}: no tensor for param \"{name}\" ({shape})",
                    loader.source_name()
                )));
            }
            let t = loader.get_as(name, shape.dtype()).map_err(weights)?;
            if t.dims() != shape.static_dims().unwrap_or_default().as_slice() {
                return Err(Self::error(format!(
                    "{}: param \"{name}\" is {shape}, the file's tensor has dims {:?}",
                    loader.source_name(),
                    t.dims()
                )));
            }
            staged.push((name.clone(), t));
        }
        for (name, t) in staged {
            self.set_param(&name, &t)?;
        }
        Ok(())
    }

    /// The graph `forward` traces to for these input shapes (inputs `arg0`,
    /// `arg1`, ...; params by name).
    pub fn graph(&self, shapes: &[Shape]) -> Result<Graph> {
        graph_with(ScopeOptions::named(D::NAME), |s| {
            let model = D::declare(s);
            let xs: Vec<Tensor> = shapes
                .iter()
                .enumerate()
                .map(|(i, sh)| s.input(&format!("arg{i}"), sh.clone()))
                .collect();
            match model.trace(&xs) {
                Ok(outs) => outs,
                Err(e) => vec![Tensor::sticky(Err(e))],
            }
        })
    }

    /// Runs `forward` on host tensors, tracing and compiling it on the
    /// first call with these input shapes. Every param must be set.
    pub fn forward(&mut self, inputs: &[&HostTensor]) -> Result<Vec<HostTensor>> {
        if let Some(i) = self.values.iter().position(Option::is_none) {
            return Err(Self::error(format!(
                "param \"{}\" is not set (set_param / load_safetensors)",
                self.specs[i].0
            )));
        }
        let key: Vec<Shape> = inputs.iter().map(|t| t.shape()).collect();
        if !self.compiled.contains_key(&key) {
            let mut c = compile_on(&self.opts, self.graph(&key)?, "model compile")?;
            for ((name, _), v) in self.specs.iter().zip(&self.values) {
                let v = v.as_ref().expect("checked above");
                c.set_param_typed(name, v)
                    .map_err(|e| runtime("set_param", e))?;
            }
            self.traces += 1;
            self.compiled.insert(key.clone(), c);
        }
        let names: Vec<String> = (0..inputs.len()).map(|i| format!("arg{i}")).collect();
        let feeds: Vec<(&str, &HostTensor)> = names
            .iter()
            .map(String::as_str)
            .zip(inputs.iter().copied())
            .collect();
        let c = self.compiled.get_mut(&key).expect("compiled above");
        c.try_run_typed(&feeds)
            .map_err(|e| runtime("model forward", e))
    }

    /// How many times `forward` was traced and compiled.
    pub fn traces(&self) -> usize {
        self.traces
    }
}

fn runtime(what: &str, source: rlx_runtime::RuntimeError) -> TensorError {
    TensorError::Runtime {
        what: what.into(),
        source: Box::new(source),
    }
}
