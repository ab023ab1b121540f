//! LoRA fine-tuning of a small pretrained MLP with `rlx::peft` graph
//! builders and a [`TrainStep`] that trains only the adapters.
//!
//! 1. Pretrain a 64-64-10 MLP (PyTorch `Linear` layout, PEFT's module names
//!    `fc1` / `fc2`) on the scikit-learn digits 0-6 only.
//! 2. New task: all ten digits. The pretrained model never saw 7, 8, 9.
//! 3. Wrap both linears with LoRA (r = 4, alpha = 8), freeze the base
//!    weights, train only `lora_A` / `lora_B` (808 of 5,618 parameters).
//! 4. Save the adapter in PEFT's `save_pretrained` format (loads with
//!    `PeftModel.from_pretrained`).
//!
//! `cargo run -p rlx --example lora_digits`
use flate2::read::GzDecoder;
use rlx::optim::{AdamConfig, LrSchedule};
use rlx::peft::graph::{linear, lora, LinearNodes};
use rlx::peft::{AdapterSet, LoraConfig};
use rlx::prelude::*;
use rlx::train::TrainStep;
use std::collections::BTreeMap;
use std::io::Read;

const HIDDEN: usize = 64;
const CLASSES: usize = 10;
const BATCH: usize = 32;
const LORA: LoraConfig = LoraConfig {
    r: 4,
    lora_alpha: 8.0,
    use_rslora: false,
};
const PREFIX: &str = "base_model.model";

struct Rng(u64);
impl Rng {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn uniform(&mut self, bound: f32) -> f32 {
        ((self.next_u64() >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0) * bound
    }
    fn shuffle<T>(&mut self, v: &mut [T]) {
        for i in (1..v.len()).rev() {
            v.swap(i, (self.next_u64() % (i as u64 + 1)) as usize);
        }
    }
    fn fill(&mut self, n: usize, fan_in: usize) -> Vec<f32> {
        (0..n)
            .map(|_| self.uniform((1.0 / fan_in as f32).sqrt()))
            .collect()
    }
}

type Data = Vec<(Vec<f32>, usize)>;

fn load_digits() -> rlx::Result<Data> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/examples/data/digits/digits.csv.gz"
    );
    let mut text = String::new();
    GzDecoder::new(std::fs::File::open(path)?).read_to_string(&mut text)?;
    let mut rows = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let v: Vec<f32> = line.split(',').map(str::parse).collect::<Result<_, _>>()?;
        anyhow::ensure!(
            v.len() == 65,
            "{path}: line {} has {} fields",
            n + 1,
            v.len()
        );
        rows.push((v[..64].iter().map(|p| p / 16.0).collect(), v[64] as usize));
    }
    Ok(rows)
}

/// The MLP's logits; with `adapt`, both linears carry LoRA adapters.
fn logits(g: &mut Graph, x: NodeId, adapt: bool) -> rlx::Result<NodeId> {
    let layer = |g: &mut Graph, x: NodeId, name: &str, din: usize, dout: usize| {
        let w = g.param(
            &format!("{name}.weight"),
            Shape::new(&[dout, din], DType::F32),
        );
        let b = g.param(&format!("{name}.bias"), Shape::new(&[dout], DType::F32));
        let base = LinearNodes::new(w, Some(b));
        if adapt {
            lora(g, &format!("{PREFIX}.{name}"), x, base, &LORA).map(|n| n.output)
        } else {
            linear(g, x, base)
        }
    };
    let h = layer(g, x, "fc1", 64, HIDDEN)?;
    let h = g.tanh(h);
    Ok(layer(g, h, "fc2", HIDDEN, CLASSES)?)
}

