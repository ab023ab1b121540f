//! `rlx train digits`: the README's main job, with a progress bar, a
//! metrics file and the loss / accuracy curve as a PNG.

use crate::{plot, progress};
use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use flate2::read::GzDecoder;
use rlx::train::digits::{parse_digits_csv, train_digits, DigitsConfig, DigitsEvent};
use serde_json::json;
use std::io::Read;
use std::path::PathBuf;

/// The scikit-learn digits (BSD-3-Clause, see `crates/rlx/examples/data/digits/LICENSE.txt`).
const DIGITS_GZ: &[u8] = include_bytes!("../../../rlx/examples/data/digits/digits.csv.gz");

/// `rlx train` arguments.
#[derive(Args)]
pub struct TrainArgs {
    #[command(subcommand)]
    job: Job,
}

#[derive(Subcommand)]
enum Job {
    /// An MLP on the scikit-learn digits (8x8 images), Adam + cosine schedule.
    Digits(DigitsArgs),
}

/// `rlx train digits` arguments.
#[derive(Args)]
struct DigitsArgs {
    /// Passes over the training images.
    #[arg(long, default_value_t = 30, value_parser = clap::value_parser!(u32).range(1..))]
    epochs: u32,
    /// Hidden units.
    #[arg(long, default_value_t = 128, value_parser = clap::value_parser!(u32).range(1..))]
    hidden: u32,
    /// Seed of the shuffle and the initial weights.
    #[arg(long, default_value_t = 2026)]
    seed: u64,
    /// Directory for digits_curve.png and digits_metrics.json.
    #[arg(long, default_value = ".")]
    out: PathBuf,
    /// Fail unless the final test accuracy reaches this (0..1).
    #[arg(long)]
    min_accuracy: Option<f32>,
}

/// Runs `rlx train`.
pub fn run(a: TrainArgs) -> Result<()> {
    match a.job {
        Job::Digits(d) => digits(d),
    }
}

fn digits(a: DigitsArgs) -> Result<()> {
    let mut text = String::new();
    GzDecoder::new(DIGITS_GZ).read_to_string(&mut text)?;
    let data = parse_digits_csv(&text)?;
    let cfg = DigitsConfig {
        epochs: a.epochs as usize,
        hidden: a.hidden as usize,
        seed: a.seed,
        ..DigitsConfig::default()
    };
    std::fs::create_dir_all(&a.out).with_context(|| a.out.display().to_string())?;
    println!(
        "digits: {} images, MLP 64-{}-10, Adam lr {} (cosine), batch {}, {} epochs",
        data.len(),
        cfg.hidden,
        cfg.lr,
        cfg.batch,
        cfg.epochs
    );
    let mut bar = None;
    let run = train_digits(data, &cfg, |event| match event {
        DigitsEvent::Step(_, _, steps) => {
            bar.get_or_insert_with(|| progress::bar((cfg.epochs * steps) as u64, "train"))
                .inc(1);
        }
        DigitsEvent::Epoch(e) => {
            let line = format!(
                "epoch {:>2}/{}  loss {:.4}  test accuracy {:.2}%  ({:.1}s)",
                e.epoch,
                cfg.epochs,
                e.loss,
                e.test_accuracy * 100.0,
                e.elapsed.as_secs_f32()
            );
            match &bar {
                Some(b) => b.println(line),
                None => println!("{line}"),
            }
        }
    })?;
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    let loss: Vec<f32> = run.epochs.iter().map(|e| e.loss).collect();
    let acc: Vec<f32> = run.epochs.iter().map(|e| e.test_accuracy).collect();
    let png = a.out.join("digits_curve.png");
    plot::training_curve(&png, &loss, &acc)?;
    let metrics = a.out.join("digits_metrics.json");
    let v = json!({
        "train_images": run.train_images,
        "test_images": run.test_images,
        "loss": loss,
        "test_accuracy": acc,
        "final_accuracy": run.final_accuracy(),
    });
    std::fs::write(&metrics, serde_json::to_string_pretty(&v)?)
        .with_context(|| metrics.display().to_string())?;
    println!(
        "final test accuracy: {:.2}% ({} images); curve: {}, metrics: {}",
        run.final_accuracy() * 100.0,
        run.test_images,
        png.display(),
        metrics.display()
    );
    if let Some(min) = a.min_accuracy {
        anyhow::ensure!(
            run.final_accuracy() >= min,
            "test accuracy {} is below --min-accuracy {min}",
            run.final_accuracy()
        );
    }
    Ok(())
}
