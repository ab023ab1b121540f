//! The digits classifier, the README's main job: an MLP (64 - hidden - 10,
//! tanh) trained on the scikit-learn *digits* images with a [`TrainStep`]
//! (Adam, cosine schedule, gradient clipping). Shared by the
//! `train_digits` example and `rlx train digits`.
//!
//! ```
//! use rlx::train::digits::{parse_digits_csv, train_digits, DigitsConfig};
//! // Two images per class, a tiny run (the real data: examples/data/digits).
//! let csv: String = (0..20)
//!     .map(|i| {
//!         let label = i % 10;
//!         let px: Vec<String> = (0..64).map(|p| ((p == label) as u8 * 16).to_string()).collect();
//!         format!("{},{label}\n", px.join(","))
//!     })
//!     .collect();
//! let data = parse_digits_csv(&csv)?;
//! let cfg = DigitsConfig { epochs: 2, batch: 4, ..DigitsConfig::default() };
//! let run = train_digits(data, &cfg, |_| {})?;
//! assert_eq!(run.epochs.len(), 2);
//! # Ok::<(), anyhow::Error>(())
//! ```

use super::TrainStep;
use crate::{CompiledGraph, DType, Device, Graph, GraphExt, NodeId, Session, Shape};
use anyhow::{ensure, Context};
use rlx_optim::{Adam, AdamConfig, LrSchedule, Optimizer};
use std::time::{Duration, Instant};

/// Pixels per image (8 x 8).
pub const PIXELS: usize = 64;
/// Digit classes.
pub const CLASSES: usize = 10;

/// One image: pixels scaled to [0, 1] and its label.
pub type Image = (Vec<f32>, usize);

/// Training settings (the defaults are the README's run).
#[derive(Clone, Debug, PartialEq)]
pub struct DigitsConfig {
    /// Hidden units.
    pub hidden: usize,
    /// Passes over the training images.
    pub epochs: usize,
    /// Images per step.
    pub batch: usize,
    /// Peak learning rate (cosine-decayed to a twentieth).
    pub lr: f64,
    /// Seed of the shuffle and the initial weights.
    pub seed: u64,
}

impl Default for DigitsConfig {
    fn default() -> Self {
        DigitsConfig {
            hidden: 128,
            epochs: 30,
            batch: 32,
            lr: 3e-3,
            seed: 2026,
        }
    }
}

/// What one epoch did.
#[derive(Clone, Debug, PartialEq)]
pub struct EpochStats {
    /// 1-based epoch number.
    pub epoch: usize,
    /// Mean training loss over its steps.
    pub loss: f32,
    /// Accuracy on the held-out images after it.
    pub test_accuracy: f32,
    /// Time since training started.
    pub elapsed: Duration,
}

/// Progress reported while training.
#[derive(Clone, Debug, PartialEq)]
pub enum DigitsEvent {
    /// A step finished: `(epoch, step in epoch, steps per epoch)`.
    Step(usize, usize, usize),
    /// An epoch finished.
    Epoch(EpochStats),
}

/// The result of a run.
#[derive(Clone, Debug, PartialEq)]
pub struct DigitsRun {
    /// Training images (4/5 of the data).
    pub train_images: usize,
    /// Held-out images.
    pub test_images: usize,
    /// Every epoch, in order.
    pub epochs: Vec<EpochStats>,
}

impl DigitsRun {
    /// Test accuracy after the last epoch (0 with no epochs).
    pub fn final_accuracy(&self) -> f32 {
        self.epochs.last().map_or(0.0, |e| e.test_accuracy)
    }
}

/// Parses the digits CSV (64 pixel values 0..16 and a label per line).
pub fn parse_digits_csv(text: &str) -> crate::Result<Vec<Image>> {
    let mut rows = Vec::new();
    for (n, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let v: Vec<f32> = line
            .split(',')
            .map(|f| f.trim().parse::<f32>())
            .collect::<Result<_, _>>()
            .with_context(|| format!("digits csv line {}", n + 1))?;
        ensure!(
            v.len() == PIXELS + 1,
            "digits csv line {} has {} fields, expected {}",
            n + 1,
            v.len(),
            PIXELS + 1
        );
        let label = v[PIXELS];
        ensure!(
            label.fract() == 0.0 && (0.0..CLASSES as f32).contains(&label),
            "digits csv line {}: label {label} is not 0..9",
            n + 1
        );
        rows.push((
            v[..PIXELS].iter().map(|p| p / 16.0).collect(),
            label as usize,
        ));
    }
    Ok(rows)
}

/// A tiny deterministic generator (splitmix64) for the shuffle and the init
/// (shared with the digits examples so their splits match this one's).
pub struct Rng(pub u64);

