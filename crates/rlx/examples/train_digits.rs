//! Trains an MLP classifier on the scikit-learn *digits* data set (1,797
//! 8x8 images, committed under `examples/data/digits/` with its licence)
//! with a [`TrainStep`](rlx::train::TrainStep) (`grad_with_loss` + Adam with
//! a cosine schedule and gradient clipping), and reports the test accuracy.
//! The training itself is [`rlx::train::digits`] (also `rlx train digits`).
//!
//! `cargo run -p rlx --example train_digits`
use flate2::read::GzDecoder;
use rlx::train::digits::{parse_digits_csv, train_digits, DigitsConfig, DigitsEvent};
use std::io::Read;

pub fn main() -> rlx::Result<()> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/examples/data/digits/digits.csv.gz"
    );
    let mut text = String::new();
    GzDecoder::new(std::fs::File::open(path)?).read_to_string(&mut text)?;
    let data = parse_digits_csv(&text)?;
    let cfg = DigitsConfig::default();
    println!(
        "digits: {} images, MLP 64-{}-10, Adam lr {} (cosine), batch {}, {} epochs",
        data.len(),
        cfg.hidden,
        cfg.lr,
        cfg.batch,
        cfg.epochs
    );
    let run = train_digits(data, &cfg, |event| {
        if let DigitsEvent::Epoch(e) = event {
            println!(
                "epoch {:>2}/{}  loss {:.4}  test accuracy {:.2}%  ({:.1}s)",
                e.epoch,
                cfg.epochs,
                e.loss,
                e.test_accuracy * 100.0,
                e.elapsed.as_secs_f32()
            );
        }
    })?;
    let acc = run.final_accuracy();
    println!(
        "final test accuracy: {:.2}% ({} images)",
        acc * 100.0,
        run.test_images
    );
    anyhow::ensure!(acc >= 0.95, "test accuracy {acc} is below 95%");
    Ok(())
}
