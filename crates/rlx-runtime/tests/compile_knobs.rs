//! Each `CompileOptions` knob of issue 4 item 8 changes what compiles, and
//! the target queries (`fusion_target`, `supports_op`, ...) see the CPU
//! backend's claims.

use rlx_compile::{
    fusion_passes, fusion_passes_for_supported, supported_for_target, supports_op, CompilePipeline,
    Dispatch, DispatchPolicy, FusionKind, FusionOptions, FusionTarget, Pass,
};
use rlx_driver::Device;
use rlx_ir::quant::QuantScheme;
use rlx_ir::{DType, Graph, GraphExt, Op, OpKind, Shape};
use rlx_runtime::{fusion_target, CompileOptions, RuntimeError, Session};

fn softmax_graph() -> Graph {
    let mut g = Graph::new("sm");
    let x = g.input("x", Shape::new(&[2, 4], DType::F32));
    let _dead = g.exp(x);
    let p = g.sm(x, -1);
    g.set_outputs(vec![p]);
    g
}

const X: [f32; 8] = [0.5, -1.0, 2.0, 0.25, 3.0, 1.0, -2.0, 0.0];

/// Softmax of each row in f64: the reference.
fn softmax_ref() -> Vec<f32> {
    X.chunks(4)
        .flat_map(|r| {
            let m = r.iter().cloned().fold(f32::MIN, f32::max) as f64;
            let e: Vec<f64> = r.iter().map(|&v| (v as f64 - m).exp()).collect();
            let s: f64 = e.iter().sum();
            e.into_iter().map(move |v| (v / s) as f32)
        })
        .collect()
}

fn close(a: &[f32], b: &[f32]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| (x - y).abs() <= 1e-6)
}

#[test]
fn dce_knob_keeps_or_drops_dead_nodes() {
    let s = Session::new(Device::Cpu);
    let on = s.compile_with(softmax_graph(), &CompileOptions::default());
    let off = s.compile_with(softmax_graph(), &CompileOptions::default().dce(false));
    let has_exp = |g: &Graph| g.nodes().iter().any(|n| n.op.mnemonic() == "exp");
    assert!(!has_exp(&on.lir().graph));
    assert!(has_exp(&off.lir().graph));
    for mut c in [on, off] {
        assert!(close(&c.run(&[("x", &X)])[0], &softmax_ref()));
    }
}

#[test]
fn alignment_knob_aligns_every_slot() {
    let c = Session::new(Device::Cpu).compile_with(
        softmax_graph(),
        &CompileOptions::default().dce(false).alignment(256),
    );
    let plan = &c.lir().plan;
    let slots: Vec<_> = plan.slots.iter().flatten().collect();
    assert!(slots.len() >= 2);
    assert!(slots.iter().all(|s| s.offset % 256 == 0), "{slots:?}");
    // Two live 32-byte values need two 256-byte-aligned places.
    assert!(plan.arena_bytes >= 256 + 32, "{}", plan.arena_bytes);
}

#[test]
fn dispatch_policy_decompose_all_runs_primitives_only() {
    let opts = CompileOptions::default().dispatch(DispatchPolicy::DecomposeAll);
    let mut c = Session::new(Device::Cpu).compile_with(softmax_graph(), &opts);
    let lir = c.lir();
    assert!(lir
        .graph
        .nodes()
        .iter()
        .all(|n| !n.op.kind().is_composite()));
    assert_eq!(lir.dispatch.kinds[&OpKind::Softmax].0, Dispatch::Decomposed);
    assert!(close(&c.run(&[("x", &X)])[0], &softmax_ref()));
}

fn unclaimed_quant_graph() -> Graph {
    // IQ4_NL has no native CPU kernel: it runs as dequantize + matmul.
    let mut g = Graph::new("iq4");
    let x = g.input("x", Shape::new(&[1, 256], DType::F32));
    let w = g.param("w", Shape::new(&[2 * 256 / 32 * 18], DType::U8));
    let y = g.dequant_matmul(x, w, Some(QuantScheme::GgufIq4Nl), 2, 256);
    g.set_outputs(vec![y]);
    g
}

#[test]
fn dispatch_policy_error_on_unsupported_names_the_op() {
    let s = Session::new(Device::Cpu);
    // Native-first: compiles (decomposed).
    s.try_compile_with(unclaimed_quant_graph(), &CompileOptions::default())
        .unwrap();
    let strict = CompileOptions::default().dispatch(DispatchPolicy::ErrorOnUnsupported);
    let e = s
        .try_compile_with(unclaimed_quant_graph(), &strict)
        .unwrap_err();
    assert!(
        matches!(&e, RuntimeError::NotNative { kinds, .. } if kinds.contains("DequantMatMul (Decomposed x1)")),
        "{e}"
    );
    // Everything native: compiles under the strict policy.
    s.try_compile_with(softmax_graph(), &strict).unwrap();
}

/// `a = exp(x)` feeds two chains: the right region cannot take `a`.
fn branching_graph() -> Graph {
    let mut g = Graph::new("branch");
    let x = g.input("x", Shape::new(&[8], DType::F32));
    let a = g.exp(x);
    let b = g.neg(a);
    let c = g.sin(a);
    let d = g.tanh(b);
    let e = g.cos(c);
    g.set_outputs(vec![d, e]);
    g
}

