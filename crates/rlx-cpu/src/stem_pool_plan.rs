//! Which stem convs run together with their max pool as one step
//! (`kernels/stem_pool.rs`): a 3-channel stem the stem kernel writes
//! blocked whose only reader is a max pool reading and writing blocked,
//! neither a graph output. The executor then skips the conv and runs the
//! pair at the pool's place on the conv's inputs, so the conv's output
//! is never written; for that the conv's inputs must still hold their
//! bytes when the pool runs and must not share any with the pool's
//! output: the pool comes right after the conv in the schedule (nothing
//! runs between to reuse their bytes), and in each run the executor
//! checks that the pool's bytes overlap none of theirs ([`apart`]: the
//! memory plan may give the slot of a value that dies at the conv, such
//! as a graph input read from the caller's tensor, to the pool's output)
//! or else runs the two ops one after the other (the same bits).

use crate::kernels::{conv_nchwc::BlockedIo, stem_pool};
use rlx_compile::LirModule;
use rlx_ir::{DType, NodeId, Op};

/// The (max pool, stem conv) pairs that may run as one step.
/// `blocked`: the layout plan's sides per node; `stem_form(i)`: node `i`
/// has the stem kernel's packed weight.
pub(super) fn pairs(
    lir: &LirModule,
    blocked: &[BlockedIo],
    stem_form: impl Fn(usize) -> bool,
) -> Vec<(NodeId, NodeId)> {
    let g = &lir.graph;
    let mut pairs = Vec::new();
    let mut readers = vec![0usize; g.len()];
    for id in g.ids() {
        for i in &g.node(id).inputs {
            readers[i.index()] += 1;
        }
    }
    for (o, _) in &lir.io.outputs {
        readers[o.index()] += 1;
    }
    // Position in the schedule counting only the nodes that run a kernel.
    let mut step = vec![usize::MAX; g.len()];
    let running = lir
        .schedule
        .iter()
        .filter(|id| !lir.plan.runs_nothing(id.index()));
    for (k, id) in running.enumerate() {
        step[id.index()] = k;
    }
    for id in g.ids() {
        let (j, pool) = (id.index(), g.node(id));
        let Some(&sid) = pool.inputs.first() else {
            continue;
        };
        let (s, conv) = (sid.index(), g.node(sid));
        let io = blocked[j];
        let pool_side = matches!(pool.op, Op::Pool { .. }) && io.input && io.output;
        if !pool_side || !stem_form(s) || !blocked[s].output || readers[s] != 1 {
            continue;
        }
        let dims = |i: NodeId| g.shape(i).static_dims();
        let (Some(&x), Some(&w)) = (conv.inputs.first(), conv.inputs.get(1)) else {
            continue;
        };
        let f32s = [x, w, sid, id]
            .iter()
            .all(|&n| g.shape(n).dtype() == DType::F32);
        let shapes = match (dims(x), dims(w), dims(sid), dims(id)) {
            (Some(xd), Some(wd), Some(sd), Some(yd)) => {
                stem_pool::fuses(&conv.op, conv.inputs.len(), &pool.op, (&xd, &wd, &sd, &yd))
            }
            _ => false,
        };
        let adjacent = step[s] != usize::MAX && step[j] == step[s] + 1;
        if f32s && shapes && adjacent && lir.plan.in_place_of(j).is_none() {
            pairs.push((id, sid));
        }
    }
    pairs
}

/// True when the pool's bytes share none with the conv's inputs' in this
/// run (`arena(node)`: the arena range a node's value takes this run, if
/// any; a caller's tensor read or written in place takes none).
pub(super) fn apart(
    arena: impl Fn(usize) -> Option<(usize, usize)>,
    pool: usize,
    conv_inputs: &[NodeId],
) -> bool {
    let out = arena(pool);
    conv_inputs.iter().all(|i| !overlaps(arena(i.index()), out))
}

fn overlaps(a: Option<(usize, usize)>, b: Option<(usize, usize)>) -> bool {
    match (a, b) {
        (Some((a, al)), Some((b, bl))) => a < b + bl && b < a + al,
        _ => false,
    }
}
