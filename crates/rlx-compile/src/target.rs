//! What a target runs natively ([`FusionTarget`], [`supports_op`],
//! [`supported_for_target`]), how ops without a native kernel are handled
//! ([`DispatchPolicy`]), and the fusion passes as [`Pass`]es for a target
//! ([`fusion_passes`], [`fusion_passes_for_supported`]).

use crate::{CompileError, Pass};
use rlx_fusion::{fuse_elementwise, FusionOptions, FusionReport};
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
    Gelu,
    Attention,
    AddNorm,
    GatedMatMul,
    SharedInput {
        stack_params: bool,
    },
    TransposedOperands,
    Elementwise {
        min_nodes: usize,
    },
    /// Matmul epilogues, and conv epilogues when `conv` (the target claims
    /// `Op::FusedConv`).
    MatMulEpilogue {
        conv: bool,
    },
}

impl FusionStep {
    fn name(self) -> &'static str {
        match self {
            FusionStep::Gelu => "fuse_gelu",
            FusionStep::Attention => "fuse_attention",
            FusionStep::AddNorm => "fuse_add_norm",
            FusionStep::GatedMatMul => "fuse_gated_matmul",
            FusionStep::SharedInput { .. } => "fuse_shared_input",
            FusionStep::TransposedOperands => "fuse_transposed_operands",
            FusionStep::Elementwise { .. } => "fuse_elementwise",
            FusionStep::MatMulEpilogue { .. } => "fuse_matmul_epilogue",
        }
    }

    fn run(self, g: &Graph) -> Result<(Graph, FusionReport), rlx_ir::IrError> {
        match self {
            FusionStep::Gelu => rlx_fusion::fuse_gelu(g),
            FusionStep::Attention => rlx_fusion::fuse_attention(g),
            FusionStep::AddNorm => rlx_fusion::fuse_add_norm(g),
            FusionStep::GatedMatMul => rlx_fusion::fuse_gated_matmul(g),
            FusionStep::SharedInput { stack_params } => {
                rlx_fusion::fuse_shared_input_matmuls_with(g, stack_params)
            }
            FusionStep::TransposedOperands => rlx_fusion::fuse_transposed_operands(g),
            FusionStep::Elementwise { min_nodes } => fuse_elementwise(g, min_nodes),
            FusionStep::MatMulEpilogue { conv } => rlx_fusion::fuse_epilogues(g, conv),
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
            FusionStep::Gelu => Op::Unary(rlx_ir::op::UnaryOp::Gelu),
            FusionStep::Attention => Op::Attention {
                mask: rlx_ir::op::MaskKind::None,
                scale: None,
                softcap: None,
                layout: rlx_ir::op::AttentionLayout::HeadsMajor,
            },
            FusionStep::AddNorm => Op::AddNorm {
                axis: 0,
                eps: 0.0,
                rms: false,
                keep_sum: false,
            },
            FusionStep::GatedMatMul => Op::GatedMatMul {
                act: rlx_ir::op::UnaryOp::Silu,
            },
            // One (batched) matmul over stacked weights.
            FusionStep::SharedInput { .. } => Op::MatMul,
            FusionStep::TransposedOperands => Op::DotGeneral(rlx_ir::op::DotDims {
                lhs_batch: vec![],
                rhs_batch: vec![],
                lhs_contract: vec![1],
                rhs_contract: vec![0],
            }),
            FusionStep::Elementwise { .. } => Op::ElementwiseRegion { steps: Vec::new() },
            FusionStep::MatMulEpilogue { .. } => Op::FusedMatMul {
                epilogue: Vec::new(),
            },
        }
    }

    /// This pass limited to the fused ops `claims` accepts beyond
    /// [`Self::fused_op`] (the epilogue pass folds convs only for a target
    /// that runs `Op::FusedConv`).
    pub fn limited_to(mut self, claims: &dyn Fn(&Op) -> bool) -> Self {
        if let FusionStep::MatMulEpilogue { conv } = &mut self.step {
            *conv &= claims(&Op::FusedConv {
                window: rlx_ir::op::Window {
                    kernel: vec![],
                    stride: vec![],
                    padding: vec![],
                    dilation: vec![],
                },
                groups: 1,
                bias: false,
                epilogue: Vec::new(),
            });
        }
        self
    }

    /// Takes the report of every run so far, leaving it empty.
    pub fn take_report(&self) -> FusionReport {
        std::mem::take(&mut *self.report.lock().unwrap_or_else(|p| p.into_inner()))
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
        let (fused, r) = self.step.run(g).map_err(|source| CompileError::Pass {
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

/// The fusion passes `opts` turns on, in the order `lower` runs them, for a
/// target that claims every fused op: the pattern passes first (erf GELU,
/// attention, add + norm, gated matmul, shared-input matmuls; they need the primitives
/// the region pass swallows, and gated matmuls must take their matmuls
/// before shared-input stacking does), then transposed matmul operands read
/// in place (after attention, which matches `q @ k.T`), then elementwise regions, then
/// matmul epilogues (which fold whole regions in).
///
/// ```
/// use rlx_compile::{fusion_passes, FusionOptions, Pass};
/// let names: Vec<String> = fusion_passes(&FusionOptions::default())
///     .iter()
///     .map(|p| p.name().to_string())
///     .collect();
/// assert_eq!(names.first().map(String::as_str), Some("fuse_gelu"));
/// assert_eq!(names.last().map(String::as_str), Some("fuse_matmul_epilogue"));
/// ```
pub fn fusion_passes(opts: &FusionOptions) -> Vec<FusionPass> {
    let mut passes = Vec::new();
    let patterns = [
        (opts.gelu, FusionStep::Gelu),
        (opts.attention, FusionStep::Attention),
        (opts.add_norm, FusionStep::AddNorm),
        (opts.gated_matmul, FusionStep::GatedMatMul),
        (
            opts.shared_input,
            FusionStep::SharedInput {
                stack_params: opts.stack_param_weights,
            },
        ),
        (opts.transposed_operands, FusionStep::TransposedOperands),
    ];
    for (on, step) in patterns {
        if on {
            passes.push(FusionPass::new(step));
        }
    }
    if opts.elementwise {
        passes.push(FusionPass::new(FusionStep::Elementwise {
            min_nodes: opts.min_region_nodes,
        }));
    }
    if opts.matmul_epilogue {
        passes.push(FusionPass::new(FusionStep::MatMulEpilogue { conv: true }));
    }
    passes
}

/// [`fusion_passes`] without those whose fused op `target` does not claim
/// (it would only be decomposed again).
pub fn fusion_passes_for_supported(opts: &FusionOptions, target: &FusionTarget) -> Vec<FusionPass> {
    fusion_passes(opts)
        .into_iter()
        .filter(|p| target.claims(&p.fused_op()))
        .map(|p| p.limited_to(&|op| target.claims(op)))
        .collect()
}
