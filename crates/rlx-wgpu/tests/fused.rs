//! Fused elementwise regions and matmul epilogues on the wgpu device: one
//! generated kernel per region, against the CPU backend (itself
//! bit-identical to the regions' decompositions and checked against numpy
//! by the op matrix) at 1e-5 relative for f32 and 1e-2 for f16; every
//! elementwise op of the IR's op table appears as a region step; and the
//! compiler's fused graph runs one dispatch per region.

mod common;

use common::{
    assert_gpu_matches_cpu, assert_gpu_matches_cpu_atol, gpu_compile_error, gpu_or_skip, rand,
    to_f16,
};
use rlx_driver::Backend;
use rlx_ir::op::{BinaryOp, ChainOperand, ChainStep, CmpOp, UnaryOp};
use rlx_ir::{DType, Graph, GraphExt, HostTensor, NodeId, Op, OpKind, Shape};
use rlx_wgpu::{WgpuBackend, WgpuExecutable};
use std::collections::BTreeSet;

const RTOL: f64 = 1e-5;
const RTOL_F16: f64 = 1e-2;

use ChainOperand::{Input as In, Step as S};

fn region(g: &mut Graph, steps: Vec<ChainStep>, inputs: &[NodeId]) -> NodeId {
    g.try_node(Op::ElementwiseRegion { steps }, inputs, None)
        .expect("a valid region")
}

/// A unary op's region over `x` ([3, 37]) times `r` ([37], broadcast);
/// `p` is the positive input of the ops that need one.
fn unary_region(g: &mut Graph, u: UnaryOp, (x, p, r): (NodeId, NodeId, NodeId)) -> NodeId {
    let arg = if rlx_ir::op_coverage::wants_positive(u) {
        p
    } else {
        x
    };
    if !rlx_ir::op_coverage::unary_takes_values(u) {
        // Bool steps: not(x < r) selects between x and r.
        let steps = vec![
            ChainStep::Compare(CmpOp::Lt, In(0), In(1)),
            ChainStep::Unary(UnaryOp::Not, S(0)),
            ChainStep::Select(S(1), In(0), In(1)),
        ];
        return region(g, steps, &[x, r]);
    }
    let steps = vec![
        ChainStep::Unary(u, In(0)),
        ChainStep::Binary(BinaryOp::Mul, S(0), In(1)),
    ];
    region(g, steps, &[arg, r])
}

/// A binary op's region: float ops over `x` (`p` for pow's base) and the
/// broadcast `r`, then added to the first operand; the bitwise ones over
/// two comparisons (Bool) and over integers (x * 8 cast to i32).
fn binary_region(g: &mut Graph, b: BinaryOp, (x, p, r): (NodeId, NodeId, NodeId)) -> NodeId {
    match b {
        _ if !rlx_ir::op_coverage::binary_takes_floats(b) => {
            let steps = vec![
                ChainStep::Compare(CmpOp::Gt, In(0), In(1)),
                ChainStep::Compare(CmpOp::Lt, In(0), In(2)),
                ChainStep::Binary(b, S(0), S(1)),
                ChainStep::Select(S(2), In(0), In(1)),
                // The same op on integers: (x * r * 8) as i32, combined with 5.
                ChainStep::Binary(BinaryOp::Mul, In(0), In(1)),
                ChainStep::Cast(S(4), DType::I32),
                ChainStep::Cast(In(2), DType::I32),
                ChainStep::Binary(b, S(5), S(6)),
                ChainStep::Cast(S(7), DType::F32),
                ChainStep::Binary(BinaryOp::Add, S(3), S(8)),
            ];
            let eight = g.constant(8.0, DType::F32);
            let x8 = g.mul(x, eight);
            let five = g.scalar(5.0, DType::F32);
            region(g, steps, &[x8, r, five])
        }
        _ => {
            let base = if b == BinaryOp::Pow { p } else { x };
            let steps = vec![
                ChainStep::Binary(b, In(0), In(1)),
                ChainStep::Binary(BinaryOp::Add, S(0), In(0)),
            ];
            region(g, steps, &[base, r])
        }
    }
}

