//! Liveness-based arena planning with best-fit placement, and a checker
//! that proves no two live buffers overlap.
//!
//! Every non-leaf node and every graph input gets a slot in one arena;
//! params and constants live in their own buffers. A buffer is live from
//! the node that defines it to its last consumer (outputs: to the end).
//!
//! Views: a reshape, and a slice that selects one contiguous byte range of
//! its input (a narrow), take no bytes of their own. Their slot lies inside
//! the buffer they view ([`MemoryPlan::view_of`]), that buffer stays live
//! until the view's last use, and a backend skips running them.
//!
//! In-place reuse: an elementwise node (unary, binary, select, or a fused
//! region) one of whose inputs has the node's exact shape and dies at the
//! node writes its result over that input's bytes ([`MemoryPlan::in_place`])
//! instead of taking a new slot; a backend then reads that input tile by
//! tile before overwriting it.
//!
//! Joined concats: a concat whose parts lie one after another in its bytes
//! (every dim before the axis is 1) and that [`crate::concat_slots`] lets
//! join has its slot placed when its first part is produced; each part's
//! slot is carved from it at the part's offset ([`MemoryPlan::part_of`]),
//! the slot stays live until the last reader of the concat, of any part or
//! of a view of either (views of a part view the concat), and the concat
//! runs nothing ([`MemoryPlan::runs_nothing`]). A part is never overwritten
//! in place, and the concat is overwritten in place only by a node that
//! reads no part of it.

use crate::concat_slots::{self, ConcatJoins};
use crate::CompileError;
use rlx_ir::{Graph, NodeId, Op};

/// A byte range of the arena.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Slot {
    /// Byte offset (a multiple of the plan's alignment).
    pub offset: usize,
    /// Byte size.
    pub size: usize,
}

/// Where each node's value lives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemoryPlan {
    /// Per node id: its arena slot, or `None` for params / constants.
    pub slots: Vec<Option<Slot>>,
    /// Per node id: the index of the last node that reads it (`len` for outputs).
    pub last_use: Vec<usize>,
    /// Arena size in bytes.
    pub arena_bytes: usize,
    /// Alignment of every offset.
    pub alignment: usize,
    /// Sum of all arena buffers' sizes (what a plan without reuse would need).
    pub total_buffer_bytes: usize,
    /// The largest sum of simultaneously live buffers.
    pub peak_live_bytes: usize,
    /// Per node id: the node owning the bytes this node views, for views
    /// (reshape, contiguous narrow) that alias their input instead of copying.
    pub view_of: Vec<Option<usize>>,
    /// Per node id: the input node whose bytes this node overwrites in place.
    pub in_place: Vec<Option<usize>>,
    /// Per node id: for a part of a joined concat, the concat whose slot
    /// holds its bytes (its producer writes straight there).
    pub part_of: Vec<Option<usize>>,
    /// Per node id: true for a joined concat (its parts are already in place).
    pub joined: Vec<bool>,
}

impl MemoryPlan {
    /// True when node `id` is a view: its value is already in place, nothing runs.
    pub fn is_view(&self, id: usize) -> bool {
        self.view_of.get(id).is_some_and(Option::is_some)
    }

    /// The input node whose buffer node `id` overwrites, if it runs in place.
    pub fn in_place_of(&self, id: usize) -> Option<usize> {
        self.in_place.get(id).copied().flatten()
    }

    /// True when node `id` is a joined concat: its parts wrote its bytes.
    pub fn is_joined(&self, id: usize) -> bool {
        self.joined.get(id).copied().unwrap_or(false)
    }

    /// True when a backend runs nothing for node `id`: a view, or a joined
    /// concat (its value is already in place).
    pub fn runs_nothing(&self, id: usize) -> bool {
        self.is_view(id) || self.is_joined(id)
    }

    /// The joined concat whose slot holds node `id`'s bytes, if `id` is a part of one.
    pub fn carved_into(&self, id: usize) -> Option<usize> {
        self.part_of.get(id).copied().flatten()
    }

