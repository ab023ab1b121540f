//! HIR: textual form, lowering to MIR (golden text), stage holders, errors.

use rlx_ir::{
    inspect_hir, inspect_mir_diff, inspect_mir_stats, DType, GraphModule, HirModule, HirOp,
    IrError, MirModule, MlpActivation, Shape, StageKind,
};

fn encoder() -> HirModule {
    let mut h = HirModule::new("enc");
    let x = h.input("x", Shape::new(&[4, 8], DType::F32)).unwrap();
    let y = h
        .push(
            "layer0",
            HirOp::EncoderBlock {
                x,
                heads: 2,
                ffn: 16,
                eps: 1e-12,
                mask: None,
            },
        )
        .unwrap();
    h.set_outputs(vec![y]);
    h
}

/// A decoder block (2 heads, FFN 12) over an input of `shape`.
fn decoder(name: &str, shape: Shape) -> HirModule {
    let mut h = HirModule::new(name);
    let x = h.input("x", shape).unwrap();
    let y = h
        .push(
            "layer0",
            HirOp::DecoderBlock {
                x,
                heads: 2,
                ffn: 12,
                eps: 1e-6,
            },
        )
        .unwrap();
    h.set_outputs(vec![y]);
    h
}

#[test]
fn hir_text_is_golden() {
    let want = r#"hir "enc" {
  %x = input : f32[4,8]
  %layer0 = encoder_block{heads=2, ffn=16, eps=1e-12} %x : f32[4,8]
  return %layer0
}"#;
    assert_eq!(encoder().to_string(), want);
    assert!(inspect_hir(&encoder()).contains("#   encoder_block: 1"));
}

#[test]
fn encoder_block_lowers_to_the_golden_mir() {
    let want = include_str!("golden/encoder_block.mir");
    let mir = encoder().lower().unwrap();
    assert_eq!(mir.to_string(), want.trim_end());
    assert!(rlx_ir::verify_all(mir.graph()).is_empty());
}

#[test]
fn decoder_block_lowers_to_the_golden_mir() {
    let h = decoder("dec", Shape::new(&[1, 4, 8], DType::F32));
    let want = include_str!("golden/decoder_block.mir");
    assert_eq!(h.lower().unwrap().to_string(), want.trim_end());
}

#[test]
fn small_blocks_lower_and_chain() {
    let mut h = HirModule::new("chain");
    let x = h.input("x", Shape::new(&[3, 8], DType::F32)).unwrap();
    let n = h.push("n", HirOp::RmsNorm { x, eps: 1e-5 }).unwrap();
    let m = h
        .push(
            "m",
            HirOp::Mlp {
                x: n,
                hidden: 6,
                activation: MlpActivation::SwiGlu,
                bias: true,
            },
        )
        .unwrap();
    let r = h.push("r", HirOp::Add { a: x, b: m }).unwrap();
    let l = h
        .push(
            "head",
            HirOp::Linear {
                x: r,
                out_features: 5,
                bias: false,
            },
        )
        .unwrap();
    h.set_outputs(vec![l]);
    assert_eq!(h.shape(l), &Shape::new(&[3, 5], DType::F32));
    let mir = h.lower().unwrap();
    let names: Vec<&str> = mir.graph().params().iter().map(|p| p.1).collect();
    assert_eq!(
        names,
        ["n.g", "m.gate.w", "m.gate.b", "m.up.w", "m.up.b", "m.down.w", "m.down.b", "head.w"]
    );
    let stats = inspect_mir_stats(&mir);
    assert!(stats.starts_with("# 20 nodes, 8 params"), "{stats}");
}

#[test]
fn bad_blocks_are_typed_errors_naming_the_block() {
    let mut h = HirModule::new("bad");
    let x = h.input("x", Shape::new(&[4, 6], DType::F32)).unwrap();
    let e = h
        .push(
            "attn",
            HirOp::Attention {
                x,
                heads: 4,
                causal: false,
                mask: None,
                bias: true,
            },
        )
        .unwrap_err();
    assert!(
        matches!(&e, IrError::InvalidOp { op, reason } if op.contains("\"attn\"") && reason.contains("4 heads")),
        "{e}"
    );
    let i = h.input("ids", Shape::new(&[4, 6], DType::I64)).unwrap();
    let e = h
        .push("n", HirOp::LayerNorm { x: i, eps: 1e-5 })
        .unwrap_err();
    assert!(e.to_string().contains("not floating point"), "{e}");
    let e = h.input("x", Shape::new(&[1], DType::F32)).unwrap_err();
    assert!(
        e.to_string().contains("duplicate hir value name \"x\""),
        "{e}"
    );
    let mask = h.input("mask", Shape::new(&[4, 4], DType::F32)).unwrap();
    let e = h
        .push(
            "c",
            HirOp::Attention {
                x,
                heads: 2,
                causal: true,
                mask: Some(mask),
                bias: false,
            },
        )
        .unwrap_err();
    assert!(
        e.to_string().contains("causal attention takes no mask"),
        "{e}"
    );
    // A failed push changes nothing.
    assert_eq!(h.nodes().len(), 3);
}

#[test]
fn graph_module_holds_any_stage() {
    let hir = encoder();
    let mir = hir.lower().unwrap();
    let a = GraphModule::new(hir.clone());
    let b = GraphModule::new(mir.clone());
    assert_eq!(a.kind(), StageKind::Hir);
    assert_eq!(b.kind(), StageKind::Mir);
    assert!(a.stage().mir().is_none());
    assert_eq!(b.stage().mir(), Some(mir.graph()));
    assert_eq!(a.downcast::<HirModule>(), Some(&hir));
    assert!(a.downcast::<MirModule>().is_none());
    assert!(b.to_string().starts_with("# stage MIR\ngraph \"enc\""));
    let empty = MirModule::new(rlx_ir::Graph::new("enc"));
    let diff = inspect_mir_diff(&empty, &mir);
    assert!(diff.contains("+ attention{mask=None"), "{diff}");
}

#[test]
fn blocks_lower_with_a_symbolic_sequence_length() {
    use rlx_ir::Dim;
    let shape = Shape::from_dims(vec![Dim::sym("seq"), Dim::Static(8)], DType::F32);
    let h = decoder("dyn", shape.clone());
    let mir = h.lower().unwrap();
    assert!(rlx_ir::verify_all(mir.graph()).is_empty());
    assert_eq!(mir.graph().shape(mir.graph().outputs()[0]), &shape);
    let bound = mir
        .graph()
        .bind_dims(&[("seq".to_string(), 5)].into())
        .unwrap();
    assert_eq!(
        bound.shape(bound.outputs()[0]),
        &Shape::new(&[5, 8], DType::F32)
    );
}
