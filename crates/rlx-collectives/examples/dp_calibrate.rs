//! Calibrates the placement planner against measured data-parallel training.
//!
//! Trains the digits MLP shape (64-128-10, tanh, softmax cross-entropy) data
//! parallel at 1, 2 and 4 ranks on one global batch: each rank runs the
//! `rlx-autodiff` gradient graph on its shard (one CPU thread per rank),
//! the gradients are ring all-reduced (mean) over the chosen transport, and
//! SGD updates the weights. Next to each measured step time it prints the
//! planner's prediction, made from two measurements taken in the same run:
//! the single-rank compute rate (gradient graph on the whole batch) and the
//! link (ping-pong between two ranks: latency from an 8-byte message,
//! bandwidth from a 4 MiB one). Two predictions per row: (a) each
//! rank's device rate is the single-rank rate × min(1, cores / ranks);
//! (b) each rank's device rate is measured with the `n` ranks running the
//! whole training step on their shards in lockstep (a barrier per step)
//! without the all-reduce, and the link with the `n` ranks exchanging
//! around the ring at once (what a rank really gets on a shared or loaded
//! machine), so (b) tests the planner's step model (compute + ring
//! all-reduce cost) on calibrated devices and links.
//! Each row's measured step and (b)'s compute calibration are taken in
//! [`ROUNDS`] alternating rounds (fresh executables each) and their medians
//! compared, so that a host whose step time drifts or jumps between two
//! levels (this VM's single-rank step does) gives both the same mix.
//! Finally it predicts 8 and 64 ranks on 25 Gb/s Ethernet (10 µs latency).
//!
//! Inputs are synthetic (the step time does not depend on pixel values).
//!
//! `cargo run --release -p rlx-collectives --example dp_calibrate -- [loopback|tcp] [global_batch]`
use rlx_collectives::prelude::*;
use rlx_collectives::Tag;
use rlx_ir::{DType, Graph, GraphExt, Shape};
use rlx_runtime::{CompileOptions, CompiledGraph, Device, Session};
use std::net::TcpListener;
use std::time::{Duration, Instant};

const PIXELS: usize = 64;
const HIDDEN: usize = 128;
const CLASSES: usize = 10;
const PARAMS: [(&str, &[usize]); 4] = [
    ("w1", &[PIXELS, HIDDEN]),
    ("b1", &[HIDDEN]),
    ("w2", &[HIDDEN, CLASSES]),
    ("b2", &[CLASSES]),
];
const WARMUP: usize = 5;
const STEPS: usize = 40;
/// Alternating (measure, calibrate) rounds per row.
const ROUNDS: usize = 5;

/// `[loss, dw1, db1, dw2, db2]` of the mean cross-entropy of a `batch`.
fn grad_graph(batch: usize) -> Graph {
    let mut g = Graph::new("digits_mlp");
    let x = g.input("x", Shape::new(&[batch, PIXELS], DType::F32));
    let y = g.input("y", Shape::new(&[batch, CLASSES], DType::F32));
    let ps: Vec<_> = PARAMS
        .iter()
        .map(|(n, d)| g.param(n, Shape::new(d, DType::F32)))
        .collect();
    let h = g.mm(x, ps[0]);
    let h = g.add(h, ps[1]);
    let h = g.tanh(h);
    let o = g.mm(h, ps[2]);
    let z = g.add(o, ps[3]);
    let lp = g.log_softmax(z, -1);
    let picked = g.mul(y, lp);
    let s = g.sum(picked, &[0, 1], false);
    let loss = g.mul(s, g.constant(-1.0 / batch as f64, DType::F32));
    g.set_outputs(vec![loss]);
    rlx_autodiff::grad_with_loss(&g, &ps).expect("gradient graph")
}

fn compile(batch: usize) -> CompiledGraph {
    let opts = CompileOptions {
        threads: Some(1),
        ..Default::default()
    };
    Session::new(Device::Cpu)
        .try_compile_with(grad_graph(batch), &opts)
        .expect("compile")
}

/// Deterministic pseudo-random values in [-1, 1).
fn values(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed;
    (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 40) as f32 / (1u64 << 23) as f32) - 1.0
        })
        .collect()
}

