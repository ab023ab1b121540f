//! A llama-style decoder block built from primitives of the public graph
//! API (RMS norm, attention written out as `softmax(q kᵀ * scale + mask) v`,
//! residual adds, SwiGLU): the fusion report lists the attention block, the
//! residual add + RMS norm (whose sum the second residual still reads) and
//! the gated MLP; the fused block computes what the unfused one does (to
//! 1e-5: the recognised attention runs the fused kernel's softmax); the
//! memory plan with in-place reuse passes the checker and is smaller.

use rlx_compile::{check_plan, plan_memory_with, FusionKind};
use rlx_driver::Device;
use rlx_ir::{DType, Graph, GraphExt, HostTensor, NodeId, Shape};
use rlx_runtime::{CompileOptions, CompiledGraph, Session};

mod common;
use common::values;

const T: usize = 8;
const H: usize = 32;
const HEADS: usize = 4;
const HD: usize = H / HEADS;
const FFN: usize = 64;

fn weight(g: &mut Graph, name: &str, din: usize, dout: usize) -> NodeId {
    g.param(name, Shape::new(&[din, dout], DType::F32))
}

fn heads(g: &mut Graph, x: NodeId) -> NodeId {
    let r = g.reshape_(x, &[T as i64, HEADS as i64, HD as i64]);
    g.transpose_(r, &[1, 0, 2])
}

fn decoder_block() -> Graph {
    let mut g = Graph::new("llama_block");
    let x = g.input("x", Shape::new(&[T, H], DType::F32));
    let g1 = g.param("norm1.g", Shape::new(&[H], DType::F32));
    let h = g.rms_norm(x, g1, 1e-6);
    let (wq, wk, wv) = (
        weight(&mut g, "q", H, H),
        weight(&mut g, "k", H, H),
        weight(&mut g, "v", H, H),
    );
    let (q, k, v) = (g.mm(h, wq), g.mm(h, wk), g.mm(h, wv));
    let (q, k, v) = (heads(&mut g, q), heads(&mut g, k), heads(&mut g, v));
    // Causal mask as an additive bias.
    let mask: Vec<f32> = (0..T * T)
        .map(|i| if i % T <= i / T { 0.0 } else { -1e9 })
        .collect();
    let mask = g.constant_tensor(&HostTensor::from_vec(mask, &[T, T]).unwrap());
    let kt = g.transpose_(k, &[0, 2, 1]);
    let s = g.mm(q, kt);
    let s = g.mul(s, 1.0 / (HD as f64).sqrt());
    let s = g.add(s, mask);
    let p = g.sm(s, -1);
    let a = g.mm(p, v);
    let a = g.transpose_(a, &[1, 0, 2]);
    let a = g.reshape_(a, &[T as i64, H as i64]);
    let wo = weight(&mut g, "o", H, H);
    let o = g.mm(a, wo);
    let r1 = g.add(x, o);
    let g2 = g.param("norm2.g", Shape::new(&[H], DType::F32));
    let h2 = g.rms_norm(r1, g2, 1e-6);
    let (wg, wu, wd) = (
        weight(&mut g, "gate", H, FFN),
        weight(&mut g, "up", H, FFN),
        weight(&mut g, "down", FFN, H),
    );
    let gate = g.mm(h2, wg);
    let gate = g.silu(gate);
    let up = g.mm(h2, wu);
    let m = g.mul(gate, up);
    let d = g.mm(m, wd);
    let y = g.add(r1, d);
    g.set_outputs(vec![y]);
    g
}

fn compile(opts: &CompileOptions) -> CompiledGraph {
    let mut c = Session::new(Device::Cpu).compile_with(decoder_block(), opts);
    for (i, (name, shape)) in c.param_shapes().into_iter().enumerate() {
        let n: usize = shape.static_dims().unwrap().iter().product();
        let v = if name.ends_with(".g") {
            values(n, i as u64, 0.1).iter().map(|d| 1.0 + d).collect()
        } else {
            values(n, i as u64, 0.3)
        };
        c.set_param(&name, &v);
    }
    c
}

#[test]
fn the_report_lists_attention_add_rms_norm_and_swiglu() {
    let c = compile(&CompileOptions::default());
    let report = &c.lir().fusion;
    eprintln!("{report}");
    assert_eq!(report.of_kind(FusionKind::Attention).len(), 1, "{report}");
    assert_eq!(report.of_kind(FusionKind::GatedMatMul).len(), 1, "{report}");
    let add_norm = report.of_kind(FusionKind::AddNorm);
    assert_eq!(add_norm.len(), 1, "{report}");
    assert!(add_norm[0].ops[1].starts_with("rms_norm"), "{report}");
    // The sum is the residual stream the second add reads: the fused op keeps it.
    let g = &c.lir().graph;
    assert!(g.nodes().iter().any(|n| matches!(
        n.op,
        rlx_ir::Op::AddNorm {
            rms: true,
            keep_sum: true,
            ..
        }
    )));
    // The down projection takes the second residual add as its epilogue.
    assert_eq!(
        report.of_kind(FusionKind::MatMulEpilogue).len(),
        1,
        "{report}"
    );
    // q, k and v share x: their param weights are stacked and the three
    // matmuls run as one. The stack only moves param bytes, so setting a
    // weight writes it into its slice: no concat runs, no prelude at all.
    assert_eq!(report.of_kind(FusionKind::SharedInput).len(), 1, "{report}");
    assert!(report.missed.is_empty(), "{report}");
    assert!(c.prelude_lir().is_none(), "nothing is computed from params");
    assert!(!g
        .nodes()
        .iter()
        .any(|n| matches!(n.op, rlx_ir::Op::Concat { .. })));
    assert!(g
        .params()
        .iter()
        .any(|p| p.1.starts_with(rlx_compile::DERIVED_PARAM_PREFIX)));
}

#[test]
fn the_fused_block_matches_the_unfused_one_and_plans_in_place() {
    let mut fused = compile(&CompileOptions::default());
    let mut unfused = compile(&CompileOptions::default().fusion(false));
    let (f, u) = (fused.lir(), unfused.lir());
    // Kernels that run (views are no-ops): attention -4 (six nodes become
    // k's transpose and the op), add + norm -1, SwiGLU -2, the down
    // projection's epilogue -1, q / k / v -2 matmuls +1 reshape of x.
    let kernels = |lir: &rlx_compile::LirModule| {
        lir.schedule
            .iter()
            .filter(|i| !lir.plan.is_view(i.index()))
            .count()
    };
    assert!(
        kernels(u) >= kernels(f) + 9,
        "{} -> {} kernels",
        kernels(u),
        kernels(f)
    );
    // Fused, no elementwise node is left to run in place (the kept sum of
    // the add + norm is read later); unfused, the adds, silu and mul are.
    for (lir, in_place) in [(f, false), (u, true)] {
        check_plan(&lir.graph, &lir.plan).unwrap();
        let without = plan_memory_with(&lir.graph, 64, false).unwrap();
        check_plan(&lir.graph, &without).unwrap();
        assert_eq!(lir.plan.in_place_bytes() > 0, in_place);
        assert!(lir.plan.arena_bytes <= without.arena_bytes);
    }
    let x = values(T * H, 7, 1.0);
    let a = fused.run(&[("x", &x)]);
    let b = unfused.run(&[("x", &x)]);
    let worst = a[0]
        .iter()
        .zip(&b[0])
        .map(|(p, q)| (p - q).abs() / (1.0 + q.abs()))
        .fold(0.0f32, f32::max);
    assert!(worst <= 1e-5, "worst relative difference {worst}");
}
