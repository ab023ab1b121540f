//! Real models (`tools/fetch_models.sh`, `RLX_MODELS`): MiniLM from ONNX
//! and from its safetensors directory through `pack` -> `run` -> `bench`
//! against onnxruntime's outputs, and SmolLM2 `generate` against llama.cpp's
//! greedy tokens (fixtures of rlx-onnx and rlx-llama).

mod common;

use common::*;
use rlx::{DType, HostTensor};
use rlx_cli::npy::{read_npy, write_npy};
use serde_json::Value;
use std::path::{Path, PathBuf};

fn models() -> PathBuf {
    PathBuf::from(
        std::env::var_os("RLX_MODELS")
            .expect("RLX_MODELS is not set: run tools/fetch_models.sh and export RLX_MODELS"),
    )
}

fn onnx_fixtures() -> PathBuf {
    crate_file("rlx-onnx/tests/fixtures/models")
}

/// A tensor of the rlx-onnx model fixtures (raw little-endian bytes).
fn fixture_tensor(v: &Value) -> HostTensor {
    let dims: Vec<usize> = v["dims"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d.as_u64().unwrap() as usize)
        .collect();
    let dtype = match v["dtype"].as_str().unwrap() {
        "float32" => DType::F32,
        "int64" => DType::I64,
        d => panic!("fixture dtype {d}"),
    };
    let bytes = std::fs::read(onnx_fixtures().join(v["file"].as_str().unwrap())).unwrap();
    HostTensor::from_bytes(dtype, &dims, bytes).unwrap()
}

/// The fixture's inputs as .npy files in `dir`: `--input` arguments.
fn input_args(man: &Value, dir: &Path) -> Vec<String> {
    let mut args = Vec::new();
    for v in man["inputs"].as_array().unwrap() {
        let name = v["name"].as_str().unwrap();
        let path = dir.join(format!("{name}.npy"));
        write_npy(&path, &fixture_tensor(v)).unwrap();
        args.push("--input".into());
        args.push(format!("{name}={}", path.display()));
    }
    args
}

/// Cosine per row of the last dim >= `min` against onnxruntime.
fn assert_rows_match(got: &HostTensor, want: &HostTensor, min: f64, what: &str) {
    assert_eq!(got.dims(), want.dims(), "{what}");
    let row = *want.dims().last().unwrap();
    for (a, b) in got
        .to_f64_lossy()
        .chunks(row)
        .zip(want.to_f64_lossy().chunks(row))
    {
        let dot: f64 = a.iter().zip(b).map(|(x, y)| x * y).sum();
        let na = a.iter().map(|x| x * x).sum::<f64>().sqrt();
        let nb = b.iter().map(|x| x * x).sum::<f64>().sqrt();
        assert!(dot / (na * nb) >= min, "{what}: cosine {}", dot / (na * nb));
    }
}

fn manifest() -> Value {
    serde_json::from_str(
        &std::fs::read_to_string(onnx_fixtures().join("all-MiniLM-L6-v2-fp32.seq_b1_s16.json"))
            .unwrap(),
    )
    .unwrap()
}

fn bench_rows(model: &Path, inputs: &[String]) {
    let v = json_of(
        rlx()
            .arg("bench")
            .arg(model)
            .args(inputs)
            .args(["--runs", "3", "--json"]),
    );
    let rows = v["rows"].as_array().unwrap();
    assert!(
        rows.iter().any(|r| r["device"] == "cpu" && r["runs"] == 3),
        "{v}"
    );
}

#[test]
#[ignore = "needs model files: tools/fetch_models.sh"]
fn minilm_onnx_pack_run_bench() {
    let dir = tempfile::tempdir().unwrap();
    let man = manifest();
    let inputs = input_args(&man, dir.path());
    let onnx = models().join("onnx/all-MiniLM-L6-v2-fp32.onnx");
    let pkg = dir.path().join("minilm.rlxp");
    stdout_of(rlx().arg("pack").arg(&onnx).arg(&pkg));
    for (model, out) in [(&onnx, "direct"), (&pkg, "packed")] {
        let out = dir.path().join(out);
        stdout_of(
            rlx()
                .arg("run")
                .arg(model)
                .args(&inputs)
                .arg("--out")
                .arg(&out),
        );
        for v in man["outputs"].as_array().unwrap() {
            let name = v["name"].as_str().unwrap();
            let got = read_npy(out.join(format!("{name}.npy"))).unwrap();
            assert_rows_match(&got, &fixture_tensor(v), 0.99999, name);
        }
    }
    bench_rows(&pkg, &inputs);
}

