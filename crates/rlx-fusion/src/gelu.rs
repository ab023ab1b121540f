//! GELU recognition: `x * 0.5 * (1 + erf(x / sqrt(2)))` written out of
//! primitives (as ONNX exports of BERT-style encoders spell it) becomes the
//! native `Unary(Gelu)`, so those graphs reach the same kernels (and the
//! same matmul epilogues / GeGLU fusions) as graphs built with `gelu`.
//!
//! Any operand order and grouping of the product is accepted (`x * 0.5`
//! first, `0.5 * (1 + erf)` first, ...), the scaling inside erf as a `Div`
//! by sqrt(2) or a `Mul` by 1/sqrt(2). Constants must match to 1e-6
//! relative. The native kernel computes the same formula; results differ
//! in rounding only.

use crate::report::{region_of, FusionKind, FusionReport};
use crate::uses::{emit_fused, rebuild, scalar_value, Uses};
use rlx_ir::op::{BinaryOp, UnaryOp};
use rlx_ir::{Graph, IrError, NodeId, Op};
use std::f64::consts::SQRT_2;

fn near(v: f64, want: f64) -> bool {
    (v - want).abs() <= 1e-6 * want.abs()
}

/// The factors of the product rooted at `m`, looking through muls read
/// only inside the product (those are returned as `interior`).
fn factors(g: &Graph, uses: &Uses, m: NodeId, out: &mut Vec<NodeId>, interior: &mut Vec<NodeId>) {
    for &i in &g.node(m).inputs {
        let inner = matches!(g.node(i).op, Op::Binary(BinaryOp::Mul))
            && uses.only_read_by(i, m)
            && scalar_value(g, i).is_none();
        if inner {
            interior.push(i);
            factors(g, uses, i, out, interior);
        } else {
            out.push(i);
        }
    }
}

/// `(x, absorbed)` when `f` is `1 + erf(x / sqrt 2)` read only by the product.
fn one_plus_erf(g: &Graph, uses: &Uses, f: NodeId, root: NodeId) -> Option<(NodeId, Vec<NodeId>)> {
    let n = g.node(f);
    if !matches!(n.op, Op::Binary(BinaryOp::Add)) || !uses.only_read_by(f, root) {
        return None;
    }
    let (a, b) = (n.inputs[0], n.inputs[1]);
    let e = [(a, b), (b, a)].into_iter().find_map(|(e, c)| {
        (matches!(g.node(e).op, Op::Unary(UnaryOp::Erf))
            && scalar_value(g, c).is_some_and(|v| near(v, 1.0)))
        .then_some(e)
    })?;
    let z = g.node(e).inputs[0];
    let zn = g.node(z);
    if !uses.only_read_by(e, f) || !uses.only_read_by(z, e) {
        return None;
    }
    let (p, q) = (zn.inputs.first().copied()?, zn.inputs.get(1).copied()?);
    let x = match zn.op {
        Op::Binary(BinaryOp::Div) => scalar_value(g, q)
            .is_some_and(|v| near(v, SQRT_2))
            .then_some(p)?,
        Op::Binary(BinaryOp::Mul) => [(p, q), (q, p)].into_iter().find_map(|(x, c)| {
            scalar_value(g, c)
                .is_some_and(|v| near(v, 1.0 / SQRT_2))
                .then_some(x)
        })?,
        _ => return None,
    };
    Some((x, vec![f, e, z]))
}

struct Plan {
    root: NodeId,
    x: NodeId,
    absorbed: Vec<NodeId>,
}

fn recognise(g: &Graph, uses: &Uses, root: NodeId) -> Option<Plan> {
    let rn = g.node(root);
    if !matches!(rn.op, Op::Binary(BinaryOp::Mul)) || !rn.shape.dtype().is_float() {
        return None;
    }
    let (mut fs, mut interior) = (Vec::new(), Vec::new());
    factors(g, uses, root, &mut fs, &mut interior);
    // Exactly: x, 1 + erf(x / sqrt 2), and constants whose product is 0.5.
    let mut half = 1.0;
    let mut rest = Vec::new();
    for &f in &fs {
        match scalar_value(g, f) {
            Some(v) => half *= v,
            None => rest.push(f),
        }
    }
    if rest.len() != 2 || !near(half, 0.5) {
        return None;
    }
    let (x, mut absorbed) = [(rest[0], rest[1]), (rest[1], rest[0])]
        .into_iter()
        .find_map(|(x, f)| {
            let (inner_x, absorbed) = one_plus_erf(g, uses, f, root_of(&interior, f, g, root))?;
            (inner_x == x).then_some((x, absorbed))
        })?;
    if g.shape(x) != &rn.shape {
        return None;
    }
    absorbed.extend(interior);
    Some(Plan { root, x, absorbed })
}

/// The product node that reads factor `f` (the root or an interior mul).
fn root_of(interior: &[NodeId], f: NodeId, g: &Graph, root: NodeId) -> NodeId {
    interior
        .iter()
        .copied()
        .find(|&m| g.node(m).inputs.contains(&f))
        .unwrap_or(root)
}

/// Replaces erf-spelled GELUs by `Unary(Gelu)`.
pub fn fuse_gelu(g: &Graph) -> Result<(Graph, FusionReport), IrError> {
    let uses = Uses::of(g);
    let mut report = FusionReport::default();
    let mut taken = vec![false; g.len()];
    let mut plans = Vec::new();
    // Outermost products first: a root's interior muls are not roots again.
    for root in g.ids().rev() {
        if taken[root.index()] {
            continue;
        }
        if let Some(p) = recognise(g, &uses, root) {
            for &a in &p.absorbed {
                taken[a.index()] = true;
            }
            plans.push(p);
        }
    }
    plans.reverse();
    let out = rebuild(
        g,
        plans.iter().map(|p| (p.root, p.absorbed.clone())),
        |out, k, map| {
            let p = &plans[k];
            let fused = emit_fused(
                out,
                g,
                p.root,
                Op::Unary(UnaryOp::Gelu),
                &[map[p.x.index()]],
                None,
            )?;
            map[p.root.index()] = fused;
            report.regions.push(region_of(
                g,
                FusionKind::Gelu,
                p.absorbed.iter().copied().chain([p.root]),
                fused,
            ));
            Ok(())
        },
    )?;
    Ok((out, report))
}
