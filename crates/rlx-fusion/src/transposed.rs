//! Transposed matmul operands: a 2-d `matmul` reading a 2-d transpose
//! (`x.T @ y`, `x @ y.T`, as reverse mode writes the weight and input
//! gradients) becomes a `dot_general` of the untransposed matrix that
//! contracts its other axis. The GEMM then reads the matrix in place
//! through strides instead of a copy the transpose materialised. The sums
//! are the same products in the same order.
//!
//! Runs after the pattern passes (attention recognises `q @ k.T` spelled
//! with a transpose) and before the epilogue pass, which folds tails into
//! the matmuls left.

use crate::report::{region_of, FusionKind, FusionReport};
use crate::uses::{copy, emit_fused};
use rlx_ir::op::DotDims;
use rlx_ir::{Graph, IrError, NodeId, Op};

/// The source of `id` when it is a 2-d `transpose{perm=[1, 0]}` of a
/// computed value. A transposed param is left to the runtime, which
/// computes the transpose once per param value (the param prelude), so the
/// matmul reads a plain weight it can pack.
fn transposed_source(g: &Graph, id: NodeId) -> Option<NodeId> {
    let n = g.node(id);
    let swap = matches!(&n.op, Op::Transpose { perm } if perm[..] == [1, 0]);
    let source = n.inputs.first().copied()?;
    (swap && !matches!(g.node(source).op, Op::Param { .. })).then_some(source)
}

/// For a 2-d matmul with a transposed operand: the operands the
/// `dot_general` reads, its dims, and the transposes it reads through.
fn rewrite_of(g: &Graph, m: NodeId) -> Option<([NodeId; 2], DotDims, Vec<NodeId>)> {
    let n = g.node(m);
    if !matches!(n.op, Op::MatMul) || n.inputs.iter().any(|&i| g.shape(i).rank() != 2) {
        return None;
    }
    let (a, b) = (n.inputs[0], n.inputs[1]);
    let (sa, sb) = (transposed_source(g, a), transposed_source(g, b));
    if sa.is_none() && sb.is_none() {
        return None;
    }
    let dims = DotDims {
        lhs_batch: vec![],
        rhs_batch: vec![],
        lhs_contract: vec![if sa.is_some() { 0 } else { 1 }],
        rhs_contract: vec![if sb.is_some() { 1 } else { 0 }],
    };
    let through = [(a, sa), (b, sb)]
        .into_iter()
        .filter_map(|(t, s)| s.map(|_| t))
        .collect();
    Some(([sa.unwrap_or(a), sb.unwrap_or(b)], dims, through))
}

/// Rewrites every 2-d matmul of a transposed operand as a `dot_general`;
/// a transpose nothing else reads is dropped.
pub fn fuse_transposed_operands(g: &Graph) -> Result<(Graph, FusionReport), IrError> {
    let rewrites: Vec<_> = g.ids().map(|id| rewrite_of(g, id)).collect();
    // A transpose stays only while something other than a rewritten matmul reads it.
    let mut needed = vec![false; g.len()];
    for &o in g.outputs() {
        needed[o.index()] = true;
    }
    for id in g.ids() {
        let read = match &rewrites[id.index()] {
            Some((operands, _, _)) => operands.to_vec(),
            None => g.node(id).inputs.clone(),
        };
        read.into_iter().for_each(|i| needed[i.index()] = true);
    }
    let mut report = FusionReport::default();
    let mut out = Graph::new(g.name());
    let mut map = vec![NodeId(u32::MAX); g.len()];
    for id in g.ids() {
        let n = g.node(id);
        let dropped = transposed_source(g, id).is_some() && !needed[id.index()];
        if dropped {
            continue;
        }
        map[id.index()] = match &rewrites[id.index()] {
            Some((operands, dims, through)) => {
                let ins = [map[operands[0].index()], map[operands[1].index()]];
                let op = Op::DotGeneral(dims.clone());
                let d = emit_fused(&mut out, g, id, op, &ins, Some(n.shape.clone()))?;
                let nodes = through.iter().copied().chain([id]);
                report
                    .regions
                    .push(region_of(g, FusionKind::TransposedOperand, nodes, d));
                d
            }
            None => copy(&mut out, g, id, &map),
        };
    }
    out.set_outputs(g.outputs().iter().map(|o| map[o.index()]).collect());
    Ok((out, report))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rlx_ir::{DType, GraphExt, Shape};

    #[test]
    fn transposed_operands_become_one_dot_general_and_shared_transposes_stay() {
        let mut g = Graph::new("t");
        let x = g.input("x", Shape::new(&[4, 3], DType::F32));
        let y = g.input("y", Shape::new(&[4, 5], DType::F32));
        let w = g.input("w", Shape::new(&[6, 5], DType::F32));
        let xt = g.transpose_(x, &[1, 0]);
        let dw = g.mm(xt, y); // [3, 5]
        let wt = g.transpose_(w, &[1, 0]);
        let h = g.mm(y, wt); // [4, 6]
        let xtt = g.transpose_(xt, &[1, 0]);
        let both = g.mm(xt, xtt); // [3, 3]
        g.set_outputs(vec![dw, h, both, wt]);
        let (f, report) = fuse_transposed_operands(&g).unwrap();
        assert_eq!(report.of_kind(FusionKind::TransposedOperand).len(), 3);
        let kinds: Vec<String> = f.nodes().iter().map(|n| n.op.mnemonic()).collect();
        // x.T is read as an operand (of `both`) and w.T is an output: both
        // stay; x.T.T is read only through a rewrite: dropped.
        let transposes = kinds.iter().filter(|k| k.starts_with("transpose")).count();
        assert_eq!(transposes, 2, "{f}");
        assert!(!kinds.iter().any(|k| k == "matmul"), "{f}");
        for (o, dims) in f.outputs().iter().zip([[3, 5], [4, 6], [3, 3], [5, 6]]) {
            assert_eq!(f.shape(*o).static_dims(), Some(dims.to_vec()), "{f}");
        }
    }
}
