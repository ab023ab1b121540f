//! all-MiniLM-L6-v2 sentence embeddings on the wgpu device against ONNX
//! Runtime (the committed reference vectors of `rlx-models`'s parity test,
//! from `tools/gen_minilm_refs.py`): cosine >= 0.99999. Needs the model
//! files (`tools/fetch_models.sh`, dir `$RLX_MODELS`).

mod common;

use common::gpu_or_skip;
use rlx_models::bert::BertEncoder;
use rlx_models::tokenize::WordPieceTokenizer;
use rlx_runtime::Device;
use serde_json::Value;
use std::path::PathBuf;

fn model_dir() -> PathBuf {
    let root = std::env::var("RLX_MODELS")
        .map(PathBuf::from)
        .unwrap_or_else(|_| {
            PathBuf::from(std::env::var("HOME").unwrap_or_default()).join(".cache/rlx-models")
        });
    root.join("all-MiniLM-L6-v2")
}

fn cosine(a: &[f32], b: &[f64]) -> f64 {
    assert_eq!(a.len(), b.len());
    let dot: f64 = a.iter().zip(b).map(|(x, y)| *x as f64 * y).sum();
    let na: f64 = a.iter().map(|x| (*x as f64).powi(2)).sum::<f64>().sqrt();
    let nb: f64 = b.iter().map(|y| y * y).sum::<f64>().sqrt();
    dot / (na * nb)
}

#[test]
#[ignore = "needs model files: tools/fetch_models.sh"]
fn minilm_embeddings_on_the_gpu_match_onnx_runtime() {
    if !gpu_or_skip("minilm_embeddings_on_the_gpu_match_onnx_runtime") {
        return;
    }
    let refs: Value = serde_json::from_str(include_str!(
        "../../rlx-models/tests/fixtures/minilm_refs.json"
    ))
    .unwrap();
    let sentences: Vec<&str> = refs["sentences"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap())
        .collect();
    let rows = |key: &str| -> Vec<Vec<f64>> {
        refs[key]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                r.as_array()
                    .unwrap()
                    .iter()
                    .map(|x| x.as_f64().unwrap())
                    .collect()
            })
            .collect()
    };
    let dir = model_dir();
    let tok =
        WordPieceTokenizer::from_dir(&dir).expect("tokenizer.json: run tools/fetch_models.sh");
    let mut enc = BertEncoder::from_dir(&dir, Device::Gpu).expect("model.safetensors on the GPU");
    // The short sentences only: lavapipe runs MiniLM ~190x slower than the
    // CPU, and the 128-token one alone would add minutes to CI without
    // reaching a kernel the others do not (every kernel is specialised per
    // shape the same way).
    let short = sentences.len() - 1;
    let embeddings = rows("embeddings");
    let (sentences, want_rows) = (&sentences[..short], &embeddings[..short]);
    for (s, want) in sentences.iter().zip(want_rows) {
        let tokens = tok.encode(&[s]).unwrap();
        let e = enc.embed(&tokens).unwrap();
        let cos = cosine(&e[0], want);
        println!(
            "{} tokens on the GPU: cosine {cos:.9} to onnxruntime",
            tokens.seq
        );
        assert!(cos >= 0.99999, "{s:?}: cosine {cos} to onnxruntime");
    }
    // The padded batch: the mask must keep padding out on the GPU too, so
    // each row equals that sentence's own (unpadded) ONNX Runtime embedding.
    let e = enc.embed(&tok.encode(sentences).unwrap()).unwrap();
    for ((s, got), want) in sentences.iter().zip(&e).zip(want_rows) {
        let cos = cosine(got, want);
        assert!(
            cos >= 0.99999,
            "{s:?} in a padded batch: cosine {cos} to onnxruntime"
        );
    }
}
