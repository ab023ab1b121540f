//! What the CUDA plan computes, op kind by op kind: every [`OpKind`] of
//! the IR is a leaf, planned to a kernel, decomposed into primitives
//! before planning, or listed as not yet on CUDA with the reason (such a
//! node is refused at compile time by name: the session's policy may run
//! it on the CPU). A kind added to the IR fails
//! `every_op_kind_is_planned_decomposed_or_listed_with_a_reason` until it
//! is put in one of the lists; each list is then checked against the
//! planner on a sample graph.

mod common;

use common::plan_check::lir_of;
use rlx_compile::{lower, FusionOptions, LowerOptions};
use rlx_cuda::cuda_claims;
use rlx_cuda::plan::plan;
use rlx_driver::BackendError;
use rlx_ir::op::{CmpOp, DotDims, MaskKind, PoolKind, ReduceOp, UnaryOp, Window};
use rlx_ir::ops::upsample::InterpMode;
use rlx_ir::quant::QuantScheme;
use rlx_ir::{DType, Graph, GraphExt, NodeId, Op, OpKind, Shape};

/// Graph leaves: values, never launches.
const LEAVES: &[OpKind] = &[OpKind::Input, OpKind::Param, OpKind::Constant];

/// Kinds with a CUDA kernel (a reshape is a view, or a copy of a param).
const PLANNED: &[OpKind] = &[
    OpKind::Unary,
    OpKind::Binary,
    OpKind::Compare,
    OpKind::Select,
    OpKind::Cast,
    OpKind::MatMul,
    OpKind::DotGeneral,
    OpKind::Reduce,
    OpKind::ArgReduce,
    OpKind::Cumsum,
    OpKind::Reshape,
    OpKind::Transpose,
    OpKind::Slice,
    OpKind::Concat,
    OpKind::Pad,
    OpKind::Broadcast,
    OpKind::Gather,
    OpKind::GatherElements,
    OpKind::ScatterAdd,
    OpKind::TopK,
    OpKind::Iota,
    OpKind::Softmax,
    OpKind::LogSoftmax,
    OpKind::LayerNorm,
    OpKind::RmsNorm,
    OpKind::Conv,
    OpKind::ConvTranspose,
    OpKind::Pool,
    OpKind::Upsample,
    OpKind::Dequantize,
    OpKind::ElementwiseRegion,
    OpKind::FusedMatMul,
];

/// Composites the CUDA backend does not claim: lowered into primitives.
const DECOMPOSED: &[OpKind] = &[
    OpKind::GroupNorm,
    OpKind::Attention,
    OpKind::Rope,
    OpKind::FusedConv,
    OpKind::AddNorm,
    OpKind::GatedMatMul,
    OpKind::DequantMatMul,
];

/// Not on CUDA yet, and why.
const NOT_YET: &[(OpKind, &str)] = &[
    (OpKind::Fft, "no cuFFT binding or FFT kernel yet"),
    (
        OpKind::If,
        "control flow needs device-side sub-graph plans (a branch picked from a device value)",
    ),
    (
        OpKind::While,
        "control flow: a loop condition read back per iteration",
    ),
    (OpKind::Scan, "control flow: a sub-graph plan per step"),
    (OpKind::CustomFn, "a user function's body has no CUDA plan"),
    (OpKind::Custom, "op extensions register CPU kernels only"),
    (OpKind::TupleGet, "only control-flow ops make tuples"),
];

#[test]
fn every_op_kind_is_planned_decomposed_or_listed_with_a_reason() {
    let listed = |k: OpKind| {
        [LEAVES, PLANNED, DECOMPOSED]
            .iter()
            .filter(|l| l.contains(&k))
            .count()
            + NOT_YET.iter().filter(|(n, _)| *n == k).count()
    };
    let unlisted: Vec<_> = OpKind::ALL.iter().filter(|&&k| listed(k) == 0).collect();
    let twice: Vec<_> = OpKind::ALL.iter().filter(|&&k| listed(k) > 1).collect();
    assert!(
        unlisted.is_empty(),
        "op kinds with no CUDA status (give each a kernel, or list it in NOT_YET with the reason): {unlisted:?}"
    );
    assert!(twice.is_empty(), "op kinds listed twice: {twice:?}");
    assert!(NOT_YET.iter().all(|(_, why)| !why.is_empty()));
    for k in DECOMPOSED {
        assert!(
            k.is_composite(),
            "{k:?} is no composite: it cannot be decomposed"
        );
    }
}

fn f32s(g: &mut Graph, name: &str, dims: &[usize]) -> NodeId {
    g.input(name, Shape::new(dims, DType::F32))
}