impl Rng {
    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `[-bound, bound)`.
    pub fn uniform(&mut self, bound: f32) -> f32 {
        ((self.next_u64() >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0) * bound
    }

    /// Fisher-Yates shuffle.
    pub fn shuffle<T>(&mut self, v: &mut [T]) {
        for i in (1..v.len()).rev() {
            v.swap(i, (self.next_u64() % (i as u64 + 1)) as usize);
        }
    }
}

/// logits = tanh(x @ w1 + b1) @ w2 + b2.
fn logits(g: &mut Graph, x: NodeId, hidden: usize) -> NodeId {
    let w1 = g.param("w1", Shape::new(&[PIXELS, hidden], DType::F32));
    let b1 = g.param("b1", Shape::new(&[hidden], DType::F32));
    let w2 = g.param("w2", Shape::new(&[hidden, CLASSES], DType::F32));
    let b2 = g.param("b2", Shape::new(&[CLASSES], DType::F32));
    let h = g.mm(x, w1);
    let h = g.add(h, b1);
    let h = g.tanh(h);
    let o = g.mm(h, w2);
    g.add(o, b2)
}

/// Mean softmax cross-entropy of a batch against one-hot labels.
fn loss_graph(batch: usize, hidden: usize) -> Graph {
    let mut g = Graph::new("digits_mlp");
    let x = g.input("x", Shape::new(&[batch, PIXELS], DType::F32));
    let y = g.input("y", Shape::new(&[batch, CLASSES], DType::F32));
    let z = logits(&mut g, x, hidden);
    let lp = g.log_softmax(z, -1);
    let picked = g.mul(y, lp);
    let s = g.sum(picked, &[0, 1], false);
    let loss = g.mul(s, g.constant(-1.0 / batch as f64, DType::F32));
    g.set_outputs(vec![loss]);
    g
}

fn predict_graph(n: usize, hidden: usize) -> Graph {
    let mut g = Graph::new("digits_predict");
    let x = g.input("x", Shape::new(&[n, PIXELS], DType::F32));
    let z = logits(&mut g, x, hidden);
    let c = g.argmax(z, -1, false);
    g.set_outputs(vec![c]);
    g
}

fn accuracy<O: Optimizer>(
    predict: &mut CompiledGraph,
    trainer: &TrainStep<O>,
    data: &[Image],
) -> crate::Result<f32> {
    for (n, _, v) in trainer.params() {
        predict.try_set_param(n, v)?;
    }
    let x: Vec<f32> = data.iter().flat_map(|(p, _)| p.iter().copied()).collect();
    let pred = predict.try_run(&[("x", &x)])?;
    let right = pred[0]
        .iter()
        .zip(data)
        .filter(|(p, (_, l))| **p as usize == *l)
        .count();
    Ok(right as f32 / data.len() as f32)
}

/// Shuffles `data` (seeded), trains on 4/5 of it and measures the test
/// accuracy on the rest after every epoch; `on_event` sees each step and epoch.
pub fn train_digits(
    mut data: Vec<Image>,
    cfg: &DigitsConfig,
    mut on_event: impl FnMut(&DigitsEvent),
) -> crate::Result<DigitsRun> {
    ensure!(
        cfg.batch > 0 && cfg.hidden > 0,
        "batch and hidden must be positive"
    );
    let mut rng = Rng(cfg.seed);
    rng.shuffle(&mut data);
    let (train, test) = data.split_at(data.len() * 4 / 5);
    let batches = train.len() / cfg.batch;
    ensure!(
        batches > 0 && !test.is_empty(),
        "{} images are too few for batches of {} and a test split",
        data.len(),
        cfg.batch
    );
    let mut adam = Adam::new(AdamConfig {
        lr: cfg.lr,
        ..AdamConfig::default()
    })?;
    adam.set_schedule(LrSchedule::Cosine {
        t_max: (cfg.epochs * batches) as u64,
        eta_min: cfg.lr / 20.0,
    });
    let mut trainer = TrainStep::new(
        &loss_graph(cfg.batch, cfg.hidden),
        &["w1", "b1", "w2", "b2"],
        adam,
    )?
    .clip_grad_norm(5.0);
    let init = |rng: &mut Rng, fan_in: usize, n: usize| -> Vec<f32> {
        (0..n)
            .map(|_| rng.uniform((1.0 / fan_in as f32).sqrt()))
            .collect()
    };
    let h = cfg.hidden;
    trainer.set_param("w1", &init(&mut rng, PIXELS, PIXELS * h))?;
    trainer.set_param("b1", &vec![0.0; h])?;
    trainer.set_param("w2", &init(&mut rng, h, h * CLASSES))?;
    trainer.set_param("b2", &[0.0; CLASSES])?;
    let mut predict = Session::new(Device::Cpu).try_compile(predict_graph(test.len(), h))?;
    let mut order: Vec<usize> = (0..train.len()).collect();
    let start = Instant::now();
    let mut epochs = Vec::with_capacity(cfg.epochs);
    for epoch in 1..=cfg.epochs {
        rng.shuffle(&mut order);
        let mut total = 0.0;
        for b in 0..batches {
            let idx = &order[b * cfg.batch..(b + 1) * cfg.batch];
            let x: Vec<f32> = idx
                .iter()
                .flat_map(|&i| train[i].0.iter().copied())
                .collect();
            let mut y = vec![0.0; cfg.batch * CLASSES];
            for (r, &i) in idx.iter().enumerate() {
                y[r * CLASSES + train[i].1] = 1.0;
            }
            total += trainer.step(&[("x", &x), ("y", &y)])?.loss;
            on_event(&DigitsEvent::Step(epoch, b + 1, batches));
        }
        let stats = EpochStats {
            epoch,
            loss: total / batches as f32,
            test_accuracy: accuracy(&mut predict, &trainer, test)?,
            elapsed: start.elapsed(),
        };
        on_event(&DigitsEvent::Epoch(stats.clone()));
        epochs.push(stats);
    }
    Ok(DigitsRun {
        train_images: train.len(),
        test_images: test.len(),
        epochs,
    })
}