    /// Bytes that in-place nodes did not need of their own.
    pub fn in_place_bytes(&self) -> usize {
        (0..self.slots.len())
            .filter(|&i| self.in_place_of(i).is_some())
            .filter_map(|i| self.slots[i].map(|s| s.size))
            .sum()
    }
}

/// True for the ops a backend can run over one of their own inputs'
/// bytes: elementwise ops that read each input element before writing the
/// output element at the same index, and a residual add + norm (row by row).
pub fn runs_in_place(op: &Op) -> bool {
    matches!(
        op,
        Op::Unary(_)
            | Op::Binary(_)
            | Op::Select
            | Op::ElementwiseRegion { .. }
            | Op::AddNorm {
                keep_sum: false,
                ..
            }
    )
}

/// The input of `id` whose buffer `id` may overwrite: same shape, owned
/// (not a view, param, constant or concat part), dying at `id` (`end`
/// counts views and a joined concat's parts), and not also read at `id`
/// through a view or as a part of it.
fn in_place_candidate(
    g: &Graph,
    id: rlx_ir::NodeId,
    slots: &[Option<Slot>],
    view_of: &[Option<usize>],
    part_of: &[Option<usize>],
    end: &[usize],
    handed_over: &[bool],
) -> Option<usize> {
    let n = g.node(id);
    if !runs_in_place(&n.op) {
        return None;
    }
    n.inputs.iter().map(|i| i.index()).find(|&a| {
        slots[a].is_some()
            && view_of[a].is_none()
            && part_of[a].is_none()
            && !handed_over[a]
            && end[a] == id.index()
            && g.nodes()[a].shape == n.shape
            && reads_only_as_itself(n, a, view_of, part_of)
    })
}

/// True when `n` reads `a`'s bytes only as its input `a`: through no view
/// of `a` and no part carved from `a`.
fn reads_only_as_itself(
    n: &rlx_ir::Node,
    a: usize,
    view_of: &[Option<usize>],
    part_of: &[Option<usize>],
) -> bool {
    n.inputs.iter().all(|j| {
        let j = j.index();
        j == a || (view_of[j] != Some(a) && part_of[j] != Some(a))
    })
}

/// The byte range (offset, length) of `n`'s input that `n` views, if `n` is a
/// reshape or a slice of one contiguous range.
pub(crate) fn view_range(g: &Graph, n: &rlx_ir::Node) -> Option<(usize, usize)> {
    let bytes = n.shape.size_bytes()?;
    match &n.op {
        Op::Reshape => Some((0, bytes)),
        Op::Slice(spec) => {
            let in_dims = g.shape(n.inputs[0]).static_dims()?;
            let out_dims = n.shape.static_dims()?;
            let width = n.shape.dtype().size_bytes();
            // Contiguous iff some axis k has step 1, every axis before k
            // keeps one index and every axis after k is whole.
            let r = in_dims.len();
            let k = (0..r)
                .find(|&i| out_dims[i] != in_dims[i] || spec.starts[i] != 0)
                .unwrap_or(r.saturating_sub(1));
            let whole_after = (k + 1..r).all(|i| spec.starts[i] == 0 && out_dims[i] == in_dims[i]);
            let single_before = (0..k).all(|i| out_dims[i] == 1);
            let unit_step = r == 0 || spec.steps[k] == 1 || out_dims[k] <= 1;
            if !(whole_after && single_before && unit_step) {
                return None;
            }
            let strides = rlx_ir::contiguous_strides(&in_dims);
            let first: usize = if r == 0 {
                0
            } else {
                (0..=k).map(|i| spec.starts[i] * strides[i]).sum()
            };
            Some((first * width, bytes))
        }
        _ => None,
    }
}

fn round_up(n: usize, a: usize) -> usize {
    n.div_ceil(a) * a
}