fn window(kernel: &[usize]) -> Window {
    Window {
        kernel: kernel.to_vec(),
        stride: vec![1; 2],
        padding: vec![(0, 0); 2],
        dilation: vec![1; 2],
    }
}

/// A small graph with one node of `kind` (None for kinds whose sample
/// needs sub-graphs or a registered extension).
fn sample(kind: OpKind) -> Option<Graph> {
    let mut g = Graph::new(format!("{kind:?}"));
    let x = f32s(&mut g, "x", &[2, 3, 4]);
    let img = || Shape::new(&[1, 2, 4, 4], DType::F32);
    let i64s = |g: &mut Graph, dims: &[usize]| g.input("i", Shape::new(dims, DType::I64));
    let y = match kind {
        OpKind::Unary => g.unary(UnaryOp::Exp, x),
        OpKind::Binary => g.add(x, x),
        OpKind::Compare => g.compare_op(CmpOp::Lt, x, x),
        OpKind::Select => {
            let c = g.compare_op(CmpOp::Lt, x, 0.0);
            g.where_(c, x, 1.0)
        }
        OpKind::Cast => g.cast(x, DType::F16),
        OpKind::MatMul => {
            let w = f32s(&mut g, "w", &[4, 5]);
            g.mm(x, w)
        }
        OpKind::DotGeneral => {
            let w = f32s(&mut g, "w", &[2, 4, 5]);
            let dims = DotDims {
                lhs_batch: vec![0],
                rhs_batch: vec![0],
                lhs_contract: vec![2],
                rhs_contract: vec![1],
            };
            g.dot_general(x, w, dims)
        }
        OpKind::Reduce => g.reduce_op(ReduceOp::Sum, x, &[1], false),
        OpKind::ArgReduce => g.argmax(x, 1, false),
        OpKind::Cumsum => g.cumsum(x, 1, false, false),
        OpKind::Reshape => {
            let p = g.param("p", Shape::new(&[2, 3, 4], DType::F32));
            g.reshape_(p, &[6, 4])
        }
        OpKind::Transpose => g.transpose_(x, &[2, 0, 1]),
        OpKind::Slice => g.slice_(x, 2, 1, 4, 2),
        OpKind::Concat => g.concat_(&[x, x], 1),
        OpKind::Pad => g.pad_(x, &[(0, 0), (1, 1), (0, 2)], rlx_ir::op::PadMode::Edge),
        OpKind::Broadcast => {
            let r = f32s(&mut g, "r", &[3, 1]);
            g.expand_(r, &[2, 3, 4])
        }
        OpKind::Gather => {
            let i = i64s(&mut g, &[5]);
            g.gather_(x, i, 0)
        }
        OpKind::GatherElements => {
            let i = i64s(&mut g, &[2, 2, 4]);
            g.gather_elements(x, i, 1)
        }
        OpKind::ScatterAdd => {
            let i = i64s(&mut g, &[2, 2, 4]);
            let u = f32s(&mut g, "u", &[2, 2, 4]);
            g.scatter_add(x, i, u, 1)
        }
        OpKind::TopK => g.topk(x, 2, -1, true).0,
        OpKind::Iota => g.iota(&[3, 4], 1, 0.0, 1.0, DType::F32),
        OpKind::Softmax => g.sm(x, -1),
        OpKind::LogSoftmax => g.log_softmax(x, -1),
        OpKind::LayerNorm => g.layer_norm_axis(x, 2, None, None, 1e-5),
        OpKind::RmsNorm => g.rms_norm(x, None, 1e-5),
        OpKind::GroupNorm => {
            let a = g.input("a", img());
            g.group_norm(a, 2, None, 1e-5)
        }
        OpKind::Attention => g.attention_(x, x, x, MaskKind::Causal, None),
        OpKind::Rope => {
            let cs = f32s(&mut g, "cos", &[3, 2]);
            let sn = f32s(&mut g, "sin", &[3, 2]);
            g.rope(x, cs, sn)
        }
        OpKind::Conv | OpKind::FusedConv => {
            let a = g.input("a", img());
            let w = f32s(&mut g, "w", &[3, 2, 3, 3]);
            let c = g.conv(a, w, None, window(&[]), 1);
            if kind == OpKind::FusedConv {
                g.unary(UnaryOp::Relu, c)
            } else {
                c
            }
        }
        OpKind::ConvTranspose => {
            let a = g.input("a", img());
            let w = f32s(&mut g, "w", &[2, 3, 3, 3]);
            g.conv_transpose2d(a, w, None, [2, 2], [1, 1], [1, 1], 1)
        }
        OpKind::Pool => {
            let a = g.input("a", img());
            g.pool(a, PoolKind::Max, window(&[2, 2]), false)
        }
        OpKind::Upsample => {
            let a = g.input("a", img());
            g.upsample(a, &[7, 5], InterpMode::Linear, false)
        }
        OpKind::Fft => {
            let c = g.input("c", Shape::new(&[3, 4], DType::C64));
            g.fft(c, rlx_ir::fft::FftNorm::Backward)
        }
        OpKind::ElementwiseRegion => {
            let t = g.unary(UnaryOp::Tanh, x);
            let s = g.mul(t, x);
            g.add(s, 1.0)
        }
        OpKind::FusedMatMul => {
            let w = f32s(&mut g, "w", &[4, 5]);
            let b = f32s(&mut g, "b", &[5]);
            let m = g.mm(x, w);
            let m = g.add(m, b);
            g.unary(UnaryOp::Relu, m)
        }
        OpKind::AddNorm => {
            let s = g.add(x, x);
            g.layer_norm_axis(s, 2, None, None, 1e-5)
        }
        OpKind::GatedMatMul => {
            let wg = f32s(&mut g, "wg", &[4, 5]);
            let wu = f32s(&mut g, "wu", &[4, 5]);
            let a = g.mm(x, wg);
            let a = g.unary(UnaryOp::Silu, a);
            let b = g.mm(x, wu);
            g.mul(a, b)
        }
        OpKind::Dequantize | OpKind::DequantMatMul => {
            let q = g.input("q", Shape::new(&[34 * 5], DType::U8));
            let scheme = QuantScheme::GgufQ8_0;
            if kind == OpKind::Dequantize {
                g.try_node(
                    Op::Dequantize { scheme },
                    &[q],
                    Some(Shape::new(&[5, 32], DType::F32)),
                )
                .unwrap()
            } else {
                let a = f32s(&mut g, "a", &[3, 32]);
                g.dequant_matmul(a, q, Some(scheme), 5, 32)
            }
        }
        OpKind::If => {
            let branch = |neg: bool| {
                let mut b = Graph::new("branch");
                let a = f32s(&mut b, "a", &[2, 3, 4]);
                let o = if neg { g_neg(&mut b, a) } else { a };
                b.set_outputs(vec![o]);
                b
            };
            let p = g.input("p", Shape::new(&[], DType::Bool));
            g.if_(p, branch(true), branch(false), &[x])[0]
        }
        _ => return None,
    };
    g.set_outputs(vec![y]);
    Some(g)
}