/// Integer arithmetic steps (i32) of every binary / unary op that has an
/// integer form, cast back to f32.
fn integer_region(g: &mut Graph, x: NodeId, r: NodeId) -> NodeId {
    let mut steps = vec![
        ChainStep::Binary(BinaryOp::Mul, In(0), In(1)),
        ChainStep::Cast(S(0), DType::I32),
        ChainStep::Cast(In(1), DType::I32),
    ];
    let (a, c) = (S(1), S(2));
    let mut acc = a;
    for b in [
        BinaryOp::Add,
        BinaryOp::Sub,
        BinaryOp::Mul,
        BinaryOp::Max,
        BinaryOp::Min,
    ] {
        steps.push(ChainStep::Binary(b, acc, c));
        acc = S(steps.len() - 1);
    }
    for u in [UnaryOp::Neg, UnaryOp::Abs, UnaryOp::Sign, UnaryOp::Not] {
        steps.push(ChainStep::Unary(u, acc));
        steps.push(ChainStep::Binary(BinaryOp::Add, S(steps.len() - 1), a));
        acc = S(steps.len() - 1);
    }
    steps.push(ChainStep::Cast(acc, DType::F32));
    let scale = g.constant(40.0, DType::F32);
    let x40 = g.mul(x, scale);
    region(g, steps, &[x40, r])
}

fn compare_region(g: &mut Graph, c: CmpOp, x: NodeId, r: NodeId) -> NodeId {
    let steps = vec![
        ChainStep::Compare(c, In(0), In(1)),
        ChainStep::Select(S(0), In(0), In(1)),
    ];
    region(g, steps, &[x, r])
}

/// f32 -> f16 -> f32 (the rounding error, exact on both devices), and
/// f32 -> bool -> f32.
fn cast_regions(g: &mut Graph, x: NodeId, r: NodeId) -> Vec<NodeId> {
    let to_f16 = vec![
        ChainStep::Binary(BinaryOp::Mul, In(0), In(1)),
        ChainStep::Cast(S(0), DType::F16),
        ChainStep::Cast(S(1), DType::F32),
        ChainStep::Binary(BinaryOp::Sub, S(0), S(2)),
    ];
    let to_bool = vec![
        ChainStep::Unary(UnaryOp::Floor, In(0)),
        ChainStep::Cast(S(0), DType::Bool),
        ChainStep::Cast(S(1), DType::F32),
        ChainStep::Binary(BinaryOp::Mul, S(2), In(1)),
    ];
    vec![region(g, to_f16, &[x, r]), region(g, to_bool, &[x, r])]
}

/// Every region step kind of the test above, as the op kinds they run.
fn covered_kinds() -> BTreeSet<String> {
    let mut g = Graph::new("kinds");
    let x = g.input("x", Shape::new(&[3, 37], DType::F32));
    let p = g.input("p", Shape::new(&[3, 37], DType::F32));
    let r = g.input("r", Shape::new(&[37], DType::F32));
    all_regions(&mut g, (x, p, r));
    g.nodes()
        .iter()
        .filter_map(|n| match &n.op {
            Op::ElementwiseRegion { steps } => Some(steps.clone()),
            _ => None,
        })
        .flatten()
        .map(|s| s.op().mnemonic())
        .collect()
}

fn all_regions(g: &mut Graph, (x, p, r): (NodeId, NodeId, NodeId)) -> Vec<NodeId> {
    let mut outs: Vec<NodeId> = UnaryOp::ALL
        .iter()
        .map(|&u| unary_region(g, u, (x, p, r)))
        .collect();
    outs.extend(
        BinaryOp::ALL
            .iter()
            .map(|&b| binary_region(g, b, (x, p, r))),
    );
    outs.extend(CmpOp::ALL.iter().map(|&c| compare_region(g, c, x, r)));
    outs.push(integer_region(g, x, r));
    outs.extend(cast_regions(g, x, r));
    outs
}

