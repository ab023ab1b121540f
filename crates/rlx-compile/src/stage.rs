//! LIR as a [`GraphStage`], its textual form ([`inspect_lir`]) and its
//! cache key ([`fingerprint`]).

use crate::memory::MemoryPlan;
use crate::{lir_text, LirModule};
use rlx_ir::{Graph, GraphStage, Op, StageKind};

/// A stable 64-bit FNV-1a hash of the graph text, the arena plan and every
/// constant's bytes (the text abbreviates large constants): equal graphs
/// compiled with equal options give equal keys, in any process.
pub fn fingerprint(g: &Graph, plan: &MemoryPlan) -> u64 {
    let mut h = Fnv1a::default();
    h.write(g.to_string().as_bytes());
    h.write(format!("\n{:?}\n{}", plan.slots, plan.arena_bytes).as_bytes());
    for n in g.nodes() {
        if let Op::Constant { bytes } = &n.op {
            h.write(&(bytes.len() as u64).to_le_bytes());
            h.write(bytes);
        }
    }
    h.0
}

struct Fnv1a(u64);

impl Default for Fnv1a {
    fn default() -> Self {
        Fnv1a(0xcbf2_9ce4_8422_2325)
    }
}

impl Fnv1a {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 ^= b as u64;
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
    }
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
