//! Rules of the control-flow ops (`If`, `While`, `Scan`, `CustomFn`).
//!
//! A control op's node is a tuple, so these rules work per result: `vjp`
//! takes one optional cotangent per result and returns one per input;
//! `jvp` takes one optional tangent per input and returns one per result;
//! `batch` returns every result batched on axis 0. Each rule transforms the
//! sub-graphs (see `crate::subgraph`) and emits a new control op, so the
//! derivative of an `If` is an `If`, of a `Scan` a reverse `Scan`, and so on.
//!
//! Reverse mode through `While` is refused (as in JAX): the trip count is
//! data dependent, so there is no fixed set of steps to store.

use crate::emit::*;
use crate::subgraph::{build, float_mask, inline, jvp_graph, permute, pick, vjp_graph, vmap_all};
use crate::{AutodiffError, Result};
use rlx_ir::op::{CmpOp, ReduceOp};
use rlx_ir::ops::control::{
    signature, try_custom_fn, try_if, try_tuple_get, try_tuple_op, try_while, CustomFnSpec, IfSpec,
    ScanSpec, WhileSpec,
};
use rlx_ir::{node_label, DType, Graph, Node, NodeId, Op, Shape};
use std::collections::HashMap;
use std::sync::Arc;

fn zeros_of(g: &mut Graph, s: &Shape) -> Result<NodeId> {
    let d = s
        .static_dims()
        .ok_or_else(|| AutodiffError::InvalidGraph(format!("symbolic shape {s}")))?;
    zeros(g, &d, s.dtype())
}

/// `v[k]`, or zeros of `shapes[k]`, for every `k` where `mask` holds.
fn dense(
    g: &mut Graph,
    v: &[Option<NodeId>],
    shapes: &[Shape],
    mask: &[bool],
) -> Result<Vec<NodeId>> {
    let mut out = Vec::new();
    for (k, s) in shapes.iter().enumerate() {
        if mask[k] {
            out.push(match v[k] {
                Some(t) => t,
                None => zeros_of(g, s)?,
            });
        }
    }
    Ok(out)
}

/// Spreads `vals` over the positions where `mask` holds (`None` elsewhere).
fn spread(vals: &[NodeId], mask: &[bool]) -> Vec<Option<NodeId>> {
    let mut it = vals.iter().copied();
    mask.iter()
        .map(|&m| if m { it.next() } else { None })
        .collect()
}

fn shapes_of(g: &Graph, xs: &[NodeId]) -> Vec<Shape> {
    xs.iter().map(|&x| g.shape(x).clone()).collect()
}

fn count(mask: &[bool]) -> usize {
    mask.iter().filter(|&&m| m).count()
}

/// Input cotangents of the control node `node` given its result cotangents.
pub fn vjp(
    g: &mut Graph,
    node: &Node,
    y: NodeId,
    cts: &[Option<NodeId>],
) -> Result<Vec<Option<NodeId>>> {
    let x = &node.inputs;
    if cts.iter().all(Option::is_none) {
        return Ok(vec![None; x.len()]);
    }
    match &node.op {
        Op::If(s) => vjp_if(g, s, x, cts),
        Op::Scan(s) => vjp_scan(g, s, x, cts),
        Op::CustomFn(s) => vjp_custom(g, s, x, cts),
        Op::While(_) => Err(super::no_rule(g, node, y, "vjp")),
        _ => Err(AutodiffError::MissingRule {
            transform: "vjp",
            node: node_label(g, y),
        }),
    }
}

fn vjp_if(
    g: &mut Graph,
    s: &IfSpec,
    x: &[NodeId],
    cts: &[Option<NodeId>],
) -> Result<Vec<Option<NodeId>>> {
    let (ins, outs) = signature(&s.then_branch);
    let (fin, fout) = (float_mask(&ins), float_mask(&outs));
    let mut args = x[1..].to_vec();
    args.extend(dense(g, cts, &outs, &fout)?);
    let then_v = vjp_graph(&s.then_branch)?;
    let else_v = vjp_graph(&s.else_branch)?;
    let r = try_if(g, x[0], then_v, else_v, &args)?;
    let mut res = vec![None];
    res.extend(spread(&r, &fin));
    Ok(res)
}