fn loss_graph(adapt: bool) -> rlx::Result<Graph> {
    let mut g = Graph::new("digits_mlp");
    let x = g.input("x", Shape::new(&[BATCH, 64], DType::F32));
    let y = g.input("y", Shape::new(&[BATCH, CLASSES], DType::F32));
    let z = logits(&mut g, x, adapt)?;
    let lp = g.log_softmax(z, -1);
    let picked = g.mul(y, lp);
    let s = g.sum(picked, &[0, 1], false);
    let loss = g.mul(s, g.constant(-1.0 / BATCH as f64, DType::F32));
    g.set_outputs(vec![loss]);
    Ok(g)
}

fn accuracy<'a>(
    params: impl Iterator<Item = (&'a str, &'a [usize], &'a [f32])>,
    adapt: bool,
    data: &[(Vec<f32>, usize)],
) -> rlx::Result<f32> {
    let mut g = Graph::new("predict");
    let x = g.input("x", Shape::new(&[data.len(), 64], DType::F32));
    let z = logits(&mut g, x, adapt)?;
    let c = g.argmax(z, -1, false);
    g.set_outputs(vec![c]);
    let mut c = Session::new(Device::Cpu).try_compile(g)?;
    for (n, _, v) in params {
        c.try_set_param(n, v)?;
    }
    let xs: Vec<f32> = data.iter().flat_map(|(p, _)| p.iter().copied()).collect();
    let pred = c.try_run(&[("x", &xs)])?;
    let right = pred[0]
        .iter()
        .zip(data)
        .filter(|(p, (_, l))| **p as usize == *l)
        .count();
    Ok(right as f32 / data.len() as f32)
}

fn train<O: Optimizer>(
    t: &mut TrainStep<O>,
    data: &[(Vec<f32>, usize)],
    epochs: usize,
    rng: &mut Rng,
    what: &str,
) -> rlx::Result<()> {
    let mut order: Vec<usize> = (0..data.len()).collect();
    for epoch in 1..=epochs {
        rng.shuffle(&mut order);
        let batches = data.len() / BATCH;
        let mut total = 0.0;
        for b in 0..batches {
            let idx = &order[b * BATCH..(b + 1) * BATCH];
            let x: Vec<f32> = idx
                .iter()
                .flat_map(|&i| data[i].0.iter().copied())
                .collect();
            let mut y = vec![0.0; BATCH * CLASSES];
            for (r, &i) in idx.iter().enumerate() {
                y[r * CLASSES + data[i].1] = 1.0;
            }
            total += t.step(&[("x", &x), ("y", &y)])?.loss;
        }
        println!(
            "{what} epoch {epoch:>2}/{epochs}  loss {:.4}",
            total / batches as f32
        );
    }
    Ok(())
}

