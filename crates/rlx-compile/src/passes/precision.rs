//! The session precision rewrite: F32 values computed in F16 / BF16.
//!
//! Every F32 leaf is cast to the target dtype on entry and every F32 output
//! cast back, so graph I/O stays F32. Ops that have no low-precision form
//! (e.g. `rfft`) run in F32 between casts. CPU kernels compute F16 / BF16 in
//! F32 internally, so reductions accumulate in F32.

use crate::CompileError;
use rlx_ir::{ops, DType, Graph, IrError, NodeId, NodeOrigin, Op, Shape};

fn map_dtype(s: &Shape, target: DType) -> Shape {
    if s.dtype() == DType::F32 {
        s.with_dtype(target)
    } else {
        s.clone()
    }
}

fn cast(out: &mut Graph, x: NodeId, to: DType) -> Result<NodeId, IrError> {
    if out.shape(x).dtype() == to {
        return Ok(x);
    }
    let s = out.shape(x).with_dtype(to);
    let id = out.try_node(Op::Cast, &[x], Some(s))?;
    out.set_origin(
        id,
        NodeOrigin::Pass {
            name: "precision".into(),
        },
    );
    Ok(id)
}

/// Rewrites `g` to compute its F32 values in `target` (F16 or BF16).
pub fn lower_precision(g: &Graph, target: DType) -> Result<Graph, CompileError> {
    let wrap = |source| CompileError::Pass {
        pass: "precision",
        source,
    };
    let mut out = Graph::new(g.name());
    let mut map: Vec<NodeId> = Vec::with_capacity(g.len());
    for n in g.nodes() {
        let id = if n.op.is_leaf() {
            let leaf = out.push_verified(n.clone());
            cast(&mut out, leaf, map_dtype(&n.shape, target).dtype()).map_err(wrap)?
        } else {
            let inputs: Vec<NodeId> = n.inputs.iter().map(|i| map[i.index()]).collect();
            let declared = ops::needs_declared_shape(&n.op).then(|| map_dtype(&n.shape, target));
            match out.try_node(n.op.clone(), &inputs, declared) {
                Ok(id) => id,
                Err(_) => {
                    // No low-precision form: run this op in F32 between casts.
                    let mut wide = Vec::with_capacity(inputs.len());
                    for (&orig, &new) in n.inputs.iter().zip(&inputs) {
                        wide.push(cast(&mut out, new, g.shape(orig).dtype()).map_err(wrap)?);
                    }
                    let declared = ops::needs_declared_shape(&n.op).then(|| n.shape.clone());
                    let id = out.try_node(n.op.clone(), &wide, declared).map_err(wrap)?;
                    cast(&mut out, id, map_dtype(&n.shape, target).dtype()).map_err(wrap)?
                }
            }
        };
        if let Some(name) = &n.name {
            out.set_name(id, name.clone());
        }
        map.push(id);
    }
    let mut outputs = Vec::with_capacity(g.outputs().len());
    for &o in g.outputs() {
        outputs.push(cast(&mut out, map[o.index()], g.shape(o).dtype()).map_err(wrap)?);
    }
    out.set_outputs(outputs);
    Ok(out)
}