fn vjp_custom(
    g: &mut Graph,
    s: &CustomFnSpec,
    x: &[NodeId],
    cts: &[Option<NodeId>],
) -> Result<Vec<Option<NodeId>>> {
    let (ins, outs) = signature(&s.body);
    let fin = float_mask(&ins);
    let mut args = x.to_vec();
    let Some(user) = &s.vjp else {
        // No user rule: differentiate the body.
        args.extend(dense(g, cts, &outs, &float_mask(&outs))?);
        let v = vjp_graph(&s.body)?;
        let r = inline(g, &v, &args)?;
        return Ok(spread(&r, &fin));
    };
    args.extend(dense(g, cts, &outs, &vec![true; outs.len()])?);
    apply_user_rule(g, format!("{}_vjp", s.name), user, &args, &fin)
}

/// Runs a user rule as a rule-less `CustomFn` (so it is itself
/// differentiable); keeps the results where `keep` holds.
fn apply_user_rule(
    g: &mut Graph,
    name: String,
    rule: &Arc<Graph>,
    args: &[NodeId],
    keep: &[bool],
) -> Result<Vec<Option<NodeId>>> {
    let spec = CustomFnSpec {
        name,
        body: rule.clone(),
        vjp: None,
        jvp: None,
    };
    let r = try_custom_fn(g, spec, args)?;
    Ok(r.iter().zip(keep).map(|(&c, &k)| k.then_some(c)).collect())
}

fn vjp_scan(
    g: &mut Graph,
    s: &ScanSpec,
    x: &[NodeId],
    cts: &[Option<NodeId>],
) -> Result<Vec<Option<NodeId>>> {
    if let Some(k) = s.checkpoint.filter(|&k| k < s.length) {
        return vjp_scan_segments(g, s, k, x, cts);
    }
    // Forward again, stacking each step's input carry (the residuals).
    let ny = s.body.outputs().len() - s.num_carry;
    let r = try_tuple_op(g, Op::Scan(with_residuals(s)?), x)?;
    let stacked = r[s.num_carry + ny..].to_vec();
    vjp_scan_from(g, s, x, cts, stacked)
}

/// `s` whose body also emits its input carry: the stacked per-step carries
/// follow the original results (whose offsets do not move).
fn with_residuals(s: &ScanSpec) -> Result<ScanSpec> {
    let (bin, _) = signature(&s.body);
    let nc = s.num_carry;
    let body = s.body.clone();
    let body_r = build("scan_residuals", &bin, |h, a| {
        let mut outs = inline(h, &body, a)?;
        outs.extend_from_slice(&a[..nc]);
        Ok(outs)
    })?;
    Ok(ScanSpec {
        body: Arc::new(body_r),
        checkpoint: None,
        ..s.clone()
    })
}

/// Makes reverse mode store the per-step carries in the forward pass
/// itself: every `needed` scan of `h` that is not checkpointed becomes its
/// residual form (same node ids; its `TupleGet`s stay valid). Returns the
/// new graph and the original spec of each rewritten scan, for
/// [`vjp_stored_scan`].
pub fn store_scan_residuals(
    h: &Graph,
    needed: &[bool],
) -> Result<(Graph, HashMap<NodeId, ScanSpec>)> {
    let mut out = Graph::new(h.name());
    let mut specs = HashMap::new();
    for id in h.ids() {
        let n = h.node(id);
        let node = match &n.op {
            Op::Scan(s) if needed[id.index()] && s.checkpoint.is_none_or(|k| k >= s.length) => {
                let op = Op::Scan(with_residuals(s)?);
                let shapes: Vec<&Shape> = n.inputs.iter().map(|&i| out.shape(i)).collect();
                let shape = rlx_ir::ops::infer_shape(&op, &shapes, None)
                    .map_err(|e| AutodiffError::InvalidGraph(format!("residual scan: {e}")))?;
                specs.insert(id, s.clone());
                Node {
                    op,
                    shape,
                    ..n.clone()
                }
            }
            _ => n.clone(),
        };
        out.push_verified(node);
    }
    out.set_outputs(h.outputs().to_vec());
    Ok((out, specs))
}

