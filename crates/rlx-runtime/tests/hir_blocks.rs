//! HIR blocks lowered to MIR and run on the CPU backend equal a float64
//! numpy reference (`tools/gen_hir_block_fixtures.py`), and the lowered
//! encoder block computes bit for bit what the hand-built MIR BERT layer does.

use rlx_driver::Device;
use rlx_ir::op::MaskKind;
use rlx_ir::{DType, Graph, GraphExt, HirModule, HirOp, NodeId, Shape};
use rlx_runtime::{CompileOptions, CompiledGraph, Session};
use serde_json::Value;

struct Tensor {
    shape: Vec<usize>,
    data: Vec<f32>,
}

fn tensor(v: &Value) -> Tensor {
    Tensor {
        shape: v["shape"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d.as_u64().unwrap() as usize)
            .collect(),
        data: v["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d.as_f64().unwrap() as f32)
            .collect(),
    }
}

fn case(name: &str) -> Value {
    let text = include_str!("fixtures/hir_blocks.json");
    let root: Value = serde_json::from_str(text).unwrap();
    root["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no case {name}"))
        .clone()
}

fn shape(t: &Tensor) -> Shape {
    Shape::new(&t.shape, DType::F32)
}

fn compile_and_run(g: Graph, c: &Value, opts: &CompileOptions) -> (CompiledGraph, Vec<f32>) {
    let mut compiled = Session::new(Device::Cpu).compile_with(g, opts);
    for (name, t) in c["params"].as_object().unwrap() {
        compiled.set_param(name, &tensor(t).data);
    }
    let inputs: Vec<(String, Vec<f32>)> = c["inputs"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), tensor(v).data))
        .collect();
    let refs: Vec<(&str, &[f32])> = inputs
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_slice()))
        .collect();
    let out = compiled.run(&refs).remove(0);
    (compiled, out)
}

fn assert_close(got: &[f32], want: &Tensor, tol: f32, what: &str) {
    assert_eq!(got.len(), want.data.len(), "{what}: length");
    let worst = got
        .iter()
        .zip(&want.data)
        .map(|(a, b)| (a - b).abs() / (1.0 + b.abs()))
        .fold(0.0f32, f32::max);
    assert!(worst <= tol, "{what}: worst relative error {worst} > {tol}");
}

fn encoder_hir(c: &Value) -> HirModule {
    let x_t = tensor(&c["inputs"]["x"]);
    let m_t = tensor(&c["inputs"]["mask"]);
    let mut h = HirModule::new("bert_layer");
    let x = h.input("x", shape(&x_t)).unwrap();
    let mask = h.input("mask", shape(&m_t)).unwrap();
    let y = h
        .push(
            "layer0",
            HirOp::EncoderBlock {
                x,
                heads: c["heads"].as_u64().unwrap() as usize,
                ffn: c["ffn"].as_u64().unwrap() as usize,
                eps: c["eps"].as_f64().unwrap(),
                mask: Some(mask),
            },
        )
        .unwrap();
    h.set_outputs(vec![y]);
    h
}

/// The BERT layer as `tests/encoder_layer.rs` builds it by hand (with the
/// attention bias input), parameter names as the HIR lowering gives them.
fn hand_built_encoder(c: &Value) -> Graph {
    let x_t = tensor(&c["inputs"]["x"]);
    let (s, hd) = (x_t.shape[0], x_t.shape[1]);
    let heads = c["heads"].as_u64().unwrap() as usize;
    let ffn = c["ffn"].as_u64().unwrap() as usize;
    let eps = c["eps"].as_f64().unwrap();
    let mut g = Graph::new("bert_layer");
    let x = g.input("x", shape(&x_t));
    let mask = g.input("mask", shape(&tensor(&c["inputs"]["mask"])));
    let linear = |g: &mut Graph, x: NodeId, name: &str, din: usize, dout: usize| {
        let w = g.param(&format!("{name}.w"), Shape::new(&[din, dout], DType::F32));
        let b = g.param(&format!("{name}.b"), Shape::new(&[dout], DType::F32));
        let y = g.mm(x, w);
        g.add(y, b)
    };
    let split = |g: &mut Graph, x: NodeId| {
        let r = g.reshape_(x, &[s as i64, heads as i64, (hd / heads) as i64]);
        g.transpose_(r, &[1, 0, 2])
    };
    let norm = |g: &mut Graph, x: NodeId, name: &str| {
        let gamma = g.param(&format!("{name}.g"), Shape::new(&[hd], DType::F32));
        let beta = g.param(&format!("{name}.b"), Shape::new(&[hd], DType::F32));
        g.ln(x, gamma, beta, eps)
    };
    let q = linear(&mut g, x, "layer0.attn.q", hd, hd);
    let q = split(&mut g, q);
    let k = linear(&mut g, x, "layer0.attn.k", hd, hd);
    let k = split(&mut g, k);
    let v = linear(&mut g, x, "layer0.attn.v", hd, hd);
    let v = split(&mut g, v);
    let a = g.attention_(q, k, v, MaskKind::Bias, Some(mask));
    let a = g.transpose_(a, &[1, 0, 2]);
    let a = g.reshape_(a, &[s as i64, hd as i64]);
    let o = linear(&mut g, a, "layer0.attn.o", hd, hd);
    let r1 = g.add(o, x);
    let h1 = norm(&mut g, r1, "layer0.ln1");
    let f = linear(&mut g, h1, "layer0.mlp.up", hd, ffn);
    let f = g.gelu(f);
    let f = linear(&mut g, f, "layer0.mlp.down", ffn, hd);
    let r2 = g.add(f, h1);
    let y = norm(&mut g, r2, "layer0.ln2");
    g.set_outputs(vec![y]);
    g
}

