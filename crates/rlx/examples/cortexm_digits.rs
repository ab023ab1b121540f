//! Trains a small CNN on the scikit-learn *digits* (8x8 images) in RLX,
//! quantizes it to INT8 (TFLite / CMSIS-NN semantics, `rlx-quant-int8`),
//! runs it on the host through the integer reference model and through the
//! `rlx::cortexm` kernels, and reports float vs INT8 held-out accuracy
//! (they must agree within 1 point).
//!
//! `cargo run -p rlx --example cortexm_digits --features cortexm`
//!
//! With `-- --write` it also refreshes the committed quantized model
//! (`crates/rlx-quant-int8/data/tinyconv_digits*.json`) and the firmware's
//! `firmware/cortexm-digits/src/model_weights.rs`.
use rlx::optim::{AdamConfig, LrSchedule};
use rlx::prelude::*;
use rlx::train::TrainStep;
use rlx_quant_int8::{
    emit_model_weights, float_model_from_graph, quantize, QuantizedModel, TinyconvTestSet,
};
use std::collections::HashMap;
use std::time::Instant;

#[path = "common/digits.rs"]
pub mod digits;
use digits::{load_digits, Rng};

const CLASSES: usize = 10;
const BATCH: usize = 32;
const EPOCHS: usize = 20;
const LR: f64 = 3e-3;
/// Test images the firmware embeds.
const FIRMWARE_IMAGES: usize = 64;
/// (name, shape) of every trainable param.
const PARAMS: [(&str, &[usize]); 6] = [
    ("c1_w", &[8, 1, 3, 3]),
    ("c1_b", &[8]),
    ("c2_w", &[16, 8, 3, 3]),
    ("c2_b", &[16]),
    ("fc_w", &[64, CLASSES]),
    ("fc_b", &[CLASSES]),
];

/// conv3x3(8)+relu -> maxpool2 -> conv3x3(16)+relu -> maxpool2 -> flatten -> dense(10).
fn logits(g: &mut Graph, x: NodeId, n: usize) -> NodeId {
    let p: Vec<NodeId> = PARAMS
        .iter()
        .map(|(name, dims)| g.param(name, Shape::new(dims, DType::F32)))
        .collect();
    let h = GraphExt::conv2d(g, x, p[0], Some(p[1]), [1, 1], [1, 1]);
    let h = g.relu(h);
    let h = g.max_pool2d(h, [2, 2], [2, 2], [0, 0]);
    let h = GraphExt::conv2d(g, h, p[2], Some(p[3]), [1, 1], [1, 1]);
    let h = g.relu(h);
    let h = g.max_pool2d(h, [2, 2], [2, 2], [0, 0]);
    let h = g.reshape_(h, &[n as i64, 64]);
    let o = g.mm(h, p[4]);
    g.add(o, p[5])
}

fn loss_graph() -> Graph {
    let mut g = Graph::new("tinyconv_loss");
    let x = g.input("x", Shape::new(&[BATCH, 1, 8, 8], DType::F32));
    let y = g.input("y", Shape::new(&[BATCH, CLASSES], DType::F32));
    let z = logits(&mut g, x, BATCH);
    let lp = g.log_softmax(z, -1);
    let picked = g.mul(y, lp);
    let s = g.sum(picked, &[0, 1], false);
    let loss = g.mul(s, g.constant(-1.0 / BATCH as f64, DType::F32));
    g.set_outputs(vec![loss]);
    g
}

pub fn predict_graph(n: usize) -> Graph {
    let mut g = Graph::new("tinyconv_digits");
    let x = g.input("x", Shape::new(&[n, 1, 8, 8], DType::F32));
    let z = logits(&mut g, x, n);
    let c = g.argmax(z, -1, false);
    g.set_outputs(vec![c]);
    g
}

pub fn float_predictions(
    params: &HashMap<String, Vec<f32>>,
    data: &[(Vec<f32>, usize)],
) -> rlx::Result<Vec<usize>> {
    let mut c = Session::new(Device::Cpu).try_compile(predict_graph(data.len()))?;
    for (name, v) in params {
        c.try_set_param(name, v)?;
    }
    let x: Vec<f32> = data.iter().flat_map(|(p, _)| p.iter().copied()).collect();
    Ok(c.try_run(&[("x", &x)])?[0]
        .iter()
        .map(|&p| p as usize)
        .collect())
}

pub fn accuracy(pred: &[usize], data: &[(Vec<f32>, usize)]) -> f64 {
    let right = pred
        .iter()
        .zip(data)
        .filter(|(p, (_, l))| **p == *l)
        .count();
    100.0 * right as f64 / data.len() as f64
}

