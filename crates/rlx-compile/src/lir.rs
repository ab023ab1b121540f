//! LIR: MIR + buffer plan + schedule + I/O manifest, and [`lower`], the
//! pipeline that produces it.

use crate::memory::{check_plan, plan_memory, MemoryPlan};
use crate::passes::amp::{auto_mixed_precision, PrecisionPolicy};
use crate::passes::fold::{fold_constants, ConstEvaluator, FoldOptions};
use crate::passes::{
    cse::cse, dce::dce, decompose::decompose_unclaimed, precision::lower_precision,
    simplify::simplify,
};
use crate::pipeline::{CompilePipeline, CompileResult, PassRecord};
use crate::report::DispatchReport;
use crate::target::{fusion_passes, FusionPass};
use crate::{maybe_dump_pipeline, verified, CompileError};
use rlx_fusion::{FusionOptions, FusionReport};
use rlx_ir::env::vars as env;
use rlx_ir::{DType, Graph, NodeId, Op, Shape};
use std::collections::HashMap;

/// Session compute precision.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Precision {
    /// Everything as declared.
    #[default]
    F32,
    /// F32 values computed in F16 (F32 accumulation inside kernels; F32 I/O).
    F16,
    /// F32 values computed in BF16 (F32 accumulation inside kernels; F32 I/O).
    BF16,
}

impl Precision {
    /// The compute dtype that replaces F32, if any.
    pub fn compute_dtype(self) -> Option<DType> {
        match self {
            Precision::F32 => None,
            Precision::F16 => Some(DType::F16),
            Precision::BF16 => Some(DType::BF16),
        }
    }
}

/// What [`lower`] does.
#[derive(Clone, Debug, PartialEq)]
pub struct LowerOptions {
    /// Session precision.
    pub precision: Precision,
    /// Decompose every composite, even those the target claims natively.
    pub decompose_composites: bool,
    /// Values for symbolic dims.
    pub bindings: HashMap<String, usize>,
    /// Arena alignment in bytes (0 = 64).
    pub alignment: usize,
    /// Keep nodes no output depends on.
    pub keep_dead_code: bool,
    /// Run algebraic simplification (on by default).
    pub simplify: bool,
    /// Run common-subexpression elimination (on by default).
    pub cse: bool,
    /// Fold constant sub-expressions when an evaluator is given (on by default).
    pub fold_constants: bool,
    /// Limits of constant folding.
    pub fold: FoldOptions,
    /// Keep a copy of the graph after every pass in [`LirModule::passes`].
    pub keep_stages: bool,
    /// What to fuse (when the target claims the fused ops).
    pub fusion: FusionOptions,
    /// Automatic mixed precision (applies when `precision` is F32).
    pub precision_policy: PrecisionPolicy,
    /// The target's layout claims; without one, the last pass makes
    /// broadcasts / strided reads explicit ([`crate::legalize_layout`]).
    pub layout: crate::LayoutClaims,
    /// What control-flow bodies are lowered with when that is not derived
    /// from these options: a graph that is already optimised is re-lowered
    /// with its passes off (a param prelude, a dynamic graph's per-binding
    /// plan, a constant being folded), while its bodies still need the
    /// session's options. `None`: [`LowerOptions::for_subgraphs`] derives them.
    pub subgraphs: Option<Box<LowerOptions>>,
}

impl LowerOptions {
    /// The options a control-flow body (If / While / Scan / CustomFn) of a
    /// graph lowered with `self` is lowered with: [`LowerOptions::subgraphs`]
    /// when set, else the same precision, passes, fusion and layout but no
    /// dim bindings (bodies have static shapes) and no kept stages.
    pub fn for_subgraphs(&self) -> LowerOptions {
        match &self.subgraphs {
            Some(s) => (**s).clone(),
            None => LowerOptions {
                bindings: HashMap::new(),
                keep_stages: false,
                ..self.clone()
            },
        }
    }

    /// These options with the bodies of control-flow ops lowered with
    /// `session`'s (see [`LowerOptions::subgraphs`]).
    pub fn with_subgraphs_of(self, session: &LowerOptions) -> LowerOptions {
        LowerOptions {
            subgraphs: Some(Box::new(session.for_subgraphs())),
            ..self
        }
    }
}

