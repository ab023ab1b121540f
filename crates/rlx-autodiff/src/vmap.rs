//! `vmap`: vectorise a graph over a batch axis, like `jax.vmap`.

use crate::emit::{dims, lift, transpose};
use crate::prepare::prepare;
use crate::{rules, AutodiffError, Result};
use rlx_ir::ops::control::is_tuple_op;
use rlx_ir::{Graph, NodeId, NodeOrigin, Op, Shape};
use std::collections::HashMap;

/// Batches the named inputs (or params) along a new leading axis of size
/// `batch_size`; every output gains that leading axis.
///
/// ```
/// use rlx_ir::{DType, Graph, GraphExt, Shape};
/// let mut g = Graph::new("dot");
/// let x = g.input("x", Shape::new(&[3], DType::F32));
/// let w = g.param("w", Shape::new(&[3], DType::F32));
/// let xw = g.mul(x, w);
/// let y = g.sum(xw, &[0], false);
/// g.set_outputs(vec![y]);
/// let v = rlx_autodiff::vmap(&g, &["x"], 5).unwrap();
/// assert_eq!(v.shape(v.outputs()[0]), &Shape::new(&[5], DType::F32));
/// ```
pub fn vmap(g: &Graph, batched_inputs: &[&str], batch_size: usize) -> Result<Graph> {
    let axes: Vec<(&str, usize)> = batched_inputs.iter().map(|&n| (n, 0)).collect();
    vmap_axes(g, &axes, 0, batch_size)
}

/// `vmap` with JAX's `in_axes` / `out_axes`: each named leaf is batched
/// along its given axis, and the batch axis of every output is `out_axis`.
pub fn vmap_axes(
    g: &Graph,
    in_axes: &[(&str, usize)],
    out_axis: usize,
    batch_size: usize,
) -> Result<Graph> {
    let (h, _) = prepare(g)?;
    for (name, _) in in_axes {
        crate::prepare::leaf_named(&h, name)?;
    }
    let b = batch_size;
    let mut out = Graph::new(format!("vmap({})", h.name()));
    let mut map: Vec<NodeId> = Vec::with_capacity(h.len());
    let mut bat: Vec<bool> = Vec::with_capacity(h.len());
    let origin = NodeOrigin::Pass {
        name: "vmap".into(),
    };
    // Batched results of tuple (control-flow) nodes.
    let mut tuple_res: HashMap<NodeId, Vec<NodeId>> = HashMap::new();
    for (i, n) in h.nodes().iter().enumerate() {
        let here = NodeId(i as u32);
        if let Some(bad) = n.inputs.iter().find(|i| tuple_res.contains_key(i)) {
            let Op::TupleGet { index, .. } = n.op else {
                return Err(AutodiffError::InvalidGraph(format!(
                    "{} reads the tuple {bad} other than through tuple_get",
                    n.op.mnemonic()
                )));
            };
            map.push(tuple_res[bad][index]);
            bat.push(true);
            continue;
        }
        if is_tuple_op(&n.op) && n.inputs.iter().any(|i| bat[i.index()]) {
            let ins: Vec<NodeId> = n.inputs.iter().map(|i| map[i.index()]).collect();
            let flags: Vec<bool> = n.inputs.iter().map(|i| bat[i.index()]).collect();
            let first = out.len();
            let r = rules::control::batch(&mut out, n, &ins, &flags, b)?;
            for k in first..out.len() {
                out.set_origin(NodeId(k as u32), origin.clone());
            }
            map.push(r.first().copied().unwrap_or(NodeId(0)));
            bat.push(true);
            tuple_res.insert(here, r);
            continue;
        }
        let leaf_axis = match &n.op {
            Op::Input { name } | Op::Param { name } => {
                in_axes.iter().find(|(m, _)| m == name).map(|&(_, a)| a)
            }
            _ => None,
        };
        let (id, is_b) = if let Some(axis) = leaf_axis {
            let d = n.shape.static_dims().expect("prepared graphs are static");
            if axis > d.len() {
                return Err(AutodiffError::InvalidGraph(format!(
                    "in_axis {axis} exceeds the rank {} of {}",
                    d.len(),
                    n.shape
                )));
            }
            let mut nd = d.clone();
            nd.insert(axis, b);
            let mut leaf = n.clone();
            leaf.shape = Shape::new(&nd, n.shape.dtype());
            let id = out.push_verified(leaf);
            let mut perm = vec![axis];
            perm.extend((0..nd.len()).filter(|&i| i != axis));
            (transpose(&mut out, id, &perm)?, true)
        } else if n.op.is_leaf() || n.inputs.iter().all(|i| !bat[i.index()]) {
            let mut c = n.clone();
            c.inputs = n.inputs.iter().map(|i| map[i.index()]).collect();
            (out.push_verified(c), false)
        } else {
            let ins: Vec<NodeId> = n.inputs.iter().map(|i| map[i.index()]).collect();
            let flags: Vec<bool> = n.inputs.iter().map(|i| bat[i.index()]).collect();
            let first = out.len();
            let id = rules::batching::batch(&mut out, n, &ins, &flags, b)?;
            for k in first..out.len() {
                out.set_origin(NodeId(k as u32), origin.clone());
            }
            (id, true)
        };
        map.push(id);
        bat.push(is_b);
    }
    let mut outputs = Vec::with_capacity(h.outputs().len());
    for &o in h.outputs() {
        let y = lift(&mut out, map[o.index()], bat[o.index()], b, 0)?;
        let r = dims(&out, y)?.len();
        if out_axis >= r {
            return Err(AutodiffError::InvalidGraph(format!(
                "out_axis {out_axis} exceeds the rank {r} of a batched output"
            )));
        }
        let mut perm: Vec<usize> = (1..r).collect();
        perm.insert(out_axis, 0);
        outputs.push(transpose(&mut out, y, &perm)?);
    }
    out.set_outputs(outputs);
    Ok(out)
}
