//! Derivative and batching rules, as graph builders that emit other
//! `collectives.*` ops (so every rank's derivative graph meets the others'
//! in the same collectives).

use super::{attrs, ALL_GATHER, ALL_REDUCE, BROADCAST, REDUCE, REDUCE_SCATTER};
use crate::collectives::ReduceKind;
use rlx_ir::custom::{CustomAttr, CustomOp};
use rlx_ir::op::{BinaryOp, CmpOp};
use rlx_ir::{Graph, IrError, NodeId, Op};

type Cts = Result<Vec<Option<NodeId>>, IrError>;

fn bad(op: &CustomOp) -> impl Fn(String) -> IrError + '_ {
    move |reason| IrError::InvalidOp {
        op: op.name.clone(),
        reason,
    }
}

/// `op` renamed to `name` with the attributes in `changes` set (the others
/// kept: group, mode, axis, world, ...).
fn derived(op: &CustomOp, name: &str, changes: &[(&str, CustomAttr)]) -> CustomOp {
    let mut attrs = op.attrs.clone();
    for (k, v) in changes {
        attrs.insert(*k, v.clone());
    }
    CustomOp::new(name, attrs)
}

fn only(op: &CustomOp, names: &[&str]) -> CustomOp {
    let mut attrs = rlx_ir::custom::CustomAttrs::new();
    for &n in names {
        if let Some(v) = op.attrs.get(n) {
            attrs.insert(n, v.clone());
        }
    }
    CustomOp::new(op.name.clone(), attrs)
}

fn sum_attr() -> CustomAttr {
    CustomAttr::Str("sum".into())
}

fn bin(g: &mut Graph, op: BinaryOp, a: NodeId, b: NodeId) -> Result<NodeId, IrError> {
    g.try_node(Op::Binary(op), &[a, b], None)
}

fn tangent(t: &[Option<NodeId>]) -> Result<NodeId, IrError> {
    t.first()
        .copied()
        .flatten()
        .ok_or_else(|| IrError::InvalidOp {
            op: "collectives".into(),
            reason: "jvp called without a tangent".into(),
        })
}

/// An all-reduce (sum) over `op`'s group, in `op`'s mode when it has one.
fn psum(g: &mut Graph, op: &CustomOp, x: NodeId) -> Result<NodeId, IrError> {
    let mut attrs = only(op, &["group", "mode"]).attrs;
    attrs.insert("kind", sum_attr());
    if attrs.get("mode").is_none() {
        attrs.insert("mode", CustomAttr::Str("ring".into()));
    }
    g.custom(CustomOp::new(ALL_REDUCE, attrs), &[x])
}

/// For max / min: `mask = (x == y)` in `x`'s dtype and `psum(mask)`, the
/// number of ranks holding the extremum (they share its derivative).
fn extremum_mask(
    g: &mut Graph,
    op: &CustomOp,
    x: NodeId,
    y: NodeId,
) -> Result<(NodeId, NodeId), IrError> {
    let dtype = g.shape(x).dtype();
    let hit = g.try_node(Op::Compare(CmpOp::Eq), &[x, y], None)?;
    let mask = g.try_node(Op::Cast, &[hit], Some(g.shape(x).with_dtype(dtype)))?;
    let count = psum(g, op, mask)?;
    Ok((mask, count))
}

/// Reverse: `mask * psum(ct) / psum(mask)`.
fn routed(
    g: &mut Graph,
    op: &CustomOp,
    x: NodeId,
    y: NodeId,
    ct: NodeId,
) -> Result<NodeId, IrError> {
    let (mask, count) = extremum_mask(g, op, x, y)?;
    let total = psum(g, op, ct)?;
    let share = bin(g, BinaryOp::Div, total, count)?;
    bin(g, BinaryOp::Mul, mask, share)
}

/// Forward: `psum(mask * t) / psum(mask)`.
fn routed_tangent(
    g: &mut Graph,
    op: &CustomOp,
    x: NodeId,
    y: NodeId,
    t: NodeId,
) -> Result<NodeId, IrError> {
    let (mask, count) = extremum_mask(g, op, x, y)?;
    let mt = bin(g, BinaryOp::Mul, mask, t)?;
    let total = psum(g, op, mt)?;
    bin(g, BinaryOp::Div, total, count)
}