/// Last consumer of each node; graph outputs live to `g.len()`.
pub fn last_uses(g: &Graph) -> Vec<usize> {
    let mut last: Vec<usize> = (0..g.len()).collect();
    for id in g.ids() {
        for &i in &g.node(id).inputs {
            last[i.index()] = last[i.index()].max(id.index());
        }
    }
    for &o in g.outputs() {
        last[o.index()] = g.len();
    }
    last
}

/// Plans the arena of `g` (whose shapes must be static), with in-place reuse.
pub fn plan_memory(g: &Graph, alignment: usize) -> Result<MemoryPlan, CompileError> {
    plan_memory_with(g, alignment, true)
}

/// Plans the arena of `g`; `in_place` allows elementwise nodes to overwrite
/// a dying input and joins concats in place (off: every node gets a slot
/// of its own).
pub fn plan_memory_with(
    g: &Graph,
    alignment: usize,
    in_place: bool,
) -> Result<MemoryPlan, CompileError> {
    let allow_in_place = in_place;
    let alignment = alignment.max(8).next_power_of_two();
    let last_use = last_uses(g);
    let mut slots = vec![None; g.len()];
    // Free blocks, sorted by offset, coalesced.
    let mut space = FreeSpace::default();
    let (mut total, mut peak) = (0usize, 0usize);
    // Buffers to release after each node index.
    let mut release: Vec<Vec<usize>> = vec![Vec::new(); g.len() + 1];
    // Inputs are copied in before the first node runs, so they are live from
    // time 0: place them first, then every other node in schedule order.
    let inputs = g
        .ids()
        .filter(|&i| matches!(g.node(i).op, Op::Input { .. }));
    let others = g.ids().filter(|&i| {
        !matches!(
            g.node(i).op,
            Op::Input { .. } | Op::Param { .. } | Op::Constant { .. }
        )
    });
    let mut view_of: Vec<Option<usize>> = vec![None; g.len()];
    let mut in_place: Vec<Option<usize>> = vec![None; g.len()];
    // Buffers whose bytes an in-place node took over (not freed at their death).
    let mut handed_over = vec![false; g.len()];
    // When each owning buffer dies (views extend it).
    let mut end: Vec<usize> = last_use.clone();
    let joins = if allow_in_place {
        concat_slots::decide_joins(g, alignment)
    } else {
        ConcatJoins::none(g.len())
    };
    let part_of: Vec<Option<usize>> = joins.part_of.iter().map(|p| p.map(|(c, _)| c)).collect();
    // A joined concat's bytes hold its parts: they live as long as any part is read.
    for (p, c) in part_of.iter().enumerate() {
        if let Some(c) = *c {
            end[c] = end[c].max(last_use[p]);
        }
    }
    for id in inputs.chain(others) {
        let n = g.node(id);
        let i = id.index();
        if let Some((concat, at)) = joins.part_of[i] {
            // The first part produced places the whole concat.
            if slots[concat].is_none() {
                let s = new_slot(g, NodeId(concat as u32), alignment, &mut space)?;
                peak = peak.max(space.live);
                total += s.size;
                release[end[concat]].push(concat);
                slots[concat] = Some(s);
            }
            let base = slots[concat].expect("placed with its first part");
            slots[i] = Some(Slot {
                offset: base.offset + at,
                size: n.shape.size_bytes().unwrap_or(0),
            });
        } else if joins.is_joined(i) {
            // Placed with its first part; its parts' producers wrote it.
        } else if let Some((owner, slot)) = as_view(g, n, &slots, &view_of, &part_of) {
            slots[i] = Some(slot);
            view_of[i] = Some(owner);
            if last_use[i] > end[owner] {
                end[owner] = last_use[i];
                release[end[owner]].push(owner);
            }
        } else {
            let candidate = allow_in_place
                .then(|| in_place_candidate(g, id, &slots, &view_of, &part_of, &end, &handed_over))
                .flatten();
            let slot = match candidate {
                // The node takes over the dying input's bytes: nothing new is live.
                Some(a) => {
                    in_place[i] = Some(a);
                    handed_over[a] = true;
                    slots[a].expect("a candidate has a slot")
                }
                None => {
                    let s = new_slot(g, id, alignment, &mut space)?;
                    peak = peak.max(space.live);
                    s
                }
            };
            slots[i] = Some(slot);
            total += slot.size;
            release[last_use[i]].push(i);
            if matches!(n.op, Op::Input { .. }) {
                continue;
            }
        }
        release_dead(i, &mut release, &end, &slots, &handed_over, &mut space);
    }
    Ok(MemoryPlan {
        slots,
        last_use: end,
        arena_bytes: space.top,
        alignment,
        total_buffer_bytes: total,
        peak_live_bytes: peak,
        view_of,
        in_place,
        joined: (0..g.len()).map(|i| joins.is_joined(i)).collect(),
        part_of,
    })
}

