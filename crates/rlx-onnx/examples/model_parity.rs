//! Real ONNX models on RLX against onnxruntime.
//!
//! ```text
//! tools/fetch_models.sh                                # models into $RLX_MODELS
//! cargo run --release -p rlx-onnx --example model_parity [REF_DIR]
//! ```
//!
//! For every `<model>.<case>.json` in REF_DIR (default the committed
//! `crates/rlx-onnx/tests/fixtures/models`, written by
//! `tools/gen_onnx_model_refs.py`): runs `$RLX_MODELS/onnx/<model>` (default
//! `~/.cache/rlx-models`) on the CPU device and
//! prints, per output, the cosine similarity and the max |difference| to
//! onnxruntime. Exits 1 when any cosine is below 0.99999.

use rlx_ir::{DType, HostTensor};
use rlx_onnx::{Device, OnnxModel};
use serde_json::Value;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

fn tensor(dir: &Path, v: &Value) -> HostTensor {
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
        other => panic!("dtype {other}"),
    };
    let bytes = std::fs::read(dir.join(v["file"].as_str().unwrap())).unwrap();
    HostTensor::from_bytes(dtype, &dims, bytes).unwrap()
}

fn main() {
    let dir = std::env::args()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/models"));
    let models_dir = std::env::var("RLX_MODELS")
        .map(PathBuf::from)
        .unwrap_or_else(|_| PathBuf::from(std::env::var("HOME").unwrap()).join(".cache/rlx-models"))
        .join("onnx");
    let mut manifests: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e} (run tools/gen_onnx_model_refs.py)", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    manifests.sort();
    let mut models: HashMap<String, OnnxModel> = HashMap::new();
    let mut worst = 1.0f64;
    println!("| model.case | output | cosine | max abs diff |\n|---|---|---|---|");
    for m in manifests {
        let man: Value = serde_json::from_str(&std::fs::read_to_string(&m).unwrap()).unwrap();
        let path = models_dir
            .join(man["model"].as_str().unwrap())
            .to_string_lossy()
            .to_string();
        let model = models.entry(path.clone()).or_insert_with(|| {
            OnnxModel::load(&path, Device::Cpu).unwrap_or_else(|e| panic!("{path}: {e}"))
        });
        let inputs: Vec<(String, HostTensor)> = man["inputs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| (v["name"].as_str().unwrap().to_string(), tensor(&dir, v)))
            .collect();
        let feed: Vec<(&str, &HostTensor)> = inputs.iter().map(|(n, t)| (n.as_str(), t)).collect();
        let t0 = std::time::Instant::now();
        let outs = model
            .run(&feed)
            .unwrap_or_else(|e| panic!("{}: {e}", m.display()));
        let ms = t0.elapsed().as_secs_f64() * 1e3;
        let stem = m.file_stem().unwrap().to_string_lossy().to_string();
        for (got, want) in outs.iter().zip(man["outputs"].as_array().unwrap()) {
            let w = tensor(&dir, want).to_f64_lossy();
            let g = got.to_f64_lossy();
            assert_eq!(g.len(), w.len(), "{stem}: output sizes differ");
            let dot: f64 = g.iter().zip(&w).map(|(a, b)| a * b).sum();
            let na: f64 = g.iter().map(|a| a * a).sum::<f64>().sqrt();
            let nb: f64 = w.iter().map(|a| a * a).sum::<f64>().sqrt();
            let cos = if na == 0.0 && nb == 0.0 {
                1.0
            } else {
                dot / (na * nb)
            };
            let max = g
                .iter()
                .zip(&w)
                .map(|(a, b)| (a - b).abs())
                .fold(0.0, f64::max);
            worst = worst.min(cos);
            println!(
                "| {stem} | {} | {cos:.8} | {max:.3e} |",
                want["name"].as_str().unwrap()
            );
        }
        eprintln!("{stem}: first run (import + compile + run) {ms:.0} ms");
    }
    println!("\nworst cosine: {worst:.8}");
    if worst < 0.99999 {
        std::process::exit(1);
    }
}
