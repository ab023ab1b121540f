//! [`Session`]: a device plus the compile entry points.

use crate::compiled::ParamRoute;
use crate::prelude::{Assembly, Piece, PreludeExec};
use crate::{devices, CompileOptions, CompiledGraph, Result, RuntimeError};
use rlx_compile::{
    lower, optimize_with, plan_optimized, split_param_prelude, ConstEvalError, ConstEvaluator,
    Dispatch, DispatchPolicy, FusionOptions, FusionTarget, LirModule, LowerOptions, OptimizedGraph,
};
use rlx_driver::{registry, Backend, Device};
use rlx_ir::{Graph, HostTensor};

/// Compiles graphs for one device.
///
/// ```
/// use rlx_runtime::Session;
/// use rlx_driver::Device;
/// use rlx_ir::{DType, Graph, GraphExt, Shape};
///
/// let mut g = Graph::new("double");
/// let x = g.input("x", Shape::new(&[3], DType::F32));
/// let y = g.mul(x, g.constant(2.0, DType::F32));
/// g.set_outputs(vec![y]);
/// let mut c = Session::new(Device::Cpu).compile(g);
/// assert_eq!(c.run(&[("x", &[1.0, 2.0, 3.0])]), vec![vec![2.0, 4.0, 6.0]]);
/// ```
#[derive(Clone, Debug)]
pub struct Session {
    device: Device,
}

impl Session {
    /// A session for `device` (availability is checked at compile).
    pub fn new(device: Device) -> Session {
        devices::ensure_builtin_backends();
        Session { device }
    }

    /// The session's device.
    pub fn device(&self) -> Device {
        self.device
    }

    /// Compiles with default options; panics with the error message on failure.
    pub fn compile(&self, graph: Graph) -> CompiledGraph {
        self.try_compile(graph).unwrap_or_else(|e| panic!("{e}"))
    }

    /// Compiles with `opts`; panics with the error message on failure.
    pub fn compile_with(&self, graph: Graph, opts: &CompileOptions) -> CompiledGraph {
        self.try_compile_with(graph, opts)
            .unwrap_or_else(|e| panic!("{e}"))
    }

    /// Compiles with default options.
    pub fn try_compile(&self, graph: Graph) -> Result<CompiledGraph> {
        self.try_compile_with(graph, &CompileOptions::default())
    }

    /// Compiles with `opts`. With `opts.hoist_params`, the part of the
    /// graph that depends only on params is compiled apart and runs once
    /// per param change (see [`CompiledGraph::prelude_runs`]).
    pub fn try_compile_with(&self, graph: Graph, opts: &CompileOptions) -> Result<CompiledGraph> {
        let backend = self.backend()?;
        let opts = opts.clone().with_env_overlay()?;
        let lower_opts = lower_options_for(&opts, backend.as_ref());
        let evaluator = BackendEvaluator::new(backend.as_ref(), &lower_opts);
        let claims = |op: &rlx_ir::Op| backend.claims(op);
        let optimized = optimize_with(&graph, &claims, &lower_opts, Some(&evaluator))?;
        // Caller-visible params in the order the caller declared them
        // (passes may move leaves), minus those no output needs.
        let kept = optimized.graph.params();
        let user_params: Vec<(String, rlx_ir::Shape)> = graph
            .params()
            .iter()
            .filter(|p| kept.iter().any(|k| k.1 == p.1))
            .map(|p| (p.1.to_string(), p.2.clone()))
            .collect();
        let split = if opts.hoist_params {
            split_param_prelude(&optimized.graph)
        } else {
            None
        };
        let index_in = |io: &[(rlx_ir::NodeId, String, rlx_ir::Shape)], name: &str| {
            io.iter().position(|p| p.1 == name)
        };
        let Some(split) = split else {
            let lir = plan_optimized(&graph, optimized, &Default::default(), lower_opts.alignment)?;
            check_policies(&lir, &opts, self.device)?;
            let routes = user_params
                .into_iter()
                .map(|(name, shape)| ParamRoute {
                    main: index_in(&lir.io.params, &name),
                    prelude: None,
                    pieces: Vec::new(),
                    name,
                    shape,
                })
                .collect();
            let exec = compile_limited(backend.as_ref(), lir, opts.threads)?;
            return Ok(CompiledGraph::with_prelude(
                self.device,
                exec,
                routes,
                None,
                Assembly::default(),
            ));
        };
        let main = OptimizedGraph {
            graph: split.main,
            ..optimized
        };
        let lir = plan_optimized(&graph, main, &Default::default(), lower_opts.alignment)?;
        check_policies(&lir, &opts, self.device)?;
        // Each assembled param's pieces go with the params they copy.
        let mut assembly = Assembly::default();
        let mut pieces: Vec<(String, Piece)> = Vec::new();
        for a in &split.assembled {
            let index = index_in(&lir.io.params, &a.name).expect("derived params are in main");
            let target = assembly.add(index);
            pieces.extend(a.pieces.iter().map(|p| {
                let piece = Piece {
                    target,
                    bytes: p.bytes.clone(),
                    offset: p.offset,
                };
                (p.param.clone(), piece)
            }));
        }
        let prelude = if split.prelude.outputs().is_empty() {
            None
        } else {
            Some(compile_prelude(
                backend.as_ref(),
                &split.prelude,
                &split.derived,
                &lir,
                &lower_opts,
                opts.threads,
            )?)
        };
        let routes = user_params
            .into_iter()
            .map(|(name, shape)| ParamRoute {
                main: index_in(&lir.io.params, &name),
                prelude: prelude
                    .as_ref()
                    .and_then(|p| index_in(&p.lir().io.params, &name)),
                pieces: pieces
                    .iter()
                    .filter(|(param, _)| *param == name)
                    .map(|(_, piece)| piece.clone())
                    .collect(),
                name,
                shape,
            })
            .collect();
        let exec = compile_limited(backend.as_ref(), lir, opts.threads)?;
        Ok(CompiledGraph::with_prelude(
            self.device,
            exec,
            routes,
            prelude,
            assembly,
        ))
    }

