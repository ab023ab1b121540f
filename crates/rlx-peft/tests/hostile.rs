//! Hostile and malformed adapters: every error is typed and names the
//! culprit (key, expected and given shape, config field); nothing panics;
//! a failed merge leaves the base layer unchanged. Ends with a bounded,
//! seeded mutation run (the cargo-fuzz target in fuzz/ explores further).

mod common;
use common::fixtures;
use rlx_ir::HostTensor;
use rlx_peft::{Adapter, AdapterSet, Linear, LoraAdapter, LoraConfig, PeftError};
use safetensors::tensor::TensorView;
use safetensors::Dtype;

fn lora_config() -> String {
    std::fs::read_to_string(fixtures().join("lora/adapter_config.json")).unwrap()
}

fn lora_file() -> Vec<u8> {
    std::fs::read(fixtures().join("lora/adapter_model.safetensors")).unwrap()
}

/// A safetensors file of f32 zeros with the given (key, shape)s.
fn file(tensors: &[(&str, &[usize])]) -> Vec<u8> {
    let data: Vec<Vec<u8>> = tensors
        .iter()
        .map(|(_, s)| vec![0u8; 4 * s.iter().product::<usize>()])
        .collect();
    let views: Vec<(String, TensorView)> = tensors
        .iter()
        .zip(&data)
        .map(|((k, s), d)| {
            (
                k.to_string(),
                TensorView::new(Dtype::F32, s.to_vec(), d).unwrap(),
            )
        })
        .collect();
    safetensors::serialize(views, None).unwrap()
}

/// The fixture LoRA's tensors: r = 3 on module 0 (8 -> 6), r = 2 on module 2 (6 -> 4).
fn lora_tensors() -> Vec<(&'static str, &'static [usize])> {
    vec![
        ("base_model.model.0.lora_A.weight", &[3, 8]),
        ("base_model.model.0.lora_B.weight", &[6, 3]),
        ("base_model.model.2.lora_A.weight", &[2, 6]),
        ("base_model.model.2.lora_B.weight", &[4, 2]),
    ]
}

fn load(config: &str, bytes: &[u8]) -> PeftError {
    AdapterSet::from_bytes(config, bytes).unwrap_err()
}

#[test]
fn the_reference_file_built_here_loads() {
    // guards the helpers below: only the one change of each test breaks it
    assert!(AdapterSet::from_bytes(&lora_config(), &file(&lora_tensors())).is_ok());
}

#[test]
fn wrong_rank_names_the_key_and_both_shapes() {
    let mut t = lora_tensors();
    t[0] = ("base_model.model.0.lora_A.weight", &[2, 8]);
    match load(&lora_config(), &file(&t)) {
        PeftError::Shape {
            what,
            expected,
            given,
        } => {
            assert_eq!(what, "base_model.model.0.lora_A.weight");
            assert_eq!((expected, given), (vec![3, 8], vec![2, 8]));
        }
        e => panic!("{e}"),
    }
    // rank_pattern gives module 2 rank 2: a rank-3 B there is wrong
    let mut t = lora_tensors();
    t[3] = ("base_model.model.2.lora_B.weight", &[4, 3]);
    let e = load(&lora_config(), &file(&t)).to_string();
    assert!(
        e.contains("base_model.model.2.lora_B.weight")
            && e.contains("[4, 2]")
            && e.contains("[4, 3]"),
        "{e}"
    );
    // a rank-3 tensor
    let mut t = lora_tensors();
    t[0] = ("base_model.model.0.lora_A.weight", &[3, 8, 1]);
    let e = load(&lora_config(), &file(&t)).to_string();
    assert!(e.contains("lora_A") && e.contains("[3, 8, 1]"), "{e}");
}

#[test]
fn missing_and_unexpected_tensors_are_named() {
    let mut t = lora_tensors();
    t.remove(1);
    match load(&lora_config(), &file(&t)) {
        PeftError::MissingTensor { key } => assert_eq!(key, "base_model.model.0.lora_B.weight"),
        e => panic!("{e}"),
    }
    for bad in [
        "base_model.model.0.lora_C.weight",
        "model.0.lora_A.weight",
        "base_model.model..lora_A.weight",
    ] {
        let mut t = lora_tensors();
        t.push((bad, &[1, 1]));
        match load(&lora_config(), &file(&t)) {
            PeftError::UnexpectedTensor { key, .. } => assert_eq!(key, bad),
            e => panic!("{bad}: {e}"),
        }
    }
    // DoRA without its magnitude vector
    let dora = std::fs::read_to_string(fixtures().join("dora/adapter_config.json")).unwrap();
    let t = [
        ("base_model.model.0.lora_A.weight", &[2usize, 8][..]),
        ("base_model.model.0.lora_B.weight", &[6, 2]),
    ];
    match load(&dora, &file(&t)) {
        PeftError::MissingTensor { key } => {
            assert_eq!(key, "base_model.model.0.lora_magnitude_vector")
        }
        e => panic!("{e}"),
    }
}