/// Runs the example; returns (pretrained on A, pretrained on B, LoRA on B, LoRA on A).
pub fn run() -> rlx::Result<(f32, f32, f32, f32)> {
    let mut data = load_digits()?;
    let mut rng = Rng(7);
    rng.shuffle(&mut data);
    let (train_b, test_b) = data.split_at(data.len() * 4 / 5);
    let seen =
        |d: &[(Vec<f32>, usize)]| -> Data { d.iter().filter(|(_, l)| *l < 7).cloned().collect() };
    let (train_a, test_a) = (seen(train_b), seen(test_b));
    let (train_a, test_a) = (train_a.as_slice(), test_a.as_slice());

    // 1. Pretrain.
    let adam = Adam::new(AdamConfig {
        lr: 3e-3,
        ..AdamConfig::default()
    })?;
    let names = ["fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"];
    let mut base = TrainStep::new(&loss_graph(false)?, &names, adam)?;
    base.set_param("fc1.weight", &rng.fill(HIDDEN * 64, 64))?;
    base.set_param("fc1.bias", &[0.0; HIDDEN])?;
    base.set_param("fc2.weight", &rng.fill(CLASSES * HIDDEN, HIDDEN))?;
    base.set_param("fc2.bias", &[0.0; CLASSES])?;
    train(&mut base, train_a, 15, &mut rng, "pretrain")?;
    let pre_a = accuracy(base.params(), false, test_a)?;
    let pre_b = accuracy(base.params(), false, test_b)?;
    println!(
        "pretrained: {:.2}% on digits 0-6, {:.2}% on all digits",
        pre_a * 100.0,
        pre_b * 100.0
    );

    // 2. LoRA on all ten digits: only the adapters train.
    let g = loss_graph(true)?;
    let adapters: Vec<String> = g
        .params()
        .iter()
        .map(|p| p.1.to_string())
        .filter(|n| n.contains("lora_"))
        .collect();
    let trainable: Vec<&str> = adapters.iter().map(String::as_str).collect();
    let mut adam = Adam::new(AdamConfig {
        lr: 1e-2,
        ..AdamConfig::default()
    })?;
    adam.set_schedule(LrSchedule::Cosine {
        t_max: 20 * (train_b.len() / BATCH) as u64,
        eta_min: 1e-3,
    });
    let mut tuned = TrainStep::new(&g, &trainable, adam)?.clip_grad_norm(1.0);
    for (n, _, v) in base.params() {
        tuned.set_param(n, v)?;
    }
    let shapes: Vec<(String, Vec<usize>)> = tuned
        .params()
        .map(|(n, d, _)| (n.to_string(), d.to_vec()))
        .collect();
    for (n, dims) in &shapes {
        // PEFT's init: lora_A random (kaiming-uniform-like), lora_B zero, so
        // the adapted model starts equal to the base.
        if n.contains("lora_A") {
            tuned.set_param(n, &rng.fill(dims.iter().product(), dims[1]))?;
        } else if n.contains("lora_B") {
            tuned.set_param(n, &vec![0.0; dims.iter().product()])?;
        }
    }
    let total: usize = shapes
        .iter()
        .map(|(_, d)| d.iter().product::<usize>())
        .sum();
    let lora_params: usize = shapes
        .iter()
        .filter(|(n, _)| n.contains("lora_"))
        .map(|(_, d)| d.iter().product::<usize>())
        .sum();
    println!(
        "LoRA r={} alpha={}: training {lora_params} of {total} parameters",
        LORA.r, LORA.lora_alpha
    );
    train(&mut tuned, train_b, 20, &mut rng, "lora")?;
    let lora_b = accuracy(tuned.params(), true, test_b)?;
    let lora_a = accuracy(tuned.params(), true, test_a)?;
    println!(
        "after LoRA: {:.2}% on all digits (was {:.2}%), {:.2}% on digits 0-6",
        lora_b * 100.0,
        pre_b * 100.0,
        lora_a * 100.0
    );
    for (n, _, v) in base.params() {
        anyhow::ensure!(tuned.param(n) == Some(v), "base param {n} moved");
    }

    // 3. Save in PEFT's format.
    let config = format!(
        r#"{{"peft_type": "LORA", "r": {}, "lora_alpha": {}, "use_rslora": false, "target_modules": ["fc1", "fc2"], "bias": "none", "fan_in_fan_out": false}}"#,
        LORA.r, LORA.lora_alpha
    );
    let tensors: BTreeMap<String, HostTensor> = tuned
        .params()
        .filter(|(n, _, _)| n.contains("lora_"))
        .map(|(n, d, v)| Ok((n.to_string(), HostTensor::from_slice(v, d)?)))
        .collect::<rlx::Result<_>>()?;
    let dir = std::env::temp_dir().join("rlx-lora-digits");
    AdapterSet::from_tensors(&config, tensors)?.save(&dir)?;
    let reloaded = AdapterSet::load(&dir)?;
    println!(
        "adapter saved to {} ({} tensors, PEFT format)",
        dir.display(),
        reloaded.tensors().len()
    );
    Ok((pre_a, pre_b, lora_b, lora_a))
}

#[allow(dead_code)]
fn main() -> rlx::Result<()> {
    let (_, pre_b, lora_b, _) = run()?;
    anyhow::ensure!(
        lora_b >= 0.9 && lora_b > pre_b + 0.15,
        "LoRA did not learn the new task: {pre_b} -> {lora_b}"
    );
    Ok(())
}
