//! [`lift_constants`]: large constants of a graph (an imported ONNX model's
//! initializers) turned into params, so a package stores them as tensors in
//! tiers instead of inside the graph text.

use rlx_ir::{Graph, HostTensor, Node, Op};
use std::collections::HashSet;

/// `g` with every top-level constant of at least `min_bytes` bytes (and a
/// static shape) replaced by a param of the same shape, and those
/// constants' values by param name. A param takes the constant node's name
/// when it has one not already used by a param, else `const.<node index>`.
/// Node ids, inputs and outputs are unchanged; control-flow bodies keep
/// their constants (a body has no params).
///
/// ```
/// use rlx_ir::{DType, Graph, GraphExt, HostTensor, Shape};
/// let mut g = Graph::new("affine");
/// let x = g.input("x", Shape::new(&[1, 2], DType::F32));
/// let w = g.constant_tensor(&HostTensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0], &[2, 2]).unwrap());
/// let y = g.mm(x, w);
/// g.set_outputs(vec![y]);
/// let (lifted, values) = rlx_pkg::lift_constants(&g, 16);
/// assert_eq!(lifted.params().len(), 1);
/// assert_eq!(values[0].0, "const.1");
/// assert_eq!(values[0].1.to_vec::<f32>().unwrap(), [1.0, 2.0, 3.0, 4.0]);
/// ```
pub fn lift_constants(g: &Graph, min_bytes: usize) -> (Graph, Vec<(String, HostTensor)>) {
    let mut taken: HashSet<String> = g
        .params()
        .into_iter()
        .map(|(_, n, _)| n.to_string())
        .collect();
    let mut out = Graph::new(g.name());
    let mut values = Vec::new();
    for (i, node) in g.nodes().iter().enumerate() {
        let lifted = match (&node.op, node.shape.static_dims()) {
            (Op::Constant { bytes }, Some(dims)) if bytes.len() >= min_bytes => {
                let name = node
                    .name
                    .clone()
                    .filter(|n| !n.is_empty() && !taken.contains(n))
                    .unwrap_or_else(|| {
                        let mut n = format!("const.{i}");
                        while taken.contains(&n) {
                            n.push('_');
                        }
                        n
                    });
                let t = HostTensor::from_bytes(node.shape.dtype(), &dims, bytes.to_vec())
                    .expect("a verified constant holds its shape's bytes");
                taken.insert(name.clone());
                values.push((name.clone(), t));
                Some(Node {
                    op: Op::Param { name },
                    inputs: Vec::new(),
                    shape: node.shape.clone(),
                    name: node.name.clone(),
                    origin: node.origin.clone(),
                })
            }
            _ => None,
        };
        out.push_verified(lifted.unwrap_or_else(|| node.clone()));
    }
    out.set_outputs(g.outputs().to_vec());
    (out, values)
}
