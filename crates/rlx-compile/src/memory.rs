//! Liveness-based arena planning with best-fit placement, and a checker
//! that proves no two live buffers overlap.
//!
//! Every non-leaf node and every graph input gets a slot in one arena;
//! params and constants live in their own buffers. A buffer is live from
//! the node that defines it to its last consumer (outputs: to the end).

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
    let inputs = g.ids().filter(|&i| matches!(g.node(i).op, Op::Input { .. }));
    let others = g.ids().filter(|&i| !matches!(g.node(i).op, Op::Input { .. } | Op::Param { .. } | Op::Constant { .. }));
    for id in inputs.chain(others) {
        let n = g.node(id);
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
        // Buffers whose last reader is this node die now (after the output is
        // placed, so an output never shares bytes with its own inputs).
        for dead in std::mem::take(&mut release[id.index()]) {
            if let Some(s) = slots[dead] {
                give_back(&mut free, &mut top, s);
                live_bytes -= s.size;
            }
        }
    }
    Ok(MemoryPlan {
        slots,
        last_use,
        arena_bytes: top,
        alignment,
        total_buffer_bytes: total,
        peak_live_bytes: peak,
    })
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
        if let Some(s) = s {
            if s.size > 0 {
                if s.offset + s.size > plan.arena_bytes {
                    return Err(format!(
                        "node %{i}: slot {s:?} exceeds the arena of {} bytes",
                        plan.arena_bytes
                    ));
                }
                // Inputs are written before the first node runs.
                let def = if matches!(g.nodes()[i].op, Op::Input { .. }) { 0 } else { i };
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