#[test]
fn integer_tensors_are_a_dtype_error() {
    let d = vec![0u8; 3 * 8 * 4];
    let v = TensorView::new(Dtype::I32, vec![3, 8], &d).unwrap();
    let bytes = safetensors::serialize([("base_model.model.0.lora_A.weight", v)], None).unwrap();
    let e = load(&lora_config(), &bytes);
    assert!(
        matches!(e, PeftError::DType { ref what, .. } if what == "base_model.model.0.lora_A.weight"),
        "{e}"
    );
}

#[test]
fn truncated_and_corrupt_files_are_errors() {
    let good = lora_file();
    assert!(AdapterSet::from_bytes(&lora_config(), &good).is_ok());
    for n in 0..good.len() {
        let e = load(&lora_config(), &good[..n]);
        assert!(
            matches!(
                e,
                PeftError::Safetensors(_) | PeftError::SafetensorsCrate { .. }
            ),
            "prefix {n}: {e}"
        );
        assert!(
            e.to_string().starts_with("adapter_model.safetensors: "),
            "{e}"
        );
        if let PeftError::SafetensorsCrate { .. } = e {
            // The crate's own error is kept as the source.
            let source = std::error::Error::source(&e).expect("a source");
            assert!(source.is::<safetensors::SafeTensorError>(), "{e}");
        }
    }
    // a header length far beyond the file
    let mut huge = good.clone();
    huge[..8].copy_from_slice(&u64::MAX.to_le_bytes());
    assert!(matches!(
        load(&lora_config(), &huge),
        PeftError::SafetensorsCrate { .. }
    ));
}

#[test]
fn config_errors_name_the_field() {
    let cfg: serde_json::Value = serde_json::from_str(&lora_config()).unwrap();
    let with = |k: &str, v: Option<serde_json::Value>| {
        let mut c = cfg.clone();
        match v {
            Some(v) => c[k] = v,
            None => {
                c.as_object_mut().unwrap().remove(k);
            }
        }
        c.to_string()
    };
    let bytes = lora_file();
    let cases = [
        (with("r", None), "missing field \"r\""),
        (with("lora_alpha", None), "missing field \"lora_alpha\""),
        (with("peft_type", None), "missing field \"peft_type\""),
        (
            with("r", Some("three".into())),
            "field \"r\": expected a non-negative integer",
        ),
        (with("r", Some((-1).into())), "field \"r\""),
        (
            with("lora_alpha", Some(serde_json::json!([1]))),
            "field \"lora_alpha\"",
        ),
        (
            with("rank_pattern", Some(serde_json::json!({"2": "x"}))),
            "rank_pattern.2",
        ),
        (
            with("peft_type", Some("LOHA".into())),
            "unsupported: peft_type \"LOHA\"",
        ),
        (
            with("fan_in_fan_out", Some(true.into())),
            "unsupported: fan_in_fan_out",
        ),
        (with("bias", Some("all".into())), "unsupported: bias"),
        ("[1, 2]".to_string(), "top level is not an object"),
        ("{\"r\": ".to_string(), "not valid JSON"),
    ];
    for (text, want) in cases {
        let e = load(&text, &bytes).to_string();
        assert!(e.contains(want), "expected {want:?} in {e:?}");
    }
    // r = 0 from the config reaches LoraConfig's check
    let e = load(
        &with("r", Some(0.into())),
        &file(&[
            ("base_model.model.0.lora_A.weight", &[0, 8]),
            ("base_model.model.0.lora_B.weight", &[6, 0]),
        ]),
    )
    .to_string();
    assert!(e.contains("LoRA r"), "{e}");
}

#[test]
fn oft_weights_that_are_no_triangle_are_shape_errors() {
    let cfg = std::fs::read_to_string(fixtures().join("oft/adapter_config.json")).unwrap();
    let e = load(&cfg, &file(&[("base_model.model.0.oft_R.weight", &[2, 5])]));
    assert!(
        matches!(e, PeftError::Shape { ref what, .. } if what.contains("oft_R")),
        "{e}"
    );
}

#[test]
fn host_api_checks_shapes_and_leaves_the_base_unchanged() {
    let t = |v: Vec<f32>, d: &[usize]| HostTensor::from_vec(v, d).unwrap();
    let cfg = LoraConfig {
        r: 1,
        lora_alpha: 1.0,
        use_rslora: false,
    };
    let lora = LoraAdapter::new(cfg, &t(vec![1.0; 3], &[1, 3]), &t(vec![1.0; 2], &[2, 1])).unwrap();
    let e =
        LoraAdapter::new(cfg, &t(vec![1.0; 6], &[2, 3]), &t(vec![1.0; 2], &[2, 1])).unwrap_err();
    assert_eq!(e.to_string(), "lora_A: expected shape [1, 3], given [2, 3]");
    let e = Linear::new(t(vec![0.0; 6], &[2, 3]), Some(t(vec![0.0; 3], &[3]))).unwrap_err();
    assert_eq!(e.to_string(), "base bias: expected shape [2], given [3]");

    let mut wrong = Linear::new(t(vec![0.5; 8], &[2, 4]), None).unwrap();
    let before = wrong.clone();
    let e = lora.merge(&mut wrong).unwrap_err();
    assert_eq!(
        e.to_string(),
        "base weight: expected shape [2, 3], given [2, 4]"
    );
    assert_eq!(wrong, before, "a failed merge changes nothing");

    let base = Linear::new(t(vec![0.5; 6], &[2, 3]), None).unwrap();
    let e = lora.forward(&t(vec![1.0; 8], &[2, 4]), &base).unwrap_err();
    assert_eq!(e.to_string(), "x: expected shape [2, 3], given [2, 4]");
    let e = lora
        .forward(
            &HostTensor::from_vec(vec![1.0f64; 3], &[1, 3]).unwrap(),
            &base,
        )
        .unwrap_err();
    assert!(matches!(e, PeftError::DType { .. }), "{e}");
}

