//! What a target runs natively ([`FusionTarget`], [`supports_op`],
//! [`supported_for_target`]), how ops without a native kernel are handled
//! ([`DispatchPolicy`]), and the fusion passes as [`Pass`]es for a target
//! ([`fusion_passes`], [`fusion_passes_for_supported`]).

use crate::{CompileError, Pass};
use rlx_fusion::{fuse_elementwise, fuse_matmul_epilogues, FusionOptions, FusionReport};
use rlx_ir::{Graph, Op, OpKind};
use std::collections::BTreeSet;
use std::fmt;
use std::sync::{Arc, Mutex};

/// A compile target as the passes see it: a name and the ops it claims
/// (has a native kernel for). Build one from a backend's claims with
/// [`FusionTarget::new`] (`rlx_runtime::fusion_target` does it for a device).
#[derive(Clone)]
pub struct FusionTarget {
    name: String,
    claims: Arc<dyn Fn(&Op) -> bool + Send + Sync>,
    layout: crate::LayoutClaims,
}

impl fmt::Debug for FusionTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "FusionTarget({:?})", self.name)
    }
}

impl FusionTarget {
    /// A target called `name` that claims the ops `claims` accepts.
    pub fn new(
        name: impl Into<String>,
        claims: impl Fn(&Op) -> bool + Send + Sync + 'static,
    ) -> Self {
        FusionTarget {
            name: name.into(),
            claims: Arc::new(claims),
            layout: crate::LayoutClaims::NATIVE,
        }
    }

    /// The same target with other layout claims (native broadcasting,
    /// strided inputs); [`FusionTarget::new`] claims both.
    pub fn with_layout(mut self, layout: crate::LayoutClaims) -> Self {
        self.layout = layout;
        self
    }

    /// What the target's kernels do about layout (see
    /// [`crate::legalize_layout`]).
    pub fn layout(&self) -> crate::LayoutClaims {
        self.layout
    }

    /// Claims every op, composites and fused ops included.
    pub fn all() -> Self {
        FusionTarget::new("all", |_| true)
    }

    /// Claims only primitives: every composite and fused op is decomposed.
    pub fn primitives() -> Self {
        FusionTarget::new("primitives", |op| !op.kind().is_composite())
    }

    /// The target's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// True when the target runs `op` natively.
    pub fn claims(&self, op: &Op) -> bool {
        (self.claims)(op)
    }
}

/// True when `target` runs `op` with a native kernel.
pub fn supports_op(target: &FusionTarget, op: &Op) -> bool {
    target.claims(op)
}

/// The op kinds of `g` (leaves excluded) that `target` runs natively.
pub fn supported_for_target(target: &FusionTarget, g: &Graph) -> BTreeSet<OpKind> {
    g.nodes()
        .iter()
        .filter(|n| !n.op.is_leaf() && target.claims(&n.op))
        .map(|n| n.op.kind())
        .collect()
}

/// What to do with an op the target has no native kernel for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum DispatchPolicy {
    /// Native kernels where claimed; composites otherwise run decomposed.
    #[default]
    NativeFirst,
    /// Decompose every composite, even those with a native kernel (a reference run).
    DecomposeAll,
    /// A compile error if any op would not run natively (no silent fallback).
    ErrorOnUnsupported,
}

impl std::str::FromStr for DispatchPolicy {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim().to_ascii_lowercase().replace('_', "-").as_str() {
            "native-first" => Ok(DispatchPolicy::NativeFirst),
            "decompose-all" => Ok(DispatchPolicy::DecomposeAll),
            "error-on-unsupported" => Ok(DispatchPolicy::ErrorOnUnsupported),
            other => Err(format!(
                "unknown dispatch policy \"{other}\" (expected native-first, decompose-all or error-on-unsupported)"
            )),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum FusionStep {
    Elementwise { min_nodes: usize },
    MatMulEpilogue,
}

impl FusionStep {
    fn name(self) -> &'static str {
        match self {
            FusionStep::Elementwise { .. } => "fuse_elementwise",
            FusionStep::MatMulEpilogue => "fuse_matmul_epilogue",
        }
    }
}

/// One fusion pass as a [`Pass`]; it keeps the [`FusionReport`] of its runs.
#[derive(Debug)]
pub struct FusionPass {
    step: FusionStep,
    report: Mutex<FusionReport>,
}

impl FusionPass {
    fn new(step: FusionStep) -> Self {
        FusionPass {
            step,
            report: Mutex::new(FusionReport::default()),
        }
    }

    /// The fused op this pass emits (what the target must claim).
    pub fn fused_op(&self) -> Op {
        match self.step {
            FusionStep::Elementwise { .. } => Op::ElementwiseRegion { steps: Vec::new() },
            FusionStep::MatMulEpilogue => Op::FusedMatMul {
                epilogue: Vec::new(),
            },
        }
    }

    /// What every run so far fused and missed.
    pub fn report(&self) -> FusionReport {
        self.report
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

impl Pass for FusionPass {
    fn name(&self) -> &str {
        self.step.name()
    }

    fn run(&self, g: &Graph) -> Result<Graph, CompileError> {
        let result = match self.step {
            FusionStep::Elementwise { min_nodes } => fuse_elementwise(g, min_nodes),
            FusionStep::MatMulEpilogue => fuse_matmul_epilogues(g),
        };
        let (fused, r) = result.map_err(|source| CompileError::Pass {
            pass: self.step.name(),
            source,
        })?;
        self.report
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .extend(r);
        Ok(fused)
    }
}

/// The fusion passes `opts` turns on, in pipeline order (elementwise regions,
/// then matmul epilogues), for a target that claims every fused op.
pub fn fusion_passes(opts: &FusionOptions) -> Vec<FusionPass> {
    let mut passes = Vec::new();
    if opts.elementwise {
        passes.push(FusionPass::new(FusionStep::Elementwise {
            min_nodes: opts.min_region_nodes,
        }));
    }
    if opts.matmul_epilogue {
        passes.push(FusionPass::new(FusionStep::MatMulEpilogue));
    }
    passes
}

/// [`fusion_passes`] without those whose fused op `target` does not claim
/// (it would only be decomposed again).
pub fn fusion_passes_for_supported(opts: &FusionOptions, target: &FusionTarget) -> Vec<FusionPass> {
    fusion_passes(opts)
        .into_iter()
        .filter(|p| target.claims(&p.fused_op()))
        .collect()
}