struct Shard {
    x: Vec<f32>,
    y: Vec<f32>,
}

fn shard(batch: usize, rank: usize) -> Shard {
    let x = values(batch * PIXELS, 1 + rank as u64);
    let mut y = vec![0.0; batch * CLASSES];
    for i in 0..batch {
        y[i * CLASSES + (i + rank) % CLASSES] = 1.0;
    }
    Shard { x, y }
}

fn init_params(exe: &mut CompiledGraph) -> Vec<Vec<f32>> {
    PARAMS
        .iter()
        .enumerate()
        .map(|(i, (n, d))| {
            let v: Vec<f32> = values(d.iter().product(), 100 + i as u64)
                .iter()
                .map(|v| v * 0.1)
                .collect();
            exe.set_param(n, &v);
            v
        })
        .collect()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// One data-parallel rank; returns its step times in seconds. With a
/// group, the gradients are mean all-reduced; without one (`None`, the
/// compute-only calibration), each rank applies its own gradients and
/// waits at `barrier` instead, so that the step does everything but the
/// all-reduce and the ranks still run in lockstep.
fn train_rank(
    pg: Option<&dyn ProcessGroup>,
    (rank, n): (usize, usize),
    global_batch: usize,
    barrier: Option<&std::sync::Barrier>,
) -> Vec<f64> {
    let batch = global_batch / n;
    let mut exe = compile(batch);
    let mut params = init_params(&mut exe);
    let data = shard(batch, rank);
    let mut times = Vec::new();
    for step in 0..WARMUP + STEPS {
        let t0 = Instant::now();
        let out = exe
            .try_run(&[("x", &data.x), ("y", &data.y)])
            .expect("gradient step");
        let flat: Vec<f32> = out[1..].concat();
        let mean = match pg {
            Some(pg) => {
                all_reduce(pg, &flat, ReduceKind::Mean, ReduceMode::Ring).expect("all_reduce")
            }
            None => flat,
        };
        let mut at = 0;
        for (p, (name, _)) in params.iter_mut().zip(PARAMS) {
            for v in p.iter_mut() {
                *v -= 0.05 * mean[at];
                at += 1;
            }
            exe.set_param(name, p);
        }
        if let Some(b) = barrier {
            b.wait();
        }
        if step >= WARMUP {
            times.push(t0.elapsed().as_secs_f64());
        }
    }
    times
}

/// Median seconds of a lockstep step while `n` ranks train at once without
/// the all-reduce ([`train_rank`] with no group; slowest rank's median):
/// what one rank's device delivers while the others share the host.
fn concurrent_compute(n: usize, global_batch: usize) -> f64 {
    let barrier = std::sync::Barrier::new(n);
    let per_rank: Vec<f64> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..n)
            .map(|rank| {
                let barrier = &barrier;
                s.spawn(move || median(train_rank(None, (rank, n), global_batch, Some(barrier))))
            })
            .collect();
        hs.into_iter().map(|h| h.join().expect("rank")).collect()
    });
    per_rank.into_iter().fold(0.0, f64::max)
}

/// `n` connected ranks of `transport`.
fn world(transport: &str, n: usize) -> Vec<Box<dyn ProcessGroup>> {
    let timeout = Duration::from_secs(60);
    match transport {
        "loopback" => LoopbackGroup::new_world(n, timeout)
            .expect("loopback world")
            .into_iter()
            .map(|g| Box::new(g) as Box<dyn ProcessGroup>)
            .collect(),
        "tcp" => {
            let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
            let addr = listener.local_addr().expect("addr").to_string();
            let cfg = |r| TcpConfig::new(addr.clone(), r, n, b"calibrate").timeout(timeout);
            let others: Vec<_> = (1..n)
                .map(|r| {
                    let c = cfg(r);
                    std::thread::spawn(move || TcpGroup::join(c).expect("tcp join"))
                })
                .collect();
            let mut ranks: Vec<Box<dyn ProcessGroup>> = vec![Box::new(
                TcpGroup::join_with_listener(cfg(0), listener).expect("tcp join"),
            )];
            for h in others {
                ranks.push(Box::new(h.join().expect("join thread")));
            }
            ranks
        }
        other => panic!("unknown transport {other:?} (loopback | tcp)"),
    }
}