#[test]
fn assert_fusion_clean_turns_a_miss_into_an_error() {
    let s = Session::new(Device::Cpu);
    let c = s
        .try_compile_with(branching_graph(), &CompileOptions::default())
        .unwrap();
    let misses = c.lir().fusion.missed.len();
    assert!(misses >= 1, "{}", c.lir().fusion);
    let e = s
        .try_compile_with(
            branching_graph(),
            &CompileOptions::default().assert_fusion_clean(true),
        )
        .unwrap_err();
    assert!(
        matches!(&e, RuntimeError::FusionNotClean { count, .. } if *count == misses),
        "{e}"
    );
    assert!(e.to_string().contains("MultipleConsumers"), "{e}");
    // A clean graph passes the assertion.
    s.try_compile_with(
        softmax_graph(),
        &CompileOptions::default().assert_fusion_clean(true),
    )
    .unwrap();
}

#[test]
fn cpu_target_claims_follow_the_backend() {
    let cpu = fusion_target(Device::Cpu).unwrap();
    assert_eq!(cpu.name(), "cpu");
    assert!(supports_op(&cpu, &Op::MatMul));
    let iq4 = Op::DequantMatMul {
        scheme: Some(QuantScheme::GgufIq4Nl),
        n: 2,
        k: 256,
    };
    let q8 = Op::DequantMatMul {
        scheme: Some(QuantScheme::GgufQ8_0),
        n: 2,
        k: 256,
    };
    assert!(!supports_op(&cpu, &iq4));
    assert!(supports_op(&cpu, &q8));
    let kinds = supported_for_target(&cpu, &unclaimed_quant_graph());
    assert!(kinds.is_empty(), "{kinds:?}");
    let kinds = supported_for_target(&cpu, &softmax_graph());
    assert_eq!(
        kinds.into_iter().collect::<Vec<_>>(),
        [OpKind::Unary, OpKind::Softmax]
    );
    let prims = FusionTarget::primitives();
    assert!(!supports_op(&prims, &Op::Softmax { axis: 1 }));
    assert!(supports_op(&prims, &Op::MatMul));
}

#[test]
fn fusion_passes_run_in_a_pipeline_and_respect_the_target() {
    let opts = FusionOptions::default();
    assert_eq!(fusion_passes(&opts).len(), 8);
    assert!(fusion_passes(&FusionOptions::disabled()).is_empty());
    // A primitives-only target keeps only the passes whose results are
    // primitives (a unary GELU, a plain matmul).
    let prims = fusion_passes_for_supported(&opts, &FusionTarget::primitives());
    let names: Vec<&str> = prims.iter().map(|p| p.name()).collect();
    assert_eq!(
        names,
        ["fuse_gelu", "fuse_shared_input", "fuse_transposed_operands"]
    );
    let all = fusion_passes_for_supported(&opts, &fusion_target(Device::Cpu).unwrap());
    let names: Vec<&str> = all.iter().map(|p| p.name()).collect();
    assert_eq!(
        names,
        [
            "fuse_gelu",
            "fuse_attention",
            "fuse_add_norm",
            "fuse_gated_matmul",
            "fuse_shared_input",
            "fuse_transposed_operands",
            "fuse_elementwise",
            "fuse_matmul_epilogue"
        ]
    );
    let passes: Vec<_> = all
        .into_iter()
        .filter(|p| p.name() == "fuse_elementwise" || p.name() == "fuse_matmul_epilogue")
        .collect();
    let g = branching_graph();
    let mut pipeline = CompilePipeline::new();
    for p in &passes {
        pipeline = pipeline.with_fn(p.name(), |g| p.run(g));
    }
    let out = pipeline.run(&g).unwrap();
    assert!(out.graph.len() < g.len());
    let report = passes[0].report();
    assert!(
        !report.of_kind(FusionKind::Elementwise).is_empty(),
        "{report}"
    );
    assert!(!report.missed.is_empty());
    // The fused graph computes what the unfused one does.
    let x: Vec<f32> = (0..8).map(|i| i as f32 * 0.3 - 1.0).collect();
    let s = Session::new(Device::Cpu);
    let unfused = CompileOptions::default().fusion(false);
    let a = s.compile_with(out.graph, &unfused).run(&[("x", &x)]);
    let b = s.compile_with(g, &unfused).run(&[("x", &x)]);
    assert_eq!(a, b);
}

#[test]
fn fusion_passes_list_what_lower_runs_in_its_order() {
    // The fusion passes a compile records, in order, are exactly those
    // `fusion_passes_for_supported` lists for the device.
    let s = Session::new(Device::Cpu);
    let c = s.compile_with(branching_graph(), &CompileOptions::default());
    let ran: Vec<&str> = c
        .lir()
        .passes
        .iter()
        .map(|r| r.pass.as_str())
        .filter(|p| p.starts_with("fuse_"))
        .collect();
    let listed = fusion_passes_for_supported(
        &FusionOptions::default(),
        &fusion_target(Device::Cpu).unwrap(),
    );
    let listed: Vec<&str> = listed.iter().map(|p| p.name()).collect();
    assert_eq!(ran, listed);
    assert_eq!(ran.len(), 8, "{ran:?}");
}
