//! Shared-input matmul fusion (Q / K / V projections): matmuls that read
//! the same activation `x [.., M, K]` with constant weights `[K, N]` of one
//! shape become one matmul of `x` (as `[M', K]`) with the weights stacked
//! at compile time (`[G, K, N]`), whose `[G, M', N]` result each former
//! matmul reads through a view (a contiguous narrow and a reshape). When
//! each matmul's only reader adds its own `[N]` bias, the biases are
//! stacked as well (`[G, 1, N]`) and the group keeps one bias add, which
//! the epilogue pass then folds into the stacked matmul.
//!
//! Weights that are params are stacked in the graph, by a concat of the
//! params, only when the caller says param-only values are computed once
//! per param change ([`fuse_shared_input_matmuls_with`] with
//! `stack_params`; rlx-runtime hoists them into a prelude). Otherwise the
//! concat would copy every weight on every run: those groups are reported
//! as misses ([`MissReason::ParamWeights`]).

use crate::report::{region_of, FusionKind, FusionReport, MissReason, MissedFusion};
use crate::uses::{copy, emit_fused, rebuild, unstack, Uses};
use rlx_ir::op::BinaryOp;
use rlx_ir::{Graph, IrError, NodeId, Op, Shape};
use std::collections::BTreeMap;

/// Per node: computed from params and constants only (leaves included).
fn param_only(g: &Graph) -> Vec<bool> {
    let mut only = vec![false; g.len()];
    for id in g.ids() {
        let n = g.node(id);
        only[id.index()] = match n.op {
            Op::Constant { .. } | Op::Param { .. } => true,
            Op::Input { .. } | Op::If(_) | Op::While(_) | Op::Scan(_) | Op::CustomFn(_) => false,
            _ => !n.inputs.is_empty() && n.inputs.iter().all(|i| only[i.index()]),
        };
    }
    only
}

/// The weight `[K, N]` of a matmul `x @ w` that may join a group: a
/// constant, a param or any param-only value (a transposed torch-layout
/// weight).
fn weight_of(g: &Graph, m: NodeId, param_only: &[bool]) -> Option<NodeId> {
    let n = g.node(m);
    if !matches!(n.op, Op::MatMul) || n.shape.static_dims().is_none() {
        return None;
    }
    let (x, w) = (n.inputs[0], n.inputs[1]);
    let leaf = param_only[w.index()];
    let static_w = g.shape(w).static_dims().is_some();
    let x_static = g.shape(x).static_dims().is_some();
    (leaf && static_w && x_static && g.shape(w).rank() == 2 && g.shape(x).rank() >= 2).then_some(w)
}

/// Fuses groups of matmuls sharing their left operand over constant weights.
pub fn fuse_shared_input_matmuls(g: &Graph) -> Result<(Graph, FusionReport), IrError> {
    fuse_shared_input_matmuls_with(g, false)
}

