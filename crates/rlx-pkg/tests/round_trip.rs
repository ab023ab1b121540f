//! Graph + weights (and safetensors / GGUF files) -> `.rlxp` -> back:
//! compiled outputs bit-identical to compiling the source directly, tensor
//! bytes identical to the source file's, the three tiers and every
//! materialize mode giving the same values, rank subsets exact.

use rlx_gguf::GgufReader;
use rlx_ir::quant::QuantScheme;
use rlx_ir::{DType, Graph, GraphExt, HostTensor, Shape};
use rlx_pkg::{
    compile_rlxp, compile_rlxp_bind_params, compile_rlxp_with, open_rlxp, tensors_for_rank,
    weight_names_for_rank, MaterializeMode, Package, Placement, Tier,
};
use rlx_runtime::{BytesWeightLoader, CompileOptions, Device, Session, WeightLoader};
use std::path::PathBuf;

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("rlx-pkg-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// Deterministic values in [-1, 1).
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

/// A small block: layer norm, matmul + bias, GELU, a Q8_0 dequant matmul,
/// softmax.
fn model() -> (Graph, Vec<(&'static str, HostTensor)>) {
    let (d, h) = (32, 64);
    let mut g = Graph::new("block");
    let x = g.input("x", Shape::new(&[4, d], DType::F32));
    let gamma = g.param("gamma", Shape::new(&[d], DType::F32));
    let w1 = g.param("w1", Shape::new(&[d, h], DType::F32));
    let b1 = g.param("b1", Shape::new(&[h], DType::F32));
    let q_bytes = h / 32 * 34 * 16;
    let wq = g.param("wq", Shape::new(&[q_bytes], DType::U8));
    let n = g.ln(x, gamma, None, 1e-5);
    let y = g.mm(n, w1);
    let y = g.add(y, b1);
    let y = g.unary(rlx_ir::op::UnaryOp::Gelu, y);
    let y = g.dequant_matmul(y, wq, Some(QuantScheme::GgufQ8_0), 16, h);
    let y = g.sm(y, -1);
    g.set_outputs(vec![y]);
    let q = rlx_gguf::codecs::quantize(rlx_gguf::GgmlType::Q8_0, &values(16 * h, 5)).unwrap();
    assert_eq!(q.len(), q_bytes);
    let t = |v: Vec<f32>, dims: &[usize]| HostTensor::from_vec(v, dims).unwrap();
    let weights = vec![
        (
            "gamma",
            t(values(d, 1).iter().map(|v| 1.0 + v / 4.0).collect(), &[d]),
        ),
        ("w1", t(values(d * h, 2), &[d, h])),
        ("b1", t(values(h, 3), &[h])),
        (
            "wq",
            HostTensor::from_bytes(DType::U8, &[q_bytes], q).unwrap(),
        ),
    ];
    (g, weights)
}

fn direct(
    g: &Graph,
    weights: &[(&str, HostTensor)],
    opts: &CompileOptions,
    x: &HostTensor,
) -> Vec<u8> {
    let mut c = Session::new(Device::Cpu)
        .try_compile_with(g.clone(), opts)
        .unwrap();
    for (n, t) in weights {
        c.set_param_typed(n, t).unwrap();
    }
    c.try_run_typed(&[("x", x)]).unwrap()[0].bytes().to_vec()
}

fn package(
    g: &Graph,
    weights: &[(&str, HostTensor)],
    opts: &CompileOptions,
) -> rlx_pkg::PackageBuilder {
    let mut b = Package::builder().graph(g.clone()).options(opts.clone());
    let tiers = [Tier::Hot, Tier::Warm, Tier::Cold, Tier::Hot];
    for ((n, t), tier) in weights.iter().zip(tiers) {
        b = if *n == "wq" {
            b.quantized(n, QuantScheme::GgufQ8_0, &[16, 64], t.bytes().to_vec())
        } else {
            b.tensor_in(n, t, tier)
        };
    }
    b
}

#[test]
fn compiled_outputs_are_bit_identical_to_compiling_the_source() {
    let (g, weights) = model();
    let x = HostTensor::from_vec(values(4 * 32, 9), &[4, 32]).unwrap();
    // Non-default stored options: they must travel with the package.
    let stored = CompileOptions::default()
        .fusion(false)
        .cse(false)
        .alignment(128);
    let path = tmp("block.rlxp");
    package(&g, &weights, &stored).write(&path).unwrap();
    let want = direct(&g, &weights, &stored, &x);
    assert!(want
        .chunks(4)
        .any(|c| f32::from_le_bytes(c.try_into().unwrap()) != 0.0));

    let pkg = open_rlxp(&path).unwrap();
    assert_eq!(pkg.options(), &stored);
    assert_eq!(pkg.graph().unwrap().to_text(), g.to_text());
    let session = Session::new(Device::Cpu);
    let mut c = compile_rlxp(&session, &path).unwrap();
    assert_eq!(c.try_run_typed(&[("x", &x)]).unwrap()[0].bytes(), &want[..]);
    for mode in [
        MaterializeMode::Mmap,
        MaterializeMode::Copy,
        MaterializeMode::Lazy,
    ] {
        let p = Package::open_with(&path, mode).unwrap();
        let mut c = compile_rlxp_bind_params(&session, &p, p.options()).unwrap();
        let got = c.try_run_typed(&[("x", &x)]).unwrap();
        assert_eq!(got[0].bytes(), &want[..], "{mode:?}");
    }
    // Other options: the same as compiling the source with them.
    let other = CompileOptions::default();
    let mut c = compile_rlxp_with(&session, &path, &other).unwrap();
    assert_eq!(
        c.try_run_typed(&[("x", &x)]).unwrap()[0].bytes(),
        &direct(&g, &weights, &other, &x)[..]
    );
    let _ = std::fs::remove_file(path);
}

#[test]
fn a_safetensors_file_round_trips_byte_for_byte_in_every_tier() {
    let dir =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../rlx-runtime/tests/fixtures/safetensors");
    // Every dtype safetensors defines that RLX loads (the storage dtypes
    // U16 / U64 / float8 included) packs and reads back byte for byte.
    for file in [
        "mlp.safetensors",
        "dtypes.safetensors",
        "u16.safetensors",
        "u64.safetensors",
        "f8_e4m3.safetensors",
        "f8_e5m2.safetensors",
        "f8_e8m0.safetensors",
        "f8_e4m3fnuz.safetensors",
        "f8_e5m2fnuz.safetensors",
    ] {
        let src = dir.join(file);
        let st = BytesWeightLoader::open(&src).unwrap();
        let names: Vec<String> = st
            .names()
            .into_iter()
            .filter(|n| st.get(n).is_ok())
            .collect();
        assert!(!names.is_empty(), "{file}: {names:?}");
        for tier in [Tier::Hot, Tier::Warm, Tier::Cold] {
            let b = if names.len() == st.names().len() {
                Package::builder().default_tier(tier).safetensors(&src)
            } else {
                names
                    .iter()
                    .fold(Package::builder().default_tier(tier), |b, n| {
                        b.tensor(n, &st.get(n).unwrap())
                    })
            };
            let p = Package::from_bytes(b.to_bytes().unwrap()).unwrap();
            assert_eq!(WeightLoader::names(&p), names);
            for name in &names {
                let (meta, want) = st.view(name).unwrap();
                let got = p.tensor(name).unwrap();
                assert_eq!(
                    (got.dtype(), got.dims()),
                    (meta.dtype, &meta.dims[..]),
                    "{name}"
                );
                assert_eq!(got.bytes(), want, "{file} {name} {tier:?}");
                assert_eq!(p.entry(name).unwrap().tier, tier);
            }
        }
    }
    let p = Package::from_bytes(
        Package::builder()
            .safetensors(dir.join("mlp.safetensors"))
            .to_bytes()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(p.metadata()["source_format"], "safetensors");
}

#[test]
fn a_gguf_file_keeps_its_quantized_blocks_as_they_are() {
    let src =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../rlx-gguf/tests/fixtures/codecs.gguf");
    let gguf = GgufReader::open(&src).unwrap();
    let p = Package::from_bytes(Package::builder().gguf(&src).to_bytes().unwrap()).unwrap();
    assert_eq!(p.tensor_names().len(), gguf.tensors().len());
    let mut quantized = 0;
    for info in gguf.tensors() {
        let e = p.entry(info.name()).unwrap();
        assert_eq!(
            p.tensor(info.name()).unwrap().bytes(),
            gguf.tensor_data(info.name()).unwrap()
        );
        match info.ggml_type().quant_scheme() {
            Some(s) => {
                quantized += 1;
                let q = e.quant.as_ref().unwrap();
                assert_eq!((q.scheme, &q.dims[..]), (s, &info.shape()[..]));
            }
            None => assert_eq!(e.dims, info.shape()),
        }
    }
    assert!(quantized > 3, "{quantized} quantized tensors");
}

#[test]
fn tiers_and_modes_give_identical_values_and_warm_memory_is_bounded() {
    // 2.5 MiB: three zstd blocks.
    let n = 5 * (1 << 17);
    let v: Vec<f32> = values(n, 11)
        .iter()
        .map(|x| (x * 64.0).round() / 64.0)
        .collect();
    let t = HostTensor::from_vec(v, &[n]).unwrap();
    let path = tmp("tiers.rlxp");
    Package::builder()
        .tensor_in("hot", &t, Tier::Hot)
        .tensor_in("warm", &t, Tier::Warm)
        .tensor_in("cold", &t, Tier::Cold)
        .placement(
            Placement::new()
                .rank(0, "cpu", ["hot", "warm"])
                .rank(1, "cpu:1", ["cold"]),
        )
        .write(&path)
        .unwrap();
    let size = std::fs::metadata(&path).unwrap().len();
    assert!(
        size < 3 * t.bytes().len() as u64,
        "the warm copy is compressed ({size} bytes)"
    );
    for mode in [
        MaterializeMode::Mmap,
        MaterializeMode::Copy,
        MaterializeMode::Lazy,
    ] {
        let p = Package::open_with(&path, mode).unwrap();
        let warm = p.entry("warm").unwrap();
        assert_eq!(warm.blocks.len(), 3);
        assert!(warm.len < warm.nbytes);
        for name in ["hot", "warm", "cold"] {
            assert_eq!(p.tensor(name).unwrap(), t, "{name} {mode:?}");
            // Pieces (what set_param_from reads) concatenate to the same bytes.
            let mut got = Vec::new();
            p.read_pieces(name, &mut |off, b| {
                assert_eq!(off, got.len());
                got.extend_from_slice(b);
                Ok(())
            })
            .unwrap();
            assert_eq!(got, t.bytes(), "{name} {mode:?}");
        }
        // The warm cache holds the decoded tensor, within its budget.
        assert_eq!(p.warm_cached_bytes(), t.bytes().len());
        p.set_warm_budget(1 << 20);
        assert_eq!(p.warm_cached_bytes(), 0);
        assert_eq!(p.tensor("warm").unwrap(), t);
        assert_eq!(
            p.warm_cached_bytes(),
            0,
            "a tensor above the budget is not kept"
        );
        assert_eq!(weight_names_for_rank(&p, 1).unwrap(), ["cold"]);
        let r0 = tensors_for_rank(&p, 0).unwrap();
        assert_eq!(
            r0.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(),
            ["hot", "warm"]
        );
        assert!(r0.iter().all(|(_, x)| x == &t));
        assert_eq!(p.placement().device(1).unwrap(), "cpu:1");
    }
    let _ = std::fs::remove_file(path);
}

#[test]
fn a_package_can_be_shared_across_threads() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<Package>();
    let t = HostTensor::from_vec(values(1 << 18, 3), &[1 << 18]).unwrap();
    let p = Package::from_bytes(
        Package::builder()
            .tensor_in("w", &t, Tier::Warm)
            .to_bytes()
            .unwrap(),
    )
    .unwrap();
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| assert_eq!(p.tensor("w").unwrap(), t));
        }
    });
}

