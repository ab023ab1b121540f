//! The textual IR reads back: print -> parse -> print is the identity for
//! graphs holding every op the printer writes (attrs, dtypes, symbolic dims,
//! constants, names, nested control flow) and for the golden MIR files;
//! hostile texts are errors that say where, never panics.

use rlx_ir::fft::{FftKind, FftNorm};
use rlx_ir::op::{
    ArgReduceOp, AttentionLayout, BinaryOp, ChainOperand, ChainStep, CmpOp, DotDims, MaskKind,
    PadMode, PoolKind, ReduceOp, SliceSpec, TopKOutput, UnaryOp, Window,
};
use rlx_ir::ops::control::{try_custom_fn, try_if, try_scan, try_while, CustomFnSpec};
use rlx_ir::ops::upsample::InterpMode;
use rlx_ir::quant::QuantScheme;
use rlx_ir::{parse_graph, DType, Dim, Graph, GraphExt, HostTensor, NodeId, Op, ParseError, Shape};
use std::sync::Arc;

fn s(dims: &[usize]) -> Shape {
    Shape::new(dims, DType::F32)
}

fn node(g: &mut Graph, op: Op, ins: &[NodeId], declared: Option<Shape>) -> NodeId {
    let label = op.mnemonic();
    g.try_node(op, ins, declared)
        .unwrap_or_else(|e| panic!("{label}: {e}"))
}

