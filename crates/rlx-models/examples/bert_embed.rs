//! Sentence embeddings with all-MiniLM-L6-v2 on RLX.
//!
//! ```text
//! tools/fetch_models.sh        # once: $RLX_MODELS/all-MiniLM-L6-v2 (default ~/.cache/rlx-models)
//! cargo run --release -p rlx-models --example bert_embed -- "first sentence" "second one"
//! ```
//!
//! Tokenizes with the model's `tokenizer.json`, runs the 6-layer encoder
//! built with the graph API (weights memory-mapped from
//! `model.safetensors`), and prints each sentence's mean-pooled,
//! L2-normalised embedding (first values and norm) and the cosine
//! similarity of every pair.

use rlx_models::bert::BertEncoder;
use rlx_models::tokenize::WordPieceTokenizer;
use rlx_runtime::Device;
use std::path::PathBuf;
use std::time::Instant;

const DEFAULT_SENTENCES: [&str; 3] = [
    "The cat sits on the mat.",
    "A kitten is resting on a rug.",
    "Stock markets fell sharply on Monday.",
];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let models = std::env::var("RLX_MODELS")
        .map(PathBuf::from)
        .unwrap_or_else(|_| {
            PathBuf::from(std::env::var("HOME").unwrap_or_default()).join(".cache/rlx-models")
        });
    let dir = models.join("all-MiniLM-L6-v2");
    if !dir.join("model.safetensors").is_file() {
        return Err(format!(
            "{}: no model.safetensors; run tools/fetch_models.sh (or set RLX_MODELS)",
            dir.display()
        )
        .into());
    }
    let args: Vec<String> = std::env::args().skip(1).collect();
    let sentences: Vec<&str> = if args.is_empty() {
        DEFAULT_SENTENCES.to_vec()
    } else {
        args.iter().map(String::as_str).collect()
    };

    let tokenizer = WordPieceTokenizer::from_dir(&dir)?;
    let mut encoder = BertEncoder::from_dir(&dir, Device::Cpu)?;
    let tokens = tokenizer.encode(&sentences)?;
    let t0 = Instant::now();
    let compiled = encoder.compiled(tokens.batch, tokens.seq)?;
    let compile = t0.elapsed();
    // What the process must hold: the params and the planned activation arena
    // (compare with the peak RSS, e.g. `/usr/bin/time -v`).
    let weights: usize = compiled
        .param_shapes()
        .iter()
        .map(|(_, s)| s.size_bytes().unwrap_or(0))
        .sum();
    eprintln!(
        "params {:.2} MB, planned arena {:.3} MB",
        weights as f64 / 1e6,
        compiled.lir().plan.arena_bytes as f64 / 1e6
    );
    let t1 = Instant::now();
    let emb = encoder.embed(&tokens)?;
    let run = t1.elapsed();
    eprintln!(
        "batch {} x seq {}: build + compile + load weights {:.1} ms, run {:.1} ms",
        tokens.batch,
        tokens.seq,
        compile.as_secs_f64() * 1e3,
        run.as_secs_f64() * 1e3
    );
    for (s, e) in sentences.iter().zip(&emb) {
        let norm = e.iter().map(|x| x * x).sum::<f32>().sqrt();
        let head: Vec<String> = e.iter().take(6).map(|x| format!("{x:+.5}")).collect();
        println!(
            "{s:?}\n  [{} ...] ({} dims, norm {norm:.6})",
            head.join(", "),
            e.len()
        );
    }
    for i in 0..emb.len() {
        for j in i + 1..emb.len() {
            let cos: f32 = emb[i].iter().zip(&emb[j]).map(|(a, b)| a * b).sum();
            println!("cosine({i}, {j}) = {cos:.4}");
        }
    }
    Ok(())
}
