//! Data-parallel training of the digits MLP (64-32-10, tanh, softmax
//! cross-entropy, Adam) over `rlx::distributed`: every rank computes the
//! gradients of its share of each global batch, the gradients are
//! all-reduced inside a graph (`ReduceMode::Deterministic`, so any rank
//! count trains the same bits), and rank 0 reports the test accuracy and
//! the samples per second.
//!
//! ```text
//! # TCP: this process is rank 0 and spawns ranks 1..world as child processes
//! cargo run --release -p rlx --features distributed --example dp_digits -- --transport tcp --world 4
//! # MPI: ranks launched by mpirun
//! cargo build --release -p rlx --features mpi --example dp_digits
//! mpirun -np 4 --oversubscribe target/release/examples/dp_digits
//! ```
//!
//! Options: `--transport tcp|mpi` (default: mpi under mpirun, else tcp),
//! `--world N` (TCP), `--frame-check mac|checksum` (TCP; default mac: see
//! `FrameCheck`), `--epochs E` (default 12), `--min-accuracy A` (exit
//! with an error below it; default 0.9).
#[path = "common/digits.rs"]
mod digits;

use anyhow::{bail, ensure, Context};
use rlx::distributed::{
    serve_trainer, serve_trainer_here, DataRef, FrameCheck, NodeControl, ProcessGroup, ReduceMode,
    TcpConfig, TcpGroup, TrainSpec, WeightRef,
};
use rlx::runtime::dist::{resolve_weight_bytes, OptimSpec};
use rlx::{DType, Graph, GraphExt, HostTensor, Session, Shape};
use std::process::{Child, Command};
use std::sync::Arc;
use std::time::Duration;

const PIXELS: usize = 64;
const CLASSES: usize = 10;
const HIDDEN: usize = 32;
const MICRO_BATCH: usize = 16;
const MICRO_BATCHES: usize = 4;
const SECRET_VAR: &str = "DP_DIGITS_SECRET";

struct Args {
    transport: String,
    world: usize,
    epochs: usize,
    min_accuracy: f32,
    rank: Option<usize>,
    coordinator: Option<String>,
    frame_check: FrameCheck,
}

fn args() -> anyhow::Result<Args> {
    let mut a = Args {
        transport: if std::env::var_os("OMPI_COMM_WORLD_SIZE").is_some() {
            "mpi".into()
        } else {
            "tcp".into()
        },
        world: 1,
        epochs: 12,
        min_accuracy: 0.9,
        rank: None,
        coordinator: None,
        frame_check: FrameCheck::Mac,
    };
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        let mut v = || it.next().with_context(|| format!("{k} needs a value"));
        match k.as_str() {
            "--transport" => a.transport = v()?,
            "--world" => a.world = v()?.parse()?,
            "--epochs" => a.epochs = v()?.parse()?,
            "--min-accuracy" => a.min_accuracy = v()?.parse()?,
            "--rank" => a.rank = Some(v()?.parse()?),
            "--coordinator" => a.coordinator = Some(v()?),
            "--frame-check" => {
                a.frame_check = match v()?.as_str() {
                    "mac" => FrameCheck::Mac,
                    "checksum" => FrameCheck::Checksum,
                    c => bail!("--frame-check {c:?}: mac or checksum"),
                }
            }
            _ => bail!("unknown argument {k}"),
        }
    }
    ensure!(
        a.world >= 1 && MICRO_BATCHES.is_multiple_of(a.world),
        "--world must divide {MICRO_BATCHES}"
    );
    Ok(a)
}