/// Reverse mode of the scan `s` (its original spec) whose node `tuple`
/// was rewritten by [`store_scan_residuals`] and already holds the stacked carries.
pub fn vjp_stored_scan(
    g: &mut Graph,
    s: &ScanSpec,
    tuple: NodeId,
    x: &[NodeId],
    cts: &[Option<NodeId>],
) -> Result<Vec<Option<NodeId>>> {
    if cts.iter().all(Option::is_none) {
        return Ok(vec![None; x.len()]);
    }
    let first = s.body.outputs().len();
    let stacked = (first..first + s.num_carry)
        .map(|k| try_tuple_get(g, tuple, k))
        .collect::<Result<Vec<_>, _>>()?;
    vjp_scan_from(g, s, x, cts, stacked)
}

/// The backward scan of `s` given the stacked per-step input carries.
fn vjp_scan_from(
    g: &mut Graph,
    s: &ScanSpec,
    x: &[NodeId],
    cts: &[Option<NodeId>],
    stacked_carries: Vec<NodeId>,
) -> Result<Vec<Option<NodeId>>> {
    let nc = s.num_carry;
    let (bin, bout) = signature(&s.body);
    let nx = bin.len() - nc;
    let fc = float_mask(&bin[..nc]);
    let fx = float_mask(&bin[nc..]);
    let fy = float_mask(&bout[nc..]);
    let (nfc, nfx) = (count(&fc), count(&fx));
    // Backward: a scan the other way whose carry is the carry cotangent.
    let v = vjp_graph(&s.body)?; // (c, x_t, ct_c', ct_y) -> (ct_c, ct_x_t)
    let nfy = count(&fy);
    let mut order: Vec<usize> = (nc + nx..nc + nx + nfc).collect();
    order.extend(0..nc + nx);
    order.extend(nc + nx + nfc..nc + nx + nfc + nfy);
    let outs_id: Vec<usize> = (0..nfc + nfx).collect();
    let body_b = permute(&v, &order, &outs_id)?;
    let result_shapes =
        rlx_ir::ops::control::result_shapes(&Op::Scan(s.clone())).unwrap_or_default();
    let mut args = dense(g, &cts[..nc], &result_shapes[..nc], &fc)?;
    args.extend(stacked_carries);
    args.extend_from_slice(&x[nc..]);
    args.extend(dense(g, &cts[nc..], &result_shapes[nc..], &fy)?);
    let bwd = ScanSpec {
        body: Arc::new(body_b),
        num_carry: nfc,
        length: s.length,
        reverse: !s.reverse,
        checkpoint: None,
    };
    let rb = try_tuple_op(g, Op::Scan(bwd), &args)?;
    let mut res = spread(&rb[..nfc], &fc);
    res.extend(spread(&rb[nfc..], &fx));
    debug_assert_eq!(res.len(), x.len());
    Ok(res)
}

