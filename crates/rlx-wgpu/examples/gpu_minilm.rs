//! all-MiniLM-L6-v2 sentence embeddings on the chosen device.
//!
//! ```text
//! tools/fetch_models.sh   # once
//! cargo run --release -p rlx-wgpu --example gpu_minilm -- --device gpu "first sentence" "second one"
//! ```

use rlx_models::bert::BertEncoder;
use rlx_models::tokenize::WordPieceTokenizer;
use rlx_runtime::{parse_device, Device};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mut device = Device::Gpu;
    if let Some(i) = args.iter().position(|a| a == "--device") {
        device = parse_device(args.get(i + 1).ok_or("--device needs a value")?)?;
        args.drain(i..i + 2);
    }
    if device == Device::Gpu {
        let ctx = rlx_wgpu::context()?;
        println!("adapter: {}", ctx.describe());
        rlx_driver::registry::register_backend(Arc::new(rlx_wgpu::WgpuBackend));
    }
    if args.is_empty() {
        args = vec![
            "The cat sits on the mat.".into(),
            "A kitten is resting on a rug.".into(),
        ];
    }
    let root = std::env::var("RLX_MODELS")
        .map(PathBuf::from)
        .unwrap_or_else(|_| {
            PathBuf::from(std::env::var("HOME").unwrap_or_default()).join(".cache/rlx-models")
        });
    let dir = root.join("all-MiniLM-L6-v2");
    let tok = WordPieceTokenizer::from_dir(&dir)?;
    let mut enc = BertEncoder::from_dir(&dir, device)?;
    let sentences: Vec<&str> = args.iter().map(String::as_str).collect();
    let tokens = tok.encode(&sentences)?;
    let start = Instant::now();
    let e = enc.embed(&tokens)?;
    println!(
        "{} sentences x {} tokens on {device} in {:.1} ms",
        tokens.batch,
        tokens.seq,
        start.elapsed().as_secs_f64() * 1e3
    );
    for (s, v) in sentences.iter().zip(&e) {
        println!("{s:?}: [{:.4}, {:.4}, {:.4}, ...]", v[0], v[1], v[2]);
    }
    for i in 0..e.len() {
        for j in i + 1..e.len() {
            let cos: f32 = e[i].iter().zip(&e[j]).map(|(a, b)| a * b).sum();
            println!("cosine({i}, {j}) = {cos:.4}");
        }
    }
    Ok(())
}