fn g_neg(g: &mut Graph, a: NodeId) -> NodeId {
    g.unary(UnaryOp::Neg, a)
}

#[test]
fn planned_kinds_get_a_launch_and_decomposed_ones_leave_none() {
    for &kind in PLANNED.iter().chain(DECOMPOSED) {
        let g = sample(kind).unwrap_or_else(|| panic!("no sample graph for {kind:?}"));
        // Only the fused kinds' samples are fused (a primitive's sample
        // would otherwise become a region of one).
        let fused = matches!(kind, OpKind::ElementwiseRegion | OpKind::FusedMatMul);
        let lir = if fused || DECOMPOSED.contains(&kind) {
            lir_of(&g)
        } else {
            let opts = LowerOptions {
                fusion: FusionOptions::disabled(),
                ..LowerOptions::default()
            };
            lower(&g, &cuda_claims, &opts).unwrap()
        };
        let p = plan(&lir, 0).unwrap_or_else(|e| panic!("{kind:?}: {e}"));
        let launched = |k: OpKind| {
            p.steps
                .iter()
                .any(|s| lir.graph.node(s.node).op.kind() == k)
        };
        if PLANNED.contains(&kind) {
            assert!(launched(kind), "{kind:?}: no step computes it:\n{p}");
        } else {
            assert!(
                lir.graph
                    .ids()
                    .all(|id| lir.graph.node(id).op.kind() != kind),
                "{kind:?} was not decomposed"
            );
        }
    }
}

#[test]
fn kinds_not_yet_on_cuda_are_refused_by_name() {
    let mut sampled = 0;
    for &(kind, _) in NOT_YET {
        let Some(g) = sample(kind) else { continue };
        sampled += 1;
        let err = plan(&lir_of(&g), 0).expect_err("planned");
        // The textual-IR name without its wildcard (`*fft`, `custom.*`).
        let name = kind.info().name.replace('*', "");
        let name = name.trim_matches('.');
        match &err {
            BackendError::Unsupported { node, .. } => {
                assert!(node.contains(name), "{kind:?}: {node}")
            }
            e => panic!("{kind:?}: {e:?}"),
        }
    }
    assert!(sampled >= 2, "FFT and if have samples");
}