pub(crate) fn all_reduce_vjp(
    g: &mut Graph,
    op: &CustomOp,
    x: &[NodeId],
    y: NodeId,
    ct: NodeId,
) -> Cts {
    Ok(vec![Some(match attrs::kind(op).map_err(bad(op))? {
        // d/dx_r of sum_s <ct_s, y_s> is the same reduction of ct.
        ReduceKind::Sum | ReduceKind::Mean => g.custom(op.clone(), &[ct])?,
        ReduceKind::Max | ReduceKind::Min => routed(g, op, x[0], y, ct)?,
    })])
}

pub(crate) fn all_reduce_jvp(
    g: &mut Graph,
    op: &CustomOp,
    x: &[NodeId],
    y: NodeId,
    t: &[Option<NodeId>],
) -> Result<NodeId, IrError> {
    let t = tangent(t)?;
    match attrs::kind(op).map_err(bad(op))? {
        ReduceKind::Sum | ReduceKind::Mean => g.custom(op.clone(), &[t]),
        ReduceKind::Max | ReduceKind::Min => routed_tangent(g, op, x[0], y, t),
    }
}

/// The op applied to the tangent (every linear collective).
pub(crate) fn linear_jvp(
    g: &mut Graph,
    op: &CustomOp,
    _: &[NodeId],
    _: NodeId,
    t: &[Option<NodeId>],
) -> Result<NodeId, IrError> {
    let t = tangent(t)?;
    g.custom(op.clone(), &[t])
}

pub(crate) fn all_gather_vjp(
    g: &mut Graph,
    op: &CustomOp,
    _: &[NodeId],
    _: NodeId,
    ct: NodeId,
) -> Cts {
    let rs = derived(
        &only(op, &["group", "axis", "world"]),
        REDUCE_SCATTER,
        &[
            ("kind", sum_attr()),
            ("mode", CustomAttr::Str("ring".into())),
        ],
    );
    Ok(vec![Some(g.custom(rs, &[ct])?)])
}

fn linear_kind(op: &CustomOp) -> Result<ReduceKind, IrError> {
    match attrs::kind(op).map_err(bad(op))? {
        k @ (ReduceKind::Sum | ReduceKind::Mean) => Ok(k),
        k => Err(IrError::InvalidOp {
            op: op.name.clone(),
            reason: format!("no derivative rule for a {} reduction here", k.name()),
        }),
    }
}

/// `x * (1 / world)` in `x`'s dtype.
fn over_world(g: &mut Graph, op: &CustomOp, x: NodeId) -> Result<NodeId, IrError> {
    let world = attrs::count(op, "world").map_err(bad(op))?;
    let s = g.scalar(1.0 / world as f64, g.shape(x).dtype());
    bin(g, BinaryOp::Mul, x, s)
}

pub(crate) fn reduce_scatter_vjp(
    g: &mut Graph,
    op: &CustomOp,
    _: &[NodeId],
    _: NodeId,
    ct: NodeId,
) -> Cts {
    let kind = linear_kind(op)?;
    let ag = only(op, &["group", "axis", "world"]);
    let gathered = g.custom(CustomOp::new(ALL_GATHER, ag.attrs), &[ct])?;
    Ok(vec![Some(match kind {
        ReduceKind::Mean => over_world(g, op, gathered)?,
        _ => gathered,
    })])
}

/// The op on the tangent, for sum / mean reductions (`reduce_scatter`, `reduce`).
pub(crate) fn linear_reduction_jvp(
    g: &mut Graph,
    op: &CustomOp,
    _: &[NodeId],
    _: NodeId,
    t: &[Option<NodeId>],
) -> Result<NodeId, IrError> {
    linear_kind(op)?;
    g.custom(op.clone(), &[tangent(t)?])
}

pub(crate) fn broadcast_vjp(
    g: &mut Graph,
    op: &CustomOp,
    _: &[NodeId],
    _: NodeId,
    ct: NodeId,
) -> Cts {
    let red = derived(
        &only(op, &["group", "root"]),
        REDUCE,
        &[
            ("kind", sum_attr()),
            ("mode", CustomAttr::Str("ring".into())),
        ],
    );
    Ok(vec![Some(g.custom(red, &[ct])?)])
}

