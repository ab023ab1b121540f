//! LIR as a [`GraphStage`], its textual form ([`inspect_lir`]) and its
//! cache key ([`fingerprint`]).

use crate::memory::MemoryPlan;
use crate::{lir_text, LirModule};
use rlx_ir::{Graph, GraphStage, Op, StageKind};
use xxhash_rust::xxh3::Xxh3;

/// A stable 64-bit xxh3 hash of the graph text, the arena plan and every
/// constant's bytes (the text abbreviates large constants): equal graphs
/// compiled with equal options give equal keys, in any process. A
/// constant's bytes are hashed once per constant and the hash cached
/// ([`rlx_ir::ConstBytes::content_hash`]), so graphs sharing weights do not
/// rehash them.
pub fn fingerprint(g: &Graph, plan: &MemoryPlan) -> u64 {
    let mut h = Xxh3::new();
    h.update(g.to_string().as_bytes());
    h.update(format!("\n{:?}\n{}\n", plan.slots, plan.arena_bytes).as_bytes());
    h.update(format!("{:?}\n", plan.part_of).as_bytes());
    for n in g.nodes() {
        if let Op::Constant { bytes } = &n.op {
            h.update(&(bytes.len() as u64).to_le_bytes());
            h.update(&bytes.content_hash().to_le_bytes());
        }
    }
    h.digest()
}

/// The LIR text: every value with its arena slot, then the fingerprint.
pub fn inspect_lir(lir: &LirModule) -> String {
    format!(
        "{}\n# fingerprint {:016x}, arena {} bytes, {} scheduled nodes\n",
        lir_text(lir),
        lir.fingerprint,
        lir.plan.arena_bytes,
        lir.schedule.len()
    )
}

impl GraphStage for LirModule {
    fn kind(&self) -> StageKind {
        StageKind::Lir
    }
    fn name(&self) -> &str {
        self.graph.name()
    }
    fn text(&self) -> String {
        inspect_lir(self)
    }
    fn mir(&self) -> Option<&Graph> {
        Some(&self.graph)
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}
