//! Common-subexpression elimination: two nodes with the same op, payload,
//! inputs and shape compute the same value, so the later one is replaced by
//! the earlier. Leaves other than constants are never merged (two inputs
//! with equal shapes are different values); equal constants are.

use super::{copy_node, pass_error};
use crate::CompileError;
use rlx_ir::{Graph, NodeId, Op};
use std::collections::HashMap;
use std::hash::{Hash, Hasher};

/// What identifies an op's payload: a constant by its bytes (compared in
/// full, hashed by the constant's cached content hash: formatting a model's
/// weights as text costs seconds), any other op by its Debug form (exact:
/// it prints every field).
#[derive(PartialEq, Eq)]
enum Payload<'a> {
    /// The bytes and their cached hash.
    Bytes(&'a [u8], u64),
    Text(String),
}

impl Hash for Payload<'_> {
    fn hash<H: Hasher>(&self, h: &mut H) {
        match self {
            Payload::Bytes(b, hash) => (b.len(), hash).hash(h),
            Payload::Text(t) => t.hash(h),
        }
    }
}

/// Merges nodes that compute the same value.
pub fn cse(g: &Graph) -> Result<Graph, CompileError> {
    let mut out = Graph::new(g.name());
    let mut map: Vec<NodeId> = Vec::with_capacity(g.len());
    // Keyed by the op's payload, the renumbered inputs and the shape.
    let mut seen: HashMap<(Payload, Vec<NodeId>, String), NodeId> = HashMap::new();
    for n in g.nodes() {
        let inputs: Vec<NodeId> = n.inputs.iter().map(|i| map[i.index()]).collect();
        let mergeable = !matches!(n.op, Op::Input { .. } | Op::Param { .. });
        let payload = match &n.op {
            Op::Constant { bytes } => Payload::Bytes(bytes, bytes.content_hash()),
            op => Payload::Text(format!("{op:?}")),
        };
        let key = (payload, inputs, format!("{:?}", n.shape));
        if mergeable {
            if let Some(&earlier) = seen.get(&key) {
                map.push(earlier);
                continue;
            }
        }
        let id = copy_node(&mut out, n, &map).map_err(pass_error("cse"))?;
        if mergeable {
            seen.insert(key, id);
        }
        map.push(id);
    }
    out.set_outputs(g.outputs().iter().map(|o| map[o.index()]).collect());
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::cse;
    use rlx_ir::{Graph, HostTensor, Op};

    /// Equal constants merge; constants that differ in one byte stay apart
    /// (the full bytes decide).
    #[test]
    fn constants_merge_only_when_every_byte_is_equal() {
        let mut g = Graph::new("cse");
        let a: Vec<f32> = (0..1000).map(|i| i as f32).collect();
        let mut b = a.clone();
        b[1] = -1.0; // bytes 4..8: between the sampled bytes of 4000
        let ta = HostTensor::from_vec(a, &[1000]).unwrap();
        let tb = HostTensor::from_vec(b, &[1000]).unwrap();
        let (x, y, z) = (
            g.constant_tensor(&ta),
            g.constant_tensor(&ta),
            g.constant_tensor(&tb),
        );
        g.set_outputs(vec![x, y, z]);
        let out = cse(&g).unwrap();
        let constants = out
            .nodes()
            .iter()
            .filter(|n| matches!(n.op, Op::Constant { .. }))
            .count();
        assert_eq!(constants, 2, "x and y merge, z stays");
        assert_eq!(out.outputs()[0], out.outputs()[1]);
        assert_ne!(out.outputs()[0], out.outputs()[2]);
    }
}
