//! Data-parallel training over ranks equals single-process training on the
//! same global batch: world 1 against numpy's float64 trajectory
//! (`tools/gen_dist_fixtures.py`), 2 and 4 ranks against world 1 —
//! bitwise with `ReduceMode::Deterministic`, within 1e-6 relative with
//! `Ring` — on loopback threads and over TCP.
#![cfg(feature = "dist")]

mod dist_common;
use dist_common::*;
use rlx_collectives::{CollectiveError, ProcessGroup, ReduceMode, TcpConfig, TcpGroup};
use rlx_ir::{DType, Graph, GraphExt, Shape};
use rlx_runtime::dist::node::{serve_trainer, serve_trainer_here, NodeControl};
use rlx_runtime::dist::{
    resolve_weight_bytes, run_train, DataRef, DistError, GradReduce, OptimSpec, TrainMetrics,
    TrainSpec, WeightRef,
};
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Mean softmax cross-entropy of tanh(x w1 + b1) w2 + b2 on a micro-batch.
fn loss_graph(batch: usize) -> Graph {
    let (d, h, c) = (6, 5, 3);
    let mut g = Graph::new("dp_mlp");
    let x = g.input("x", Shape::new(&[batch, d], DType::F32));
    let y = g.input("y", Shape::new(&[batch, c], DType::F32));
    let w1 = g.param("w1", Shape::new(&[d, h], DType::F32));
    let b1 = g.param("b1", Shape::new(&[h], DType::F32));
    let w2 = g.param("w2", Shape::new(&[h, c], DType::F32));
    let b2 = g.param("b2", Shape::new(&[c], DType::F32));
    let a = g.mm(x, w1);
    let a = g.add(a, b1);
    let a = g.tanh(a);
    let z = g.mm(a, w2);
    let z = g.add(z, b2);
    let lp = g.log_softmax(z, -1);
    let picked = g.mul(y, lp);
    let s = g.sum(picked, &[0, 1], false);
    let loss = g.mul(s, g.constant(-1.0 / batch as f64, DType::F32));
    g.set_outputs(vec![loss]);
    g
}

fn spec(mode: ReduceMode) -> TrainSpec {
    let fx = fixture();
    let t = &fx["train"];
    let params = ["w1", "b1", "w2", "b2"]
        .iter()
        .map(|n| (n.to_string(), WeightRef::Inline(tensor(&t["init"][*n]))))
        .collect();
    let data = DataRef {
        x: WeightRef::Inline(tensor(&t["x"])),
        y: WeightRef::Inline(tensor(&t["y"])),
    };
    let mb = t["micro_batch"].as_u64().unwrap() as usize;
    let mut s = TrainSpec::new(&loss_graph(mb), params, data);
    s.micro_batch = mb;
    s.micro_batches = t["micro_batches"].as_u64().unwrap() as usize;
    s.steps = t["steps"].as_u64().unwrap() as usize;
    s.optimizer = OptimSpec::Sgd {
        lr: t["lr"].as_f64().unwrap(),
        momentum: t["momentum"].as_f64().unwrap(),
    };
    s.mode = mode;
    s.threads = Some(1);
    s
}

fn train(
    transport: Transport,
    world: usize,
    mode: ReduceMode,
    reduce: GradReduce,
) -> Vec<TrainMetrics> {
    with_deadline(90, move || {
        on_world(
            transport,
            world,
            Duration::from_secs(20),
            move |pg: Arc<dyn ProcessGroup>| {
                run_train(&pg, pg.rank(), &spec(mode), &resolve_weight_bytes, reduce)
            },
        )
    })
    .into_iter()
    .enumerate()
    .map(|(r, m)| m.unwrap_or_else(|e| panic!("rank {r}: {e}")))
    .collect()
}

fn bits(m: &TrainMetrics) -> (Vec<u64>, Vec<Vec<u32>>) {
    (
        m.losses.iter().map(|l| l.to_bits()).collect(),
        m.params
            .iter()
            .map(|(_, t)| {
                t.to_vec::<f32>()
                    .unwrap()
                    .iter()
                    .map(|v| v.to_bits())
                    .collect()
            })
            .collect(),
    )
}