/// Checkpointed reverse mode: the scan as segments of `k` steps, each an
/// inner `k`-step scan, and, when `k` does not divide the length, one short
/// segment of `length % k` steps processed last (the highest steps of a
/// forward scan, the lowest of a reverse one). Only the segment-entry
/// carries are stored (`ceil(length / k)` of them: the full segments' from
/// one forward pass, the short segment's is that pass's final carry); the
/// backward pass of each segment recomputes (and briefly stores) its inner
/// carries.
fn vjp_scan_segments(
    g: &mut Graph,
    s: &ScanSpec,
    k: usize,
    x: &[NodeId],
    cts: &[Option<NodeId>],
) -> Result<Vec<Option<NodeId>>> {
    let nc = s.num_carry;
    let (nfull, rem) = (s.length / k, s.length % k);
    // Steps of the full segments and of the short one, as index ranges.
    let (full_at, rem_at) = if s.reverse { (rem, 0) } else { (0, nfull * k) };
    let full = Segments::new(g, s, x, full_at, nfull, k)?;
    let r = try_tuple_op(g, Op::Scan(with_residuals(&full.spec)?), &full.args)?;
    let ny = s.body.outputs().len() - nc;
    let full_stacked = r[nc + ny..].to_vec();
    let mut carry_cts = cts[..nc].to_vec();
    let mut rem_xcts = Vec::new();
    if rem > 0 {
        // The short segment starts from the full segments' final carry.
        let mut args = r[..nc].to_vec();
        args.extend_from_slice(&x[nc..]);
        let short = Segments::new(g, s, &args, rem_at, 1, rem)?;
        let stacked = r[..nc]
            .iter()
            .map(|&c| {
                let mut d = vec![1];
                d.extend(dims(g, c)?);
                reshape(g, c, &d)
            })
            .collect::<Result<Vec<_>>>()?;
        let seg_cts = short.cotangents(g, cts)?;
        let rr = vjp_scan_from(g, &short.spec, &short.args, &seg_cts, stacked)?;
        carry_cts = rr[..nc].to_vec();
        rem_xcts = short.unsegment(g, &rr[nc..])?;
    }
    let mut seg_cts = full.cotangents(g, cts)?;
    seg_cts[..nc].copy_from_slice(&carry_cts);
    let rf = vjp_scan_from(g, &full.spec, &full.args, &seg_cts, full_stacked)?;
    let mut res = rf[..nc].to_vec();
    let full_xcts = full.unsegment(g, &rf[nc..])?;
    if rem == 0 {
        res.extend(full_xcts);
        return Ok(res);
    }
    for ((f, r), &xi) in full_xcts.into_iter().zip(rem_xcts).zip(&x[nc..]) {
        res.push(match (f, r) {
            (None, None) => None,
            (f, r) => {
                let d = dims(g, xi)?;
                let part = |g: &mut Graph, c: Option<NodeId>, n: usize| -> Result<NodeId> {
                    let mut d = d.clone();
                    d[0] = n;
                    match c {
                        Some(c) => Ok(c),
                        None => zeros(g, &d, dtype(g, xi)),
                    }
                };
                let f = part(g, f, nfull * k)?;
                let r = part(g, r, rem)?;
                let parts = if s.reverse { [r, f] } else { [f, r] };
                Some(g.try_node(Op::Concat { axis: 0 }, &parts, None)?)
            }
        });
    }
    Ok(res)
}

/// `nseg` segments of `len` steps of the scan `s` starting at step `at`:
/// an outer `nseg`-step scan whose body is the inner `len`-step scan, and
/// its operands (the carries, the scanned operands reshaped to
/// `[nseg, len, ..]`).
struct Segments {
    spec: ScanSpec,
    args: Vec<NodeId>,
    at: usize,
    nseg: usize,
    len: usize,
}

