//! Sub-graph surgery the control-flow rules share: inlining a sub-graph,
//! building a graph from a closure, and the per-sub-graph transforms
//! (VJP / JVP graphs with every input and output explicit, full vmap).

use crate::emit::{cast, mul, sum};
use crate::reverse::{grad_with_loss_opts, GradWithLossOptions};
use crate::{AutodiffError, Result};
use rlx_ir::{Graph, NodeId, Op, Shape};

/// Copies `sub` into `dst` with its inputs bound to `args`; returns the
/// nodes of its outputs.
pub fn inline(dst: &mut Graph, sub: &Graph, args: &[NodeId]) -> Result<Vec<NodeId>> {
    let ins = sub.inputs();
    if ins.len() != args.len() {
        return Err(AutodiffError::InvalidGraph(format!(
            "sub-graph \"{}\" takes {} inputs, given {}",
            sub.name(),
            ins.len(),
            args.len()
        )));
    }
    let mut map: Vec<NodeId> = Vec::with_capacity(sub.len());
    let mut next_arg = 0;
    for n in sub.nodes() {
        let id = match &n.op {
            Op::Input { .. } => {
                let a = args[next_arg];
                next_arg += 1;
                if dst.shape(a) != &n.shape {
                    return Err(AutodiffError::InvalidGraph(format!(
                        "sub-graph \"{}\" input {} is {}, given {}",
                        sub.name(),
                        next_arg - 1,
                        n.shape,
                        dst.shape(a)
                    )));
                }
                a
            }
            Op::Param { name } => {
                return Err(AutodiffError::InvalidGraph(format!(
                    "sub-graph \"{}\" has param \"{name}\"",
                    sub.name()
                )))
            }
            _ => {
                let mut c = n.clone();
                c.inputs = n.inputs.iter().map(|i| map[i.index()]).collect();
                dst.push_verified(c)
            }
        };
        map.push(id);
    }
    Ok(sub.outputs().iter().map(|o| map[o.index()]).collect())
}

/// A graph named `name` with inputs of `shapes` (named `a0`, `a1`, ...)
/// whose outputs `body` builds from them.
pub fn build(
    name: &str,
    shapes: &[Shape],
    body: impl FnOnce(&mut Graph, &[NodeId]) -> Result<Vec<NodeId>>,
) -> Result<Graph> {
    let mut g = Graph::new(name);
    let mut ins = Vec::with_capacity(shapes.len());
    for (i, s) in shapes.iter().enumerate() {
        ins.push(g.try_input(&format!("a{i}"), s.clone())?);
    }
    let outs = body(&mut g, &ins)?;
    g.set_outputs(outs);
    Ok(g)
}

/// Input and output shapes of a graph.
pub fn signature(g: &Graph) -> (Vec<Shape>, Vec<Shape>) {
    rlx_ir::ops::control::signature(g)
}

/// Which shapes carry derivatives (floating point).
pub fn float_mask(shapes: &[Shape]) -> Vec<bool> {
    shapes.iter().map(|s| s.dtype().is_float()).collect()
}

/// Elements of `v` where `mask` holds.
pub fn pick<T: Clone>(v: &[T], mask: &[bool]) -> Vec<T> {
    v.iter()
        .zip(mask)
        .filter(|(_, &m)| m)
        .map(|(x, _)| x.clone())
        .collect()
}

/// The VJP of `g` as a graph: inputs `(primals..., cotangent of each float
/// output...)`, outputs `(cotangent of each float input...)`.
pub fn vjp_graph(g: &Graph) -> Result<Graph> {
    let (ins, outs) = signature(g);
    let (fin, fout) = (float_mask(&ins), float_mask(&outs));
    let mut shapes = ins.clone();
    shapes.extend(pick(&outs, &fout));
    let mut h = Graph::new(format!("vjp({})", g.name()));
    let mut args = Vec::with_capacity(shapes.len());
    for (i, s) in shapes.iter().enumerate() {
        args.push(h.try_input(&format!("a{i}"), s.clone())?);
    }
    let ys = inline(&mut h, g, &args[..ins.len()])?;
    // loss = sum_k <y_k, ct_k>: its gradient is the VJP with those cotangents.
    let mut loss: Option<NodeId> = None;
    let mut cts = args[ins.len()..].iter();
    for (y, _) in ys.iter().zip(&fout).filter(|(_, &f)| f) {
        let ct = *cts.next().expect("one cotangent per float output");
        let p = mul(&mut h, *y, ct)?;
        let axes: Vec<usize> = (0..h.shape(p).rank()).collect();
        let s = sum(&mut h, p, &axes, false)?;
        loss = Some(match loss {
            None => s,
            Some(l) => {
                let dt = h.shape(l).dtype();
                let s = cast(&mut h, s, dt)?;
                crate::emit::add(&mut h, l, s)?
            }
        });
    }
    let wrt = pick(&args[..ins.len()], &fin);
    if wrt.is_empty() {
        h.set_outputs(vec![]);
        return Ok(h);
    }
    let loss = match loss {
        Some(l) => l,
        None => h.scalar(0.0, rlx_ir::DType::F32),
    };
    h.set_outputs(vec![loss]);
    let mut d = grad_with_loss_opts(&h, &wrt, &GradWithLossOptions::TRAINING)?;
    let grads = d.outputs()[1..].to_vec();
    d.set_outputs(grads);
    Ok(d)
}

/// The JVP of `g` as a graph: inputs `(primals..., tangent of each float
/// input...)`, outputs `(primal outputs..., tangent of each float output...)`.
pub fn jvp_graph(g: &Graph) -> Result<Graph> {
    let (ins, outs) = signature(g);
    let fout = float_mask(&outs);
    let leaves: Vec<NodeId> = g
        .inputs()
        .into_iter()
        .filter(|(_, _, s)| s.dtype().is_float())
        .map(|(id, _, _)| id)
        .collect();
    let mut j = crate::forward::jvp(g, &leaves)?;
    let all = j.outputs().to_vec();
    let mut keep = all[..outs.len()].to_vec();
    keep.extend(pick(&all[outs.len()..], &fout));
    j.set_outputs(keep);
    debug_assert_eq!(j.inputs().len(), ins.len() + leaves.len());
    Ok(j)
}

/// `g` batched along a new leading axis of size `b` on every input and output.
pub fn vmap_all(g: &Graph, b: usize) -> Result<Graph> {
    let names: Vec<String> = g.inputs().iter().map(|(_, n, _)| n.to_string()).collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    crate::vmap::vmap(g, &refs, b)
}

/// A graph with the inputs of `g` reordered (`order[k]` is the old index of
/// new input `k`) and its outputs reordered likewise by `out_order`.
pub fn permute(g: &Graph, order: &[usize], out_order: &[usize]) -> Result<Graph> {
    let (ins, _) = signature(g);
    let shapes: Vec<Shape> = order.iter().map(|&i| ins[i].clone()).collect();
    build(g.name(), &shapes, |h, args| {
        let mut old = vec![NodeId(0); ins.len()];
        for (k, &i) in order.iter().enumerate() {
            old[i] = args[k];
        }
        let outs = inline(h, g, &old)?;
        Ok(out_order.iter().map(|&i| outs[i]).collect())
    })
}