#[test]
fn encoder_block_matches_numpy_and_the_hand_built_layer() {
    let c = case("encoder_block");
    let want = tensor(&c["output"]);
    let mir = encoder_hir(&c).lower().unwrap();
    for opts in [
        CompileOptions::default(),
        CompileOptions::default().optimize(false),
        CompileOptions::default().decompose_composites(true),
    ] {
        let (_, got) = compile_and_run(mir.graph().clone(), &c, &opts);
        assert_close(&got, &want, 2e-5, &format!("hir encoder {opts:?}"));
    }
    let (lowered, a) = compile_and_run(mir.into_graph(), &c, &CompileOptions::default());
    let (hand, b) = compile_and_run(hand_built_encoder(&c), &c, &CompileOptions::default());
    assert_eq!(a, b, "lowered HIR vs hand-built MIR");
    // Same graph, same plan: the LIR cache keys agree.
    assert_eq!(lowered.lir().fingerprint, hand.lir().fingerprint);
}

/// The fixture's decoder layer over an input of `shape`.
fn decoder_hir(c: &Value, shape: Shape) -> HirModule {
    let mut h = HirModule::new("llama_layer");
    let x = h.input("x", shape).unwrap();
    let y = h
        .push(
            "layer0",
            HirOp::DecoderBlock {
                x,
                heads: c["heads"].as_u64().unwrap() as usize,
                ffn: c["ffn"].as_u64().unwrap() as usize,
                eps: c["eps"].as_f64().unwrap(),
            },
        )
        .unwrap();
    h.set_outputs(vec![y]);
    h
}

#[test]
fn decoder_block_matches_numpy() {
    let c = case("decoder_block");
    let x_t = tensor(&c["inputs"]["x"]);
    let graph = decoder_hir(&c, shape(&x_t)).lower().unwrap().into_graph();
    let want = tensor(&c["output"]);
    for opts in [
        CompileOptions::default(),
        CompileOptions::default().decompose_composites(true),
    ] {
        let (_, got) = compile_and_run(graph.clone(), &c, &opts);
        assert_close(&got, &want, 2e-5, &format!("hir decoder {opts:?}"));
    }
}

#[test]
fn inspect_hir_pipeline_shows_every_stage_of_the_encoder_layer() {
    let c = case("encoder_block");
    let hir = encoder_hir(&c);
    let inspect = rlx_compile::inspect_hir_pipeline(
        &hir,
        &|_| true,
        &rlx_compile::LowerOptions::default(),
        None,
    )
    .unwrap();
    let text = inspect.to_string();
    let order = [
        "== hir ==",
        "encoder_block{heads=4, ffn=32, eps=1e-12} %x, %mask",
        "== input (",
        "== fuse_matmul_epilogue (",
        "== lir ==",
        "lir \"bert_layer\" (arena ",
    ];
    let mut at = 0;
    for needle in order {
        let found = text[at..]
            .find(needle)
            .unwrap_or_else(|| panic!("{needle:?} missing after byte {at}:\n{text}"));
        at += found + needle.len();
    }
    assert!(!inspect.fusion.regions.is_empty(), "{}", inspect.fusion);
    assert!(inspect.memory.arena_bytes > 0);
}

#[test]
fn dynamic_decoder_block_runs_at_several_sequence_lengths() {
    use rlx_ir::{Dim, HostTensor};
    let c = case("decoder_block");
    let x_t = tensor(&c["inputs"]["x"]);
    let (b, s, hd) = (x_t.shape[0], x_t.shape[1], x_t.shape[2]);
    let shape = Shape::from_dims(vec![b.into(), Dim::sym("seq"), hd.into()], DType::F32);
    let h = decoder_hir(&c, shape);
    let mut dynamic = Session::new(Device::Cpu)
        .compile_dynamic(h.lower().unwrap().into_graph(), &CompileOptions::default())
        .unwrap();
    for (name, t) in c["params"].as_object().unwrap() {
        let t = tensor(t);
        let value = HostTensor::from_slice(&t.data, &t.shape).unwrap();
        dynamic.set_param_typed(name, &value).unwrap();
    }
    let want = tensor(&c["output"]);
    // Causal attention: the first `len` positions see only themselves, so
    // a prefix of the input gives the same prefix of the numpy output.
    for len in [s, 2, 4, 1] {
        let prefix: Vec<f32> = (0..b)
            .flat_map(|i| x_t.data[i * s * hd..(i * s + len) * hd].to_vec())
            .collect();
        let input = HostTensor::from_slice(&prefix, &[b, len, hd]).unwrap();
        let got: Vec<f32> = dynamic.run_typed(&[("x", &input)]).unwrap()[0]
            .to_vec()
            .unwrap();
        let want_prefix = Tensor {
            shape: vec![b, len, hd],
            data: (0..b)
                .flat_map(|i| want.data[i * s * hd..(i * s + len) * hd].to_vec())
                .collect(),
        };
        assert_close(&got, &want_prefix, 2e-5, &format!("seq {len}"));
    }
    assert_eq!(dynamic.compile_count(), 4);
}
