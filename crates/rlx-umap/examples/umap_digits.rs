//! UMAP of the scikit-learn digits (1,797 x 64, committed under
//! `crates/rlx/examples/data/digits/`): fits, prints the time and the
//! trustworthiness (k = 5), then embeds a held-out fifth with `transform`.
//! With `--bench`, prints one line `fit_s trustworthiness` for
//! `tools/bench_umap.py`.
//!
//! `cargo run --release -p rlx-umap --example umap_digits`
#[path = "common/digits.rs"]
mod digits;

use digits::load_digits;
use rlx_umap::{trustworthiness, Umap, UmapParams};
use std::time::Instant;

fn as_f64(v: &[f32]) -> Vec<f64> {
    v.iter().map(|&x| x as f64).collect()
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let bench = std::env::args().any(|a| a == "--bench");
    let (x, _) = load_digits()?;
    let n = x.len() / 64;
    let start = Instant::now();
    let mut model = Umap::new(UmapParams::default());
    let e = model.fit_transform(&x, 64)?;
    let fit_s = start.elapsed().as_secs_f64();
    let t = trustworthiness(&x, 64, &as_f64(&e), 2, 5)?;
    if bench {
        println!("{fit_s:.4} {t:.5}");
        return Ok(());
    }
    println!("digits: {n} x 64, n_neighbors 15, min_dist 0.1 -> 2D");
    println!("fit: {fit_s:.2}s, trustworthiness (k = 5) {t:.4}");

    let (mut train, mut test) = (Vec::new(), Vec::new());
    for (i, r) in x.chunks_exact(64).enumerate() {
        if i % 5 == 0 {
            test.extend_from_slice(r)
        } else {
            train.extend_from_slice(r)
        }
    }
    model.fit(&train, 64)?;
    let held = model.transform(&test)?;
    let t = trustworthiness(&test, 64, &as_f64(&held), 2, 5)?;
    println!(
        "transform of {} held-out points: trustworthiness {t:.4}",
        test.len() / 64
    );
    Ok(())
}