impl Segments {
    fn new(
        g: &mut Graph,
        s: &ScanSpec,
        x: &[NodeId],
        at: usize,
        nseg: usize,
        len: usize,
    ) -> Result<Self> {
        let nc = s.num_carry;
        let mut me = Segments {
            spec: s.clone(),
            args: x[..nc].to_vec(),
            at,
            nseg,
            len,
        };
        for &xi in &x[nc..] {
            let a = me.segment(g, xi)?;
            me.args.push(a);
        }
        let inner = ScanSpec {
            length: len,
            checkpoint: None,
            ..s.clone()
        };
        let seg_shapes = shapes_of(g, &me.args);
        let mut in_shapes = seg_shapes[..nc].to_vec();
        for sh in &seg_shapes[nc..] {
            in_shapes.push(Shape::from_dims(sh.dims()[1..].to_vec(), sh.dtype()));
        }
        let outer_body = build("scan_segment", &in_shapes, |h, a| {
            Ok(try_tuple_op(h, Op::Scan(inner), a)?)
        })?;
        me.spec = ScanSpec {
            body: Arc::new(outer_body),
            num_carry: nc,
            length: nseg,
            reverse: s.reverse,
            checkpoint: None,
        };
        Ok(me)
    }

    /// Steps `at..at + nseg * len` of the stacked `v` as `[nseg, len, ..]`.
    fn segment(&self, g: &mut Graph, v: NodeId) -> Result<NodeId> {
        let d = dims(g, v)?;
        let n = self.nseg * self.len;
        let v = if self.at == 0 && n == d[0] {
            v
        } else {
            slice_axis(g, v, 0, self.at, n, 1)?
        };
        let mut sd = vec![self.nseg, self.len];
        sd.extend_from_slice(&d[1..]);
        reshape(g, v, &sd)
    }

    /// The result cotangents of the whole scan restricted to these segments
    /// (the carry cotangents pass through).
    fn cotangents(&self, g: &mut Graph, cts: &[Option<NodeId>]) -> Result<Vec<Option<NodeId>>> {
        let nc = self.spec.num_carry;
        let mut out = cts[..nc].to_vec();
        for c in &cts[nc..] {
            out.push(c.map(|c| self.segment(g, c)).transpose()?);
        }
        Ok(out)
    }

    /// Segmented cotangents `[nseg, len, ..]` back to `[nseg * len, ..]`.
    fn unsegment(&self, g: &mut Graph, cts: &[Option<NodeId>]) -> Result<Vec<Option<NodeId>>> {
        cts.iter()
            .map(|c| {
                c.map(|c| {
                    let d = dims(g, c)?;
                    let mut fd = vec![self.nseg * self.len];
                    fd.extend_from_slice(&d[2..]);
                    reshape(g, c, &fd)
                })
                .transpose()
            })
            .collect()
    }
}

/// Result tangents of the control node `node` given its input tangents.
pub fn jvp(
    g: &mut Graph,
    node: &Node,
    y: NodeId,
    ts: &[Option<NodeId>],
) -> Result<Vec<Option<NodeId>>> {
    let x = &node.inputs;
    match &node.op {
        Op::If(s) => {
            let (ins, outs) = signature(&s.then_branch);
            let mut args = x[1..].to_vec();
            args.extend(dense(g, &ts[1..], &ins, &float_mask(&ins))?);
            let tj = jvp_graph(&s.then_branch)?;
            let ej = jvp_graph(&s.else_branch)?;
            let r = try_if(g, x[0], tj, ej, &args)?;
            Ok(spread(&r[outs.len()..], &float_mask(&outs)))
        }
        Op::While(s) => jvp_while(g, s, x, ts),
        Op::Scan(s) => jvp_scan(g, s, x, ts),
        Op::CustomFn(s) => {
            let (ins, outs) = signature(&s.body);
            let mut args = x.to_vec();
            match &s.jvp {
                Some(user) => {
                    args.extend(dense(g, ts, &ins, &vec![true; ins.len()])?);
                    let name = format!("{}_jvp", s.name);
                    apply_user_rule(g, name, user, &args, &float_mask(&outs))
                }
                None => {
                    args.extend(dense(g, ts, &ins, &float_mask(&ins))?);
                    let j = jvp_graph(&s.body)?;
                    let r = inline(g, &j, &args)?;
                    Ok(spread(&r[outs.len()..], &float_mask(&outs)))
                }
            }
        }
        _ => Err(AutodiffError::MissingRule {
            transform: "jvp",
            node: node_label(g, y),
        }),
    }
}