#[test]
fn the_regions_cover_every_elementwise_op_of_the_op_table() {
    // Every op kind of the table's elementwise family, with every payload
    // its enum lists (a new kind or variant lands here and must be added).
    let family: Vec<OpKind> = OpKind::ALL
        .iter()
        .copied()
        .filter(|k| k.info().family == "elementwise")
        .collect();
    let mut expected: BTreeSet<String> = BTreeSet::new();
    for k in &family {
        match k {
            OpKind::Unary => expected.extend(UnaryOp::ALL.map(|u| Op::Unary(u).mnemonic())),
            OpKind::Binary => expected.extend(BinaryOp::ALL.map(|b| Op::Binary(b).mnemonic())),
            OpKind::Compare => expected.extend(CmpOp::ALL.map(|c| Op::Compare(c).mnemonic())),
            OpKind::Select => {
                expected.insert(Op::Select.mnemonic());
            }
            OpKind::Cast => {
                expected.insert(Op::Cast.mnemonic());
            }
            other => panic!("elementwise op kind {other:?} has no region step here"),
        }
    }
    let covered = covered_kinds();
    let missing: Vec<&String> = expected.difference(&covered).collect();
    assert!(missing.is_empty(), "region steps never tested: {missing:?}");
}

#[test]
fn every_step_in_broadcast_regions_matches_the_cpu() {
    if !gpu_or_skip("every_step_in_broadcast_regions_matches_the_cpu") {
        return;
    }
    let mut g = Graph::new("regions");
    let x = g.input("x", Shape::new(&[3, 37], DType::F32));
    let p = g.input("p", Shape::new(&[3, 37], DType::F32));
    let r = g.input("r", Shape::new(&[37], DType::F32));
    let outs = all_regions(&mut g, (x, p, r));
    g.set_outputs(outs);
    let (xv, pv, rv) = (
        rand(&[3, 37], -4.0, 4.0, 11),
        rand(&[3, 37], 0.05, 6.0, 12),
        rand(&[37], 0.5, 2.0, 13),
    );
    assert_gpu_matches_cpu(&g, &[], &[("x", &xv), ("p", &pv), ("r", &rv)], RTOL);
}

#[test]
fn regions_broadcast_every_input() {
    if !gpu_or_skip("regions_broadcast_every_input") {
        return;
    }
    // [2, 1, 4] and [3, 1] and a scalar broadcast to [2, 3, 4].
    let mut g = Graph::new("broadcast_region");
    let a = g.input("a", Shape::new(&[2, 1, 4], DType::F32));
    let b = g.input("b", Shape::new(&[3, 1], DType::F32));
    let c = g.input("c", Shape::new(&[], DType::F32));
    let steps = vec![
        ChainStep::Binary(BinaryOp::Sub, In(0), In(1)),
        ChainStep::Unary(UnaryOp::Tanh, S(0)),
        ChainStep::Binary(BinaryOp::Mul, S(1), In(2)),
        ChainStep::Compare(CmpOp::Gt, S(2), In(1)),
        ChainStep::Select(S(3), S(2), In(0)),
    ];
    let y = region(&mut g, steps, &[a, b, c]);
    assert_eq!(g.shape(y).dims(), Shape::new(&[2, 3, 4], DType::F32).dims());
    g.set_outputs(vec![y]);
    let (av, bv) = (
        rand(&[2, 1, 4], -2.0, 2.0, 21),
        rand(&[3, 1], -1.0, 1.0, 22),
    );
    let cv = HostTensor::from_vec(vec![1.5f32], &[]).unwrap();
    assert_gpu_matches_cpu(&g, &[], &[("a", &av), ("b", &bv), ("c", &cv)], RTOL);
}

