//! Graphs whose weights are constants (imported ONNX models): the constants
//! lifted into package tensors compile to the same bits as the source, and
//! (with model files) all-MiniLM-L6-v2 from ONNX round-trips through a
//! package bit for bit and matches ONNX Runtime.

use rlx_ir::{DType, Dim, Graph, GraphExt, HostTensor, Shape};
use rlx_onnx::OnnxModel;
use rlx_pkg::{compile_rlxp, compile_rlxp_bind_params, lift_constants, Package, Tier};
use rlx_runtime::{CompileOptions, Device, Session};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

fn values(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 40) as f32 / (1u64 << 23) as f32 - 1.0
        })
        .collect()
}

#[test]
fn lifted_constants_compile_to_the_same_bits_as_the_source() {
    let (d, h) = (16, 48);
    let mut g = Graph::new("consts");
    let x = g.input("x", Shape::new(&[3, d], DType::F32));
    let w = g.constant_tensor(&HostTensor::from_vec(values(d * h, 1), &[d, h]).unwrap());
    g.set_name(w, "dense.weight");
    let b = g.constant_tensor(&HostTensor::from_vec(values(h, 2), &[h]).unwrap());
    let gamma = g.constant_tensor(&HostTensor::from_vec(values(d, 3), &[d]).unwrap());
    let n = g.ln(x, gamma, None, 1e-5);
    let y = g.mm(n, w);
    let y = g.add(y, b);
    let y = g.mul(y, g.constant(0.25, DType::F32));
    g.set_outputs(vec![y]);
    let xv = HostTensor::from_vec(values(3 * d, 4), &[3, d]).unwrap();

    let (lifted, consts) = lift_constants(&g, 64);
    // The three weight constants, not the scalar; a named node keeps its name.
    let names: Vec<&str> = consts.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["dense.weight", "const.2", "const.3"]);
    assert_eq!(lifted.params().len(), 3);

    let session = Session::new(Device::Cpu);
    let mut direct = session.try_compile(g.clone()).unwrap();
    let want = direct.try_run_typed(&[("x", &xv)]).unwrap();
    for tier in [Tier::Hot, Tier::Warm, Tier::Cold] {
        let bytes = Package::builder()
            .default_tier(tier)
            .graph_lifting_constants(&g, 64)
            .to_bytes()
            .unwrap();
        let p = Package::from_bytes(bytes).unwrap();
        let mut c = compile_rlxp_bind_params(&session, &p, p.options()).unwrap();
        let got = c.try_run_typed(&[("x", &xv)]).unwrap();
        assert_eq!(got[0].bytes(), want[0].bytes(), "{tier:?}");
    }
}

fn models() -> Option<PathBuf> {
    std::env::var("RLX_MODELS").ok().map(PathBuf::from)
}

fn fixture_tensor(dir: &Path, v: &serde_json::Value) -> HostTensor {
    let dims: Vec<usize> = v["dims"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d.as_u64().unwrap() as usize)
        .collect();
    let dtype = match v["dtype"].as_str().unwrap() {
        "float32" => DType::F32,
        _ => DType::I64,
    };
    let bytes = std::fs::read(dir.join(v["file"].as_str().unwrap())).unwrap();
    HostTensor::from_bytes(dtype, &dims, bytes).unwrap()
}

#[test]
#[ignore = "needs model files: tools/fetch_models.sh"]
fn minilm_onnx_through_a_package_is_bit_identical_and_matches_onnxruntime() {
    let dir = models().expect("RLX_MODELS is not set: run tools/fetch_models.sh");
    let onnx = OnnxModel::load(dir.join("onnx/all-MiniLM-L6-v2-fp32.onnx"), Device::Cpu).unwrap();
    let graph = onnx.import().unwrap().graph;
    let fixtures =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../rlx-onnx/tests/fixtures/models");
    let man: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(fixtures.join("all-MiniLM-L6-v2-fp32.seq_b1_s16.json")).unwrap(),
    )
    .unwrap();
    let inputs: Vec<(String, HostTensor)> = man["inputs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| {
            (
                v["name"].as_str().unwrap().to_string(),
                fixture_tensor(&fixtures, v),
            )
        })
        .collect();
    // Bind the symbolic dims from the inputs' dims; the package stores them.
    let mut bindings = HashMap::new();
    for (name, t) in &inputs {
        let id = graph.find_input(name).unwrap();
        for (dim, &size) in graph.shape(id).dims().iter().zip(t.dims()) {
            if let Dim::Sym(s) = dim {
                bindings.insert(s.clone(), size);
            }
        }
    }
    let opts = bindings
        .iter()
        .fold(CompileOptions::default(), |o, (s, &n)| o.bind_dim(s, n));
    let feed: Vec<(&str, &HostTensor)> = inputs.iter().map(|(n, t)| (n.as_str(), t)).collect();
    let session = Session::new(Device::Cpu);
    let mut direct = session.try_compile_with(graph.clone(), &opts).unwrap();
    let want = direct.try_run_typed(&feed).unwrap();

    // The importer's constants are unnamed: the largest (the word
    // embeddings, 30522 x 384) goes to the warm tier.
    let (_, consts) = lift_constants(&graph, 1024);
    let largest = consts
        .iter()
        .max_by_key(|(_, t)| t.bytes().len())
        .unwrap()
        .0
        .clone();
    assert_eq!(
        consts.iter().find(|(n, _)| *n == largest).unwrap().1.dims(),
        [30522, 384]
    );
    let path = std::env::temp_dir().join(format!("minilm-{}.rlxp", std::process::id()));
    Package::builder()
        .graph_lifting_constants(&graph, 1024)
        .options(opts)
        .tier(&largest, Tier::Warm)
        .metadata("source", "all-MiniLM-L6-v2-fp32.onnx")
        .write(&path)
        .unwrap();
    let p = Package::open(&path).unwrap();
    assert!(p.entries().len() > 50, "{} tensors", p.entries().len());
    let emb = p.entry(&largest).unwrap();
    assert_eq!(emb.tier, Tier::Warm);
    assert!(
        emb.len < emb.nbytes,
        "compressed: {} of {}",
        emb.len,
        emb.nbytes
    );
    let mut c = compile_rlxp(&session, &path).unwrap();
    let got = c.try_run_typed(&feed).unwrap();
    let _ = std::fs::remove_file(&path);
    assert_eq!(got.len(), want.len());
    for (g, w) in got.iter().zip(&want) {
        assert_eq!(g.bytes(), w.bytes(), "package vs direct compile");
    }
    // And against ONNX Runtime's outputs (cosine per row, as rlx-onnx checks).
    for (g, v) in got.iter().zip(man["outputs"].as_array().unwrap()) {
        let ort = fixture_tensor(&fixtures, v).to_f64_lossy();
        let g = g.to_f64_lossy();
        let row = *v["dims"]
            .as_array()
            .unwrap()
            .last()
            .unwrap()
            .as_u64()
            .as_ref()
            .unwrap() as usize;
        for (a, b) in g.chunks(row).zip(ort.chunks(row)) {
            let dot: f64 = a.iter().zip(b).map(|(x, y)| x * y).sum();
            let na = a.iter().map(|x| x * x).sum::<f64>().sqrt();
            let nb = b.iter().map(|x| x * x).sum::<f64>().sqrt();
            assert!(dot / (na * nb) >= 0.99999, "cosine {}", dot / (na * nb));
        }
    }
}

