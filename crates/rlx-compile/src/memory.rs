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

use crate::CompileError;
use rlx_ir::{Graph, Op};

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
}

impl MemoryPlan {
    /// True when node `id` is a view: its value is already in place, nothing runs.
    pub fn is_view(&self, id: usize) -> bool {
        self.view_of.get(id).is_some_and(Option::is_some)
    }
}

/// The byte range (offset, length) of `n`'s input that `n` views, if `n` is a
/// reshape or a slice of one contiguous range.
fn view_range(g: &Graph, n: &rlx_ir::Node) -> Option<(usize, usize)> {
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

/// Plans the arena of `g` (whose shapes must be static).
pub fn plan_memory(g: &Graph, alignment: usize) -> Result<MemoryPlan, CompileError> {
    let alignment = alignment.max(8).next_power_of_two();
    let last_use = last_uses(g);
    let mut slots = vec![None; g.len()];
    // Free blocks, sorted by offset, coalesced.
    let mut free: Vec<Slot> = Vec::new();
    let mut top = 0usize;
    let mut live_bytes = 0usize;
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
    // When each owning buffer dies (views extend it).
    let mut end: Vec<usize> = last_use.clone();
    for id in inputs.chain(others) {
        let n = g.node(id);
        if let Some(view) = as_view(g, n, &slots, &view_of) {
            let (owner, slot) = view;
            slots[id.index()] = Some(slot);
            view_of[id.index()] = Some(owner);
            if last_use[id.index()] > end[owner] {
                end[owner] = last_use[id.index()];
                release[end[owner]].push(owner);
            }
            release_dead(
                id.index(),
                &mut release,
                &end,
                &slots,
                &mut free,
                &mut top,
                &mut live_bytes,
            );
            continue;
        }
        let bytes = n.shape.size_bytes().ok_or_else(|| CompileError::Unbound {
            what: rlx_ir::node_label(g, id),
            shape: n.shape.clone(),
            symbols: n.shape.symbols().map(str::to_string).collect(),
        })?;
        let size = round_up(bytes, alignment);
        let offset = take_best_fit(&mut free, &mut top, size);
        slots[id.index()] = Some(Slot { offset, size });
        total += size;
        live_bytes += size;
        peak = peak.max(live_bytes);
        release[last_use[id.index()]].push(id.index());
        if matches!(n.op, Op::Input { .. }) {
            continue;
        }
        release_dead(
            id.index(),
            &mut release,
            &end,
            &slots,
            &mut free,
            &mut top,
            &mut live_bytes,
        );
    }
    Ok(MemoryPlan {
        slots,
        last_use: end,
        arena_bytes: top,
        alignment,
        total_buffer_bytes: total,
        peak_live_bytes: peak,
        view_of,
    })
}

/// The owner and slot of `n` when it can view its input's bytes.
fn as_view(
    g: &Graph,
    n: &rlx_ir::Node,
    slots: &[Option<Slot>],
    view_of: &[Option<usize>],
) -> Option<(usize, Slot)> {
    let (start, len) = view_range(g, n)?;
    let input = n.inputs[0].index();
    let base = slots[input]?; // params / constants own their buffers: copy those
    let owner = view_of[input].unwrap_or(input);
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
    free: &mut Vec<Slot>,
    top: &mut usize,
    live_bytes: &mut usize,
) {
    for dead in std::mem::take(&mut release[t]) {
        if end[dead] != t {
            continue; // a view extended it
        }
        if let Some(s) = slots[dead] {
            give_back(free, top, s);
            *live_bytes -= s.size;
        }
    }
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
/// and that every slot lies inside the arena.
pub fn check_plan(g: &Graph, plan: &MemoryPlan) -> Result<(), String> {
    let mut live: Vec<(usize, usize, usize, Slot)> = Vec::new();
    for (i, s) in plan.slots.iter().enumerate() {
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
                    i
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
            if overlap_time && overlap_bytes {
                return Err(format!(
                    "nodes %{na} (live {ia}..={ea}, {sa:?}) and %{nb} (live {ib}..={eb}, {sb:?}) overlap in graph \"{}\"",
                    g.name()
                ));
            }
        }
    }
    Ok(())
}
