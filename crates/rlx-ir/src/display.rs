//! The textual IR: `Display` for [`Graph`] and the full, parseable text
//! [`Graph::to_text`] (read back by [`crate::parse_graph`]).
//!
//! ```text
//! graph "hello" {
//!   %0 = input "x" : f32[1,4]
//!   %1 = param "w" : f32[4,2]
//!   %2 = matmul %0, %1 : f32[1,2]
//!   return %2
//! }
//! ```
//!
//! The two forms differ only in constants: `Display` elides one of more
//! than 8 elements as `constant<N bytes>` and prints values as `f64`; the
//! full text writes every constant exactly, as its value list when that
//! list reproduces its bytes, else as `constant hex"<little-endian bytes>"`.

use crate::{scalar_constant_bytes, Graph, HostTensor, Node, Op};
use std::fmt;

/// The text of one node's right-hand side: `matmul %0, %1 : f32[1,2]`.
pub fn node_text(n: &Node) -> String {
    node_text_with(n, false)
}

fn node_text_with(n: &Node, full: bool) -> String {
    let mut s = match &n.op {
        Op::Constant { bytes } => constant_text(n, bytes, full),
        op => op.mnemonic(),
    };
    for (i, inp) in n.inputs.iter().enumerate() {
        s.push_str(if i == 0 { " " } else { ", " });
        s.push_str(&inp.to_string());
    }
    s.push_str(&format!(" : {}", n.shape));
    if let Some(name) = &n.name {
        s.push_str(&format!("  # {}", name_text(name)));
    }
    s
}

/// A node's debug name as written after `#`: verbatim, or quoted with
/// escapes when the verbatim form would not read back (line breaks, edge
/// spaces, a leading quote, empty).
fn name_text(name: &str) -> String {
    let plain = !name.is_empty()
        && !name.starts_with('"')
        && name.trim() == name
        && !name.chars().any(char::is_control);
    if plain {
        name.to_string()
    } else {
        format!("{name:?}")
    }
}

fn constant_text(n: &Node, bytes: &[u8], full: bool) -> String {
    // Decided from the shape before the bytes are copied: an elided
    // constant (a conv weight of megabytes, say) costs nothing to print.
    let values = n.shape.static_dims().and_then(|dims| {
        let numel: usize = dims.iter().product();
        if !full && numel > 8 {
            return None;
        }
        let t = HostTensor::from_bytes(n.shape.dtype(), &dims, bytes.to_vec()).ok()?;
        Some(t.to_f64_lossy())
    });
    // The printed values; exact when re-encoding what they read back as
    // gives the same bytes (a NaN prints without its sign).
    let printed = values.map(|v| v.iter().map(|x| format!("{x}")).collect::<Vec<_>>());
    match printed {
        Some(v)
            if !full
                || v.iter()
                    .flat_map(|x| {
                        let back = x.parse::<f64>().unwrap_or(f64::NAN);
                        scalar_constant_bytes(back, n.shape.dtype())
                    })
                    .eq(bytes.iter().copied()) =>
        {
            format!("constant [{}]", v.join(", "))
        }
        _ if full => {
            let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
            format!("constant hex\"{hex}\"")
        }
        _ => format!("constant<{} bytes>", bytes.len()),
    }
}

fn write_graph(f: &mut fmt::Formatter<'_>, g: &Graph, full: bool) -> fmt::Result {
    writeln!(f, "graph {:?} {{", g.name())?;
    for id in g.ids() {
        let n = g.node(id);
        writeln!(f, "  {id} = {}", node_text_with(n, full))?;
        // Sub-graphs of control ops print nested under their node.
        for (role, sub) in crate::ops::control::subgraphs(&n.op) {
            let text = if full { sub.to_text() } else { sub.to_string() };
            for (i, line) in text.lines().enumerate() {
                let lead = if i == 0 {
                    format!("{role}: ")
                } else {
                    "  ".into()
                };
                writeln!(f, "    {lead}{line}")?;
            }
        }
    }
    let outs: Vec<String> = g.outputs().iter().map(ToString::to_string).collect();
    writeln!(f, "  return {}", outs.join(", "))?;
    f.write_str("}")
}

impl Graph {
    /// The full textual IR: like `Display`, but every constant is written
    /// exactly, so [`crate::parse_graph`] reads it back to a graph that
    /// prints the same. Also `format!("{g:#}")`.
    pub fn to_text(&self) -> String {
        format!("{self:#}")
    }
}

impl fmt::Display for Graph {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_graph(f, self, f.alternate())
    }
}