fn jvp_while(
    g: &mut Graph,
    s: &WhileSpec,
    x: &[NodeId],
    ts: &[Option<NodeId>],
) -> Result<Vec<Option<NodeId>>> {
    let carry = shapes_of(g, x);
    let fc = float_mask(&carry);
    let n = carry.len();
    let mut shapes = carry.clone();
    shapes.extend(pick(&carry, &fc));
    let cond = s.cond.clone();
    let cond2 = build("cond_jvp", &shapes, |h, a| inline(h, &cond, &a[..n]))?;
    let body2 = jvp_graph(&s.body)?; // (c, tc) -> (c', tc'): the carry layout
    let mut args = x.to_vec();
    args.extend(dense(g, ts, &carry, &fc)?);
    let r = try_while(g, cond2, body2, &args, s.max_iterations)?;
    Ok(spread(&r[n..], &fc))
}

fn jvp_scan(
    g: &mut Graph,
    s: &ScanSpec,
    x: &[NodeId],
    ts: &[Option<NodeId>],
) -> Result<Vec<Option<NodeId>>> {
    let nc = s.num_carry;
    let (bin, bout) = signature(&s.body);
    let (nx, ny) = (bin.len() - nc, bout.len() - nc);
    let fc = float_mask(&bin[..nc]);
    let fx = float_mask(&bin[nc..]);
    let fy = float_mask(&bout[nc..]);
    let (nfc, nfx, nfy) = (count(&fc), count(&fx), count(&fy));
    // jvp_graph: (c, x, tc, tx) -> (c', y, tc', ty); the scan wants
    // (c, tc, x, tx) -> (c', tc', y, ty).
    let j = jvp_graph(&s.body)?;
    let mut order: Vec<usize> = (0..nc).collect();
    order.extend(nc + nx..nc + nx + nfc);
    order.extend(nc..nc + nx);
    order.extend(nc + nx + nfc..nc + nx + nfc + nfx);
    let mut out_order: Vec<usize> = (0..nc).collect();
    out_order.extend(nc + ny..nc + ny + nfc);
    out_order.extend(nc..nc + ny);
    out_order.extend(nc + ny + nfc..nc + ny + nfc + nfy);
    let body2 = permute(&j, &order, &out_order)?;
    let in_shapes = shapes_of(g, x);
    let mut args = x[..nc].to_vec();
    args.extend(dense(g, &ts[..nc], &in_shapes[..nc], &fc)?);
    args.extend_from_slice(&x[nc..]);
    args.extend(dense(g, &ts[nc..], &in_shapes[nc..], &fx)?);
    let spec = ScanSpec {
        body: Arc::new(body2),
        num_carry: nc + nfc,
        ..s.clone()
    };
    let r = try_tuple_op(g, Op::Scan(spec), &args)?;
    let mut res = spread(&r[nc..nc + nfc], &fc);
    res.extend(spread(&r[nc + nfc + ny..], &fy));
    Ok(res)
}