pub fn train(train: &[(Vec<f32>, usize)], rng: &mut Rng) -> rlx::Result<HashMap<String, Vec<f32>>> {
    let batches = train.len() / BATCH;
    let mut adam = Adam::new(AdamConfig {
        lr: LR,
        ..AdamConfig::default()
    })?;
    adam.set_schedule(LrSchedule::Cosine {
        t_max: (EPOCHS * batches) as u64,
        eta_min: LR / 20.0,
    });
    let names: Vec<&str> = PARAMS.iter().map(|(n, _)| *n).collect();
    let mut trainer = TrainStep::new(&loss_graph(), &names, adam)?.clip_grad_norm(5.0);
    for (name, dims) in PARAMS {
        let n: usize = dims.iter().product();
        let values: Vec<f32> = if dims.len() == 1 {
            vec![0.0; n]
        } else {
            // conv [O, I, KH, KW]: I * KH * KW inputs per output; dense [K, U]: K.
            let fan_in = if dims.len() == 4 {
                n / dims[0]
            } else {
                dims[0]
            };
            (0..n)
                .map(|_| rng.uniform((3.0 / fan_in as f32).sqrt()))
                .collect()
        };
        trainer.set_param(name, &values)?;
    }
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
            println!(
                "epoch {epoch:>2}/{EPOCHS}  loss {:.4}  ({:.1}s)",
                total / batches as f32,
                start.elapsed().as_secs_f32()
            );
        }
    }
    Ok(trainer
        .params()
        .map(|(n, _, v)| (n.to_string(), v.to_vec()))
        .collect())
}

fn write_outputs(
    model: &QuantizedModel,
    test: &[(Vec<f32>, usize)],
    float_pred: &[usize],
) -> rlx::Result<()> {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    let images: Vec<Vec<i8>> = test.iter().map(|(p, _)| model.quantize_input(p)).collect();
    let set = TinyconvTestSet {
        images: images.clone(),
        labels: test.iter().map(|(_, l)| *l).collect(),
        float_predictions: float_pred.to_vec(),
    };
    let data = format!("{root}/crates/rlx-quant-int8/data");
    std::fs::write(format!("{data}/tinyconv_digits.json"), model.to_json())?;
    std::fs::write(
        format!("{data}/tinyconv_digits_test.json"),
        serde_json::to_string(&set)?,
    )?;
    let weights = format!("{root}/firmware/cortexm-digits/src/model_weights.rs");
    std::fs::write(
        &weights,
        emit_model_weights(model, &images[..FIRMWARE_IMAGES]),
    )?;
    println!("wrote {data}/tinyconv_digits*.json and {weights}");
    Ok(())
}

pub fn main() -> rlx::Result<()> {
    let write = std::env::args().any(|a| a == "--write");
    let mut data = load_digits()?;
    let mut rng = Rng(2026);
    rng.shuffle(&mut data);
    let (train_set, test) = data.split_at(data.len() * 4 / 5);
    println!(
        "digits: {} train / {} test images; CNN conv3x3(8)-pool-conv3x3(16)-pool-dense(10)",
        train_set.len(),
        test.len()
    );
    let params = train(train_set, &mut rng)?;
    let float_pred = float_predictions(&params, test)?;

    // Quantize the trained prediction graph, calibrating on 256 training images.
    let float_model = float_model_from_graph(&predict_graph(1), &params)?;
    let calibration: Vec<Vec<f32>> = train_set.iter().take(256).map(|(p, _)| p.clone()).collect();
    let model = quantize(&float_model, &calibration)?;

    let mut int8_pred = Vec::with_capacity(test.len());
    let mut kernel_pred = Vec::with_capacity(test.len());
    for (pixels, _) in test {
        let q = model.quantize_input(pixels);
        let reference = model.run_reference(&q)?;
        let kernels = model.run_cortexm(&q).map_err(|e| anyhow::anyhow!("{e}"))?;
        anyhow::ensure!(
            reference == kernels,
            "rlx-cortexm kernels differ from the integer reference"
        );
        int8_pred.push(argmax(&reference));
        kernel_pred.push(argmax(&kernels));
    }
    let agree = float_pred
        .iter()
        .zip(&int8_pred)
        .filter(|(a, b)| a == b)
        .count();
    let (f, q, k) = (
        accuracy(&float_pred, test),
        accuracy(&int8_pred, test),
        accuracy(&kernel_pred, test),
    );
    println!("| model                          | held-out accuracy |");
    println!("|--------------------------------|-------------------|");
    println!("| float32 (RLX CPU)              | {f:>16.2}% |");
    println!("| int8 integer reference (host)  | {q:>16.2}% |");
    println!("| int8 rlx-cortexm kernels (host)| {k:>16.2}% |");
    println!(
        "int8 agrees with float on {agree}/{} images; kernels bit-exact with the reference on all",
        test.len()
    );
    anyhow::ensure!(f >= 95.0, "float accuracy {f:.2}% is below 95%");
    anyhow::ensure!(
        (f - q).abs() <= 1.0,
        "int8 accuracy {q:.2}% is more than 1 point from float {f:.2}%"
    );
    if write {
        write_outputs(&model, test, &float_pred)?;
    }
    Ok(())
}

pub fn argmax(v: &[i8]) -> usize {
    let mut best = 0;
    for (i, &x) in v.iter().enumerate() {
        if x > v[best] {
            best = i;
        }
    }
    best
}