impl Default for LowerOptions {
    fn default() -> Self {
        LowerOptions {
            precision: Precision::F32,
            decompose_composites: false,
            bindings: HashMap::new(),
            alignment: 0,
            keep_dead_code: false,
            simplify: true,
            cse: true,
            fold_constants: true,
            fold: FoldOptions::default(),
            keep_stages: false,
            fusion: FusionOptions::default(),
            precision_policy: PrecisionPolicy::AlwaysF32,
            layout: crate::LayoutClaims::NATIVE,
            subgraphs: None,
        }
    }
}

/// The graph's calling convention.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IoManifest {
    /// Inputs in declaration order: node, name, shape.
    pub inputs: Vec<(NodeId, String, Shape)>,
    /// Params in declaration order: node, name, shape.
    pub params: Vec<(NodeId, String, Shape)>,
    /// Outputs: node and shape.
    pub outputs: Vec<(NodeId, Shape)>,
}

/// A graph ready for a backend: verified MIR with static shapes, its
/// memory plan, execution order and I/O manifest.
#[derive(Clone, Debug, PartialEq)]
pub struct LirModule {
    /// The MIR after all passes.
    pub graph: Graph,
    /// The arena plan.
    pub plan: MemoryPlan,
    /// Execution order (a topological order of the non-leaf nodes).
    pub schedule: Vec<NodeId>,
    /// Inputs, params and outputs.
    pub io: IoManifest,
    /// A stable hash of the graph text and the plan (a cache key).
    pub fingerprint: u64,
    /// What each pass of the pipeline did, in order.
    pub passes: Vec<PassRecord>,
    /// What fusion did.
    pub fusion: FusionReport,
    /// How each op kind of the input graph runs on the target.
    pub dispatch: DispatchReport,
    /// What a backend lowers this module's control-flow sub-graphs with
    /// ([`LowerOptions::for_subgraphs`] of the session's options), so the
    /// session's precision and passes reach If / While / Scan bodies.
    pub subgraph_options: LowerOptions,
}

/// Lowers MIR to LIR for a target that runs `claims` natively, without
/// constant folding (see [`lower_with`]).
pub fn lower(
    g: &Graph,
    claims: &dyn Fn(&Op) -> bool,
    opts: &LowerOptions,
) -> Result<LirModule, CompileError> {
    lower_with(g, claims, opts, None)
}

/// The optimised MIR of [`optimize_with`], before binding and planning.
#[derive(Clone, Debug, PartialEq)]
pub struct OptimizedGraph {
    /// The graph after every pass (symbolic dims stay symbolic unless bound).
    pub graph: Graph,
    /// What each pass did, in order.
    pub passes: Vec<PassRecord>,
    /// What fusion did.
    pub fusion: FusionReport,
    /// How each op kind of the input graph runs on the target.
    pub dispatch: DispatchReport,
    /// Carried into [`LirModule::subgraph_options`].
    pub subgraph_options: LowerOptions,
}

/// Lowers MIR to LIR: verify -> bind dims -> precision -> decompose what the
/// target does not claim -> simplify -> fold constants (with `evaluator`) ->
/// simplify -> CSE -> DCE -> fusion -> memory plan.
pub fn lower_with(
    input: &Graph,
    claims: &dyn Fn(&Op) -> bool,
    opts: &LowerOptions,
    evaluator: Option<&dyn ConstEvaluator>,
) -> Result<LirModule, CompileError> {
    let optimized = optimize_with(input, claims, opts, evaluator)?;
    plan_optimized(input, optimized, &HashMap::new(), opts.alignment)
}