/// `[r, c]` -> `[c, r]` (f32).
fn transpose(t: &HostTensor) -> HostTensor {
    let (r, c) = (t.dims()[0], t.dims()[1]);
    let v = t.to_vec::<f32>().unwrap();
    let mut out = vec![0f32; r * c];
    for i in 0..r {
        for j in 0..c {
            out[j * r + i] = v[i * c + j];
        }
    }
    HostTensor::from_vec(out, &[c, r]).unwrap()
}

#[test]
#[ignore = "needs model files: tools/fetch_models.sh"]
fn minilm_safetensors_directory_through_a_package_is_bit_identical() {
    use rlx_models::bert::{encoder_graph, load_params, BertConfig};
    use rlx_runtime::{BytesWeightLoader, WeightLoader};
    let dir = models()
        .expect("RLX_MODELS is not set: run tools/fetch_models.sh")
        .join("all-MiniLM-L6-v2");
    let cfg =
        BertConfig::from_json(&std::fs::read_to_string(dir.join("config.json")).unwrap()).unwrap();
    let eg = encoder_graph(&cfg, 1, 16).unwrap();
    let st = BytesWeightLoader::open(dir.join("model.safetensors")).unwrap();
    let session = Session::new(Device::Cpu);
    let mut direct = session.try_compile(eg.graph.clone()).unwrap();
    load_params(&mut direct, &st, &eg.transposed).unwrap();

    // The package holds the weights as the graph wants them (torch Linear
    // weights pre-transposed), the word embeddings warm, and the tokenizer.
    let tokenizer = std::fs::read_to_string(dir.join("tokenizer.json")).unwrap();
    let mut b = Package::builder()
        .graph(eg.graph.clone())
        .tokenizer_json(&tokenizer)
        .tier("embeddings.word_embeddings.weight", Tier::Warm)
        .metadata("source", "all-MiniLM-L6-v2/model.safetensors");
    for (_, name, _) in eg.graph.params() {
        let t = st.get_as(name, DType::F32).unwrap();
        let t = if eg.transposed.iter().any(|n| n == name) {
            transpose(&t)
        } else {
            t
        };
        b = b.tensor(name, &t);
    }
    let path = std::env::temp_dir().join(format!("minilm-st-{}.rlxp", std::process::id()));
    b.write(&path).unwrap();
    let pkg = Package::open(&path).unwrap();
    assert_eq!(pkg.tokenizer_json().unwrap().unwrap(), tokenizer);
    let mut c = compile_rlxp(&session, &path).unwrap();
    let _ = std::fs::remove_file(&path);

    let ids: Vec<i64> = (0..16)
        .map(|i| [101, 7592, 2088, 999, 102, 0][i % 6])
        .collect();
    let mask: Vec<i64> = (0..16).map(|i| i64::from(i < 12)).collect();
    let types = vec![0i64; 16];
    let t = |v: &[i64]| HostTensor::from_vec(v.to_vec(), &[1, 16]).unwrap();
    let (ids, mask, types) = (t(&ids), t(&mask), t(&types));
    let feed = [
        ("input_ids", &ids),
        ("attention_mask", &mask),
        ("token_type_ids", &types),
    ];
    let want = direct.try_run_typed(&feed).unwrap();
    let got = c.try_run_typed(&feed).unwrap();
    assert_eq!(got.len(), 2);
    for (g, w) in got.iter().zip(&want) {
        assert_eq!(g.bytes(), w.bytes());
    }
}