fn single() -> TrainMetrics {
    train(
        Transport::Loopback,
        1,
        ReduceMode::Deterministic,
        GradReduce::InGraph,
    )
    .remove(0)
}

#[test]
fn one_rank_follows_numpy() {
    let m = single();
    let fx = fixture();
    let t = &fx["train"];
    let want: Vec<f64> = t["losses"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect();
    assert_eq!(m.losses.len(), want.len());
    for (g, w) in m.losses.iter().zip(&want) {
        assert!((g - w).abs() < 1e-5 * w.abs(), "loss {g} vs numpy {w}");
    }
    assert!(
        m.losses.last() < m.losses.first(),
        "training lowers the loss: {:?}",
        m.losses
    );
    for (name, p) in &m.params {
        let want = values(&t["final"][name]);
        for (g, w) in p.to_vec::<f32>().unwrap().iter().zip(&want) {
            assert!(
                (*g as f64 - w).abs() < 1e-5 * (1.0 + w.abs()),
                "{name}: {g} vs numpy {w}"
            );
        }
    }
    assert_eq!(m.bytes_reduced, 6 * 8 * (30 + 5 + 15 + 3 + 1));
}

fn check_bitwise(transport: Transport, world: usize) {
    let want = bits(&single());
    for (r, m) in train(
        transport,
        world,
        ReduceMode::Deterministic,
        GradReduce::InGraph,
    )
    .iter()
    .enumerate()
    {
        assert_eq!(
            bits(m),
            want,
            "{transport:?} world {world} rank {r} differs from one rank"
        );
    }
}

fn check_ring(transport: Transport, world: usize) {
    let one = single();
    for m in train(transport, world, ReduceMode::Ring, GradReduce::InGraph) {
        for (g, w) in m.losses.iter().zip(&one.losses) {
            assert!((g - w).abs() <= 1e-6 * w.abs(), "loss {g} vs {w}");
        }
        for ((_, a), (_, b)) in m.params.iter().zip(&one.params) {
            for (x, y) in a
                .to_vec::<f32>()
                .unwrap()
                .iter()
                .zip(b.to_vec::<f32>().unwrap())
            {
                assert!((x - y).abs() <= 1e-6 * y.abs().max(1e-3), "{x} vs {y}");
            }
        }
    }
}

#[test]
fn deterministic_two_ranks_loopback_is_bitwise() {
    check_bitwise(Transport::Loopback, 2);
}

#[test]
fn deterministic_four_ranks_loopback_is_bitwise() {
    check_bitwise(Transport::Loopback, 4);
}

#[test]
fn deterministic_two_and_four_ranks_tcp_are_bitwise() {
    check_bitwise(Transport::Tcp, 2);
    check_bitwise(Transport::Tcp, 4);
}

#[test]
fn ring_two_and_four_ranks_within_1e6() {
    check_ring(Transport::Loopback, 2);
    check_ring(Transport::Loopback, 4);
    check_ring(Transport::Tcp, 4);
}

#[test]
fn host_reduce_equals_in_graph_reduce() {
    let a = train(
        Transport::Loopback,
        2,
        ReduceMode::Deterministic,
        GradReduce::Host,
    );
    assert_eq!(bits(&a[0]), bits(&single()));
}

#[test]
fn shipped_spec_trains_like_a_local_one() {
    let want = bits(&single());
    let reports = with_deadline(90, || {
        on_world(
            Transport::Tcp,
            2,
            Duration::from_secs(20),
            |pg: Arc<dyn ProcessGroup>| {
                let control = NodeControl::new();
                if pg.rank() == 0 {
                    serve_trainer_here(
                        &pg,
                        &spec(ReduceMode::Deterministic),
                        &control,
                        &resolve_weight_bytes,
                    )
                } else {
                    serve_trainer(&pg, 0, &control, &resolve_weight_bytes)
                }
            },
        )
    });
    for (r, rep) in reports.into_iter().enumerate() {
        let rep = rep.unwrap_or_else(|e| panic!("rank {r}: {e}"));
        assert_eq!(rep.world, 2);
        assert!(rep.mean_samples_per_sec > 0.0);
        assert_eq!(bits(&rep.metrics), want, "rank {r}");
    }
}

#[test]
fn bad_specs_are_typed_errors() {
    // 4 micro-batches do not split over 3 ranks.
    let r = with_deadline(30, || {
        on_world(
            Transport::Loopback,
            3,
            Duration::from_secs(5),
            |pg: Arc<dyn ProcessGroup>| {
                run_train(
                    &pg,
                    pg.rank(),
                    &spec(ReduceMode::Ring),
                    &resolve_weight_bytes,
                    GradReduce::InGraph,
                )
            },
        )
    });
    for x in r {
        assert!(
            matches!(x, Err(DistError::InvalidSpec(ref m)) if m.contains("do not split")),
            "{x:?}"
        );
    }
    // A graph text that does not parse, and a rank that is not this process's.
    let r = with_deadline(30, || {
        on_world(
            Transport::Loopback,
            1,
            Duration::from_secs(5),
            |pg: Arc<dyn ProcessGroup>| {
                let mut s = spec(ReduceMode::Ring);
                s.graph_text = "not a graph".into();
                let a =
                    run_train(&pg, 0, &s, &resolve_weight_bytes, GradReduce::InGraph).map(|_| ());
                let b = run_train(
                    &pg,
                    1,
                    &spec(ReduceMode::Ring),
                    &resolve_weight_bytes,
                    GradReduce::InGraph,
                )
                .map(|_| ());
                (a, b)
            },
        )
    });
    assert!(
        matches!(r[0].0, Err(DistError::Graph { .. })),
        "{:?}",
        r[0].0
    );
    assert!(
        matches!(r[0].1, Err(DistError::InvalidSpec(_))),
        "{:?}",
        r[0].1
    );
}

// ---- Faults: a rank that dies or leaves during run_train -------------------

const CHILD_VAR: &str = "DIST_TRAIN_CHILD";
/// Steps enough that no rank finishes before the fault.
const LONG_RUN: usize = 1_000_000;
const FAULT_TIMEOUT: Duration = Duration::from_secs(5);

fn reduce_named(s: &str) -> GradReduce {
    if s == "host" {
        GradReduce::Host
    } else {
        GradReduce::InGraph
    }
}

fn long_spec() -> TrainSpec {
    let mut s = spec(ReduceMode::Ring);
    s.steps = LONG_RUN;
    s
}

fn tcp_config(addr: &str, rank: usize, world: usize) -> TcpConfig {
    TcpConfig::new(addr, rank, world, SECRET)
        .timeout(FAULT_TIMEOUT)
        .rendezvous_timeout(Duration::from_secs(60))
}

/// Entry point of a child rank of `rank_killed_during_run_train_*` (does
/// nothing when run directly): joins, says so, trains until killed.
#[test]
#[ignore = "child process of the run_train SIGKILL tests"]
fn child_trainer() {
    let Ok(spec_s) = std::env::var(CHILD_VAR) else {
        return;
    };
    let p: Vec<&str> = spec_s.split(',').collect();
    let (rank, world) = (p[1].parse().unwrap(), p[2].parse().unwrap());
    let pg: Arc<dyn ProcessGroup> =
        Arc::new(TcpGroup::join(tcp_config(p[0], rank, world)).unwrap());
    println!("joined");
    let r = run_train(
        &pg,
        rank,
        &long_spec(),
        &resolve_weight_bytes,
        reduce_named(p[3]),
    );
    panic!("the child should have been killed, run_train returned {r:?}");
}

/// Kills (and reaps) the child when dropped, so a failing test leaves no
/// process behind.
struct Reaped(std::process::Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Rank 3 of 4 is a child process, SIGKILLed while all four train: each of
/// ranks 0..3 gets a named error from `run_train` within the timeout (plus
/// scheduling slack), and the child is reaped (no zombie in /proc).
fn rank_killed_during_run_train(reduce: &'static str) {
    with_deadline(120, move || {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let mut child = Reaped(
            Command::new(std::env::current_exe().unwrap())
                .args(["--exact", "child_trainer", "--ignored", "--nocapture"])
                .args(["--test-threads=1"])
                .env(CHILD_VAR, format!("{addr},3,4,{reduce}"))
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()
                .unwrap(),
        );
        let survivors: Vec<_> = (0..3)
            .map(|r| {
                let cfg = tcp_config(&addr, r, 4);
                let l = (r == 0).then(|| listener.try_clone().unwrap());
                std::thread::spawn(move || {
                    let pg: Arc<dyn ProcessGroup> = Arc::new(match l {
                        Some(l) => TcpGroup::join_with_listener(cfg, l).unwrap(),
                        None => TcpGroup::join(cfg).unwrap(),
                    });
                    let r = run_train(
                        &pg,
                        r,
                        &long_spec(),
                        &resolve_weight_bytes,
                        reduce_named(reduce),
                    );
                    (r, Instant::now())
                })
            })
            .collect();
        drop(listener);
        let mut out = BufReader::new(child.0.stdout.take().unwrap());
        let mut line = String::new();
        while !line.contains("joined") {
            line.clear();
            assert!(
                out.read_line(&mut line).unwrap() > 0,
                "the child exited before joining"
            );
        }
        // Let every rank compile and run a few steps.
        std::thread::sleep(Duration::from_millis(1500));
        child.0.kill().unwrap(); // SIGKILL
        let killed_at = Instant::now();
        assert!(!child.0.wait().unwrap().success());
        for (r, h) in survivors.into_iter().enumerate() {
            let (res, at) = h.join().unwrap();
            let after = at.saturating_duration_since(killed_at);
            let e = res
                .err()
                .unwrap_or_else(|| panic!("rank {r}: run_train succeeded"));
            eprintln!("{reduce}: rank {r}: {e} ({after:?} after the kill)");
            assert!(
                after < FAULT_TIMEOUT + Duration::from_secs(5),
                "rank {r}: {after:?}"
            );
            assert!(is_peer_failure(&e), "{reduce}: rank {r}: {e}");
        }
        assert!(zombies().is_empty(), "zombies: {:?}", zombies());
    });
}

/// A transport failure, typed (host reduce) or as the in-graph all-reduce's
/// error message.
fn is_peer_failure(e: &DistError) -> bool {
    match e {
        DistError::Collective(c) => matches!(
            c,
            CollectiveError::PeerDisconnected { .. }
                | CollectiveError::TruncatedFrame { .. }
                | CollectiveError::Timeout { .. }
                | CollectiveError::GroupFailed(_)
        ),
        DistError::Graph { context, message } => {
            context.contains("all-reducing gradients")
                && ["disconnected", "truncated", "timed out", "failed earlier"]
                    .iter()
                    .any(|w| message.contains(w))
        }
        _ => false,
    }
}

#[test]
fn rank_killed_during_run_train_host_reduce() {
    rank_killed_during_run_train("host");
}

#[test]
fn rank_killed_during_run_train_in_graph_reduce() {
    rank_killed_during_run_train("graph");
}

/// A rank that stops after 2 steps and drops its group while the others go
/// on: every other rank's `run_train` fails with a named error, on loopback
/// threads and over TCP.
#[test]
fn rank_leaving_during_run_train() {
    for transport in [Transport::Loopback, Transport::Tcp] {
        for reduce in [GradReduce::Host, GradReduce::InGraph] {
            let r = with_deadline(60, move || {
                on_world(
                    transport,
                    4,
                    FAULT_TIMEOUT,
                    move |pg: Arc<dyn ProcessGroup>| {
                        let mut s = long_spec();
                        if pg.rank() == 2 {
                            s.steps = 2;
                        }
                        run_train(&pg, pg.rank(), &s, &resolve_weight_bytes, reduce)
                    },
                )
            });
            for (rank, x) in r.iter().enumerate() {
                match x {
                    Ok(m) => assert_eq!((rank, m.losses.len()), (2, 2), "{transport:?}"),
                    Err(e) => assert!(
                        rank != 2 && is_peer_failure(e),
                        "{transport:?} {reduce:?} rank {rank}: {e}"
                    ),
                }
            }
            assert!(
                r.iter().filter(|x| x.is_err()).count() == 3,
                "{transport:?} {reduce:?}"
            );
        }
    }
}