/// A fresh best-fit slot for node `id`'s value, counted as live.
fn new_slot(
    g: &Graph,
    id: NodeId,
    alignment: usize,
    space: &mut FreeSpace,
) -> Result<Slot, CompileError> {
    let n = g.node(id);
    let bytes = n.shape.size_bytes().ok_or_else(|| CompileError::Unbound {
        what: rlx_ir::node_label(g, id),
        shape: n.shape.clone(),
        symbols: n.shape.symbols().map(str::to_string).collect(),
    })?;
    let size = round_up(bytes, alignment);
    let offset = take_best_fit(&mut space.free, &mut space.top, size);
    space.live += size;
    Ok(Slot { offset, size })
}

/// The owner and slot of `n` when it can view its input's bytes (a view
/// of a joined concat's part is owned by the concat).
fn as_view(
    g: &Graph,
    n: &rlx_ir::Node,
    slots: &[Option<Slot>],
    view_of: &[Option<usize>],
    part_of: &[Option<usize>],
) -> Option<(usize, Slot)> {
    let (start, len) = view_range(g, n)?;
    let input = n.inputs[0].index();
    let base = slots[input]?; // params / constants own their buffers: copy those
    let owner = view_of[input].unwrap_or(input);
    let owner = part_of[owner].unwrap_or(owner);
    Some((
        owner,
        Slot {
            offset: base.offset + start,
            size: len,
        },
    ))
}

/// Frees the buffers whose (possibly view-extended) life ends at node `t`;
/// called after `t`'s output is placed, so an output never shares bytes with
/// its own inputs.
fn release_dead(
    t: usize,
    release: &mut [Vec<usize>],
    end: &[usize],
    slots: &[Option<Slot>],
    handed_over: &[bool],
    space: &mut FreeSpace,
) {
    for dead in std::mem::take(&mut release[t]) {
        if end[dead] != t || handed_over[dead] {
            continue; // a view extended it, or an in-place node took its bytes
        }
        if let Some(s) = slots[dead] {
            give_back(&mut space.free, &mut space.top, s);
            space.live -= s.size;
        }
    }
}

/// The planner's free blocks (sorted by offset, coalesced), the arena's
/// current top and the bytes now live.
#[derive(Default)]
struct FreeSpace {
    free: Vec<Slot>,
    top: usize,
    live: usize,
}

fn take_best_fit(free: &mut Vec<Slot>, top: &mut usize, size: usize) -> usize {
    if size == 0 {
        return 0;
    }
    let best = free
        .iter()
        .enumerate()
        .filter(|(_, s)| s.size >= size)
        .min_by_key(|(_, s)| s.size)
        .map(|(i, _)| i);
    if let Some(i) = best {
        let s = free[i];
        if s.size == size {
            free.remove(i);
        } else {
            free[i] = Slot {
                offset: s.offset + size,
                size: s.size - size,
            };
        }
        return s.offset;
    }
    // Grow the arena, reusing a free block that ends at the top.
    if let Some(last) = free.last().copied() {
        if last.offset + last.size == *top {
            free.pop();
            *top = last.offset + size;
            return last.offset;
        }
    }
    let off = *top;
    *top += size;
    off
}

