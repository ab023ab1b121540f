//! `rlx train digits`: the README's main job reaches its accuracy, and the
//! curve PNG shows a loss and an accuracy line.

mod common;

use common::*;
use serde_json::Value;

#[test]
fn train_digits_reaches_95_percent_and_draws_its_curve() {
    let out = tempfile::tempdir().unwrap();
    let text = stdout_of(
        rlx()
            .args(["train", "digits", "--min-accuracy", "0.95", "--out"])
            .arg(out.path()),
    );
    assert!(text.contains("final test accuracy"), "{text}");
    let m: Value = serde_json::from_str(
        &std::fs::read_to_string(out.path().join("digits_metrics.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        (m["train_images"].as_u64(), m["test_images"].as_u64()),
        (Some(1437), Some(360))
    );
    let loss: Vec<f64> = m["loss"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect();
    assert_eq!(loss.len(), 30);
    // Cross-entropy of 10 classes starts near ln(10) and falls.
    assert!(loss[0] < 2.5 && loss[29] < loss[0] / 4.0, "{loss:?}");
    assert!(m["final_accuracy"].as_f64().unwrap() >= 0.95);

    let img = image::open(out.path().join("digits_curve.png"))
        .unwrap()
        .to_rgb8();
    assert_eq!(img.dimensions(), (800, 600));
    let count = |pred: &dyn Fn(&image::Rgb<u8>) -> bool, top: bool| {
        img.enumerate_pixels()
            .filter(|(_, y, p)| (*y < 300) == top && pred(p))
            .count()
    };
    let red = |p: &image::Rgb<u8>| p.0[0] > 200 && p.0[1] < 60 && p.0[2] < 60;
    let blue = |p: &image::Rgb<u8>| p.0[2] > 200 && p.0[0] < 60 && p.0[1] < 60;
    // The loss line (red) in the top half, the accuracy line (blue) in the bottom.
    assert!(count(&red, true) > 500 && count(&red, false) == 0);
    assert!(count(&blue, false) > 500 && count(&blue, true) == 0);
}

#[test]
fn train_refuses_a_target_it_misses() {
    let out = tempfile::tempdir().unwrap();
    assert_one_line_failure(
        rlx()
            .args([
                "train",
                "digits",
                "--epochs",
                "1",
                "--hidden",
                "2",
                "--min-accuracy",
                "0.999",
                "--out",
            ])
            .arg(out.path()),
        1,
        "below --min-accuracy",
    );
}
