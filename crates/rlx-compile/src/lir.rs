//! LIR: MIR + buffer plan + schedule + I/O manifest, and [`lower`], the
//! pipeline that produces it.

use crate::memory::{check_plan, plan_memory, MemoryPlan};
use crate::passes::{dce::dce, decompose::decompose_unclaimed, precision::lower_precision};
use crate::CompileError;
use rlx_ir::{verify_all, DType, Graph, NodeId, Op, Shape};
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
#[derive(Clone, Debug, Default, PartialEq)]
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
}

fn verified(g: &Graph) -> Result<(), CompileError> {
    let errors = verify_all(g);
    if errors.is_empty() {
        return Ok(());
    }
    Err(CompileError::Verify {
        graph: g.name().to_string(),
        errors: errors
            .iter()
            .map(|e| format!("  {e}"))
            .collect::<Vec<_>>()
            .join("\n"),
    })
}

/// Lowers MIR to LIR for a target that runs `claims` natively.
pub fn lower(
    g: &Graph,
    claims: &dyn Fn(&Op) -> bool,
    opts: &LowerOptions,
) -> Result<LirModule, CompileError> {
    verified(g)?;
    let mut g = if opts.bindings.is_empty() {
        g.clone()
    } else {
        g.bind_dims(&opts.bindings)
            .map_err(|source| CompileError::Pass {
                pass: "bind_dims",
                source,
            })?
    };
    if let Some(dt) = opts.precision.compute_dtype() {
        g = lower_precision(&g, dt)?;
    }
    let decompose_all = opts.decompose_composites;
    g = decompose_unclaimed(&g, &|op| !decompose_all && claims(op))?;
    if !opts.keep_dead_code {
        g = dce(&g)?;
    }
    verified(&g)?;
    let plan = plan_memory(
        &g,
        if opts.alignment == 0 {
            64
        } else {
            opts.alignment
        },
    )?;
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
    let fingerprint = fnv1a(format!("{g}\n{:?}", plan.slots).as_bytes());
    Ok(LirModule {
        graph: g,
        plan,
        schedule,
        io,
        fingerprint,
    })
}

fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;
    use rlx_ir::GraphExt;

    #[test]
    fn plan_reuses_dead_buffers_and_checks() {
        let mut g = Graph::new("chain");
        let x = g.input("x", Shape::new(&[256], DType::F32));
        let mut y = x;
        for _ in 0..8 {
            y = g.exp(y);
        }
        g.set_outputs(vec![y]);
        let lir = lower(&g, &|_| true, &LowerOptions::default()).unwrap();
        // Each buffer is 1 KiB; a chain needs two live at a time.
        assert_eq!(lir.plan.total_buffer_bytes, 9 * 1024);
        assert_eq!(lir.plan.arena_bytes, 2 * 1024);
        check_plan(&lir.graph, &lir.plan).unwrap();
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
        let lir = lower(&g, &|_| true, &LowerOptions::default()).unwrap();
        check_plan(&lir.graph, &lir.plan).unwrap();
        let (sa, sy) = (lir.plan.slots[a.index()].unwrap(), lir.plan.slots[y.index()].unwrap());
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