/// Every pass of [`lower_with`] but no memory plan: dims not in
/// `opts.bindings` stay symbolic, so a dynamic graph is optimised once and
/// then planned per binding with [`plan_optimized`].
pub fn optimize_with(
    input: &Graph,
    claims: &dyn Fn(&Op) -> bool,
    opts: &LowerOptions,
    evaluator: Option<&dyn ConstEvaluator>,
) -> Result<OptimizedGraph, CompileError> {
    let g = input;
    verified(g)?;
    let dump = env::IR_DUMP.get()?.is_some();
    let dispatch = DispatchReport::of(g, claims, opts.decompose_composites);
    // The fusion passes, in the one order `fusion_passes` defines, minus
    // those whose fused op the target would only decompose again.
    let fusions: Vec<FusionPass> = if opts.decompose_composites {
        Vec::new()
    } else {
        fusion_passes(&opts.fusion)
            .into_iter()
            .filter(|p| claims(&p.fused_op()))
            .map(|p| p.limited_to(claims))
            .collect()
    };
    let mut pipeline = CompilePipeline::new().keep_stages(opts.keep_stages || dump);
    if !opts.bindings.is_empty() {
        pipeline = pipeline.with_fn("bind_dims", |g| {
            g.bind_dims(&opts.bindings)
                .map_err(|source| CompileError::Pass {
                    pass: "bind_dims",
                    source,
                })
        });
    }
    if let Some(dt) = opts.precision.compute_dtype() {
        pipeline = pipeline.with_fn("precision", move |g| lower_precision(g, dt));
    } else if opts.precision_policy.low_dtype().is_some() {
        let policy = &opts.precision_policy;
        pipeline = pipeline.with_fn("amp", move |g| auto_mixed_precision(g, policy));
    }
    let decompose_all = opts.decompose_composites;
    pipeline = pipeline.with_fn("decompose", move |g| {
        // A custom op is a primitive: never decomposed, so always asked of the target.
        decompose_unclaimed(g, &|op| {
            (matches!(op, rlx_ir::Op::Custom(_)) || !decompose_all) && claims(op)
        })
    });
    if opts.simplify {
        pipeline = pipeline.with_fn("simplify", simplify);
    }
    if let (true, Some(eval)) = (opts.fold_constants, evaluator) {
        let fold = opts.fold;
        pipeline = pipeline.with_fn("fold", move |g| fold_constants(g, eval, fold));
        if opts.simplify {
            pipeline = pipeline.with_fn("simplify", simplify);
        }
    }
    if opts.cse {
        pipeline = pipeline.with_fn("cse", cse);
    }
    if !opts.keep_dead_code {
        pipeline = pipeline.with_fn("dce", dce);
    }
    for pass in &fusions {
        pipeline = pipeline.with(pass);
    }
    if opts.layout != crate::LayoutClaims::NATIVE {
        pipeline = pipeline.with(crate::LegalizeLayout::new(opts.layout));
    }
    let CompileResult {
        graph: g,
        records: passes,
    } = pipeline.run(g)?;
    drop(pipeline);
    let mut fusion = FusionReport::default();
    for pass in &fusions {
        fusion.extend(pass.take_report());
    }
    Ok(OptimizedGraph {
        graph: g,
        passes,
        fusion,
        dispatch,
        subgraph_options: opts.for_subgraphs(),
    })
}