/// Parses `text`, checks the graph prints back to `text`, returns it.
fn round_trip(text: &str) -> Graph {
    let g = parse_graph(text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert_eq!(g.to_text(), text);
    g
}

/// A sub-graph `x -> x * 2` on `f32[2]`.
fn doubler(name: &str) -> Graph {
    let mut b = Graph::new(name);
    let x = b.input("x", s(&[2]));
    let y = b.mul(x, 2.0);
    b.set_outputs(vec![y]);
    b
}

/// One node of every op family (and the awkward payloads of each).
fn every_op() -> Graph {
    let mut g = Graph::new("every \"op\"");
    let x = g.input("x", s(&[2, 3]));
    let w = g.param("w\nweird", s(&[3, 4]));
    let v = g.input("v", s(&[3]));
    g.set_name(v, "  spaced name ");
    let small = g.constant_tensor(&HostTensor::from_vec(vec![1.5f32, -0.0, 1e-30], &[3]).unwrap());
    let odd =
        g.constant_tensor(&HostTensor::from_vec(vec![f32::NAN, f32::INFINITY], &[2]).unwrap());
    let _big = g.constant_tensor(
        &HostTensor::from_vec((0..12).map(|i| i as f32 / 7.0).collect::<Vec<_>>(), &[3, 4])
            .unwrap(),
    );
    let ints = g.constant_tensor(&HostTensor::from_vec(vec![i64::MAX, -3], &[2]).unwrap());
    let halfs =
        g.constant_tensor(&HostTensor::from_vec(vec![rlx_ir::f16::from_f32(0.1)], &[1]).unwrap());
    let c64 = g.constant_tensor(
        &HostTensor::from_vec(vec![rlx_ir::Complex32::new(1.0, -2.0)], &[1]).unwrap(),
    );
    let _ = (odd, ints, halfs, c64);
    let sym = g.input(
        "seq",
        Shape::from_dims(vec![Dim::sym("batch"), Dim::Static(3)], DType::F32),
    );
    let _ = g.exp(sym);
    for u in UnaryOp::ALL.into_iter().filter(|u| *u != UnaryOp::Not) {
        node(&mut g, Op::Unary(u), &[x], None);
    }
    let b = g.input("b", Shape::new(&[2, 3], DType::Bool));
    node(&mut g, Op::Unary(UnaryOp::Not), &[b], None);
    for op in BinaryOp::ALL
        .into_iter()
        .filter(|o| !matches!(o, BinaryOp::And | BinaryOp::Or | BinaryOp::Xor))
    {
        node(&mut g, Op::Binary(op), &[x, v], None);
    }
    for op in [BinaryOp::And, BinaryOp::Or, BinaryOp::Xor] {
        node(&mut g, Op::Binary(op), &[b, b], None);
    }
    for op in CmpOp::ALL {
        node(&mut g, Op::Compare(op), &[x, small], None);
    }
    node(&mut g, Op::Select, &[b, x, v], None);
    node(
        &mut g,
        Op::Cast,
        &[x],
        Some(Shape::new(&[2, 3], DType::BF16)),
    );
    let mm = node(&mut g, Op::MatMul, &[x, w], None);
    g.set_name(mm, "proj");
    let dims = DotDims {
        lhs_batch: vec![],
        rhs_batch: vec![],
        lhs_contract: vec![1],
        rhs_contract: vec![0],
    };
    node(&mut g, Op::DotGeneral(dims), &[x, w], None);
    for op in [
        ReduceOp::Sum,
        ReduceOp::Mean,
        ReduceOp::Max,
        ReduceOp::Min,
        ReduceOp::Prod,
    ] {
        node(
            &mut g,
            Op::Reduce {
                op,
                axes: vec![1],
                keep_dim: op == ReduceOp::Max,
            },
            &[x],
            None,
        );
    }
    node(
        &mut g,
        Op::Reduce {
            op: ReduceOp::Sum,
            axes: vec![],
            keep_dim: false,
        },
        &[x],
        None,
    );
    for op in [ArgReduceOp::ArgMax, ArgReduceOp::ArgMin] {
        node(
            &mut g,
            Op::ArgReduce {
                op,
                axis: 0,
                keep_dim: true,
            },
            &[x],
            None,
        );
    }
    node(
        &mut g,
        Op::Cumsum {
            axis: 1,
            exclusive: true,
            reverse: false,
        },
        &[x],
        None,
    );
    node(&mut g, Op::Reshape, &[x], Some(s(&[3, 2])));
    let xt = node(&mut g, Op::Transpose { perm: vec![1, 0] }, &[x], None);
    node(
        &mut g,
        Op::Slice(SliceSpec {
            starts: vec![2, 0],
            steps: vec![-1, 2],
        }),
        &[xt],
        Some(s(&[2, 1])),
    );
    node(&mut g, Op::Concat { axis: 0 }, &[x, x], None);
    for mode in [PadMode::Constant(-2.5), PadMode::Reflect, PadMode::Edge] {
        node(
            &mut g,
            Op::Pad {
                pads: vec![(1, 0), (0, 1)],
                mode,
            },
            &[x],
            None,
        );
    }
    node(&mut g, Op::Broadcast, &[v], Some(s(&[4, 3])));
    let idx = g.constant_tensor(&HostTensor::from_vec(vec![1i64, 0], &[2]).unwrap());
    node(&mut g, Op::Gather { axis: 1 }, &[x, idx], None);
    let idx2 =
        g.constant_tensor(&HostTensor::from_vec(vec![0i64, 1, 2, 1, 0, 0], &[2, 3]).unwrap());
    node(&mut g, Op::GatherElements { axis: 1 }, &[x, idx2], None);
    node(&mut g, Op::ScatterAdd { axis: 1 }, &[x, idx2, x], None);
    for output in [TopKOutput::Values, TopKOutput::Indices] {
        node(
            &mut g,
            Op::TopK {
                k: 2,
                axis: 1,
                largest: false,
                output,
            },
            &[x],
            None,
        );
    }
    node(
        &mut g,
        Op::Iota {
            axis: 1,
            start: -0.5,
            step: 1e-7,
        },
        &[],
        Some(s(&[2, 5])),
    );
    node(&mut g, Op::Softmax { axis: 1 }, &[x], None);
    node(&mut g, Op::LogSoftmax { axis: 0 }, &[x], None);
    node(
        &mut g,
        Op::LayerNorm {
            axis: 1,
            eps: 1e-12,
        },
        &[x, v, v],
        None,
    );
    node(&mut g, Op::RmsNorm { eps: 1.5e-6 }, &[x, v], None);
    let img = g.input("img", s(&[1, 4, 5, 5]));
    node(
        &mut g,
        Op::GroupNorm {
            groups: 2,
            eps: 1e-5,
        },
        &[img],
        None,
    );
    let q = g.input("q", s(&[2, 4, 8]));
    let bias = g.input("bias", s(&[4, 4]));
    let mask = g.input("mask", Shape::new(&[4, 4], DType::Bool));
    for (mask_kind, scale, softcap) in [
        (MaskKind::None, None, None),
        (MaskKind::Causal, Some(0.125), Some(30.0)),
        (MaskKind::SlidingWindow(2), None, Some(5.0)),
    ] {
        node(
            &mut g,
            Op::Attention {
                mask: mask_kind,
                scale,
                softcap,
                layout: AttentionLayout::HeadsMajor,
            },
            &[q, q, q],
            None,
        );
    }
    node(
        &mut g,
        Op::Attention {
            mask: MaskKind::Causal,
            scale: None,
            softcap: None,
            layout: AttentionLayout::SeqMajor,
        },
        &[q, q, q],
        None,
    );
    node(
        &mut g,
        Op::Attention {
            mask: MaskKind::Custom,
            scale: None,
            softcap: None,
            layout: AttentionLayout::HeadsMajor,
        },
        &[q, q, q, mask],
        None,
    );
    node(
        &mut g,
        Op::Attention {
            mask: MaskKind::Bias,
            scale: None,
            softcap: None,
            layout: AttentionLayout::HeadsMajor,
        },
        &[q, q, q, bias],
        None,
    );
    let cs = g.input("cos", s(&[4, 4]));
    node(&mut g, Op::Rope { interleaved: true }, &[q, cs, cs], None);
    let k = g.param("k", s(&[6, 2, 3, 3]));
    let win = |kernel: Vec<usize>| Window {
        kernel,
        stride: vec![2, 1],
        padding: vec![(1, 0), (1, 1)],
        dilation: vec![1, 2],
    };
    node(
        &mut g,
        Op::Conv {
            window: win(vec![]),
            groups: 2,
        },
        &[img, k],
        None,
    );
    node(
        &mut g,
        Op::Conv {
            window: win(vec![3, 3]),
            groups: 2,
        },
        &[img, k],
        None,
    );
    let kt = g.param("kt", s(&[4, 3, 3, 3]));
    node(
        &mut g,
        Op::ConvTranspose {
            window: win(vec![]),
            output_padding: vec![1, 0],
            groups: 1,
        },
        &[img, kt],
        None,
    );
    for kind in [PoolKind::Max, PoolKind::Avg] {
        node(
            &mut g,
            Op::Pool {
                kind,
                window: win(vec![2, 3]),
                count_include_pad: kind == PoolKind::Avg,
            },
            &[img],
            None,
        );
    }
    for (mode, ac) in [(InterpMode::Nearest, false), (InterpMode::Linear, true)] {
        node(
            &mut g,
            Op::Upsample {
                mode,
                align_corners: ac,
            },
            &[img],
            Some(s(&[1, 4, 7, 9])),
        );
    }
    let z = g.input("z", Shape::new(&[2, 8], DType::C64));
    node(
        &mut g,
        Op::Fft {
            kind: FftKind::Fft,
            norm: FftNorm::Backward,
        },
        &[z],
        None,
    );
    node(
        &mut g,
        Op::Fft {
            kind: FftKind::Ifft,
            norm: FftNorm::Ortho,
        },
        &[z],
        None,
    );
    let r = g.input("r", s(&[2, 8]));
    node(
        &mut g,
        Op::Fft {
            kind: FftKind::Rfft,
            norm: FftNorm::Forward,
        },
        &[r],
        None,
    );
    node(
        &mut g,
        Op::Fft {
            kind: FftKind::Irfft,
            norm: FftNorm::Backward,
        },
        &[z],
        Some(s(&[2, 14])),
    );
    let (i0, i1, s0, s1, s2) = (
        ChainOperand::Input(0),
        ChainOperand::Input(1),
        ChainOperand::Step(0),
        ChainOperand::Step(1),
        ChainOperand::Step(2),
    );
    let steps = vec![
        ChainStep::Unary(UnaryOp::Exp, i0),
        ChainStep::Binary(BinaryOp::Add, s0, i1),
        ChainStep::Compare(CmpOp::Gt, s1, i0),
        ChainStep::Select(s2, s1, s0),
        ChainStep::Cast(ChainOperand::Step(3), DType::F16),
    ];
    node(&mut g, Op::ElementwiseRegion { steps }, &[x, v], None);
    let epilogue = vec![
        ChainStep::Binary(BinaryOp::Add, i0, i1),
        ChainStep::Unary(UnaryOp::GeluApprox, s0),
    ];
    let bias4 = g.param("bias4", s(&[4]));
    node(&mut g, Op::FusedMatMul { epilogue }, &[x, w, bias4], None);
    // conv + bias, then a residual add and relu; and a bias-free conv + silu.
    let res = g.input("res", s(&[1, 6, 2, 3]));
    let bias6 = g.param("bias6", s(&[6]));
    let conv_win = Window {
        kernel: vec![],
        stride: vec![2, 1],
        padding: vec![(1, 0), (1, 1)],
        dilation: vec![1, 2],
    };
    let epilogue = vec![
        ChainStep::Binary(BinaryOp::Add, i0, i1),
        ChainStep::Unary(UnaryOp::Relu, s0),
    ];
    node(
        &mut g,
        Op::FusedConv {
            window: conv_win.clone(),
            groups: 2,
            bias: true,
            epilogue,
        },
        &[img, k, bias6, res],
        None,
    );
    node(
        &mut g,
        Op::FusedConv {
            window: conv_win,
            groups: 2,
            bias: false,
            epilogue: vec![ChainStep::Unary(UnaryOp::Silu, i0)],
        },
        &[img, k],
        None,
    );
    for (rms, keep_sum) in [(false, true), (true, false)] {
        let ins: &[NodeId] = if rms { &[x, x, v] } else { &[x, x, v, v] };
        node(
            &mut g,
            Op::AddNorm {
                axis: 1,
                eps: 1e-5,
                rms,
                keep_sum,
            },
            ins,
            None,
        );
    }
    node(
        &mut g,
        Op::GatedMatMul { act: UnaryOp::Silu },
        &[x, w, w],
        None,
    );
    let qb = g.param("qw", Shape::new(&[2 * 34], DType::U8));
    node(
        &mut g,
        Op::Dequantize {
            scheme: QuantScheme::GgufQ8_0,
        },
        &[qb],
        Some(s(&[64])),
    );
    let act = g.input("act", s(&[3, 32]));
    let qw = g.param("qw2", Shape::new(&[2, 34], DType::U8));
    node(
        &mut g,
        Op::DequantMatMul {
            scheme: Some(QuantScheme::GgufQ8_0),
            n: 2,
            k: 32,
        },
        &[act, qw],
        None,
    );
    let fw = g.param("fw", s(&[2, 32]));
    node(
        &mut g,
        Op::DequantMatMul {
            scheme: None,
            n: 2,
            k: 32,
        },
        &[act, fw],
        None,
    );
    // control flow, nested one level deeper inside a branch
    let pred = g.input("p", Shape::scalar(DType::Bool));
    let x2 = g.input("x2", s(&[2]));
    let mut then_b = Graph::new("then");
    let tx = then_b.input("x", s(&[2]));
    let inner = try_while(&mut then_b, counter_cond(), doubler("body"), &[tx], 7).unwrap();
    then_b.set_outputs(inner);
    try_if(&mut g, pred, then_b, doubler("else"), &[x2]).unwrap();
    let xs = g.input("xs", s(&[5, 2]));
    let mut step = Graph::new("step");
    let c = step.input("c", s(&[2]));
    let xt = step.input("x_t", s(&[2]));
    let nc = step.add(c, xt);
    let y = step.mul(nc, 0.5);
    step.set_outputs(vec![nc, y]);
    try_scan(&mut g, step, &[x2], &[xs], true).unwrap();
    let spec = CustomFnSpec {
        name: "my \"fn\"".into(),
        body: Arc::new(doubler("body")),
        vjp: None,
        jvp: Some(Arc::new(jvp_rule())),
    };
    try_custom_fn(&mut g, spec, &[x2]).unwrap();
    let last = g.len() as u32 - 1;
    g.set_outputs(vec![mm, NodeId(last)]);
    g
}

fn counter_cond() -> Graph {
    let mut c = Graph::new("cond");
    let x = c.input("x", s(&[2]));
    let m = c.sum(x, &[0], false);
    let lt = c.lt(m, 100.0);
    c.set_outputs(vec![lt]);
    c
}

fn jvp_rule() -> Graph {
    let mut j = Graph::new("jvp");
    let _x = j.input("x", s(&[2]));
    let t = j.input("t", s(&[2]));
    let y = j.mul(t, 2.0);
    j.set_outputs(vec![y]);
    j
}

#[test]
fn every_op_prints_parses_and_prints_the_same() {
    let g = every_op();
    let text = g.to_text();
    let back = round_trip(&text);
    // Beyond the text: the same ops, inputs, shapes and names.
    assert_eq!(back.len(), g.len());
    for (a, b) in g.nodes().iter().zip(back.nodes()) {
        assert_eq!(
            (&a.inputs, &a.shape, &a.name),
            (&b.inputs, &b.shape, &b.name)
        );
        match (&a.op, &b.op) {
            (Op::Constant { bytes: x }, Op::Constant { bytes: y }) => assert_eq!(x, y),
            (x, y) => assert_eq!(x.mnemonic(), y.mnemonic()),
        }
    }
    assert_eq!(back.outputs(), g.outputs());
    // Display elides the big constant; the full text writes it as hex and
    // the awkward small ones (NaN, i64::MAX, -0, complex) exactly.
    assert!(g.to_string().contains("constant<48 bytes>"));
    assert!(text.contains("constant hex\""), "{text}");
    assert!(
        text.contains("constant [1.5, -0, 0.0000000000000000000000000000010000000031710769]"),
        "{text}"
    );
    assert!(text.contains("constant [NaN, inf]"), "{text}");
}

#[test]
fn storage_dtypes_print_and_parse_back() {
    use rlx_ir::f8::{F8E4M3, F8E5M2, F8E8M0};
    let mut g = Graph::new("storage");
    let mut outs = Vec::new();
    for d in DType::STORAGE {
        let x = g.input(&format!("x_{d}"), Shape::new(&[2], d));
        outs.push(g.cast(x, DType::F32));
        let f = g.input(&format!("f_{d}"), s(&[2]));
        outs.push(g.cast(f, d));
    }
    // Exact value lists where re-encoding gives the bytes, hex otherwise
    // (a negative NaN, a u64 past 2^53).
    let e4 = [F8E4M3::from_f32(-0.0), F8E4M3::from_f32(448.0)];
    let nan = [F8E5M2::from_bits(0xFF), F8E5M2::from_f32(f32::INFINITY)];
    let scale = [F8E8M0::from_bits(0), F8E8M0::from_bits(254)];
    for c in [
        g.constant_tensor(&HostTensor::from_vec(e4.to_vec(), &[2]).unwrap()),
        g.constant_tensor(&HostTensor::from_vec(nan.to_vec(), &[2]).unwrap()),
        g.constant_tensor(&HostTensor::from_vec(scale.to_vec(), &[2]).unwrap()),
        g.constant_tensor(&HostTensor::from_vec(vec![u64::MAX, 7], &[2]).unwrap()),
        g.constant_tensor(&HostTensor::from_vec(vec![u16::MAX, 0], &[2]).unwrap()),
    ] {
        outs.push(c);
    }
    g.set_outputs(outs);
    let text = g.to_text();
    for d in DType::STORAGE {
        assert!(text.contains(&format!("{}[2]", d.short_name())), "{text}");
    }
    assert!(text.contains("constant [-0, 448]"), "{text}");
    assert!(text.contains("constant hex\"ff7c\""), "{text}");
    assert!(
        text.contains("constant [0.000000000000000000000000000000000000005877471754111438, 170141183460469230000000000000000000000]"),
        "{text}"
    );
    assert!(text.contains("constant [65535, 0]"), "{text}");
    let back = round_trip(&text);
    for (a, b) in g.nodes().iter().zip(back.nodes()) {
        assert_eq!(a.shape, b.shape);
        if let (Op::Constant { bytes: x }, Op::Constant { bytes: y }) = (&a.op, &b.op) {
            assert_eq!(x, y);
        }
    }
    let e = err("graph \"g\" {\n  %0 = input \"x\" : f8e4m3x[2]\n  return %0\n}\n");
    assert!(e.to_string().contains("f8e4m3fnuz"), "{e}");
}

#[test]
fn every_op_text_is_golden() {
    // The committed text also seeds the fuzzer (tools/fuzz_ir_text.sh).
    let text = every_op().to_text();
    if std::env::var_os("RLX_BLESS").is_some() {
        std::fs::write(
            concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden/every_op.mir"),
            &text,
        )
        .unwrap();
    }
    assert_eq!(text, include_str!("golden/every_op.mir"));
}

#[test]
fn display_text_without_elided_constants_round_trips_too() {
    let mut g = Graph::new("plain");
    let x = g.input("x", s(&[2, 3]));
    let y = g.mul(x, g.constant(0.1, DType::F32));
    let z = g.sm(y, -1);
    g.set_outputs(vec![z]);
    let text = g.to_string();
    assert_eq!(text, g.to_text());
    assert_eq!(parse_graph(&text).unwrap().to_string(), text);
}

#[test]
fn inspect_mir_output_parses_to_the_same_graph() {
    let mir = rlx_ir::MirModule::new(every_op_without_big_constants());
    let text = rlx_ir::inspect_mir(&mir);
    assert!(text.contains("\n#   Softmax: 1"), "{text}");
    let g = parse_graph(&format!("# from inspect_mir\n\n{text}")).unwrap();
    assert_eq!(g.to_string(), mir.graph().to_string());
}

/// A graph `Display` prints in full (no constant of more than 8 values).
fn every_op_without_big_constants() -> Graph {
    let mut g = Graph::new("small");
    let x = g.input("x", s(&[2, 3]));
    let k = g.constant_tensor(&HostTensor::from_vec(vec![0.5f32, -1.0, 2.0], &[3]).unwrap());
    let y = g.add(x, k);
    let z = g.sm(y, -1);
    let m = g.sum(z, &[0], true);
    g.set_name(m, "total");
    g.set_outputs(vec![m, y]);
    g
}

#[test]
fn golden_mir_files_round_trip() {
    for text in [
        include_str!("golden/encoder_block.mir"),
        include_str!("golden/decoder_block.mir"),
    ] {
        let g = round_trip(text.trim_end());
        assert_eq!(g.to_string(), text.trim_end());
    }
}

#[test]
fn elided_constants_are_an_error_that_says_how_to_print() {
    let text = "graph \"g\" {\n  %0 = constant<48 bytes> : f32[12]\n  return %0\n}";
    let e = parse_graph(text).unwrap_err();
    assert_eq!((e.line(), e.column()), (2, 17));
    assert!(e.to_string().contains("Graph::to_text"), "{e}");
}

fn err(text: &str) -> ParseError {
    match parse_graph(text) {
        Ok(g) => panic!("parsed:\n{g}"),
        Err(e) => e,
    }
}

#[test]
fn every_truncation_of_a_sample_is_an_error() {
    let text = every_op().to_text();
    for cut in (0..text.len()).filter(|&i| text.is_char_boundary(i)) {
        let e = err(&text[..cut]);
        assert!(e.line() >= 1 && e.column() >= 1);
    }
}

#[test]
fn bad_texts_name_the_place_and_what_was_expected() {
    let ok =
        "graph \"g\" {\n  %0 = input \"x\" : f32[2,3]\n  %1 = exp %0 : f32[2,3]\n  return %1\n}";
    parse_graph(ok).unwrap();
    let cases: [(&str, &str, (usize, usize), &str); 10] = [
        ("exp %0", "input \"y\" %0", (3, 8), "a leaf takes no inputs"),
        ("exp", "expo", (3, 8), "an op mnemonic"),
        ("f32[2,3]\n  %1", "f33[2,3]\n  %1", (2, 20), "a dtype"),
        ("%1 = exp %0", "%2 = exp %0", (3, 3), "`%1`"),
        ("exp %0", "exp %7", (3, 12), "input %7 does not exist"),
        (
            "exp %0 : f32[2,3]",
            "exp %0 : f32[3,2]",
            (3, 8),
            "inference gives f32[2,3]",
        ),
        ("return %1", "return %9", (4, 10), "input %9 does not exist"),
        ("[2,3]\n  %1", "[2,x y]\n  %1", (2, 28), "`,`"),
        ("input \"x\"", "input x", (2, 14), "a quoted string"),
        (
            "%0 : f32[2,3]\n  return",
            "%0 : f32[2,3] junk\n  return",
            (3, 26),
            "end of line",
        ),
    ];
    for (from, to, (line, column), says) in cases {
        let e = err(&ok.replacen(from, to, 1));
        assert_eq!((e.line(), e.column()), (line, column), "{to}: {e}");
        assert!(e.to_string().contains(says), "{to}: {e}");
    }
    // Hostile sizes and nesting are errors, not overflows.
    let huge = ok.replace("f32[2,3]", "f32[99999999999,99999999999]");
    assert!(err(&huge).to_string().contains("byte size"));
    let deep = "graph \"g\" {\n  %0 = if : u8[]\n    then: ".repeat(70);
    assert!(err(&deep).to_string().contains("levels of nested"));
    assert!(err(
        "graph \"g\" {\n  %0 = input \"x\" : f32[1]\n  %1 = input \"x\" : f32[1]\n  return %1\n}"
    )
    .to_string()
    .contains("duplicate"));
}

/// A small deterministic byte mutator: every mutated text is an error or a
/// graph that prints back to something that parses to the same text.
#[test]
fn mutated_texts_never_panic() {
    let text = every_op().to_text();
    let bytes = text.as_bytes();
    let alphabet = b"%=:,[]{}()\"#\n 0123456789-.efinsx";
    let mut state = 0x2545F4914F6CDD1Du64;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for _ in 0..3000 {
        let mut m = bytes.to_vec();
        for _ in 0..1 + next() % 3 {
            let at = (next() % m.len() as u64) as usize;
            match next() % 3 {
                0 => m[at] = alphabet[(next() % alphabet.len() as u64) as usize],
                1 => {
                    m.remove(at);
                }
                _ => m.insert(at, alphabet[(next() % alphabet.len() as u64) as usize]),
            }
        }
        let Ok(t) = String::from_utf8(m) else {
            continue;
        };
        if let Ok(g) = parse_graph(&t) {
            let again = g.to_text();
            assert_eq!(parse_graph(&again).unwrap().to_text(), again);
        }
    }
}