fn logits(g: &mut Graph, x: rlx::NodeId) -> rlx::NodeId {
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

fn loss_graph() -> Graph {
    let mut g = Graph::new("dp_digits");
    let x = g.input("x", Shape::new(&[MICRO_BATCH, PIXELS], DType::F32));
    let y = g.input("y", Shape::new(&[MICRO_BATCH, CLASSES], DType::F32));
    let z = logits(&mut g, x);
    let lp = g.log_softmax(z, -1);
    let picked = g.mul(y, lp);
    let s = g.sum(picked, &[0, 1], false);
    let loss = g.mul(s, g.constant(-1.0 / MICRO_BATCH as f64, DType::F32));
    g.set_outputs(vec![loss]);
    g
}

type Split = (Vec<(Vec<f32>, usize)>, Vec<(Vec<f32>, usize)>);

/// The shuffled data set split 4:1 into train and test.
fn data() -> anyhow::Result<Split> {
    let mut all = digits::load_digits()?;
    digits::Rng(7).shuffle(&mut all);
    let test = all.split_off(all.len() * 4 / 5);
    Ok((all, test))
}

fn spec(train: &[(Vec<f32>, usize)], epochs: usize) -> anyhow::Result<TrainSpec> {
    let n = train.len() / (MICRO_BATCH * MICRO_BATCHES) * (MICRO_BATCH * MICRO_BATCHES);
    let x: Vec<f32> = train[..n]
        .iter()
        .flat_map(|(p, _)| p.iter().copied())
        .collect();
    let mut y = vec![0f32; n * CLASSES];
    for (i, (_, l)) in train[..n].iter().enumerate() {
        y[i * CLASSES + l] = 1.0;
    }
    let mut rng = digits::Rng(11);
    let mut init = |fan_in: usize, dims: &[usize]| -> anyhow::Result<WeightRef> {
        let v: Vec<f32> = (0..dims.iter().product())
            .map(|_| rng.uniform((1.0 / fan_in as f32).sqrt()))
            .collect();
        Ok(WeightRef::Inline(HostTensor::from_vec(v, dims)?))
    };
    let params = vec![
        ("w1".to_string(), init(PIXELS, &[PIXELS, HIDDEN])?),
        (
            "b1".to_string(),
            WeightRef::Inline(HostTensor::zeros(DType::F32, &[HIDDEN])),
        ),
        ("w2".to_string(), init(HIDDEN, &[HIDDEN, CLASSES])?),
        (
            "b2".to_string(),
            WeightRef::Inline(HostTensor::zeros(DType::F32, &[CLASSES])),
        ),
    ];
    let data = DataRef {
        x: WeightRef::Inline(HostTensor::from_vec(x, &[n, PIXELS])?),
        y: WeightRef::Inline(HostTensor::from_vec(y, &[n, CLASSES])?),
    };
    let mut s = TrainSpec::new(&loss_graph(), params, data);
    s.micro_batch = MICRO_BATCH;
    s.micro_batches = MICRO_BATCHES;
    s.steps = epochs * n / (MICRO_BATCH * MICRO_BATCHES);
    s.optimizer = OptimSpec::Adam { lr: 0.01 };
    s.mode = ReduceMode::Deterministic;
    s.threads = Some(1);
    Ok(s)
}

fn accuracy(params: &[(String, HostTensor)], test: &[(Vec<f32>, usize)]) -> anyhow::Result<f32> {
    let mut g = Graph::new("dp_digits_predict");
    let x = g.input("x", Shape::new(&[test.len(), PIXELS], DType::F32));
    let z = logits(&mut g, x);
    let c = g.argmax(z, -1, false);
    g.set_outputs(vec![c]);
    let mut c = Session::new(rlx::Device::Cpu).try_compile(g)?;
    for (n, t) in params {
        c.set_param_typed(n, t)?;
    }
    let xs: Vec<f32> = test.iter().flat_map(|(p, _)| p.iter().copied()).collect();
    let pred = c.try_run(&[("x", &xs)])?;
    let right = pred[0]
        .iter()
        .zip(test)
        .filter(|(p, (_, l))| **p as usize == *l)
        .count();
    Ok(right as f32 / test.len() as f32)
}

/// Trains as this process's rank of `group`; rank 0 ships the spec and reports.
fn train(group: Arc<dyn ProcessGroup>, a: &Args, transport: &str) -> anyhow::Result<()> {
    let control = NodeControl::new();
    if group.rank() != 0 {
        serve_trainer(&group, 0, &control, &resolve_weight_bytes)?;
        return Ok(());
    }
    let (train, test) = data()?;
    let spec = spec(&train, a.epochs)?;
    let report = serve_trainer_here(&group, &spec, &control, &resolve_weight_bytes)?;
    let m = &report.metrics;
    let acc = accuracy(&m.params, &test)?;
    println!(
        "dp_digits: {transport}, {} ranks, {} steps of {} samples: loss {:.4} -> {:.4}, \
         test accuracy {:.2}% ({} images), {:.0} samples/s",
        report.world,
        spec.steps,
        spec.global_batch(),
        m.losses.first().copied().unwrap_or(f64::NAN),
        m.losses.last().copied().unwrap_or(f64::NAN),
        acc * 100.0,
        test.len(),
        report.mean_samples_per_sec
    );
    ensure!(
        acc >= a.min_accuracy,
        "test accuracy {acc} is below {}",
        a.min_accuracy
    );
    Ok(())
}

fn tcp(a: &Args) -> anyhow::Result<()> {
    let timeout = Duration::from_secs(60);
    if let (Some(rank), Some(coord)) = (a.rank, a.coordinator.as_ref()) {
        let secret = std::env::var(SECRET_VAR).context("a child rank needs its secret")?;
        let cfg = TcpConfig::new(coord.clone(), rank, a.world, secret)
            .timeout(timeout)
            .frame_check(a.frame_check);
        return train(Arc::new(TcpGroup::join(cfg)?), a, "tcp");
    }
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    let coord = listener.local_addr()?.to_string();
    let secret = format!(
        "{:x}",
        (std::process::id() as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)
    );
    let exe = std::env::current_exe()?;
    let mut children: Vec<Child> = (1..a.world)
        .map(|r| {
            Command::new(&exe)
                .args(["--transport", "tcp", "--world", &a.world.to_string()])
                .args(["--epochs", &a.epochs.to_string(), "--rank", &r.to_string()])
                .args(["--coordinator", &coord])
                .args(["--frame-check", a.frame_check.name()])
                .env(SECRET_VAR, &secret)
                .spawn()
                .context("spawning a rank")
        })
        .collect::<anyhow::Result<_>>()?;
    let cfg = TcpConfig::new(coord, 0, a.world, &secret)
        .timeout(timeout)
        .frame_check(a.frame_check);
    let result = TcpGroup::join_with_listener(cfg, listener)
        .map_err(anyhow::Error::from)
        .and_then(|g| train(Arc::new(g), a, "tcp"));
    // Reap every child (no zombies), killing them if rank 0 failed.
    let mut failed = Vec::new();
    for (i, c) in children.iter_mut().enumerate() {
        if result.is_err() {
            let _ = c.kill();
        }
        if !c.wait()?.success() {
            failed.push(i + 1);
        }
    }
    result?;
    ensure!(failed.is_empty(), "ranks {failed:?} failed");
    Ok(())
}

#[cfg(feature = "mpi")]
fn mpi(a: &Args) -> anyhow::Result<()> {
    let g = rlx::distributed::MpiGroup::init(Duration::from_secs(60))?;
    train(Arc::new(g), a, "mpi")
}

#[cfg(not(feature = "mpi"))]
fn mpi(_: &Args) -> anyhow::Result<()> {
    bail!("this build has no MPI: build with --features mpi")
}

fn main() -> anyhow::Result<()> {
    let a = args()?;
    match a.transport.as_str() {
        "tcp" => tcp(&a),
        "mpi" => mpi(&a),
        t => bail!("unknown transport {t:?} (tcp or mpi)"),
    }
}