/// Fuses groups of matmuls sharing their left operand; with `stack_params`
/// param weights are stacked too (by a concat the caller hoists).
pub fn fuse_shared_input_matmuls_with(
    g: &Graph,
    stack_params: bool,
) -> Result<(Graph, FusionReport), IrError> {
    let mut report = FusionReport::default();
    let only = param_only(g);
    let derived = stack_params.then_some(&only[..]);
    let mut groups: BTreeMap<NodeId, Vec<NodeId>> = BTreeMap::new();
    for m in g.ids() {
        if weight_of(g, m, &only).is_some() {
            groups.entry(g.node(m).inputs[0]).or_default().push(m);
        }
    }
    // Group members by weight shape; only one shape stacks into views.
    let uses = Uses::of(g);
    let mut plans: Vec<Plan> = Vec::new();
    for members in groups.into_values().filter(|m| m.len() >= 2) {
        let w0 = g.shape(g.node(members[0]).inputs[1]).clone();
        let reason = if members.iter().any(|&m| g.shape(g.node(m).inputs[1]) != &w0) {
            Some(MissReason::ShapeMismatch)
        } else if !stack_params
            && members
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
            None => {
                let biases = bias_adds(g, &uses, &members, derived);
                plans.push(Plan { members, biases });
            }
        }
    }

    // Each group is emitted where its first member was: x exists by then.
    // Weights / biases computed later (param-only values: their cones hold
    // no input) are copied early, with the group, and not again later.
    let absorbed = |p: &Plan| {
        let mut late = Vec::new();
        let mut stack: Vec<NodeId> = p.weights(g).into_iter().chain(p.bias_leaves()).collect();
        while let Some(w) = stack.pop() {
            if w > p.members[0]
                && !late.contains(&w)
                && !matches!(g.node(w).op, Op::Constant { .. })
            {
                late.push(w);
                stack.extend(&g.node(w).inputs);
            }
        }
        let adds: Vec<NodeId> = p.biases.iter().flatten().map(|&(a, _)| a).collect();
        // Constants only the group read are gone once stacked.
        let in_group = |r: &NodeId| p.members.contains(r) || adds.contains(r);
        let spent = p
            .weights(g)
            .into_iter()
            .chain(p.bias_leaves())
            .filter(|&c| matches!(g.node(c).op, Op::Constant { .. }))
            .filter(|&c| !uses.is_output(c) && uses.readers(c).iter().all(in_group))
            .collect::<Vec<_>>();
        p.members
            .iter()
            .copied()
            .chain(adds.iter().copied())
            .chain(late)
            .chain(spent)
            .collect::<Vec<_>>()
    };
    let out = rebuild(
        g,
        plans.iter().map(|p| (p.members[0], absorbed(p))),
        |out, k, map| {
            let p = &plans[k];
            let fused = emit_group(out, g, p, map)?;
            let ends: Vec<NodeId> = match &p.biases {
                Some(b) => b.iter().map(|&(a, _)| a).collect(),
                None => p.members.clone(),
            };
            for (i, &e) in ends.iter().enumerate() {
                map[e.index()] = unstack(out, fused, i, g.shape(e))?;
            }
            report.regions.push(region_of(
                g,
                FusionKind::SharedInput,
                p.members.iter().copied().chain(ends),
                fused,
            ));
            Ok(())
        },
    )?;
    Ok((out, report))
}

/// One group: the matmuls and, when each adds its own row bias, the adds.
struct Plan {
    members: Vec<NodeId>,
    /// (add, bias leaf) per member, when every member has one.
    biases: Option<Vec<(NodeId, NodeId)>>,
}

impl Plan {
    fn weights(&self, g: &Graph) -> Vec<NodeId> {
        self.members.iter().map(|&m| g.node(m).inputs[1]).collect()
    }
    fn bias_leaves(&self) -> Vec<NodeId> {
        self.biases.iter().flatten().map(|&(_, b)| b).collect()
    }
}

/// `(add, bias)` of each member when every member's only reader adds a
/// `[N]` bias leaf (a param only with `stack_params`): the biases stack
/// too, so the stacked matmul keeps one bias epilogue.
fn bias_adds(
    g: &Graph,
    uses: &Uses,
    members: &[NodeId],
    derived: Option<&[bool]>,
) -> Option<Vec<(NodeId, NodeId)>> {
    members
        .iter()
        .map(|&m| {
            let &[a] = uses.readers(m) else { return None };
            let an = g.node(a);
            if !uses.only_read_by(m, a) || !matches!(an.op, Op::Binary(BinaryOp::Add)) {
                return None;
            }
            let b = *an.inputs.iter().find(|&&i| i != m)?;
            let ok_leaf = matches!(g.node(b).op, Op::Constant { .. })
                || derived.is_some_and(|d| d[b.index()]);
            let n = g.shape(m).dims().last()?;
            let row = g.shape(b).rank() == 1 && &g.shape(b).dims()[0] == n;
            (ok_leaf && row && an.shape == *g.shape(m) && g.shape(b).dtype() == an.shape.dtype())
                .then_some((a, b))
        })
        .collect()
}

/// The leaves stacked into `shape` (leading dim = their count): their
/// bytes when all are constants, else a concat of them (hoisted by the
/// runtime), viewed as `shape`.
fn stack_leaves(
    out: &mut Graph,
    g: &Graph,
    leaves: &[NodeId],
    shape: Shape,
    map: &mut [NodeId],
) -> Result<NodeId, IrError> {
    let constant_bytes: Option<Vec<&[u8]>> = leaves
        .iter()
        .map(|&w| match &g.node(w).op {
            Op::Constant { bytes } => Some(&bytes[..]),
            _ => None,
        })
        .collect();
    if let Some(parts) = constant_bytes {
        return out.try_constant_bytes(parts.concat(), shape);
    }
    let inputs: Vec<NodeId> = leaves.iter().map(|&w| copy_cone(out, g, w, map)).collect();
    let d0 = g.shape(leaves[0]);
    let mut rows = d0.dims().to_vec();
    rows[0] = (leaves.len() * d0.static_dims().expect("leaves are static")[0]).into();
    let cat = out.try_node(
        Op::Concat { axis: 0 },
        &inputs,
        Some(Shape::from_dims(rows, d0.dtype())),
    )?;
    out.try_node(Op::Reshape, &[cat], Some(shape))
}

