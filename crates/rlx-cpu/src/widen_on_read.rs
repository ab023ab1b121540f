//! Casts folded into the products that read them: an f16 -> f32 cast of a
//! param or constant whose every reader is a `DotGeneral` is not run; each
//! reader gets the f16 value and widens it as it loads it (`linalg`'s
//! mixed-operand dot_general, `small_rows` on an f16 `b`).
//!
//! This is an f16 KV cache read in place: a decode step's attention
//! products read half the bytes and no step casts the whole cache to f32
//! first (which wrote and read twice the cache's bytes again). The values
//! are the cast's, so the products' sums are the same, bit for bit.
//!
//! Only leaves qualify: their bytes live for the whole run, where an
//! arena value's slot may be reused once its last planned reader (the
//! cast) has run.

use rlx_compile::LirModule;
use rlx_ir::{DType, NodeId, Op};

/// Per node: `Some(source)` when the node is such a cast (its readers read
/// `source` instead), else `None`.
pub(crate) fn plan(lir: &LirModule) -> Vec<Option<NodeId>> {
    let g = &lir.graph;
    let mut readers_ok = vec![true; g.len()];
    let mut read = vec![false; g.len()];
    for id in g.ids() {
        let n = g.node(id);
        let dot = matches!(n.op, Op::DotGeneral(_)) && n.shape.dtype() == DType::F32;
        for &x in &n.inputs {
            read[x.index()] = true;
            readers_ok[x.index()] &= dot;
        }
    }
    for (out, _) in &lir.io.outputs {
        readers_ok[out.index()] = false;
    }
    g.ids()
        .map(|id| {
            let n = g.node(id);
            let (Op::Cast, [src]) = (&n.op, &n.inputs[..]) else {
                return None;
            };
            let leaf = matches!(g.node(*src).op, Op::Param { .. } | Op::Constant { .. });
            let widens = g.shape(*src).dtype() == DType::F16 && n.shape.dtype() == DType::F32;
            (leaf && widens && read[id.index()] && readers_ok[id.index()]).then_some(*src)
        })
        .collect()
}
