//! Training steps (feature `optim`): [`TrainStep`] runs forward +
//! [`rlx_autodiff::grad_with_loss`] + an [`rlx_optim::Optimizer`] update
//! over one compiled graph; [`train_step`] builds one from a loss closure
//! over [`Tensor`]s.
//!
//! [`TrainStep::new`] differentiates a loss graph with respect to the
//! params you name (the others stay frozen), compiles the result once, and
//! keeps every param's values. [`TrainStep::step`] runs forward and
//! backward on a batch, clips the gradients by their global norm if asked,
//! lets the optimizer update the trainable params in place, uploads them,
//! and ends the optimizer's iteration (which advances its schedule).

use crate::error::{Result, TensorError};
use crate::scope::{graph_with, Outputs, ScopeOptions};
use crate::tensor::Tensor;
use crate::transform::{compile_on, JitOptions};
use rlx_ir::{DType, Graph, Shape};
use rlx_optim::{global_grad_clip_scale, l2_norm, Optimizer};
use rlx_runtime::CompiledGraph;

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

fn invalid(reason: String) -> TensorError {
    TensorError::invalid("train_step", reason)
}

fn runtime(what: &str, source: rlx_runtime::RuntimeError) -> TensorError {
    TensorError::Runtime {
        what: what.into(),
        source: Box::new(source),
    }
}

impl<O: Optimizer> TrainStep<O> {
    /// Differentiates `loss_graph` (first output: a scalar f32 loss) with
    /// respect to the params named in `trainable` and compiles it on the CPU.
    pub fn new(loss_graph: &Graph, trainable: &[&str], optimizer: O) -> Result<Self> {
        Self::with_options(loss_graph, trainable, optimizer, &JitOptions::default())
    }

    /// [`TrainStep::new`] on `opts.device` with `opts.compile`.
    pub fn with_options(
        loss_graph: &Graph,
        trainable: &[&str],
        optimizer: O,
        opts: &JitOptions,
    ) -> Result<Self> {
        let mut wrt = Vec::with_capacity(trainable.len());
        for name in trainable {
            let id = loss_graph.find_param(name).ok_or_else(|| {
                let known: Vec<&str> = loss_graph.params().iter().map(|p| p.1).collect();
                invalid(format!(
                    "trainable param \"{name}\" is not a param of graph \"{}\" (params: {known:?})",
                    loss_graph.name()
                ))
            })?;
            wrt.push(id);
        }
        let grad_graph = rlx_autodiff::grad_with_loss(loss_graph, &wrt).map_err(|source| {
            TensorError::Autodiff {
                transform: "train_step",
                source: Box::new(source),
            }
        })?;
        let compiled = compile_on(opts, grad_graph, "train_step compile")?;
        let mut params = Vec::new();
        for (name, shape) in compiled.param_shapes() {
            let dims = shape
                .static_dims()
                .ok_or_else(|| invalid(format!("param \"{name}\" has a symbolic shape {shape}")))?;
            if shape.dtype() != DType::F32 {
                return Err(invalid(format!(
                    "param \"{name}\" is {}; TrainStep trains f32 params",
                    shape.dtype()
                )));
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
    pub fn set_param(&mut self, name: &str, values: &[f32]) -> Result<()> {
        let slot = self
            .params
            .iter_mut()
            .find(|p| p.name == name)
            .ok_or_else(|| invalid(format!("no param named \"{name}\"")))?;
        self.compiled
            .try_set_param(name, values)
            .map_err(|e| runtime("set_param", e))?;
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
    pub fn step(&mut self, inputs: &[(&str, &[f32])]) -> Result<StepOutput> {
        let mut out = self
            .compiled
            .try_run(inputs)
            .map_err(|e| runtime("train_step run", e))?;
        let n_train = self.params.iter().filter(|p| p.trainable).count();
        if out.len() < 1 + n_train {
            return Err(invalid(format!(
                "the gradient graph returned {} outputs, expected loss + {n_train} gradients",
                out.len()
            )));
        }
        let aux = out.split_off(1 + n_train);
        let mut grads = out.split_off(1);
        let loss = *out[0].first().ok_or_else(|| {
            invalid("the loss output is empty; the first output must be a scalar".into())
        })?;
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
                .map_err(|source| TensorError::Optim {
                    param: p.name.clone(),
                    source: Box::new(source),
                })?;
            self.compiled
                .try_set_param(&p.name, &p.values)
                .map_err(|e| runtime("train_step update", e))?;
        }
        self.optimizer.end_iteration();
        Ok(StepOutput {
            loss,
            grad_norm,
            aux,
        })
    }
}

/// A compiled training step from a loss closure: `loss(params, inputs)`
/// gets the params (declared as graph params, all trainable) and the
/// inputs (graph inputs, fed by name to [`TrainStep::step`]) as
/// [`Tensor`]s, in the order given, and returns the scalar loss first
/// (other outputs come back as [`StepOutput::aux`]). The graph is traced
/// once, differentiated by `rlx_autodiff` and compiled on the CPU.
///
/// ```
/// use rlx_optim::{Sgd, SgdConfig};
/// use rlx_tensor::{shape, train_step, Tensor};
///
/// // loss = sum((x * w - 1)^2): w -> 1 / x.
/// let sgd = Sgd::new(SgdConfig { lr: 0.02, ..Default::default() })?;
/// let mut step = train_step(
///     |p: &[Tensor], b: &[Tensor]| (&b[0] * &p[0] - 1.0).square().sum(None, false),
///     &[("w", shape![2])],
///     &[("x", shape![2])],
///     sgd,
/// )?;
/// step.set_param("w", &[0.0, 0.0])?;
/// for _ in 0..100 {
///     step.step(&[("x", &[2.0, 4.0])])?;
/// }
/// let w = step.param("w").unwrap();
/// assert!((w[0] - 0.5).abs() < 1e-4 && (w[1] - 0.25).abs() < 1e-4);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn train_step<Out: Outputs, O: Optimizer>(
    loss: impl Fn(&[Tensor], &[Tensor]) -> Out,
    params: &[(&str, Shape)],
    inputs: &[(&str, Shape)],
    optimizer: O,
) -> Result<TrainStep<O>> {
    train_step_with(loss, params, inputs, optimizer, &JitOptions::default())
}

/// [`train_step`] on `opts.device` with `opts.compile`.
pub fn train_step_with<Out: Outputs, O: Optimizer>(
    loss: impl Fn(&[Tensor], &[Tensor]) -> Out,
    params: &[(&str, Shape)],
    inputs: &[(&str, Shape)],
    optimizer: O,
    opts: &JitOptions,
) -> Result<TrainStep<O>> {
    let g = graph_with(ScopeOptions::named("train_step"), |s| {
        let p: Vec<Tensor> = params
            .iter()
            .map(|(n, sh)| s.param(n, sh.clone()))
            .collect();
        let x: Vec<Tensor> = inputs
            .iter()
            .map(|(n, sh)| s.input(n, sh.clone()))
            .collect();
        loss(&p, &x)
    })?;
    let names: Vec<&str> = params.iter().map(|(n, _)| *n).collect();
    TrainStep::with_options(&g, &names, optimizer, opts)
}