/// `w` in `out`, copying first what of its (param-only) cone is not yet there.
fn copy_cone(out: &mut Graph, g: &Graph, w: NodeId, map: &mut [NodeId]) -> NodeId {
    if map[w.index()] == NodeId(u32::MAX) {
        for &i in &g.node(w).inputs {
            copy_cone(out, g, i, map);
        }
        map[w.index()] = copy(out, g, w, map);
    }
    map[w.index()]
}

/// `reshape(x, [M', K]) @ stack(w_i) [+ stack(b_i)]`: the `[G, M', N]` results.
fn emit_group(out: &mut Graph, g: &Graph, p: &Plan, map: &mut [NodeId]) -> Result<NodeId, IrError> {
    let members = &p.members;
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
    let wd = w0.static_dims().expect("weights are static");
    let g_count = members.len();
    let weights = stack_leaves(
        out,
        g,
        &p.weights(g),
        Shape::new(&[g_count, wd[0], wd[1]], w0.dtype()),
        map,
    )?;
    let Some(biases) = &p.biases else {
        return emit_fused(out, g, members[0], Op::MatMul, &[x2, weights], None);
    };
    let product = out.try_node(Op::MatMul, &[x2, weights], None)?;
    let leaves: Vec<NodeId> = biases.iter().map(|&(_, b)| b).collect();
    let bias = stack_leaves(
        out,
        g,
        &leaves,
        Shape::new(&[g_count, 1, wd[1]], w0.dtype()),
        map,
    )?;
    emit_fused(
        out,
        g,
        members[0],
        Op::Binary(BinaryOp::Add),
        &[product, bias],
        None,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use rlx_ir::{DType, GraphExt, HostTensor};

    /// x @ w_i + b_i for three weights made by `leaf`.
    fn qkv(leaf: impl Fn(&mut Graph, &str, &[usize]) -> NodeId) -> Graph {
        let mut g = Graph::new("qkv");
        let x = g.input("x", Shape::new(&[4, 6], DType::F32));
        let mut outs = Vec::new();
        for name in ["q", "k", "v"] {
            let w = leaf(&mut g, &format!("{name}.w"), &[6, 5]);
            let b = leaf(&mut g, &format!("{name}.b"), &[5]);
            let y = g.mm(x, w);
            outs.push(g.add(y, b));
        }
        g.set_outputs(outs);
        g
    }

    fn count(g: &Graph, f: impl Fn(&Op) -> bool) -> usize {
        g.nodes().iter().filter(|n| f(&n.op)).count()
    }

    #[test]
    fn constant_weights_and_biases_stack_and_the_originals_go() {
        let g = qkv(|g, _, dims| {
            let n = dims.iter().product();
            g.constant_tensor(&HostTensor::from_vec(vec![0.5f32; n], dims).unwrap())
        });
        let (out, report) = fuse_shared_input_matmuls(&g).unwrap();
        assert_eq!(report.of_kind(FusionKind::SharedInput).len(), 1);
        // One stacked weight and one stacked bias are the only constants left.
        assert_eq!(
            count(&out, |op| matches!(op, Op::Constant { .. })),
            2,
            "{out}"
        );
        assert_eq!(count(&out, |op| matches!(op, Op::MatMul)), 1, "{out}");
        assert!(rlx_ir::verify_all(&out).is_empty());
    }

    #[test]
    fn param_weights_stack_only_when_asked() {
        let g = qkv(|g, name, dims| g.param(name, Shape::new(dims, DType::F32)));
        let (same, report) = fuse_shared_input_matmuls(&g).unwrap();
        assert_eq!(same.len(), g.len());
        assert_eq!(report.missed.len(), 2);
        assert!(report
            .missed
            .iter()
            .all(|m| m.reason == MissReason::ParamWeights));
        let (out, report) = fuse_shared_input_matmuls_with(&g, true).unwrap();
        assert!(report.missed.is_empty());
        assert_eq!(
            count(&out, |op| matches!(op, Op::Concat { .. })),
            2,
            "{out}"
        );
        assert_eq!(out.params().len(), 6, "every param kept once: {out}");
        assert!(rlx_ir::verify_all(&out).is_empty());
    }
}
