//! Which concats the memory plan joins in place: their parts are written
//! straight into the concat's slot and the concat runs nothing.
//!
//! A concat whose dims before its axis are all 1 (a channel concat at
//! batch 1: YOLO's CSP / SPPF blocks, U-Net's skips) lays its parts out
//! one after another: part `k` is the byte range that starts where the
//! parts before it end. The planner then gives each part that range of
//! the concat's slot ([`crate::memory`]), instead of a slot of its own
//! that the concat would copy.
//!
//! [`decide_joins`] decides every concat in schedule order. It keeps the
//! copy, naming the reason ([`KeepCopy`]), when the parts interleave (a
//! leading dim is not 1), when a part's bytes are not the planner's to
//! place (a graph input, param or constant, a graph output, a view of
//! another node's bytes), when a part is already carved into an earlier
//! concat (the first concat reading it wins) or is itself a joined
//! concat, when a part appears twice, when a part would start off the
//! plan's alignment (kernels store whole aligned vectors), or when the
//! concat is a graph output (a backend may write that into the caller's
//! tensor). Liveness (the concat's slot is live from its first part's
//! producer to the last reader of the concat or any part) and keeping
//! in-place reuse off the parts are the planner's; [`crate::check_plan`]
//! re-proves both with [`part_offsets`] and [`part_refusal`].

use crate::memory::view_range;
use rlx_ir::{Graph, NodeId, Op};

/// Why a concat keeps its copy instead of being joined in place.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KeepCopy {
    /// A dim before the concat axis is not 1 (e.g. batch 2): the parts'
    /// rows interleave in the result.
    LeadingDims,
    /// A shape is not static.
    Unsized,
    /// The node is not a concat.
    NotAConcat,
    /// The part is a graph input (copied into its own slot before the first node runs).
    PartIsInput {
        /// The part's node index.
        part: usize,
    },
    /// The part is a param or a constant (bytes of its own, outside the arena).
    PartIsLeaf {
        /// The part's node index.
        part: usize,
    },
    /// The part is a graph output (a backend may compute it into the caller's tensor).
    PartIsOutput {
        /// The part's node index.
        part: usize,
    },
    /// The concat is a graph output (a backend may compute it into the caller's tensor).
    ConcatIsOutput,
    /// The part views another node's bytes (a reshape or a contiguous narrow).
    PartIsView {
        /// The part's node index.
        part: usize,
    },
    /// The part is already carved into an earlier concat.
    PartOfAnotherConcat {
        /// The part's node index.
        part: usize,
        /// The concat that holds it.
        concat: usize,
    },
    /// The part is itself a joined concat.
    PartIsJoinedConcat {
        /// The part's node index.
        part: usize,
    },
    /// The part appears more than once.
    RepeatedPart {
        /// The part's node index.
        part: usize,
    },
    /// The part would start at a byte offset off the plan's alignment.
    Misaligned {
        /// The part's node index.
        part: usize,
        /// Its byte offset in the concat.
        offset: usize,
    },
}

/// Every concat's decision and every part's place.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ConcatJoins {
    /// Per node id: for a concat, `Ok` (joined: each part's byte offset in
    /// it, in input order) or why it keeps its copy; `None` for other nodes.
    pub decisions: Vec<Option<Result<Vec<usize>, KeepCopy>>>,
    /// Per node id: for a part of a joined concat, that concat and the
    /// part's byte offset in it.
    pub part_of: Vec<Option<(usize, usize)>>,
}

impl ConcatJoins {
    /// No concat joined (`len` nodes).
    pub fn none(len: usize) -> ConcatJoins {
        ConcatJoins {
            decisions: vec![None; len],
            part_of: vec![None; len],
        }
    }

    /// True when node `id` is a joined concat.
    pub fn is_joined(&self, id: usize) -> bool {
        matches!(self.decisions.get(id), Some(Some(Ok(_))))
    }
}

/// Decides every concat of `g` in schedule order (see the module doc);
/// `alignment` is the plan's.
pub fn decide_joins(g: &Graph, alignment: usize) -> ConcatJoins {
    let mut joins = ConcatJoins::none(g.len());
    for id in g.ids() {
        if !matches!(g.node(id).op, Op::Concat { .. }) {
            continue;
        }
        let decision = join_decision(g, id, alignment, &joins);
        if let Ok(offsets) = &decision {
            for (&p, &off) in g.node(id).inputs.iter().zip(offsets) {
                joins.part_of[p.index()] = Some((id.index(), off));
            }
        }
        joins.decisions[id.index()] = Some(decision);
    }
    joins
}

/// Whether concat `id` can be joined given the concats decided before it.
fn join_decision(
    g: &Graph,
    id: NodeId,
    alignment: usize,
    earlier: &ConcatJoins,
) -> Result<Vec<usize>, KeepCopy> {
    if g.outputs().contains(&id) {
        return Err(KeepCopy::ConcatIsOutput);
    }
    let offsets = part_offsets(g, id)?;
    let parts = &g.node(id).inputs;
    for (k, (&p, &offset)) in parts.iter().zip(&offsets).enumerate() {
        let part = p.index();
        if parts[..k].contains(&p) {
            return Err(KeepCopy::RepeatedPart { part });
        }
        if let Some(why) = part_refusal(g, p) {
            return Err(why);
        }
        if let Some((concat, _)) = earlier.part_of[part] {
            return Err(KeepCopy::PartOfAnotherConcat { part, concat });
        }
        if earlier.is_joined(part) {
            return Err(KeepCopy::PartIsJoinedConcat { part });
        }
        if !offset.is_multiple_of(alignment.max(1)) {
            return Err(KeepCopy::Misaligned { part, offset });
        }
    }
    Ok(offsets)
}

/// Each part's byte offset in concat `id` when its parts lie one after
/// another in its bytes: every dim before the axis is 1 and every shape is
/// static (the verifier already gave every part the concat's dtype).
pub fn part_offsets(g: &Graph, id: NodeId) -> Result<Vec<usize>, KeepCopy> {
    let n = g.node(id);
    let Op::Concat { axis } = n.op else {
        return Err(KeepCopy::NotAConcat);
    };
    let dims = n.shape.static_dims().ok_or(KeepCopy::Unsized)?;
    if dims[..axis.min(dims.len())].iter().any(|&d| d != 1) {
        return Err(KeepCopy::LeadingDims);
    }
    let mut offsets = Vec::with_capacity(n.inputs.len());
    let mut at = 0;
    for &p in &n.inputs {
        offsets.push(at);
        at += g.shape(p).size_bytes().ok_or(KeepCopy::Unsized)?;
    }
    Ok(offsets)
}

/// Why part `p` cannot live in a concat's slot, judged from the graph
/// alone: its bytes are not the planner's to place.
pub fn part_refusal(g: &Graph, p: NodeId) -> Option<KeepCopy> {
    let part = p.index();
    let n = g.node(p);
    match n.op {
        Op::Input { .. } => return Some(KeepCopy::PartIsInput { part }),
        Op::Param { .. } | Op::Constant { .. } => return Some(KeepCopy::PartIsLeaf { part }),
        _ => {}
    }
    if g.outputs().contains(&p) {
        return Some(KeepCopy::PartIsOutput { part });
    }
    if view_range(g, n).is_some() {
        return Some(KeepCopy::PartIsView { part });
    }
    None
}