fn give_back(free: &mut Vec<Slot>, top: &mut usize, s: Slot) {
    if s.size == 0 {
        return;
    }
    let pos = free.partition_point(|f| f.offset < s.offset);
    free.insert(pos, s);
    // Coalesce with the neighbours.
    if pos + 1 < free.len() && free[pos].offset + free[pos].size == free[pos + 1].offset {
        free[pos].size += free[pos + 1].size;
        free.remove(pos + 1);
    }
    if pos > 0 && free[pos - 1].offset + free[pos - 1].size == free[pos].offset {
        free[pos - 1].size += free[pos].size;
        free.remove(pos);
    }
    let _ = top;
}

/// Proves that no two buffers that are live at the same time share bytes,
/// and that every slot lies inside the arena. The one exception, an
/// in-place node sharing its input's bytes, is checked to be legal: an
/// elementwise op, the input of its exact shape and slot (not a concat's
/// part), dying at it and not read there through a view or a part. A
/// joined concat is proved from the graph (`check_joined`): its parts
/// tile its slot in input order, and it is live from its first part's
/// producer to the last reader of it or of any part.
pub fn check_plan(g: &Graph, plan: &MemoryPlan) -> Result<(), String> {
    let sized = |v: &[Option<usize>]| v.len() == plan.slots.len();
    if !sized(&plan.part_of) || plan.joined.len() != plan.slots.len() {
        return Err("the plan's concat joins do not cover every node".into());
    }
    for (b, a) in (0..plan.slots.len()).filter_map(|b| Some((b, plan.in_place_of(b)?))) {
        let (nb, na) = (&g.nodes()[b], &g.nodes()[a]);
        let legal = runs_in_place(&nb.op)
            && nb.inputs.iter().any(|i| i.index() == a)
            && na.shape == nb.shape
            && plan.slots[a].is_some()
            && plan.slots[a] == plan.slots[b]
            && plan.view_of[a].is_none()
            && plan.carved_into(a).is_none()
            && plan.carved_into(b).is_none()
            && plan.last_use[a] == b
            && reads_only_as_itself(nb, a, &plan.view_of, &plan.part_of);
        if !legal {
            return Err(format!(
                "node %{b} ({}) may not overwrite %{a} in place",
                nb.op.mnemonic()
            ));
        }
    }
    // Where each joined concat's bytes start being live: its first part.
    let mut first_def: Vec<usize> = (0..plan.slots.len()).collect();
    for c in (0..plan.slots.len()).filter(|&c| plan.is_joined(c)) {
        first_def[c] = check_joined(g, plan, c)?;
    }
    let mut live: Vec<(usize, usize, usize, Slot)> = Vec::new();
    for (i, s) in plan.slots.iter().enumerate() {
        if let Some(c) = plan.carved_into(i) {
            if !plan.is_joined(c) {
                return Err(format!(
                    "%{i} is carved from %{c}, which is not a joined concat"
                ));
            }
            continue; // inside its concat's slot: check_joined proved where
        }
        if let Some(owner) = plan.view_of.get(i).copied().flatten() {
            // A view must lie inside its owner, which must outlive it.
            let (Some(v), Some(o)) = (*s, plan.slots[owner]) else {
                return Err(format!("view %{i} of %{owner} has no slot"));
            };
            if v.offset < o.offset || v.offset + v.size > o.offset + o.size {
                return Err(format!(
                    "view %{i} {v:?} is outside its owner %{owner} {o:?}"
                ));
            }
            if plan.last_use[owner] < plan.last_use[i] {
                return Err(format!("view %{i} outlives its owner %{owner}"));
            }
            continue;
        }
        if let Some(s) = s {
            if s.size > 0 {
                if s.offset + s.size > plan.arena_bytes {
                    return Err(format!(
                        "node %{i}: slot {s:?} exceeds the arena of {} bytes",
                        plan.arena_bytes
                    ));
                }
                // Inputs are written before the first node runs.
                let def = if matches!(g.nodes()[i].op, Op::Input { .. }) {
                    0
                } else {
                    first_def[i]
                };
                live.push((i, def, plan.last_use[i], *s));
            }
        }
    }
    for (a, &(na, ia, ea, sa)) in live.iter().enumerate() {
        for &(nb, ib, eb, sb) in &live[a + 1..] {
            // Live ranges [def, last_use]; a node's output may reuse bytes of a
            // buffer whose last use is strictly before the node.
            let overlap_time = ib <= ea && ia <= eb;
            let overlap_bytes = sa.offset < sb.offset + sb.size && sb.offset < sa.offset + sa.size;
            let handover = plan.in_place_of(nb) == Some(na) || plan.in_place_of(na) == Some(nb);
            if overlap_time && overlap_bytes && !handover {
                return Err(format!(
                    "nodes %{na} (live {ia}..={ea}, {sa:?}) and %{nb} (live {ib}..={eb}, {sb:?}) overlap in graph \"{}\"",
                    g.name()
                ));
            }
        }
    }
    Ok(())
}

