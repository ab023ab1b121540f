//! The digits MLP trained with plain SGD, the whole step (forward,
//! backward by reverse-mode autodiff, update) one graph whose params are
//! updated on the device (`run_updating`): shared by the
//! `gpu_digits` example and the `digits_training` test.
#![allow(dead_code)]

use flate2::read::GzDecoder;
use rlx_driver::{Backend, Executable};
use rlx_ir::{DType, Graph, GraphExt, HostTensor, NodeId, Shape};
use std::io::Read;

const PIXELS: usize = 64;
const CLASSES: usize = 10;
const HIDDEN: usize = 64;
const BATCH: usize = 32;
const LR: f64 = 0.3;
const EPOCHS: usize = 20;
pub const PARAMS: [&str; 4] = ["w1", "b1", "w2", "b2"];

/// (pixels / 16, label) per image of the committed scikit-learn digits.
pub fn digits() -> Vec<(Vec<f32>, usize)> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../rlx/examples/data/digits/digits.csv.gz"
    );
    let mut text = String::new();
    GzDecoder::new(std::fs::File::open(path).unwrap())
        .read_to_string(&mut text)
        .unwrap();
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let v: Vec<f32> = l.split(',').map(|x| x.trim().parse().unwrap()).collect();
            (
                v[..PIXELS].iter().map(|p| p / 16.0).collect(),
                v[PIXELS] as usize,
            )
        })
        .collect()
}

fn logits(g: &mut Graph, x: NodeId) -> NodeId {
    let w1 = g.param("w1", Shape::new(&[PIXELS, HIDDEN], DType::F32));
    let b1 = g.param("b1", Shape::new(&[HIDDEN], DType::F32));
    let w2 = g.param("w2", Shape::new(&[HIDDEN, CLASSES], DType::F32));
    let b2 = g.param("b2", Shape::new(&[CLASSES], DType::F32));
    let h = g.mm(x, w1);
    let h = g.add(h, b1);
    let h = g.tanh(h);
    let o = g.mm(h, w2);
    g.add(o, b2)
}

/// `[loss, w1', b1', w2', b2']`: one SGD step on softmax cross-entropy.
pub fn train_step_graph() -> Graph {
    let mut g = Graph::new("digits_step");
    let x = g.input("x", Shape::new(&[BATCH, PIXELS], DType::F32));
    let y = g.input("y", Shape::new(&[BATCH, CLASSES], DType::F32));
    let z = logits(&mut g, x);
    let lp = g.log_softmax(z, -1);
    let picked = g.mul(y, lp);
    let s = g.sum(picked, &[0, 1], false);
    let loss = g.mul(s, g.constant(-1.0 / BATCH as f64, DType::F32));
    g.set_outputs(vec![loss]);
    let params: Vec<NodeId> = PARAMS.iter().map(|n| g.find_param(n).unwrap()).collect();
    let mut d = rlx_autodiff::grad_with_loss(&g, &params).unwrap();
    let mut outs = vec![d.outputs()[0]];
    for (k, name) in PARAMS.iter().enumerate() {
        let p = d.find_param(name).unwrap();
        let grad = d.outputs()[1 + k];
        let step = d.mul(grad, d.constant(LR, DType::F32));
        outs.push(d.sub(p, step));
    }
    d.set_outputs(outs);
    d
}

fn predict_graph(n: usize) -> Graph {
    let mut g = Graph::new("digits_predict");
    let x = g.input("x", Shape::new(&[n, PIXELS], DType::F32));
    let z = logits(&mut g, x);
    let c = g.argmax(z, -1, false);
    g.set_outputs(vec![c]);
    g
}

fn compile(backend: &dyn Backend, g: &Graph) -> Box<dyn Executable> {
    let lir = rlx_compile::lower(g, &|op| backend.claims(op), &Default::default()).unwrap();
    backend.compile(lir).unwrap()
}

/// Manifest index of each of [`PARAMS`] in `exe`.
fn param_slots(exe: &dyn Executable) -> Vec<usize> {
    PARAMS
        .iter()
        .map(|n| exe.lir().io.params.iter().position(|p| p.1 == *n).unwrap())
        .collect()
}

/// Trains on the first 4/5 of the images; returns the test accuracy and
/// the final weights.
pub fn train(backend: &dyn Backend, data: &[(Vec<f32>, usize)]) -> (f32, Vec<HostTensor>) {
    let (train, test) = data.split_at(data.len() * 4 / 5);
    let mut step = compile(backend, &train_step_graph());
    let slots = param_slots(step.as_ref());
    let init = [
        HostTensor::from_vec(
            uniform_init(PIXELS * HIDDEN, -0.125, 0.125, 1),
            &[PIXELS, HIDDEN],
        )
        .unwrap(),
        HostTensor::zeros(DType::F32, &[HIDDEN]),
        HostTensor::from_vec(
            uniform_init(HIDDEN * CLASSES, -0.125, 0.125, 2),
            &[HIDDEN, CLASSES],
        )
        .unwrap(),
        HostTensor::zeros(DType::F32, &[CLASSES]),
    ];
    for (&s, v) in slots.iter().zip(&init) {
        step.set_param(s, v).unwrap();
    }
    let updates: Vec<(usize, usize)> = slots.iter().enumerate().map(|(k, &s)| (k + 1, s)).collect();
    for _ in 0..EPOCHS {
        for batch in train.chunks_exact(BATCH) {
            let x: Vec<f32> = batch.iter().flat_map(|(p, _)| p.iter().copied()).collect();
            let mut y = vec![0.0f32; BATCH * CLASSES];
            for (r, (_, l)) in batch.iter().enumerate() {
                y[r * CLASSES + l] = 1.0;
            }
            let x = HostTensor::from_vec(x, &[BATCH, PIXELS]).unwrap();
            let y = HostTensor::from_vec(y, &[BATCH, CLASSES]).unwrap();
            let loss = step.run_updating(&[&x, &y], &updates).unwrap();
            assert!(loss[0].to_vec::<f32>().unwrap()[0].is_finite());
        }
    }
    let weights: Vec<HostTensor> = slots
        .iter()
        .map(|&s| step.param_value(s).unwrap())
        .collect();
    let mut predict = compile(backend, &predict_graph(test.len()));
    for (&s, w) in param_slots(predict.as_ref()).iter().zip(&weights) {
        predict.set_param(s, w).unwrap();
    }
    let x: Vec<f32> = test.iter().flat_map(|(p, _)| p.iter().copied()).collect();
    let x = HostTensor::from_vec(x, &[test.len(), PIXELS]).unwrap();
    let pred = predict.run(&[&x]).unwrap()[0].to_vec::<i64>().unwrap();
    let right = pred
        .iter()
        .zip(test)
        .filter(|(p, (_, l))| **p as usize == *l)
        .count();
    (right as f32 / test.len() as f32, weights)
}

/// Deterministic initial weights in `[lo, hi)` (a 64-bit LCG).
pub fn uniform_init(n: usize, lo: f32, hi: f32, seed: u64) -> Vec<f32> {
    let mut s = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            lo + (hi - lo) * ((s >> 40) as f32 / (1u64 << 24) as f32)
        })
        .collect()
}