/// Binds the remaining symbolic dims of an optimised graph (`bindings`;
/// empty when it is already static), plans its memory and builds the LIR.
/// `input` is the graph before the passes (for `RLX_IR_DUMP`).
pub fn plan_optimized(
    input: &Graph,
    optimized: OptimizedGraph,
    bindings: &HashMap<String, usize>,
    alignment: usize,
) -> Result<LirModule, CompileError> {
    let OptimizedGraph {
        graph: mut g,
        mut passes,
        fusion,
        dispatch,
        subgraph_options,
    } = optimized;
    if !bindings.is_empty() {
        let bound = CompilePipeline::new()
            .with_fn("bind_dims", |g| {
                g.bind_dims(bindings).map_err(|source| CompileError::Pass {
                    pass: "bind_dims",
                    source,
                })
            })
            .run(&g)?;
        g = bound.graph;
        passes.extend(bound.records);
    }
    verified(&g)?;
    let dump = env::IR_DUMP.get()?.is_some();
    let plan = plan_memory(&g, if alignment == 0 { 64 } else { alignment })?;
    check_plan(&g, &plan).map_err(|e| CompileError::Verify {
        graph: g.name().into(),
        errors: e,
    })?;
    let schedule = g.ids().filter(|&i| !g.node(i).op.is_leaf()).collect();
    let io = IoManifest {
        inputs: g
            .inputs()
            .into_iter()
            .map(|(i, n, s)| (i, n.to_string(), s.clone()))
            .collect(),
        params: g
            .params()
            .into_iter()
            .map(|(i, n, s)| (i, n.to_string(), s.clone()))
            .collect(),
        outputs: g
            .outputs()
            .iter()
            .map(|&o| (o, g.shape(o).clone()))
            .collect(),
    };
    let fingerprint = crate::stage::fingerprint(&g, &plan);
    if env::FUSION_REPORT.get()? == Some(true) {
        eprintln!("[rlx] graph \"{}\" {fusion}", g.name());
    }
    if env::DISPATCH_REPORT.get()? == Some(true) {
        eprintln!("[rlx] graph \"{}\" {dispatch}", g.name());
    }
    let lir = LirModule {
        graph: g,
        plan,
        schedule,
        io,
        fingerprint,
        passes,
        fusion,
        dispatch,
        subgraph_options,
    };
    if dump {
        // A dump is a diagnostic: failing to write it must not fail the compile.
        if let Err(e) = maybe_dump_pipeline(input, &lir) {
            eprintln!("[rlx] RLX_IR_DUMP: could not write the pipeline dump: {e}");
        }
    }
    Ok(lir)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rlx_ir::GraphExt;

    /// These tests are about the planner: keep every node.
    fn unfused() -> LowerOptions {
        LowerOptions {
            fusion: FusionOptions::disabled(),
            ..LowerOptions::default()
        }
    }

    #[test]
    fn plan_reuses_dead_buffers_and_checks() {
        let mut g = Graph::new("chain");
        let x = g.input("x", Shape::new(&[256], DType::F32));
        let mut y = x;
        for _ in 0..8 {
            y = g.exp(y);
        }
        g.set_outputs(vec![y]);
        let lir = lower(&g, &|_| true, &unfused()).unwrap();
        // Each buffer is 1 KiB; each exp overwrites its dying input in place.
        assert_eq!(lir.plan.total_buffer_bytes, 9 * 1024);
        assert_eq!(lir.plan.arena_bytes, 1024);
        check_plan(&lir.graph, &lir.plan).unwrap();
        // Without in-place reuse a chain needs two live at a time.
        let apart = crate::memory::plan_memory_with(&lir.graph, 64, false).unwrap();
        assert_eq!(apart.arena_bytes, 2 * 1024);
        check_plan(&lir.graph, &apart).unwrap();
    }

    #[test]
    fn late_inputs_are_live_from_the_start() {
        // An input declared after other nodes is still copied in before they run.
        let mut g = Graph::new("late");
        let x = g.input("x", Shape::new(&[16], DType::F32));
        let a = g.exp(x);
        let b = g.exp(a);
        let y = g.input("y", Shape::new(&[16], DType::F32));
        let c = g.add(b, y);
        g.set_outputs(vec![c]);
        let lir = lower(&g, &|_| true, &unfused()).unwrap();
        check_plan(&lir.graph, &lir.plan).unwrap();
        let (sa, sy) = (
            lir.plan.slots[a.index()].unwrap(),
            lir.plan.slots[y.index()].unwrap(),
        );
        assert!(sa.offset + sa.size <= sy.offset || sy.offset + sy.size <= sa.offset);
    }

    #[test]
    fn unbound_symbol_is_an_error_naming_it() {
        let mut g = Graph::new("dyn");
        let x = g.input(
            "x",
            Shape::from_dims(vec![rlx_ir::Dim::sym("batch"), 4usize.into()], DType::F32),
        );
        let y = g.exp(x);
        g.set_outputs(vec![y]);
        let e = lower(&g, &|_| true, &LowerOptions::default())
            .unwrap_err()
            .to_string();
        assert!(e.contains("batch"), "{e}");
        let opts = LowerOptions {
            bindings: [("batch".to_string(), 3)].into(),
            ..Default::default()
        };
        let lir = lower(&g, &|_| true, &opts).unwrap();
        assert_eq!(lir.io.outputs[0].1, Shape::new(&[3, 4], DType::F32));
    }
}