#[test]
#[ignore = "needs model files: tools/fetch_models.sh"]
fn minilm_safetensors_directory_pack_run_bench() {
    let dir = tempfile::tempdir().unwrap();
    let man = manifest();
    let inputs = input_args(&man, dir.path());
    let pkg = dir.path().join("minilm-st.rlxp");
    stdout_of(
        rlx()
            .arg("pack")
            .arg(models().join("all-MiniLM-L6-v2"))
            .arg(&pkg)
            .args(["--seq", "16", "--warm", "embeddings.word_embeddings.weight"]),
    );
    let out = dir.path().join("out");
    stdout_of(
        rlx()
            .arg("run")
            .arg(&pkg)
            .args(&inputs)
            .arg("--out")
            .arg(&out),
    );
    // The same weights as the ONNX export: onnxruntime's last hidden state.
    let want = man["outputs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == "last_hidden_state")
        .unwrap();
    let got = read_npy(out.join("last_hidden_state.npy")).unwrap();
    assert_rows_match(&got, &fixture_tensor(want), 0.9999, "last_hidden_state");
    bench_rows(&pkg, &inputs);
}

#[test]
#[ignore = "needs model files: tools/fetch_models.sh"]
fn smollm2_generate_matches_llama_cpp_up_to_its_first_near_tie() {
    let fx: Value = serde_json::from_str(
        &std::fs::read_to_string(crate_file("rlx-llama/tests/fixtures/smollm2_llamacpp.json"))
            .unwrap(),
    )
    .unwrap();
    let gguf = models().join("gguf/SmolLM2-135M-Instruct.Q4_1.gguf");
    let p = &fx["prompts"][0];
    let want: Vec<u64> = p["greedy"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect();
    // Past a position where llama.cpp's top two logits are within 0.25 the
    // greedy path may legitimately differ (rlx-llama's smollm2 test).
    // `rlx generate` keeps the KV cache in f16 by default, as llama.cpp does.
    let first_tie = p["margin"]
        .as_array()
        .unwrap()
        .iter()
        .position(|m| m.as_f64().unwrap() < 0.25)
        .unwrap_or(want.len());
    let v = json_of(
        rlx()
            .arg("generate")
            .arg(&gguf)
            .args([
                "--prompt",
                p["text"].as_str().unwrap(),
                "--ignore-eos",
                "--json",
            ])
            .args(["--max-tokens", &first_tie.to_string()]),
    );
    assert_eq!(v["prompt_ids"], p["ids"]);
    let got: Vec<u64> = v["ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect();
    assert_eq!(got, want[..first_tie]);
}

#[test]
#[ignore = "needs model files: tools/fetch_models.sh"]
fn smollm2_gguf_pack_run_bench_matches_llama_cpp_logits() {
    let fx: Value = serde_json::from_str(
        &std::fs::read_to_string(crate_file("rlx-llama/tests/fixtures/smollm2_llamacpp.json"))
            .unwrap(),
    )
    .unwrap();
    let p = &fx["prompts"][0];
    let gguf = models().join("gguf/SmolLM2-135M-Instruct.Q4_1.gguf");
    let dir = tempfile::tempdir().unwrap();
    let pkg = dir.path().join("smollm2.rlxp");
    stdout_of(rlx().arg("pack").arg(&gguf).arg(&pkg));
    let v = json_of(rlx().arg("inspect").arg(&pkg).arg("--json"));
    assert!(v["tensors"].as_array().unwrap().len() > 100, "{v}");
    let ids: Vec<i64> = p["ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_i64().unwrap())
        .collect();
    let ids_path = dir.path().join("ids.npy");
    write_npy(
        &ids_path,
        &HostTensor::from_vec(ids.clone(), &[ids.len()]).unwrap(),
    )
    .unwrap();
    let input = format!("input_ids={}", ids_path.display());
    let out = dir.path().join("out");
    stdout_of(
        rlx()
            .arg("run")
            .arg(&pkg)
            .args(["--input", &input])
            .arg("--out")
            .arg(&out),
    );
    let logits = read_npy(out.join("logits.npy")).unwrap();
    let vocab = logits.dims()[1];
    let last = &logits.to_vec::<f32>().unwrap()[(ids.len() - 1) * vocab..];
    // llama.cpp's top-5 logits after the prompt, within the tolerance of
    // rlx-llama's smollm2 test (2.0), and the same top-1.
    let top5 = p["top5"][0].as_array().unwrap();
    for pair in top5 {
        let (id, want) = (
            pair[0].as_u64().unwrap() as usize,
            pair[1].as_f64().unwrap(),
        );
        assert!(
            (last[id] as f64 - want).abs() < 2.0,
            "token {id}: {} vs {want}",
            last[id]
        );
    }
    let best = (0..vocab)
        .max_by(|&a, &b| last[a].total_cmp(&last[b]))
        .unwrap();
    assert_eq!(best as u64, top5[0][0].as_u64().unwrap());
    bench_rows(&pkg, &["--input".to_string(), input]);
}
