//! Compiler stages as values: [`MirModule`] (the graph every pass runs on),
//! the [`GraphStage`] trait each stage implements (HIR and MIR here, LIR in
//! `rlx-compile`), and [`GraphModule`], which holds any stage.

use crate::{Graph, HirModule};
use std::fmt;

/// Which stage a module is at.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum StageKind {
    /// Model-level blocks ([`HirModule`]).
    Hir,
    /// The primitive / composite graph ([`MirModule`]).
    Mir,
    /// MIR + buffer plan + schedule + I/O manifest (`rlx_compile::LirModule`).
    Lir,
}

impl fmt::Display for StageKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            StageKind::Hir => "HIR",
            StageKind::Mir => "MIR",
            StageKind::Lir => "LIR",
        })
    }
}

/// A stage of the pipeline: printable, named, and (from MIR on) a graph.
pub trait GraphStage: fmt::Debug + Send + Sync + 'static {
    /// The stage.
    fn kind(&self) -> StageKind;
    /// Module name.
    fn name(&self) -> &str;
    /// The stage's textual form.
    fn text(&self) -> String;
    /// The MIR graph, for MIR and LIR.
    fn mir(&self) -> Option<&Graph>;
    /// `self` as `Any`, to get the concrete stage back.
    fn as_any(&self) -> &dyn std::any::Any;
}

/// MIR: a verified-on-demand [`Graph`] of primitive and composite ops, the
/// form every pass reads and writes.
#[derive(Clone, Debug, PartialEq)]
pub struct MirModule {
    graph: Graph,
}

impl MirModule {
    /// Wraps a graph.
    pub fn new(graph: Graph) -> MirModule {
        MirModule { graph }
    }

    /// The graph.
    pub fn graph(&self) -> &Graph {
        &self.graph
    }

    /// The graph, consuming the module.
    pub fn into_graph(self) -> Graph {
        self.graph
    }
}

impl From<Graph> for MirModule {
    fn from(graph: Graph) -> MirModule {
        MirModule { graph }
    }
}

impl fmt::Display for MirModule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.graph.fmt(f)
    }
}

impl GraphStage for HirModule {
    fn kind(&self) -> StageKind {
        StageKind::Hir
    }
    fn name(&self) -> &str {
        HirModule::name(self)
    }
    fn text(&self) -> String {
        self.to_string()
    }
    fn mir(&self) -> Option<&Graph> {
        None
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

impl GraphStage for MirModule {
    fn kind(&self) -> StageKind {
        StageKind::Mir
    }
    fn name(&self) -> &str {
        self.graph.name()
    }
    fn text(&self) -> String {
        self.graph.to_string()
    }
    fn mir(&self) -> Option<&Graph> {
        Some(&self.graph)
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// Any stage of one model (HIR, MIR or LIR), e.g. for a dump or a cache.
///
/// ```
/// use rlx_ir::{Graph, GraphModule, MirModule, StageKind};
/// let m = GraphModule::new(MirModule::new(Graph::new("g")));
/// assert_eq!(m.kind(), StageKind::Mir);
/// assert!(m.downcast::<MirModule>().is_some());
/// ```
#[derive(Debug)]
pub struct GraphModule {
    stage: Box<dyn GraphStage>,
}

impl GraphModule {
    /// Holds `stage`.
    pub fn new(stage: impl GraphStage) -> GraphModule {
        GraphModule {
            stage: Box::new(stage),
        }
    }

    /// The stage held.
    pub fn kind(&self) -> StageKind {
        self.stage.kind()
    }

    /// The stage as a trait object.
    pub fn stage(&self) -> &dyn GraphStage {
        self.stage.as_ref()
    }

    /// The concrete stage, when it is a `T`.
    pub fn downcast<T: GraphStage>(&self) -> Option<&T> {
        self.stage.as_any().downcast_ref()
    }
}

impl fmt::Display for GraphModule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "# stage {}\n{}", self.stage.kind(), self.stage.text())
    }
}