pub(crate) fn reduce_vjp(g: &mut Graph, op: &CustomOp, _: &[NodeId], _: NodeId, ct: NodeId) -> Cts {
    // A mean's 1 / n needs the group size, which only the running group knows.
    if attrs::kind(op).map_err(bad(op))? != ReduceKind::Sum {
        return Err(bad(op)(
            "only a sum reduce to a root has a reverse rule".into(),
        ));
    }
    let b = only(op, &["group", "root"]);
    Ok(vec![Some(
        g.custom(CustomOp::new(BROADCAST, b.attrs), &[ct])?,
    )])
}

pub(crate) fn all_to_all_vjp(
    g: &mut Graph,
    op: &CustomOp,
    _: &[NodeId],
    _: NodeId,
    ct: NodeId,
) -> Cts {
    let split = op
        .attrs
        .get("split_axis")
        .cloned()
        .ok_or_else(|| bad(op)("`split_axis` missing".into()))?;
    let concat = op
        .attrs
        .get("concat_axis")
        .cloned()
        .ok_or_else(|| bad(op)("`concat_axis` missing".into()))?;
    let back = derived(
        op,
        &op.name,
        &[("split_axis", concat), ("concat_axis", split)],
    );
    Ok(vec![Some(g.custom(back, &[ct])?)])
}

pub(crate) fn ppermute_vjp(
    g: &mut Graph,
    op: &CustomOp,
    _: &[NodeId],
    _: NodeId,
    ct: NodeId,
) -> Cts {
    let perm = attrs::perm(op).map_err(bad(op))?;
    let inverse = perm
        .iter()
        .flat_map(|&(s, d)| [d as i64, s as i64])
        .collect();
    let back = derived(op, &op.name, &[("perm", CustomAttr::Ints(inverse))]);
    Ok(vec![Some(g.custom(back, &[ct])?)])
}

pub(crate) fn megatron_f_vjp(
    g: &mut Graph,
    op: &CustomOp,
    _: &[NodeId],
    _: NodeId,
    ct: NodeId,
) -> Cts {
    Ok(vec![Some(psum(g, op, ct)?)])
}

pub(crate) fn megatron_f_jvp(
    _: &mut Graph,
    _: &CustomOp,
    _: &[NodeId],
    _: NodeId,
    t: &[Option<NodeId>],
) -> Result<NodeId, IrError> {
    tangent(t)
}

pub(crate) fn megatron_g_vjp(
    _: &mut Graph,
    _: &CustomOp,
    _: &[NodeId],
    _: NodeId,
    ct: NodeId,
) -> Cts {
    Ok(vec![Some(ct)])
}

pub(crate) fn megatron_g_jvp(
    g: &mut Graph,
    op: &CustomOp,
    _: &[NodeId],
    _: NodeId,
    t: &[Option<NodeId>],
) -> Result<NodeId, IrError> {
    let t = tangent(t)?;
    psum(g, op, t)
}

/// Shape-preserving ops batch by running on the batched value as it is.
pub(crate) fn same_op_vmap(
    g: &mut Graph,
    op: &CustomOp,
    ins: &[NodeId],
    _: &[bool],
    _: usize,
) -> Result<NodeId, IrError> {
    g.custom(op.clone(), ins)
}

/// Ops with axis attributes batch on the value with every axis moved one
/// up (the batch is axis 0).
pub(crate) fn axis_op_vmap(
    g: &mut Graph,
    op: &CustomOp,
    ins: &[NodeId],
    _: &[bool],
    _: usize,
) -> Result<NodeId, IrError> {
    let mut changes = Vec::new();
    for name in ["axis", "split_axis", "concat_axis"] {
        if op.attrs.get(name).is_some() {
            let a = attrs::count(op, name).map_err(bad(op))?;
            changes.push((name, CustomAttr::Int(a as i64 + 1)));
        }
    }
    g.custom(derived(op, &op.name, &changes), ins)
}