    /// Runs every pass on `graph` without planning (dims not bound in
    /// `opts` stay symbolic): the once-per-graph half of a dynamic compile.
    pub(crate) fn optimize(&self, graph: &Graph, opts: &CompileOptions) -> Result<OptimizedGraph> {
        let backend = self.backend()?;
        let opts = opts.clone().with_env_overlay()?;
        let lower_opts = lower_options_for(&opts, backend.as_ref());
        let evaluator = BackendEvaluator::new(backend.as_ref(), &lower_opts);
        Ok(optimize_with(
            graph,
            &|op| backend.claims(op),
            &lower_opts,
            Some(&evaluator),
        )?)
    }

    fn backend(&self) -> Result<std::sync::Arc<dyn Backend>> {
        backend_of(self.device)
    }
}

/// Plans and compiles the prelude graph, whose outputs fill the `derived`
/// params of the main module `lir`; `session` is what the main graph was
/// lowered with.
fn compile_prelude(
    backend: &dyn Backend,
    prelude: &Graph,
    derived: &[String],
    lir: &LirModule,
    session: &LowerOptions,
    threads: Option<usize>,
) -> Result<PreludeExec> {
    // The prelude is already optimised: plan it as it is (its control-flow
    // bodies are not: they get the session's options).
    let prelude_opts = LowerOptions {
        simplify: false,
        cse: false,
        fold_constants: false,
        fusion: FusionOptions::disabled(),
        alignment: session.alignment,
        layout: backend.layout(),
        ..LowerOptions::default()
    }
    .with_subgraphs_of(session);
    let prelude_lir = lower(prelude, &|op| backend.claims(op), &prelude_opts)?;
    let targets = derived
        .iter()
        .map(|d| {
            lir.io
                .params
                .iter()
                .position(|p| &p.1 == d)
                .expect("derived params are in the main graph")
        })
        .collect();
    let exec = compile_limited(backend, prelude_lir, threads)?;
    Ok(PreludeExec::new(exec, targets))
}

/// `backend.compile(lir)` with its kernels limited to `threads` host threads.
fn compile_limited(
    backend: &dyn Backend,
    lir: LirModule,
    threads: Option<usize>,
) -> Result<Box<dyn rlx_driver::Executable>> {
    let mut exec = backend.compile(lir)?;
    exec.limit_threads(threads)?;
    Ok(exec)
}

/// Enforces `DispatchPolicy::ErrorOnUnsupported` and `assert_fusion_clean`.
fn check_policies(lir: &LirModule, opts: &CompileOptions, device: Device) -> Result<()> {
    let graph = || lir.graph.name().to_string();
    if opts.dispatch == DispatchPolicy::ErrorOnUnsupported {
        let not_native: Vec<String> = lir
            .dispatch
            .kinds
            .iter()
            .filter(|(_, (d, _))| *d != Dispatch::Native)
            .map(|(k, (d, n))| format!("{k:?} ({d:?} x{n})"))
            .collect();
        if !not_native.is_empty() {
            return Err(RuntimeError::NotNative {
                graph: graph(),
                device,
                kinds: not_native.join(", "),
            });
        }
    }
    if opts.assert_fusion_clean && !lir.fusion.missed.is_empty() {
        return Err(RuntimeError::FusionNotClean {
            graph: graph(),
            count: lir.fusion.missed.len(),
            report: lir.fusion.to_string(),
        });
    }
    Ok(())
}

fn backend_of(device: Device) -> Result<std::sync::Arc<dyn Backend>> {
    devices::ensure_builtin_backends();
    registry::backend_for(device).ok_or_else(|| RuntimeError::DeviceUnavailable {
        device,
        reason: devices::unavailable_reason(device),
    })
}

/// The passes' view of `device`'s backend: the ops it claims natively.
pub fn fusion_target(device: Device) -> Result<FusionTarget> {
    let backend = backend_of(device)?;
    let layout = backend.layout();
    Ok(FusionTarget::new(backend.name(), move |op| backend.claims(op)).with_layout(layout))
}

/// The lowering options of `opts` with the backend's layout claims (for
/// control-flow bodies too).
pub(crate) fn lower_options_for(opts: &CompileOptions, backend: &dyn Backend) -> LowerOptions {
    let mut lower = opts.lower_options();
    lower.layout = backend.layout();
    if let Some(sub) = &mut lower.subgraphs {
        sub.layout = backend.layout();
    }
    lower
}

/// Constant folding's evaluator: runs the constant sub-graph on the same
/// backend, so folded values are bit-identical to what the kernels would
/// compute at run time (control-flow bodies lowered with the session's
/// options, as at run time).
struct BackendEvaluator<'a> {
    backend: &'a dyn Backend,
    opts: LowerOptions,
}

impl<'a> BackendEvaluator<'a> {
    fn new(backend: &'a dyn Backend, session: &LowerOptions) -> Self {
        let opts = LowerOptions {
            fold_constants: false,
            ..LowerOptions::default()
        }
        .with_subgraphs_of(session);
        BackendEvaluator { backend, opts }
    }
}

impl ConstEvaluator for BackendEvaluator<'_> {
    fn evaluate(&self, g: &Graph) -> std::result::Result<Vec<HostTensor>, ConstEvalError> {
        let backend = self.backend;
        let lir = lower(g, &|op| backend.claims(op), &self.opts)?;
        let mut exec = backend.compile(lir)?;
        Ok(exec.run(&[])?)
    }
}
