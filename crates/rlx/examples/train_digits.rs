//! Trains an MLP classifier on the scikit-learn *digits* data set (1,797
//! 8x8 images, committed under `examples/data/digits/` with its licence)
//! with a [`TrainStep`] (`grad_with_loss` + Adam with a cosine schedule and
//! gradient clipping), and reports the test accuracy.
//!
//! `cargo run -p rlx --example train_digits`
use rlx::optim::{AdamConfig, LrSchedule};
use rlx::prelude::*;
use rlx::train::TrainStep;
use std::time::Instant;

#[path = "common/digits.rs"]
mod digits;
use digits::{load_digits, Rng};

const HIDDEN: usize = 128;
const CLASSES: usize = 10;
const BATCH: usize = 32;
const EPOCHS: usize = 30;
const LR: f64 = 3e-3;

/// logits = tanh(x @ w1 + b1) @ w2 + b2.
fn logits(g: &mut Graph, x: NodeId) -> NodeId {
    let w1 = g.param("w1", Shape::new(&[64, HIDDEN], DType::F32));
    let b1 = g.param("b1", Shape::new(&[HIDDEN], DType::F32));
    let w2 = g.param("w2", Shape::new(&[HIDDEN, CLASSES], DType::F32));
    let b2 = g.param("b2", Shape::new(&[CLASSES], DType::F32));
    let h = g.mm(x, w1);
    let h = g.add(h, b1);
    let h = g.tanh(h);
    let o = g.mm(h, w2);
    g.add(o, b2)
}

/// Mean softmax cross-entropy of a batch against one-hot labels.
fn loss_graph() -> Graph {
    let mut g = Graph::new("digits_mlp");
    let x = g.input("x", Shape::new(&[BATCH, 64], DType::F32));
    let y = g.input("y", Shape::new(&[BATCH, CLASSES], DType::F32));
    let z = logits(&mut g, x);
    let lp = g.log_softmax(z, -1);
    let picked = g.mul(y, lp);
    let s = g.sum(picked, &[0, 1], false);
    let loss = g.mul(s, g.constant(-1.0 / BATCH as f64, DType::F32));
    g.set_outputs(vec![loss]);
    g
}

fn predict_graph(n: usize) -> Graph {
    let mut g = Graph::new("digits_predict");
    let x = g.input("x", Shape::new(&[n, 64], DType::F32));
    let z = logits(&mut g, x);
    let c = g.argmax(z, -1, false);
    g.set_outputs(vec![c]);
    g
}

fn accuracy<O: Optimizer>(trainer: &TrainStep<O>, data: &[(Vec<f32>, usize)]) -> rlx::Result<f32> {
    let mut c = Session::new(Device::Cpu).try_compile(predict_graph(data.len()))?;
    for (n, _, v) in trainer.params() {
        c.try_set_param(n, v)?;
    }
    let x: Vec<f32> = data.iter().flat_map(|(p, _)| p.iter().copied()).collect();
    let pred = c.try_run(&[("x", &x)])?;
    let right = pred[0]
        .iter()
        .zip(data)
        .filter(|(p, (_, l))| **p as usize == *l)
        .count();
    Ok(right as f32 / data.len() as f32)
}

pub fn main() -> rlx::Result<()> {
    let mut data = load_digits()?;
    let mut rng = Rng(2026);
    rng.shuffle(&mut data);
    let (train, test) = data.split_at(data.len() * 4 / 5);
    println!(
        "digits: {} train / {} test images, MLP 64-{HIDDEN}-{CLASSES}, Adam lr {LR} (cosine), batch {BATCH}",
        train.len(),
        test.len()
    );

    let batches = train.len() / BATCH;
    let mut adam = Adam::new(AdamConfig {
        lr: LR,
        ..AdamConfig::default()
    })?;
    adam.set_schedule(LrSchedule::Cosine {
        t_max: (EPOCHS * batches) as u64,
        eta_min: LR / 20.0,
    });
    let mut trainer =
        TrainStep::new(&loss_graph(), &["w1", "b1", "w2", "b2"], adam)?.clip_grad_norm(5.0);
    let init = |rng: &mut Rng, fan_in: usize, n: usize| -> Vec<f32> {
        (0..n)
            .map(|_| rng.uniform((1.0 / fan_in as f32).sqrt()))
            .collect()
    };
    trainer.set_param("w1", &init(&mut rng, 64, 64 * HIDDEN))?;
    trainer.set_param("b1", &[0.0; HIDDEN])?;
    trainer.set_param("w2", &init(&mut rng, HIDDEN, HIDDEN * CLASSES))?;
    trainer.set_param("b2", &[0.0; CLASSES])?;
    let mut order: Vec<usize> = (0..train.len()).collect();
    let start = Instant::now();
    for epoch in 1..=EPOCHS {
        rng.shuffle(&mut order);
        let mut total = 0.0;
        for b in 0..batches {
            let idx = &order[b * BATCH..(b + 1) * BATCH];
            let x: Vec<f32> = idx
                .iter()
                .flat_map(|&i| train[i].0.iter().copied())
                .collect();
            let mut y = vec![0.0; BATCH * CLASSES];
            for (r, &i) in idx.iter().enumerate() {
                y[r * CLASSES + train[i].1] = 1.0;
            }
            total += trainer.step(&[("x", &x), ("y", &y)])?.loss;
        }
        if epoch % 5 == 0 || epoch == 1 {
            let acc = accuracy(&trainer, test)?;
            println!(
                "epoch {epoch:>2}/{EPOCHS}  loss {:.4}  test accuracy {:.2}%  ({:.1}s)",
                total / batches as f32,
                acc * 100.0,
                start.elapsed().as_secs_f32()
            );
        } else {
            println!(
                "epoch {epoch:>2}/{EPOCHS}  loss {:.4}",
                total / batches as f32
            );
        }
    }
    let acc = accuracy(&trainer, test)?;
    println!(
        "final test accuracy: {:.2}% ({} images)",
        acc * 100.0,
        test.len()
    );
    anyhow::ensure!(acc >= 0.95, "test accuracy {acc} is below 95%");
    Ok(())
}