/// Median step time of rank 0 with `n` ranks.
fn measure_dp(transport: &str, n: usize, global_batch: usize) -> f64 {
    let ranks = world(transport, n);
    let times: Vec<Vec<f64>> = std::thread::scope(|s| {
        let hs: Vec<_> = ranks
            .iter()
            .map(|pg| {
                let at = (pg.rank(), pg.world_size());
                s.spawn(move || train_rank(Some(&**pg), at, global_batch, None))
            })
            .collect();
        hs.into_iter().map(|h| h.join().expect("rank")).collect()
    });
    median(times[0].clone())
}

/// Median one-way time of a `bytes` message between two ranks (half a round trip).
fn ping_pong(ranks: &[Box<dyn ProcessGroup>], bytes: usize, reps: usize) -> f64 {
    let msg = vec![7u8; bytes];
    let tag = Tag::user(GroupId(0), 1);
    std::thread::scope(|s| {
        let echo = s.spawn(|| {
            for _ in 0..reps {
                let m = ranks[1].recv(0, tag).expect("recv");
                ranks[1].send(0, tag, &m).expect("send");
            }
        });
        let mut rtt = Vec::new();
        for _ in 0..reps {
            let t0 = Instant::now();
            ranks[0].send(1, tag, &msg).expect("send");
            ranks[0].recv(1, tag).expect("recv");
            rtt.push(t0.elapsed().as_secs_f64() / 2.0);
        }
        echo.join().expect("echo");
        median(rtt)
    })
}

/// Median time of one ring exchange of a `bytes` message while all `n`
/// ranks of `ranks` send to their right neighbour and receive from their
/// left one at once (slowest rank): the link as each rank sees it when the
/// `n` ranks share the host, as in a ring all-reduce step.
fn ring_exchange(ranks: &[Box<dyn ProcessGroup>], bytes: usize, reps: usize) -> f64 {
    let n = ranks.len();
    let msg = vec![7u8; bytes];
    let barrier = std::sync::Barrier::new(n);
    let tag = Tag::user(GroupId(0), 2);
    std::thread::scope(|s| {
        let hs: Vec<_> = ranks
            .iter()
            .enumerate()
            .map(|(r, pg)| {
                let (msg, barrier) = (&msg, &barrier);
                s.spawn(move || {
                    let mut t = Vec::new();
                    for _ in 0..reps {
                        barrier.wait();
                        let t0 = Instant::now();
                        let got = pg
                            .send_recv((r + 1) % n, msg, (r + n - 1) % n, tag)
                            .expect("ring exchange");
                        t.push(t0.elapsed().as_secs_f64());
                        pg.recycle(got);
                    }
                    median(t)
                })
            })
            .collect();
        hs.into_iter()
            .map(|h| h.join().expect("rank"))
            .fold(0.0, f64::max)
    })
}

/// Hockney fit (latency, bandwidth) of the ring exchange on `n` ranks of
/// `transport`, from an 8-byte and a `big`-byte message.
fn concurrent_link(transport: &str, n: usize, big: usize) -> LinkSpec {
    let ranks = world(transport, n);
    let small = ring_exchange(&ranks, 8, 200);
    let large = ring_exchange(&ranks, big, 30);
    LinkSpec {
        bandwidth_bytes_per_s: (big - 8) as f64 / (large - small).max(1e-9),
        latency_s: small,
    }
}

