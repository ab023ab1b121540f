//! Human-readable views of a graph: listing with statistics, a diff of two
//! graphs (what a pass did), and node labels for error messages.

use crate::display::node_text;
use crate::{Graph, NodeId, OpKind};
use std::collections::BTreeMap;

/// Where a node came from.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub enum NodeOrigin {
    /// Built by user code (or an importer).
    #[default]
    User,
    /// Emitted by decomposing a composite op of this mnemonic.
    Decomposed {
        /// The composite's mnemonic.
        of: String,
    },
    /// Emitted by a named pass or transform.
    Pass {
        /// The pass name.
        name: String,
    },
}

/// `%3 softmax{axis=1} "probs"` — how errors and reports name a node.
pub fn node_label(g: &Graph, id: NodeId) -> String {
    match g.get(id) {
        Some(n) => {
            let mut s = format!("{id} {}", n.op.mnemonic());
            if let Some(name) = &n.name {
                s.push_str(&format!(" \"{name}\""));
            }
            s
        }
        None => format!("{id} (not in graph \"{}\")", g.name()),
    }
}

/// Node counts per op kind.
pub fn op_histogram(g: &Graph) -> BTreeMap<OpKind, usize> {
    let mut h = BTreeMap::new();
    for n in g.nodes() {
        *h.entry(n.op.kind()).or_insert(0) += 1;
    }
    h
}

/// The textual IR followed by node counts per op kind.
pub fn inspect_graph(g: &Graph) -> String {
    let mut s = format!("{g}\n");
    s.push_str(&format!(
        "# {} nodes, {} outputs\n",
        g.len(),
        g.outputs().len()
    ));
    for (k, n) in op_histogram(g) {
        s.push_str(&format!("#   {k:?}: {n}\n"));
    }
    s
}

/// A line diff of two graphs' node texts (ids ignored), `-` removed, `+` added.
pub fn inspect_graph_diff(before: &Graph, after: &Graph) -> String {
    let a: Vec<String> = before.nodes().iter().map(canonical).collect();
    let b: Vec<String> = after.nodes().iter().map(canonical).collect();
    let lcs = lcs_table(&a, &b);
    let (mut i, mut j) = (0, 0);
    let mut out = format!(
        "--- {} ({} nodes)\n+++ {} ({} nodes)\n",
        before.name(),
        a.len(),
        after.name(),
        b.len()
    );
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            out.push_str(&format!("  {}\n", a[i]));
            i += 1;
            j += 1;
        } else if j < b.len() && (i == a.len() || lcs[i][j + 1] >= lcs[i + 1][j]) {
            out.push_str(&format!("+ {}\n", b[j]));
            j += 1;
        } else {
            out.push_str(&format!("- {}\n", a[i]));
            i += 1;
        }
    }
    out
}

fn canonical(n: &crate::Node) -> String {
    // Drop input ids so renumbering alone is not a difference.
    let mut c = n.clone();
    c.inputs.clear();
    format!("{} ({} inputs)", node_text(&c), n.inputs.len())
}

fn lcs_table(a: &[String], b: &[String]) -> Vec<Vec<usize>> {
    let mut t = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            t[i][j] = if a[i] == b[j] {
                t[i + 1][j + 1] + 1
            } else {
                t[i + 1][j].max(t[i][j + 1])
            };
        }
    }
    t
}

/// The textual HIR followed by block counts.
pub fn inspect_hir(h: &crate::HirModule) -> String {
    format!("{h}\n{}", inspect_hir_stats(h))
}

/// Value, block and output counts of a HIR module, per block kind.
pub fn inspect_hir_stats(h: &crate::HirModule) -> String {
    let counts = h.op_counts();
    let blocks: usize = counts.values().sum();
    let mut s = format!(
        "# {} values ({} inputs, {} blocks), {} outputs\n",
        h.nodes().len(),
        h.nodes().len() - blocks,
        blocks,
        h.outputs().len()
    );
    for (k, n) in counts {
        s.push_str(&format!("#   {k}: {n}\n"));
    }
    s
}

/// The textual MIR followed by node counts per op kind.
pub fn inspect_mir(m: &crate::MirModule) -> String {
    inspect_graph(m.graph())
}

/// Node counts, parameter count and bytes, and the summed bytes of every
/// static non-leaf value (what an arena without reuse would need).
pub fn inspect_mir_stats(m: &crate::MirModule) -> String {
    let g = m.graph();
    let params = g.params();
    let param_bytes: usize = params.iter().filter_map(|p| p.2.size_bytes()).sum();
    let value_bytes: usize = g
        .nodes()
        .iter()
        .filter(|n| !n.op.is_leaf())
        .filter_map(|n| n.shape.size_bytes())
        .sum();
    let mut s = format!(
        "# {} nodes, {} params ({param_bytes} bytes), {value_bytes} bytes of intermediate values\n",
        g.len(),
        params.len()
    );
    for (k, n) in op_histogram(g) {
        s.push_str(&format!("#   {k:?}: {n}\n"));
    }
    s
}

/// What a pass changed between two MIR modules (see [`inspect_graph_diff`]).
pub fn inspect_mir_diff(before: &crate::MirModule, after: &crate::MirModule) -> String {
    inspect_graph_diff(before.graph(), after.graph())
}
