//! [`Session`]: a device plus the compile entry points.

use crate::{devices, CompileOptions, CompiledGraph, Result, RuntimeError};
use rlx_compile::{
    lower, lower_with, optimize_with, ConstEvaluator, Dispatch, DispatchPolicy, FusionTarget,
    LirModule, LowerOptions, OptimizedGraph,
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

    /// Compiles with `opts`.
    pub fn try_compile_with(&self, graph: Graph, opts: &CompileOptions) -> Result<CompiledGraph> {
        let backend = self.backend()?;
        let opts = opts.clone().with_env_overlay()?;
        let evaluator = BackendEvaluator(backend.as_ref());
        let lir = lower_with(
            &graph,
            &|op| backend.claims(op),
            &lower_options_for(&opts, backend.as_ref()),
            Some(&evaluator),
        )?;
        check_policies(&lir, &opts, self.device)?;
        let exec = backend.compile(lir)?;
        Ok(CompiledGraph::new(self.device, exec))
    }

    /// Runs every pass on `graph` without planning (dims not bound in
    /// `opts` stay symbolic): the once-per-graph half of a dynamic compile.
    pub(crate) fn optimize(&self, graph: &Graph, opts: &CompileOptions) -> Result<OptimizedGraph> {
        let backend = self.backend()?;
        let opts = opts.clone().with_env_overlay()?;
        let evaluator = BackendEvaluator(backend.as_ref());
        Ok(optimize_with(
            graph,
            &|op| backend.claims(op),
            &lower_options_for(&opts, backend.as_ref()),
            Some(&evaluator),
        )?)
    }

    fn backend(&self) -> Result<std::sync::Arc<dyn Backend>> {
        backend_of(self.device)
    }
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

/// The lowering options of `opts` with the backend's layout claims.
fn lower_options_for(opts: &CompileOptions, backend: &dyn Backend) -> LowerOptions {
    LowerOptions {
        layout: backend.layout(),
        ..opts.lower_options()
    }
}

/// Constant folding's evaluator: runs the constant sub-graph on the same
/// backend, so folded values are bit-identical to what the kernels would
/// compute at run time.
struct BackendEvaluator<'a>(&'a dyn Backend);

impl ConstEvaluator for BackendEvaluator<'_> {
    fn evaluate(&self, g: &Graph) -> std::result::Result<Vec<HostTensor>, String> {
        let backend = self.0;
        let opts = LowerOptions {
            fold_constants: false,
            ..LowerOptions::default()
        };
        let lir = lower(g, &|op| backend.claims(op), &opts).map_err(|e| e.to_string())?;
        let mut exec = backend.compile(lir).map_err(|e| e.to_string())?;
        exec.run(&[]).map_err(|e| e.to_string())
    }
}