#[test]
fn the_writer_refuses_what_the_reader_would() {
    let (g, weights) = model();
    let t = &weights[1].1;
    // A graph param without its tensor.
    let e = Package::builder()
        .graph(g.clone())
        .tensor("w1", t)
        .to_bytes()
        .unwrap_err();
    assert_eq!(e.kind(), "GraphMismatch", "{e}");
    assert!(e.to_string().contains("\"gamma\""), "{e}");
    // Two tensors of one name.
    let e = Package::builder()
        .tensor("a", t)
        .tensor("a", t)
        .to_bytes()
        .unwrap_err();
    assert_eq!(e.kind(), "DuplicateName", "{e}");
    // Quantized blocks that do not fit the scheme and dims.
    let e = Package::builder()
        .quantized("q", QuantScheme::GgufQ8_0, &[2, 32], vec![0; 35])
        .to_bytes()
        .unwrap_err();
    assert_eq!(e.kind(), "SizeMismatch", "{e}");
    // A placement naming a tensor that is not stored; nothing is written.
    let path = tmp("refused.rlxp");
    let e = Package::builder()
        .tensor("a", t)
        .placement(Placement::single("cpu", ["b".to_string()]))
        .write(&path)
        .unwrap_err();
    assert_eq!(e.kind(), "BadPlacement", "{e}");
    assert!(!path.exists());
    // A tokenizer and metadata travel; a missing blob is named.
    let p = Package::from_bytes(
        Package::builder()
            .tokenizer_json("{\"v\": 1}")
            .metadata("k", "v")
            .to_bytes()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(p.tokenizer_json().unwrap().as_deref(), Some("{\"v\": 1}"));
    assert_eq!(p.blob("nope").unwrap_err().kind(), "NotFound");
    assert_eq!(p.tensor("nope").unwrap_err().kind(), "NotFound");
    assert!(!p.has_graph());
    assert_eq!(p.graph().unwrap_err().kind(), "NoGraph");
}

#[test]
#[ignore = "needs model files: tools/fetch_models.sh"]
fn smollm2_gguf_keeps_every_block_as_it_is() {
    let dir =
        std::env::var("RLX_MODELS").expect("RLX_MODELS is not set: run tools/fetch_models.sh");
    let src = PathBuf::from(dir).join("gguf/SmolLM2-135M-Instruct.Q4_1.gguf");
    let gguf = GgufReader::open(&src).unwrap();
    let path = tmp("smollm2.rlxp");
    Package::builder().gguf(&src).write(&path).unwrap();
    for mode in [MaterializeMode::Mmap, MaterializeMode::Lazy] {
        let p = Package::open_with(&path, mode).unwrap();
        p.verify().unwrap();
        assert_eq!(p.entries().len(), gguf.tensors().len());
        let mut quantized = 0;
        for info in gguf.tensors() {
            let got = p.tensor_bytes(info.name()).unwrap();
            assert_eq!(
                &got[..],
                gguf.tensor_data(info.name()).unwrap(),
                "{}",
                info.name()
            );
            quantized += usize::from(p.entry(info.name()).unwrap().quant.is_some());
        }
        assert!(quantized >= 100, "{quantized} quantized tensors");
    }
    let _ = std::fs::remove_file(path);
}
