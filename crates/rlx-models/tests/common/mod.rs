//! Shared by the MiniLM tests: where the model files are, and cosine
//! similarity against a float64 reference row.
#![allow(dead_code)]

use std::path::PathBuf;

/// `$RLX_MODELS/all-MiniLM-L6-v2` (default `~/.cache/rlx-models`), checked
/// to hold the weights and the tokenizer.
pub fn model_dir() -> PathBuf {
    let root = std::env::var("RLX_MODELS")
        .map(PathBuf::from)
        .unwrap_or_else(|_| {
            PathBuf::from(std::env::var("HOME").unwrap_or_default()).join(".cache/rlx-models")
        });
    let dir = root.join("all-MiniLM-L6-v2");
    assert!(
        dir.join("model.safetensors").is_file() && dir.join("tokenizer.json").is_file(),
        "{}: model.safetensors / tokenizer.json missing; run tools/fetch_models.sh \
         (it prints the dir to put in RLX_MODELS)",
        dir.display()
    );
    dir
}

/// Cosine similarity of an f32 row and an f64 reference row.
pub fn cosine(a: &[f32], b: &[f64]) -> f64 {
    assert_eq!(a.len(), b.len());
    let dot: f64 = a.iter().zip(b).map(|(x, y)| *x as f64 * y).sum();
    let na: f64 = a.iter().map(|x| (*x as f64).powi(2)).sum::<f64>().sqrt();
    let nb: f64 = b.iter().map(|y| y * y).sum::<f64>().sqrt();
    dot / (na * nb)
}