/// A small LCG, enough to mutate bytes reproducibly.
struct Rng(u64);
impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % n.max(1)
    }
}

#[test]
fn mutated_files_and_configs_never_panic() {
    let (cfg, good) = (lora_config(), lora_file());
    let mut rng = Rng(0x5eed);
    let mut loaded = 0;
    for _ in 0..3000 {
        let mut b = good.clone();
        for _ in 0..1 + rng.below(3) {
            let at = rng.below(b.len() as u64) as usize;
            match rng.below(4) {
                0 => b[at] ^= 1 << rng.below(8),
                1 => b[at] = [b'0', b'9', b'[', b']', b'"', b',', 0xff][rng.below(7) as usize],
                2 => b.truncate(at),
                _ => {
                    b.remove(at);
                }
            }
            if b.is_empty() {
                break;
            }
        }
        loaded += usize::from(AdapterSet::from_bytes(&cfg, &b).is_ok());
        let mut c = cfg.clone().into_bytes();
        let at = rng.below(c.len() as u64) as usize;
        c[at] = [b'0', b'9', b'-', b'{', b'"', b'.', b'e', b' '][rng.below(8) as usize];
        if let Ok(text) = std::str::from_utf8(&c) {
            let _ = AdapterSet::from_bytes(text, &good);
        }
    }
    assert!(loaded > 0, "some mutants (in tensor data) still load");
}

#[test]
fn graph_builders_check_their_inputs() {
    use rlx_ir::{DType, Dim, Graph, Shape};
    use rlx_peft::graph::{self, LinearNodes};
    let cfg = LoraConfig {
        r: 2,
        lora_alpha: 4.0,
        use_rslora: false,
    };
    let mut g = Graph::new("errors");
    let w = g.param("w", Shape::new(&[4, 8], DType::F32));
    let b = g.param("b", Shape::new(&[4], DType::F32));
    let bad_b = g.param("bad_b", Shape::new(&[5], DType::F32));
    let x = g.input("x", Shape::new(&[2, 7], DType::F32));
    let e = graph::lora(&mut g, "l", x, LinearNodes::new(w, Some(b)), &cfg).unwrap_err();
    assert!(e.to_string().contains("expected [..., 8]"), "{e}");
    let x64 = g.input("x64", Shape::new(&[2, 8], DType::F64));
    let e = graph::lora(&mut g, "l", x64, LinearNodes::new(w, Some(b)), &cfg).unwrap_err();
    assert!(matches!(e, PeftError::DType { .. }), "{e}");
    let x = g.input("x8", Shape::new(&[2, 8], DType::F32));
    let e = graph::lora(&mut g, "l", x, LinearNodes::new(w, Some(bad_b)), &cfg).unwrap_err();
    assert_eq!(e.to_string(), "base bias: expected shape [4], given [5]");
    // a second adapter under the same prefix would reuse the param names;
    // the builder fails before adding any node
    graph::lora(&mut g, "l", x, LinearNodes::new(w, Some(b)), &cfg).unwrap();
    let e = graph::lora(&mut g, "l", x, LinearNodes::new(w, Some(b)), &cfg).unwrap_err();
    assert!(
        matches!(e, PeftError::Graph { ref builder, .. } if builder == "l.lora_A.weight"),
        "{e}"
    );
    let len = g.len();
    let e = graph::dora(&mut g, "l", x, LinearNodes::new(w, Some(b)), &cfg).unwrap_err();
    assert!(e.to_string().contains("l.lora_A.weight"), "{e}");
    assert_eq!(g.len(), len, "a failed builder adds nothing");
    // symbolic leading dims are fine for every builder but OFT's
    let xs = g.input(
        "xs",
        Shape::from_dims(vec![Dim::sym("batch"), Dim::Static(8)], DType::F32),
    );
    let y = graph::dora(&mut g, "d", xs, LinearNodes::new(w, Some(b)), &cfg)
        .unwrap()
        .output;
    assert_eq!(g.shape(y).dims()[0], Dim::sym("batch"));
    let oft = rlx_peft::OftConfig {
        r: 2,
        block_size: 4,
        use_cayley_neumann: true,
        num_cayley_neumann_terms: 5,
        block_share: false,
    };
    let e = graph::oft(&mut g, "o", xs, LinearNodes::new(w, None), &oft).unwrap_err();
    assert!(e.to_string().contains("static dims"), "{e}");
}
