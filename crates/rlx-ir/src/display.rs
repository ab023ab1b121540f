//! The textual IR: `Display` for [`Graph`].
//!
//! ```text
//! graph "hello" {
//!   %0 = input "x" : f32[1,4]
//!   %1 = param "w" : f32[4,2]
//!   %2 = matmul %0, %1 : f32[1,2]
//!   return %2
//! }
//! ```

use crate::{Graph, HostTensor, Node, Op};
use std::fmt;

/// The text of one node's right-hand side: `matmul %0, %1 : f32[1,2]`.
pub fn node_text(n: &Node) -> String {
    let mut s = match &n.op {
        Op::Constant { bytes } => constant_text(n, bytes),
        op => op.mnemonic(),
    };
    for (i, inp) in n.inputs.iter().enumerate() {
        s.push_str(if i == 0 { " " } else { ", " });
        s.push_str(&inp.to_string());
    }
    s.push_str(&format!(" : {}", n.shape));
    if let Some(name) = &n.name {
        s.push_str(&format!("  # {name}"));
    }
    s
}

fn constant_text(n: &Node, bytes: &[u8]) -> String {
    let dims = match n.shape.static_dims() {
        Some(d) => d,
        None => return format!("constant<{} bytes>", bytes.len()),
    };
    match HostTensor::from_bytes(n.shape.dtype(), &dims, bytes.to_vec()) {
        Ok(t) if t.numel() <= 8 => {
            let v: Vec<String> = t.to_f64_lossy().iter().map(|x| format!("{x}")).collect();
            format!("constant [{}]", v.join(", "))
        }
        _ => format!("constant<{} bytes>", bytes.len()),
    }
}

impl fmt::Display for Graph {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "graph \"{}\" {{", self.name())?;
        for id in self.ids() {
            let n = self.node(id);
            writeln!(f, "  {id} = {}", node_text(n))?;
            // Sub-graphs of control ops print nested under their node.
            for (role, sub) in crate::ops::control::subgraphs(&n.op) {
                let text = sub.to_string();
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
        let outs: Vec<String> = self.outputs().iter().map(ToString::to_string).collect();
        writeln!(f, "  return {}", outs.join(", "))?;
        f.write_str("}")
    }
}
