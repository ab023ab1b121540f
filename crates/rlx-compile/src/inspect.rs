//! [`PipelineInspect`]: the stages a graph went through on its way to LIR
//! (input MIR, the graph after every pass, the LIR with its buffer plan)
//! plus the fusion, dispatch and memory reports; [`maybe_dump_pipeline`]
//! writes them to `RLX_IR_DUMP` as text files.

use crate::report::{DispatchReport, MemoryReport};
use crate::{lower_with, CompileError, ConstEvaluator, LirModule, LowerOptions};
use rlx_fusion::FusionReport;
use rlx_ir::{Graph, Op};
use std::fmt;
use std::path::PathBuf;

/// Every stage of one compile and its reports.
#[derive(Clone, Debug, PartialEq)]
pub struct PipelineInspect {
    /// The HIR text, when the compile started from a [`rlx_ir::HirModule`].
    pub hir: Option<String>,
    /// (stage name, graph): `input`, then one per pass.
    pub stages: Vec<(String, Graph)>,
    /// The LIR: final graph with each value's arena slot.
    pub lir_text: String,
    /// What fused.
    pub fusion: FusionReport,
    /// How each op kind runs.
    pub dispatch: DispatchReport,
    /// Arena vs all buffers.
    pub memory: MemoryReport,
}

impl PipelineInspect {
    /// Collects the stages of `lir`, lowered from `input` with
    /// `LowerOptions::keep_stages` (stages not kept are absent).
    pub fn of(input: &Graph, lir: &LirModule) -> Self {
        let mut stages = vec![("input".to_string(), input.clone())];
        for r in &lir.passes {
            if let Some(g) = &r.graph {
                stages.push((r.pass.clone(), g.clone()));
            }
        }
        PipelineInspect {
            hir: None,
            stages,
            lir_text: lir_text(lir),
            fusion: lir.fusion.clone(),
            dispatch: lir.dispatch.clone(),
            memory: MemoryReport::of(&lir.plan),
        }
    }
}

impl fmt::Display for PipelineInspect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(hir) = &self.hir {
            writeln!(f, "== hir ==\n{hir}")?;
        }
        for (name, g) in &self.stages {
            writeln!(f, "== {name} ({} nodes) ==\n{g}", g.len())?;
        }
        writeln!(f, "== lir ==\n{}", self.lir_text)?;
        write!(f, "{}{}{}", self.fusion, self.dispatch, self.memory)
    }
}

/// The final graph with every value's arena slot: `@0+4096  %3 = ...`
/// (`view@..` a view, `joined@..` a joined concat, `@.. in %C at +k` a part
/// carved from joined concat `%C` at byte `k`).
pub fn lir_text(lir: &LirModule) -> String {
    let g = &lir.graph;
    let mut s = format!(
        "lir \"{}\" (arena {} B) {{\n",
        g.name(),
        lir.plan.arena_bytes
    );
    for id in g.ids() {
        let place = match lir.plan.slots[id.index()] {
            Some(slot) if lir.plan.is_view(id.index()) => {
                format!("view@{}+{}", slot.offset, slot.size)
            }
            Some(slot) if lir.plan.is_joined(id.index()) => {
                format!("joined@{}+{}", slot.offset, slot.size)
            }
            Some(slot) => match lir.plan.carved_into(id.index()) {
                Some(c) => {
                    let at = slot.offset - lir.plan.slots[c].map_or(0, |s| s.offset);
                    format!("@{}+{} in %{c} at +{at}", slot.offset, slot.size)
                }
                None => format!("@{}+{}", slot.offset, slot.size),
            },
            None => "@own".to_string(),
        };
        s.push_str(&format!(
            "  {place:<16} {id} = {}\n",
            rlx_ir::node_text(g.node(id))
        ));
    }
    let outs: Vec<String> = g.outputs().iter().map(|o| o.to_string()).collect();
    s.push_str(&format!("  return {}\n}}", outs.join(", ")));
    s
}

/// Lowers `g` keeping every stage and returns them with the reports.
pub fn inspect_pipeline(
    g: &Graph,
    claims: &dyn Fn(&Op) -> bool,
    opts: &LowerOptions,
    evaluator: Option<&dyn ConstEvaluator>,
) -> Result<PipelineInspect, CompileError> {
    let opts = LowerOptions {
        keep_stages: true,
        ..opts.clone()
    };
    let lir = lower_with(g, claims, &opts, evaluator)?;
    Ok(PipelineInspect::of(g, &lir))
}

/// [`inspect_pipeline`] from HIR: HIR -> MIR (the `input` stage) ->
/// every pass -> LIR.
pub fn inspect_hir_pipeline(
    hir: &rlx_ir::HirModule,
    claims: &dyn Fn(&Op) -> bool,
    opts: &LowerOptions,
    evaluator: Option<&dyn ConstEvaluator>,
) -> Result<PipelineInspect, CompileError> {
    let mir = hir.lower().map_err(|source| CompileError::Pass {
        pass: "lower_hir",
        source,
    })?;
    let mut inspect = inspect_pipeline(mir.graph(), claims, opts, evaluator)?;
    inspect.hir = Some(hir.to_string());
    Ok(inspect)
}

/// When `RLX_IR_DUMP` names a directory, writes `<graph>.<NN>.<stage>.txt`
/// for every kept stage, `<graph>.lir.txt` and `<graph>.reports.txt` into
/// it and returns the directory.
pub fn maybe_dump_pipeline(input: &Graph, lir: &LirModule) -> std::io::Result<Option<PathBuf>> {
    // A path never fails to parse, so the error arm is unreachable.
    let Some(dir) = rlx_ir::env::vars::IR_DUMP.get().ok().flatten() else {
        return Ok(None);
    };
    std::fs::create_dir_all(&dir)?;
    let inspect = PipelineInspect::of(input, lir);
    let stem: String = lir
        .graph
        .name()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    for (k, (name, g)) in inspect.stages.iter().enumerate() {
        std::fs::write(dir.join(format!("{stem}.{k:02}.{name}.txt")), g.to_string())?;
    }
    std::fs::write(dir.join(format!("{stem}.lir.txt")), &inspect.lir_text)?;
    std::fs::write(
        dir.join(format!("{stem}.reports.txt")),
        format!("{}{}{}", inspect.fusion, inspect.dispatch, inspect.memory),
    )?;
    Ok(Some(dir))
}