/// `t` (f32) rounded to `dt` (f32 or f16).
fn as_dtype(t: HostTensor, dt: DType) -> HostTensor {
    if dt == DType::F32 {
        t
    } else {
        to_f16(&t)
    }
}

#[test]
fn f16_regions_match_the_cpu() {
    if !gpu_or_skip("f16_regions_match_the_cpu") {
        return;
    }
    let mut g = Graph::new("f16_regions");
    let x = g.input("x", Shape::new(&[5, 33], DType::F16));
    let r = g.input("r", Shape::new(&[33], DType::F16));
    let mut outs = Vec::new();
    for u in [
        UnaryOp::Exp,
        UnaryOp::Tanh,
        UnaryOp::Gelu,
        UnaryOp::Sigmoid,
        UnaryOp::Silu,
        UnaryOp::Softplus,
    ] {
        let steps = vec![
            ChainStep::Binary(BinaryOp::Mul, In(0), In(1)),
            ChainStep::Unary(u, S(0)),
            ChainStep::Binary(BinaryOp::Sub, S(1), In(1)),
        ];
        outs.push(region(&mut g, steps, &[x, r]));
    }
    // Out to f32 and back in.
    let mixed = vec![
        ChainStep::Cast(In(0), DType::F32),
        ChainStep::Unary(UnaryOp::Exp, S(0)),
        ChainStep::Cast(S(1), DType::F16),
        ChainStep::Binary(BinaryOp::Div, S(2), In(1)),
    ];
    outs.push(region(&mut g, mixed, &[x, r]));
    g.set_outputs(outs);
    let xv = as_dtype(rand(&[5, 33], -2.0, 2.0, 31), DType::F16);
    let rv = as_dtype(rand(&[33], 0.5, 1.5, 32), DType::F16);
    assert_gpu_matches_cpu_atol(&g, &[], &[("x", &xv), ("r", &rv)], RTOL_F16, 1e-3);
}

/// Lowers `g` for the wgpu backend (or, with `fuse` false, for one that
/// claims no fused op) and compiles it: its dispatch count, and the op
/// kinds of its LIR.
fn gpu_program(g: &Graph, fuse: bool) -> (usize, BTreeSet<OpKind>) {
    let claims = |op: &Op| {
        WgpuBackend.claims(op)
            && (fuse || !matches!(op, Op::ElementwiseRegion { .. } | Op::FusedMatMul { .. }))
    };
    let lir = rlx_compile::lower(g, &claims, &Default::default()).expect("lowers");
    let kinds = lir.graph.nodes().iter().map(|n| n.op.kind()).collect();
    let exe = WgpuExecutable::new(lir, rlx_wgpu::context().expect("a GPU")).expect("compiles");
    (exe.dispatch_count(), kinds)
}

#[test]
fn the_compilers_fused_graph_is_one_dispatch_per_region() {
    if !gpu_or_skip("the_compilers_fused_graph_is_one_dispatch_per_region") {
        return;
    }
    // tanh(x * 2 + b) - x: four elementwise nodes, one region.
    let mut g = Graph::new("chain");
    let x = g.input("x", Shape::new(&[8, 16], DType::F32));
    let b = g.input("b", Shape::new(&[16], DType::F32));
    let two = g.constant(2.0, DType::F32);
    let y = g.mul(x, two);
    let y = g.add(y, b);
    let y = g.tanh(y);
    let y = g.sub(y, x);
    g.set_outputs(vec![y]);
    let (fused, kinds) = gpu_program(&g, true);
    assert!(kinds.contains(&OpKind::ElementwiseRegion), "{kinds:?}");
    assert_eq!(fused, 1, "one region, one dispatch");
    let (unfused, _) = gpu_program(&g, false);
    assert_eq!(unfused, 4, "the decomposed chain: one dispatch per node");
    let (xv, bv) = (rand(&[8, 16], -2.0, 2.0, 41), rand(&[16], -1.0, 1.0, 42));
    assert_gpu_matches_cpu(&g, &[], &[("x", &xv), ("b", &bv)], RTOL);
}