/// Every result of the control node `node`, batched on axis 0, given its
/// inputs `ins` (batched where `bat`).
pub fn batch(
    g: &mut Graph,
    node: &Node,
    ins: &[NodeId],
    bat: &[bool],
    b: usize,
) -> Result<Vec<NodeId>> {
    let lifted = |g: &mut Graph, xs: &[NodeId], bs: &[bool]| -> Result<Vec<NodeId>> {
        xs.iter()
            .zip(bs)
            .map(|(&x, &bx)| lift(g, x, bx, b, 0))
            .collect()
    };
    match &node.op {
        Op::If(s) => {
            let ops = lifted(g, &ins[1..], &bat[1..])?;
            let tb = vmap_all(&s.then_branch, b)?;
            let eb = vmap_all(&s.else_branch, b)?;
            if !bat[0] {
                return Ok(try_if(g, ins[0], tb, eb, &ops)?);
            }
            // A batched predicate runs both branches and selects (as JAX does).
            let a = inline(g, &tb, &ops)?;
            let c = inline(g, &eb, &ops)?;
            a.iter()
                .zip(&c)
                .map(|(&ai, &ci)| {
                    let p = lift(g, ins[0], true, b, g.shape(ai).rank() - 1)?;
                    select(g, p, ai, ci)
                })
                .collect()
        }
        Op::While(s) => {
            let carry = lifted(g, ins, bat)?;
            let shapes = shapes_of(g, &carry);
            let cb = Arc::new(vmap_all(&s.cond, b)?);
            let bb = vmap_all(&s.body, b)?;
            let cond_any = {
                let cb = cb.clone();
                build("cond_any", &shapes, |h, a| {
                    let m = inline(h, &cb, a)?[0];
                    Ok(vec![any(h, m)?])
                })?
            };
            // Finished examples keep their carry while the others run on.
            let body_masked = build("body_masked", &shapes, |h, a| {
                let m = inline(h, &cb, a)?[0];
                let new = inline(h, &bb, a)?;
                new.iter()
                    .zip(a)
                    .map(|(&n, &old)| {
                        let p = lift(h, m, true, b, h.shape(n).rank() - 1)?;
                        select(h, p, n, old)
                    })
                    .collect()
            })?;
            Ok(try_while(
                g,
                cond_any,
                body_masked,
                &carry,
                s.max_iterations,
            )?)
        }
        Op::Scan(s) => {
            let nc = s.num_carry;
            let mut args = lifted(g, &ins[..nc], &bat[..nc])?;
            for (&x, &bx) in ins[nc..].iter().zip(&bat[nc..]) {
                // [b, T, ...] -> [T, b, ...]: the scan walks the leading axis.
                let l = lift(g, x, bx, b, 0)?;
                let r = g.shape(l).rank();
                let mut perm = vec![1, 0];
                perm.extend(2..r);
                args.push(transpose(g, l, &perm)?);
            }
            let spec = ScanSpec {
                body: Arc::new(vmap_all(&s.body, b)?),
                ..s.clone()
            };
            let r = try_tuple_op(g, Op::Scan(spec), &args)?;
            let mut out = r[..nc].to_vec();
            for &yv in &r[nc..] {
                let rank = g.shape(yv).rank();
                let mut perm = vec![1, 0];
                perm.extend(2..rank);
                out.push(transpose(g, yv, &perm)?);
            }
            Ok(out)
        }
        Op::CustomFn(s) => {
            let args = lifted(g, ins, bat)?;
            let opt = |r: &Option<Arc<Graph>>| -> Result<Option<Arc<Graph>>> {
                r.as_ref().map(|x| vmap_all(x, b).map(Arc::new)).transpose()
            };
            let spec = CustomFnSpec {
                name: s.name.clone(),
                body: Arc::new(vmap_all(&s.body, b)?),
                vjp: opt(&s.vjp)?,
                jvp: opt(&s.jvp)?,
            };
            Ok(try_custom_fn(g, spec, &args)?)
        }
        _ => Err(AutodiffError::MissingRule {
            transform: "vmap",
            node: format!("{} with batched inputs {bat:?}", node.op.mnemonic()),
        }),
    }
}

/// `any(m)` of a bool vector as a bool scalar.
fn any(g: &mut Graph, m: NodeId) -> Result<NodeId> {
    let f = cast(g, m, DType::F32)?;
    let axes: Vec<usize> = (0..g.shape(f).rank()).collect();
    let mx = g.try_node(
        Op::Reduce {
            op: ReduceOp::Max,
            axes,
            keep_dim: false,
        },
        &[f],
        None,
    )?;
    let zero = g.scalar(0.0, DType::F32);
    cmp(g, CmpOp::Gt, mx, zero)
}
