//! What fusion did: [`FusionReport`] lists the fused regions and the
//! fusions that were possible in shape but did not happen, each with a
//! [`MissReason`] and a hint.

use rlx_ir::NodeId;
use std::fmt;

/// Why a producer was not fused into its consumer's region.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MissReason {
    /// The value has more than one consumer, so it must be materialised.
    MultipleConsumers,
    /// The value is a graph output, so it must be materialised.
    GraphOutput,
    /// The value is smaller than the region and broadcast into it; fusing
    /// would recompute it once per output element.
    BroadcastProducer,
    /// The target does not run this kind of fused op natively.
    TargetUnsupported,
    /// Fusion of this kind is switched off in [`crate::FusionOptions`].
    Disabled,
    /// The fused op would have to run where one of its operands is not yet
    /// computed (e.g. a norm's gamma computed after the residual's other readers).
    OperandOrder,
    /// The weights are params and param-only values are not hoisted:
    /// concatenating them would copy them on every run.
    ParamWeights,
    /// The operands differ in a way the fused op does not express (shapes,
    /// dtypes, a non-constant scale).
    ShapeMismatch,
}

impl MissReason {
    /// What a user can do about it.
    pub fn hint(self) -> &'static str {
        match self {
            MissReason::MultipleConsumers => {
                "the value is read twice; recomputing it in each reader is not done for you"
            }
            MissReason::GraphOutput => "drop it from the outputs if it is not needed",
            MissReason::BroadcastProducer => {
                "compute it at its own size (it is cheaper than inside the broadcast region)"
            }
            MissReason::TargetUnsupported => "the backend would decompose the fused op again",
            MissReason::Disabled => "enable it in FusionOptions",
            MissReason::OperandOrder => {
                "compute the norm's parameters before the value it normalises"
            }
            MissReason::ParamWeights => {
                "bind the weights as constants, or let the runtime hoist param-only values (CompileOptions::hoist_params): they are then stacked once"
            }
            MissReason::ShapeMismatch => "give the operands one shape / dtype and a constant scale",
        }
    }
}

/// A fusion that did not happen.
#[derive(Clone, Debug, PartialEq)]
pub struct MissedFusion {
    /// The producer (id in the graph fusion ran on).
    pub producer: NodeId,
    /// Its op mnemonic.
    pub op: String,
    /// The region root it could have joined (id in the graph fusion ran on).
    pub consumer: NodeId,
    /// Why it did not.
    pub reason: MissReason,
}

/// What kind of fused op a region became.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FusionKind {
    /// `Op::ElementwiseRegion`.
    Elementwise,
    /// `Op::FusedMatMul`: a matmul with an elementwise epilogue.
    MatMulEpilogue,
    /// `Op::FusedConv`: a conv with an elementwise epilogue.
    ConvEpilogue,
    /// `Op::AddNorm`: a residual add and the layer / rms norm of the sum.
    AddNorm,
    /// `Op::GatedMatMul`: `act(x @ w_gate) * (x @ w_up)` (SwiGLU / GeGLU).
    GatedMatMul,
    /// `Op::Attention`: `softmax(q @ kᵀ * scale (+ bias)) @ v` recognised.
    Attention,
    /// `Op::Attention` reading `[.., S, H, D]` operands in place
    /// (sequence-major), its head transposes absorbed.
    AttentionLayout,
    /// Matmuls sharing one input (Q / K / V) as one matmul over stacked weights.
    SharedInput,
    /// `x * 0.5 * (1 + erf(x / sqrt 2))` recognised as `Unary(Gelu)`.
    Gelu,
    /// A 2-d matmul of a transpose read as `Op::DotGeneral` of its source.
    TransposedOperand,
}

/// One fused region.
#[derive(Clone, Debug, PartialEq)]
pub struct FusedRegion {
    /// What it became.
    pub kind: FusionKind,
    /// The original nodes, in id order (the last is the region's root).
    pub nodes: Vec<NodeId>,
    /// Their op mnemonics.
    pub ops: Vec<String>,
    /// The fused node in the output graph.
    pub fused: NodeId,
}

/// The region record of `nodes` (old ids, any order) fused into `fused`.
pub(crate) fn region_of(
    g: &rlx_ir::Graph,
    kind: FusionKind,
    nodes: impl IntoIterator<Item = NodeId>,
    fused: NodeId,
) -> FusedRegion {
    let mut nodes: Vec<NodeId> = nodes.into_iter().collect();
    nodes.sort();
    FusedRegion {
        kind,
        ops: nodes.iter().map(|&n| g.node(n).op.mnemonic()).collect(),
        nodes,
        fused,
    }
}

/// The fusions of one compile.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FusionReport {
    /// Fused elementwise regions.
    pub regions: Vec<FusedRegion>,
    /// Fusions that did not happen.
    pub missed: Vec<MissedFusion>,
}

impl FusionReport {
    /// Number of nodes the regions replaced (minus the fused nodes that replace them).
    pub fn nodes_saved(&self) -> usize {
        self.regions.iter().map(|r| r.nodes.len() - 1).sum()
    }

    /// The regions of one kind.
    pub fn of_kind(&self, kind: FusionKind) -> Vec<&FusedRegion> {
        self.regions.iter().filter(|r| r.kind == kind).collect()
    }

    /// Appends a later pass's report.
    pub fn extend(&mut self, other: FusionReport) {
        self.regions.extend(other.regions);
        self.missed.extend(other.missed);
    }
}

impl fmt::Display for FusionReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "fusion: {} region(s), {} node(s) saved, {} missed",
            self.regions.len(),
            self.nodes_saved(),
            self.missed.len()
        )?;
        for r in &self.regions {
            writeln!(
                f,
                "  fused {} -> {}: {}",
                r.nodes.len(),
                r.fused,
                r.ops.join(" -> ")
            )?;
        }
        for m in &self.missed {
            writeln!(
                f,
                "  missed {} {} into region at {}: {:?} ({})",
                m.producer,
                m.op,
                m.consumer,
                m.reason,
                m.reason.hint()
            )?;
        }
        Ok(())
    }
}
