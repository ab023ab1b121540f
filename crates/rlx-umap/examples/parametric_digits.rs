//! Parametric UMAP on the scikit-learn digits: trains the MLP encoder with
//! the UMAP loss through rlx autodiff and prints the trustworthiness (k = 5)
//! of its embedding. Optional arguments: `steps batch_size learning_rate`.
//!
//! `cargo run --release -p rlx-umap --example parametric_digits -- 1000 256 0.003`
#[path = "common/digits.rs"]
mod digits;

use digits::load_digits;
use rlx_umap::parametric::{ParametricParams, ParametricUmap};
use rlx_umap::trustworthiness;
use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let x: Vec<f64> = load_digits()?.0.iter().map(|p| p / 16.0).collect();
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