/// Proves joined concat `c` from the graph: a concat whose parts lie one
/// after another in its bytes ([`concat_slots::part_offsets`]), not a
/// graph output; each part distinct, placeable ([`concat_slots::part_refusal`]),
/// carved from `c` at its offset (on the plan's alignment) with its exact
/// size, not in place, not itself a joined concat, and read no later than
/// `c`'s bytes live. Returns the first part's index: where `c`'s bytes
/// start being live.
fn check_joined(g: &Graph, plan: &MemoryPlan, c: usize) -> Result<usize, String> {
    let id = NodeId(c as u32);
    let fail = |why: String| Err(format!("joined concat %{c}: {why}"));
    if g.outputs().contains(&id) {
        return fail("it is a graph output".into());
    }
    let offsets = match concat_slots::part_offsets(g, id) {
        Ok(o) => o,
        Err(why) => return fail(format!("its parts are not contiguous ({why:?})")),
    };
    let Some(base) = plan.slots[c] else {
        return fail("it has no slot".into());
    };
    let parts = &g.node(id).inputs;
    for (k, (&p, &at)) in parts.iter().zip(&offsets).enumerate() {
        let i = p.index();
        if parts[..k].contains(&p) {
            return fail(format!("%{i} is a part twice"));
        }
        if let Some(why) = concat_slots::part_refusal(g, p) {
            return fail(format!("%{i} may not be carved ({why:?})"));
        }
        let want = Slot {
            offset: base.offset + at,
            size: g.shape(p).size_bytes().unwrap_or(0),
        };
        if plan.carved_into(i) != Some(c) || plan.slots[i] != Some(want) {
            return fail(format!("part %{i} is not carved at {want:?}"));
        }
        if !at.is_multiple_of(plan.alignment) {
            return fail(format!("part %{i} starts off the alignment at +{at}"));
        }
        if plan.in_place_of(i).is_some() || plan.is_joined(i) || plan.is_view(i) {
            return fail(format!("part %{i} does not own its bytes"));
        }
        if plan.last_use[i] > plan.last_use[c] {
            return fail(format!("part %{i} outlives the concat's bytes"));
        }
    }
    let covered = offsets.last().map_or(0, |&o| o)
        + parts
            .last()
            .map_or(0, |&p| g.shape(p).size_bytes().unwrap_or(0));
    if covered > base.size {
        return fail(format!("its parts ({covered} B) overrun its slot {base:?}"));
    }
    Ok(parts.iter().map(|p| p.index()).min().unwrap_or(c))
}
