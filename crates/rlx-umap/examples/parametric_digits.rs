//! Parametric UMAP on the scikit-learn digits: trains the MLP encoder with
//! the UMAP loss through rlx autodiff and prints the trustworthiness (k = 5)
//! of its embedding. Optional arguments: `steps batch_size learning_rate`.
//!
//! `cargo run --release -p rlx-umap --example parametric_digits -- 1000 256 0.003`
use flate2::read::GzDecoder;
use rlx_umap::parametric::{ParametricParams, ParametricUmap};
use rlx_umap::trustworthiness;
use std::io::Read;
use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../rlx/examples/data/digits/digits.csv.gz"
    );
    let mut text = String::new();
    GzDecoder::new(std::fs::File::open(path)?).read_to_string(&mut text)?;
    let mut x = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let v: Vec<f64> = line.split(',').map(str::parse).collect::<Result<_, _>>()?;
        x.extend(v[..64].iter().map(|p| p / 16.0));
    }
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut params = ParametricParams::default();
    if let Some(s) = args.first() {
        params.steps = s.parse()?;
    }
    if let Some(b) = args.get(1) {
        params.batch_size = b.parse()?;
    }
    if let Some(lr) = args.get(2) {
        params.learning_rate = lr.parse()?;
    }
    let start = Instant::now();
    let mut model = ParametricUmap::new(params.clone());
    let e = model.fit_transform(&x, 64)?;
    let e: Vec<f64> = e.iter().map(|&v| v as f64).collect();
    let t = trustworthiness(&x, 64, &e, 2, 5)?;
    println!(
        "parametric UMAP, {} steps of {} edges, lr {}: {:.1}s, trustworthiness (k = 5) {t:.4}",
        params.steps,
        params.batch_size,
        params.learning_rate,
        start.elapsed().as_secs_f64()
    );
    Ok(())
}