/// `act(x @ w + bias) * scale + residual` built from primitives; the
/// compiler folds the tail into one fused matmul.
fn mlp_layer(name: &str, dt: DType, batch: &[usize]) -> Graph {
    let mut g = Graph::new(name);
    let mut xd = batch.to_vec();
    xd.extend([5, 12]);
    let mut od = batch.to_vec();
    od.extend([5, 7]);
    let x = g.input("x", Shape::new(&xd, dt));
    let w = g.input("w", Shape::new(&[12, 7], dt));
    let bias = g.input("bias", Shape::new(&[7], dt));
    let res = g.input("res", Shape::new(&od, dt));
    let y = g.mm(x, w);
    let y = g.add(y, bias);
    let y = g.unary(UnaryOp::Gelu, y);
    let half = g.constant(0.5, dt);
    let y = g.mul(y, half);
    let y = g.add(y, res);
    g.set_outputs(vec![y]);
    g
}

fn mlp_inputs(dt: DType, batch: &[usize]) -> Vec<(&'static str, HostTensor)> {
    let with = |d: [usize; 2]| {
        let mut v = batch.to_vec();
        v.extend(d);
        v
    };
    [
        ("x", rand(&with([5, 12]), -1.0, 1.0, 51)),
        ("w", rand(&[12, 7], -0.5, 0.5, 52)),
        ("bias", rand(&[7], -0.5, 0.5, 53)),
        ("res", rand(&with([5, 7]), -1.0, 1.0, 54)),
    ]
    .into_iter()
    .map(|(n, t)| (n, as_dtype(t, dt)))
    .collect()
}

#[test]
fn fused_matmul_epilogues_match_the_cpu_in_one_dispatch() {
    if !gpu_or_skip("fused_matmul_epilogues_match_the_cpu_in_one_dispatch") {
        return;
    }
    for (dt, batch, rtol) in [
        (DType::F32, vec![], RTOL),
        (DType::F32, vec![2], RTOL),
        (DType::F16, vec![2], RTOL_F16),
    ] {
        let g = mlp_layer(&format!("mlp_{dt}_{}", batch.len()), dt, &batch);
        let (dispatches, kinds) = gpu_program(&g, true);
        assert!(
            kinds.contains(&OpKind::FusedMatMul),
            "{}: {kinds:?}",
            g.name()
        );
        assert!(!kinds.contains(&OpKind::MatMul), "{}: {kinds:?}", g.name());
        assert_eq!(dispatches, 1, "{}: the matmul and its epilogue", g.name());
        let inputs = mlp_inputs(dt, &batch);
        let refs: Vec<(&str, &HostTensor)> = inputs.iter().map(|(n, t)| (*n, t)).collect();
        assert_gpu_matches_cpu_atol(
            &g,
            &[],
            &refs,
            rtol,
            if dt == DType::F16 { 1e-3 } else { 1e-6 },
        );
    }
}

#[test]
fn a_region_step_without_a_gpu_form_is_refused_by_name() {
    if !gpu_or_skip("a_region_step_without_a_gpu_form_is_refused_by_name") {
        return;
    }
    // i64 arithmetic computes in 32 bits on the GPU, so it has no kernel;
    // inside a region the refusal names the region and its step.
    let mut g = Graph::new("i64_region");
    let a = g.input("a", Shape::new(&[4], DType::I64));
    let b = g.input("b", Shape::new(&[4], DType::I64));
    let steps = vec![
        ChainStep::Compare(CmpOp::Lt, In(0), In(1)),
        ChainStep::Binary(BinaryOp::Add, In(0), In(1)),
    ];
    let y = region(&mut g, steps, &[a, b]);
    g.set_outputs(vec![y]);
    let err = gpu_compile_error(&g);
    assert!(
        err.contains("region") && err.contains("step 1") && err.contains("i64 arithmetic"),
        "{err}"
    );
}
