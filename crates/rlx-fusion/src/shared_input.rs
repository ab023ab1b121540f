//! Shared-input matmul fusion (Q / K / V projections): matmuls that read
//! the same activation `x [.., M, K]` with constant weights `[K, N]` of one
//! shape become one matmul of `x` (as `[M', K]`) with the weights stacked
//! at compile time (`[G, K, N]`), whose `[G, M', N]` result each former
//! matmul reads through a view (a contiguous narrow and a reshape).
//!
//! Weights that are params are not stacked: stacking them in the graph
//! would copy every weight on every run. Those groups are reported as
//! misses ([`MissReason::ParamWeights`]).

use crate::report::{region_of, FusionKind, FusionReport, MissReason, MissedFusion};
use crate::uses::{emit_fused, rebuild, unstack};
use rlx_ir::{Graph, IrError, NodeId, Op, Shape};
use std::collections::BTreeMap;

/// The weight `[K, N]` (a constant or a param) of a matmul `x @ w` that
/// may join a group.
fn weight_of(g: &Graph, m: NodeId) -> Option<NodeId> {
    let n = g.node(m);
    if !matches!(n.op, Op::MatMul) || n.shape.static_dims().is_none() {
        return None;
    }
    let (x, w) = (n.inputs[0], n.inputs[1]);
    let leaf = matches!(g.node(w).op, Op::Constant { .. } | Op::Param { .. });
    let x_static = g.shape(x).static_dims().is_some();
    (leaf && x_static && g.shape(w).rank() == 2 && g.shape(x).rank() >= 2).then_some(w)
}

/// Fuses groups of matmuls sharing their left operand.
pub fn fuse_shared_input_matmuls(g: &Graph) -> Result<(Graph, FusionReport), IrError> {
    let mut report = FusionReport::default();
    let mut groups: BTreeMap<NodeId, Vec<NodeId>> = BTreeMap::new();
    for m in g.ids() {
        if weight_of(g, m).is_some() {
            groups.entry(g.node(m).inputs[0]).or_default().push(m);
        }
    }
    // Group members by weight shape; only one shape stacks into views.
    let mut plans: Vec<Vec<NodeId>> = Vec::new();
    for members in groups.into_values().filter(|m| m.len() >= 2) {
        let w0 = g.shape(g.node(members[0]).inputs[1]).clone();
        let reason = if members.iter().any(|&m| g.shape(g.node(m).inputs[1]) != &w0) {
            Some(MissReason::ShapeMismatch)
        } else if members
            .iter()
            .any(|&m| !matches!(g.node(g.node(m).inputs[1]).op, Op::Constant { .. }))
        {
            Some(MissReason::ParamWeights)
        } else {
            None
        };
        match reason {
            Some(reason) => report
                .missed
                .extend(members[1..].iter().map(|&m| MissedFusion {
                    producer: m,
                    op: "matmul".into(),
                    consumer: members[0],
                    reason,
                })),
            None => plans.push(members),
        }
    }

    // Each group is emitted where its first member was: x exists by then,
    // and the stacked weights are built from the constants' bytes.
    let out = rebuild(g, plans.iter().map(|p| (p[0], p.clone())), |out, k, map| {
        let members = &plans[k];
        let fused = emit_group(out, g, members, map)?;
        for (i, &m) in members.iter().enumerate() {
            map[m.index()] = unstack(out, fused, i, g.shape(m))?;
        }
        report.regions.push(region_of(
            g,
            FusionKind::SharedInput,
            members.iter().copied(),
            fused,
        ));
        Ok(())
    })?;
    Ok((out, report))
}

/// `reshape(x, [M', K]) @ stack(w_i)`: the `[G, M', N]` products.
fn emit_group(
    out: &mut Graph,
    g: &Graph,
    members: &[NodeId],
    map: &[NodeId],
) -> Result<NodeId, IrError> {
    let x = g.node(members[0]).inputs[0];
    let xs = g.shape(x);
    let dims = xs.static_dims().expect("matmul dims are static");
    let kdim = dims[dims.len() - 1];
    let rows: usize = dims[..dims.len() - 1].iter().product();
    let x2 = out.try_node(
        Op::Reshape,
        &[map[x.index()]],
        Some(Shape::new(&[rows, kdim], xs.dtype())),
    )?;
    let w0 = g.shape(g.node(members[0]).inputs[1]);
    let wd = w0.static_dims().expect("constants are static");
    let mut bytes = Vec::new();
    for &m in members {
        let Op::Constant { bytes: b } = &g.node(g.node(m).inputs[1]).op else {
            unreachable!("planned only for constant weights")
        };
        bytes.extend_from_slice(b);
    }
    let stacked = out.try_constant_bytes(
        bytes,
        Shape::new(&[members.len(), wd[0], wd[1]], w0.dtype()),
    )?;
    emit_fused(out, g, members[0], Op::MatMul, &[x2, stacked], None)
}
