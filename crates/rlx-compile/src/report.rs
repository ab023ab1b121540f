//! Compile reports: how each op kind is dispatched (native kernel,
//! decomposed into primitives, unsupported) and how much memory the plan
//! needs against what it would without reuse.

use crate::memory::MemoryPlan;
use rlx_ir::{Graph, Op, OpKind};
use std::collections::BTreeMap;
use std::fmt;

/// How the target runs an op kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Dispatch {
    /// A native kernel.
    Native,
    /// Through its decomposition into primitives.
    Decomposed,
    /// Neither: the target cannot run it.
    Unsupported,
}

/// Per op kind of the graph as the user built it: how it runs and how many nodes.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DispatchReport {
    /// (kind -> (dispatch, node count)).
    pub kinds: BTreeMap<OpKind, (Dispatch, usize)>,
}

impl DispatchReport {
    /// Classifies every non-leaf node of `g` for a target that claims `claims`.
    pub fn of(g: &Graph, claims: &dyn Fn(&Op) -> bool, decompose_all: bool) -> Self {
        let mut kinds = BTreeMap::new();
        for n in g.nodes().iter().filter(|n| !n.op.is_leaf()) {
            let kind = n.op.kind();
            let dispatch = if kind.is_composite() && (decompose_all || !claims(&n.op)) {
                Dispatch::Decomposed
            } else if claims(&n.op) {
                Dispatch::Native
            } else {
                Dispatch::Unsupported
            };
            kinds.entry(kind).or_insert((dispatch, 0)).1 += 1;
        }
        DispatchReport { kinds }
    }

    /// The kinds the target cannot run.
    pub fn unsupported(&self) -> Vec<OpKind> {
        self.kinds
            .iter()
            .filter(|(_, (d, _))| *d == Dispatch::Unsupported)
            .map(|(k, _)| *k)
            .collect()
    }
}

impl fmt::Display for DispatchReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "dispatch:")?;
        for (kind, (d, count)) in &self.kinds {
            writeln!(f, "  {kind:?}: {d:?} x{count}")?;
        }
        Ok(())
    }
}

/// Arena size against the sum of all buffers and the peak of live bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoryReport {
    /// Bytes of the arena.
    pub arena_bytes: usize,
    /// Sum of every arena buffer (what no reuse would need).
    pub total_buffer_bytes: usize,
    /// Largest sum of simultaneously live buffers (a lower bound for any plan).
    pub peak_live_bytes: usize,
    /// Bytes of buffers written in place over a dying input (no slot of their own).
    pub in_place_bytes: usize,
}

impl MemoryReport {
    /// The report of `plan`.
    pub fn of(plan: &MemoryPlan) -> Self {
        MemoryReport {
            arena_bytes: plan.arena_bytes,
            total_buffer_bytes: plan.total_buffer_bytes,
            peak_live_bytes: plan.peak_live_bytes,
            in_place_bytes: plan.in_place_bytes(),
        }
    }
}

impl fmt::Display for MemoryReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let pct = |a: usize| {
            if self.total_buffer_bytes == 0 {
                100.0
            } else {
                100.0 * a as f64 / self.total_buffer_bytes as f64
            }
        };
        writeln!(
            f,
            "memory: arena {} B ({:.1}% of {} B in all buffers), peak live {} B ({:.1}%), {} B written in place",
            self.arena_bytes,
            pct(self.arena_bytes),
            self.total_buffer_bytes,
            self.peak_live_bytes,
            pct(self.peak_live_bytes),
            self.in_place_bytes
        )
    }
}
