//! A training step over compiled graphs: forward + [`grad_with_loss`] +
//! optimizer update, with gradient clipping and the optimizer's schedule.
//!
//! [`TrainStep::new`] differentiates a loss graph with respect to the
//! params you name (the others stay frozen), compiles the result once, and
//! keeps every param's values. [`TrainStep::step`] runs forward and
//! backward on a batch, clips the gradients by their global norm if asked,
//! lets the optimizer update the trainable params in place, uploads them,
//! and ends the optimizer's iteration (which advances its schedule).
//!
//! ```
//! use rlx::prelude::*;
//! use rlx::optim::{Sgd, SgdConfig};
//! use rlx::train::TrainStep;
//!
//! // loss = sum((x * w - 1)^2): w -> 1 / x.
//! let mut g = Graph::new("fit");
//! let x = g.input("x", Shape::new(&[2], DType::F32));
//! let w = g.param("w", Shape::new(&[2], DType::F32));
//! let r = g.mul(x, w);
//! let r = g.sub(r, 1.0);
//! let r2 = g.mul(r, r);
//! let loss = g.sum(r2, &[0], false);
//! g.set_outputs(vec![loss]);
//!
//! let sgd = Sgd::new(SgdConfig { lr: 0.02, ..Default::default() })?;
//! let mut t = TrainStep::new(&g, &["w"], sgd)?;
//! t.set_param("w", &[0.0, 0.0])?;
//! for _ in 0..100 {
//!     t.step(&[("x", &[2.0, 4.0])])?;
//! }
//! let w = t.param("w").unwrap();
//! assert!((w[0] - 0.5).abs() < 1e-4 && (w[1] - 0.25).abs() < 1e-4);
//! # Ok::<(), anyhow::Error>(())
//! ```

pub mod digits;

use crate::autodiff::grad_with_loss;
use crate::{CompileOptions, CompiledGraph, Device, Graph, Session};
use anyhow::{anyhow, bail, Context};
use rlx_optim::{global_grad_clip_scale, l2_norm, Optimizer};

/// One param's host values.
struct ParamSlot {
    name: String,
    dims: Vec<usize>,
    values: Vec<f32>,
    trainable: bool,
}

/// What one step returned.
#[derive(Clone, Debug, PartialEq)]
pub struct StepOutput {
    /// The loss (the forward graph's first output).
    pub loss: f32,
    /// The global L2 norm of the gradients before clipping.
    pub grad_norm: f32,
    /// The forward graph's other outputs (auxiliary values such as logits).
    pub aux: Vec<Vec<f32>>,
}

/// Forward + backward + optimizer update over one compiled graph.
pub struct TrainStep<O: Optimizer> {
    compiled: CompiledGraph,
    params: Vec<ParamSlot>,
    optimizer: O,
    max_grad_norm: Option<f64>,
}

impl<O: Optimizer> TrainStep<O> {
    /// Differentiates `loss_graph` (first output: a scalar f32 loss) with
    /// respect to the params named in `trainable` and compiles it on the CPU.
    pub fn new(loss_graph: &Graph, trainable: &[&str], optimizer: O) -> crate::Result<Self> {
        Self::with_options(
            loss_graph,
            trainable,
            optimizer,
            Device::Cpu,
            &CompileOptions::default(),
        )
    }