/// The planner's step time for `n` data-parallel ranks computing at `rate`.
fn predict(model: &ModelProfile, n: usize, rate: f64, link: LinkSpec) -> f64 {
    let device = DeviceSpec {
        memory_bytes: 1 << 34,
        flops_per_s: rate,
    };
    let cluster = ClusterSpec::uniform(n, device, link);
    evaluate_mesh(model, &cluster, DeviceMesh::new(n, 1, 1).expect("mesh"))
        .expect("plan")
        .step
        .total_s()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let transport = args.get(1).map(String::as_str).unwrap_or("loopback");
    let global_batch: usize = args.get(2).map_or(512, |b| b.parse().expect("batch"));
    let cores = std::thread::available_parallelism().map_or(1, |c| c.get());
    let model = ModelProfile::mlp(
        &[PIXELS as u64, HIDDEN as u64, CLASSES as u64],
        global_batch as u64,
    );
    let grad_bytes = model.total_params() as usize * 4;

    // Single-rank compute rate: the gradient graph on the whole batch.
    let mut exe = compile(global_batch);
    init_params(&mut exe);
    let data = shard(global_batch, 0);
    let t1 = median(
        (0..WARMUP + STEPS)
            .map(|_| {
                let t0 = Instant::now();
                exe.try_run(&[("x", &data.x), ("y", &data.y)]).expect("run");
                t0.elapsed().as_secs_f64()
            })
            .collect(),
    );
    let flops: f64 = model.layers.iter().map(|l| l.forward_flops).sum::<f64>()
        * (1.0 + model.backward_flops_factor)
        * global_batch as f64;
    let rate = flops / t1;

    // Link: Hockney fit from an 8-byte and a 4 MiB ping-pong.
    let pair = world(transport, 2);
    let small = ping_pong(&pair, 8, 200);
    let big = grad_bytes.max(4 << 20);
    let large = ping_pong(&pair, big, 50);
    drop(pair);
    let link = LinkSpec {
        bandwidth_bytes_per_s: (big - 8) as f64 / (large - small).max(1e-9),
        latency_s: small,
    };
    println!(
        "transport {transport}, {cores} cores, MLP 64-{HIDDEN}-10 ({} params), global batch {global_batch}",
        model.total_params()
    );
    println!(
        "measured: compute {:.3} GFLOP/s per rank ({:.3} ms/step alone), link latency {:.1} µs, bandwidth {:.2} GB/s",
        rate / 1e9,
        t1 * 1e3,
        link.latency_s * 1e6,
        link.bandwidth_bytes_per_s / 1e9
    );
    println!("| ranks | measured step (ms) | samples/s | (a) predicted (ms) | (a) / measured | concurrent rate (GFLOP/s) | concurrent link | (b) predicted (ms) | (b) / measured |");
    println!("|---|---|---|---|---|---|---|---|---|");
    for n in [1, 2, 4] {
        let (measured, compute): (Vec<f64>, Vec<f64>) = (0..ROUNDS)
            .map(|_| {
                (
                    measure_dp(transport, n, global_batch),
                    concurrent_compute(n, global_batch),
                )
            })
            .unzip();
        let measured = median(measured);
        let share = (cores as f64 / n as f64).min(1.0);
        let predicted_a = predict(&model, n, rate * share, link);
        let concurrent = flops / n as f64 / median(compute);
        let shared_link = if n > 1 {
            concurrent_link(transport, n, big)
        } else {
            link
        };
        let predicted_b = predict(&model, n, concurrent, shared_link);
        println!(
            "| {n} | {:.3} | {:.0} | {:.3} | {:.2} | {:.2} | {:.1} µs, {:.2} GB/s | {:.3} | {:.2} |",
            measured * 1e3,
            global_batch as f64 / measured,
            predicted_a * 1e3,
            predicted_a / measured,
            concurrent / 1e9,
            shared_link.latency_s * 1e6,
            shared_link.bandwidth_bytes_per_s / 1e9,
            predicted_b * 1e3,
            predicted_b / measured
        );
    }
    let ethernet = LinkSpec::gbit(25.0, 10.0);
    println!("predicted on 25 Gb/s Ethernet (10 µs), one such rank per node, global batch {global_batch} and 64 × that:");
    for n in [8usize, 64] {
        for gb in [global_batch as u64, 64 * global_batch as u64] {
            let mut m = model.clone();
            m.global_batch = gb;
            let device = DeviceSpec {
                memory_bytes: 1 << 34,
                flops_per_s: rate,
            };
            let plan =
                plan_placement(&m, &ClusterSpec::uniform(n, device, ethernet)).expect("plan");
            let s = plan.step;
            println!(
                "  {n} ranks, batch {gb}: {:.3} ms/step ({:.0} samples/s; compute {:.3} ms, all-reduce {:.3} ms), mesh {:?}",
                s.total_s() * 1e3,
                gb as f64 / s.total_s(),
                s.compute_s * 1e3,
                s.data_all_reduce_s * 1e3,
                plan.mesh
            );
        }
    }
}