    /// [`TrainStep::new`] on `device` with `opts`.
    pub fn with_options(
        loss_graph: &Graph,
        trainable: &[&str],
        optimizer: O,
        device: Device,
        opts: &CompileOptions,
    ) -> crate::Result<Self> {
        let mut wrt = Vec::with_capacity(trainable.len());
        for name in trainable {
            let id = loss_graph.find_param(name).ok_or_else(|| {
                let known: Vec<&str> = loss_graph.params().iter().map(|p| p.1).collect();
                anyhow!(
                    "trainable param \"{name}\" is not a param of graph \"{}\" (params: {known:?})",
                    loss_graph.name()
                )
            })?;
            wrt.push(id);
        }
        let grad_graph = grad_with_loss(loss_graph, &wrt)?;
        let compiled = Session::new(device).try_compile_with(grad_graph, opts)?;
        let mut params = Vec::new();
        for (name, shape) in compiled.param_shapes() {
            let dims = shape
                .static_dims()
                .ok_or_else(|| anyhow!("param \"{name}\" has a symbolic shape {shape}"))?;
            if shape.dtype() != crate::DType::F32 {
                bail!(
                    "param \"{name}\" is {}; TrainStep trains f32 params",
                    shape.dtype()
                );
            }
            let n = dims.iter().product();
            params.push(ParamSlot {
                trainable: trainable.contains(&name.as_str()),
                name,
                dims,
                values: vec![0.0; n],
            });
        }
        // Keep the order of `trainable`: the gradient outputs follow it.
        params.sort_by_key(|p| {
            trainable
                .iter()
                .position(|t| *t == p.name)
                .unwrap_or(usize::MAX)
        });
        Ok(TrainStep {
            compiled,
            params,
            optimizer,
            max_grad_norm: None,
        })
    }

    /// Clips gradients to a global L2 norm of `max_norm` before each update
    /// (as `torch.nn.utils.clip_grad_norm_`).
    pub fn clip_grad_norm(mut self, max_norm: f64) -> Self {
        self.max_grad_norm = Some(max_norm);
        self
    }

    /// Sets a param's values (trainable or frozen).
    pub fn set_param(&mut self, name: &str, values: &[f32]) -> crate::Result<()> {
        let slot = self
            .params
            .iter_mut()
            .find(|p| p.name == name)
            .ok_or_else(|| anyhow!("no param named \"{name}\""))?;
        self.compiled.try_set_param(name, values)?;
        slot.values.copy_from_slice(values);
        Ok(())
    }

    /// A param's current values.
    pub fn param(&self, name: &str) -> Option<&[f32]> {
        self.params
            .iter()
            .find(|p| p.name == name)
            .map(|p| p.values.as_slice())
    }

    /// Every param: (name, dims, values).
    pub fn params(&self) -> impl Iterator<Item = (&str, &[usize], &[f32])> {
        self.params
            .iter()
            .map(|p| (p.name.as_str(), p.dims.as_slice(), p.values.as_slice()))
    }

    /// The optimizer (its learning rate, iteration, state).
    pub fn optimizer(&self) -> &O {
        &self.optimizer
    }

    /// The optimizer, mutably (e.g. to change the learning rate).
    pub fn optimizer_mut(&mut self) -> &mut O {
        &mut self.optimizer
    }

    /// One training step on a batch of named inputs.
    pub fn step(&mut self, inputs: &[(&str, &[f32])]) -> crate::Result<StepOutput> {
        let mut out = self.compiled.try_run(inputs)?;
        let n_train = self.params.iter().filter(|p| p.trainable).count();
        if out.len() < 1 + n_train {
            bail!(
                "the gradient graph returned {} outputs, expected loss + {n_train} gradients",
                out.len()
            );
        }
        let aux = out.split_off(1 + n_train);
        let mut grads = out.split_off(1);
        let loss = *out[0]
            .first()
            .context("the loss output is empty; the first output must be a scalar")?;
        let refs: Vec<&[f32]> = grads.iter().map(Vec::as_slice).collect();
        let grad_norm = l2_norm(&refs);
        if let Some(max_norm) = self.max_grad_norm {
            let scale = global_grad_clip_scale(&refs, max_norm);
            if scale != 1.0 {
                grads
                    .iter_mut()
                    .for_each(|g| g.iter_mut().for_each(|v| *v *= scale));
            }
        }
        for (p, grad) in self.params.iter_mut().filter(|p| p.trainable).zip(&grads) {
            self.optimizer
                .step_f32(&p.name, &p.dims, &mut p.values, grad)
                .with_context(|| format!("optimizer step of \"{}\"", p.name))?;
            self.compiled.try_set_param(&p.name, &p.values)?;
        }
        self.optimizer.end_iteration();
        Ok(StepOutput {
            loss,
            grad_norm,
            aux,
        })
    }
}
