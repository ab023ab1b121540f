//! The collective suite over MPI. Not a libtest harness: run every rank under
//! `mpirun` (tools/test_mpi.sh does, for 1..4 ranks). Exits non-zero on any
//! failure. Also checks that Deterministic results are bitwise equal to
//! the loopback transport's, and prints all_reduce timings against a bare
//! rsmpi `all_reduce_into` on the same buffers.

mod common;
use common::*;
use mpi::collective::SystemOperation;
use mpi::traits::*;
use rlx_collectives::*;
use std::time::{Duration, Instant};

fn main() {
    let pg = std::sync::Arc::new(MpiGroup::init(Duration::from_secs(60)).expect("MPI init"));
    let (n, r) = (pg.world_size(), pg.rank());
    let fail = |what: String| -> ! {
        eprintln!("rank {r}/{n}: FAILED: {what}");
        std::process::exit(1);
    };
    match suite(&*pg) {
        Ok(k) => println!("rank {r}/{n}: suite ok ({k} cases)"),
        Err(e) => fail(e),
    }
    let det = det_bits(&*pg).unwrap_or_else(|e| fail(e));
    let lo = on_loopback(n, Duration::from_secs(30), |g| det_bits(g).unwrap());
    if lo.iter().any(|b| b != &det) {
        fail("Deterministic bits differ between MPI and loopback".into());
    }
    println!("rank {r}/{n}: deterministic bitwise equal to loopback");
    in_graph(pg.clone()).unwrap_or_else(|e| fail(e));
    println!("rank {r}/{n}: in-graph collectives match numpy");

    if std::env::var_os("COLLECTIVES_MPI_BENCH").is_some() && n > 1 {
        bench(&pg).unwrap_or_else(|e| fail(e));
    }
}

/// Median of `reps` timed runs of `f`, every run started together (barrier).
fn timed(world: &impl Communicator, reps: usize, mut f: impl FnMut()) -> Duration {
    let mut t: Vec<Duration> = (0..reps)
        .map(|_| {
            world.barrier();
            let t0 = Instant::now();
            f();
            t0.elapsed()
        })
        .collect();
    t.sort();
    t[reps / 2]
}

/// all_reduce of 1 / 16 / 64 MB f32: bare rsmpi `all_reduce_into`, ours on
/// the same buffers (`all_reduce_into`, and the allocating `all_reduce`),
/// the point-to-point ring over MPI messages, and the TCP ring between the
/// same processes (`TcpGroup`s formed next to the MPI world, with MAC'd and
/// with checksummed frames), each checked
/// against MPI's sum. Rank 0 prints the ratios.
fn bench(pg: &std::sync::Arc<MpiGroup>) -> std::result::Result<(), String> {
    let (n, r) = (pg.world_size(), pg.rank());
    let world = pg.world();
    // The TCP groups: rank 0 binds a port and tells the others over MPI.
    let tcp_group = |check: FrameCheck| {
        let listener = (r == 0).then(|| std::net::TcpListener::bind("127.0.0.1:0").unwrap());
        let mut port = listener
            .as_ref()
            .map_or(0u32, |l| l.local_addr().unwrap().port() as u32);
        world.process_at_rank(0).broadcast_into(&mut port);
        let cfg = TcpConfig::new(format!("127.0.0.1:{port}"), r, n, b"bench secret")
            .timeout(Duration::from_secs(60))
            .frame_check(check);
        match listener {
            Some(l) => TcpGroup::join_with_listener(cfg, l),
            None => TcpGroup::join(cfg),
        }
        .map_err(|e| e.to_string())
    };
    let tcp = tcp_group(FrameCheck::Mac)?;
    let tcp_sum = tcp_group(FrameCheck::Checksum)?;
    let mut raw = RawRing::form(&world)?;
    let e = |e: CollectiveError| e.to_string();
    let reps = 7;
    for mb in [1usize, 16, 64] {
        let len = mb * (1 << 20) / 4;
        let x: Vec<f32> = (0..len).map(|i| ((i + r) % 97) as f32).collect();
        let mut want = vec![0f32; len];
        let mut out = vec![0f32; len];
        let bare = timed(&world, reps, || {
            world.all_reduce_into(&x[..], &mut want[..], SystemOperation::sum())
        });
        // Ours on `group`, into `out`, checked against MPI's sum.
        let mut ours = |group: &dyn ProcessGroup, what: &str| {
            let mut res = Ok(());
            let t = timed(&world, reps, || {
                res = res.clone().and(all_reduce_into(
                    group,
                    &x,
                    &mut out,
                    ReduceKind::Sum,
                    ReduceMode::Ring,
                ));
            });
            res.map_err(e)?;
            if out != want {
                return Err(format!("{mb} MB {what} differs from MPI's"));
            }
            Ok(t)
        };
        let into = ours(&**pg, "all_reduce_into")?;
        // The same ranks in reverse order: no native path, the
        // point-to-point ring over MPI messages.
        let rev: Vec<usize> = (0..n).rev().collect();
        let sub = SubGroup::new(pg.clone(), &rev, GroupId(1))
            .unwrap()
            .expect("member");
        let p2p = ours(&sub, "point-to-point ring")?;
        let tcp_t = ours(&tcp, "TCP ring")?;
        let tcp_sum_t = ours(&tcp_sum, "TCP ring (checksummed frames)")?;
        // The floor of any TCP ring all-reduce: each rank streams the ring's
        // 2 (n - 1) / n of the buffer to its right neighbour while taking
        // as much from its left, bare sockets, no frames, no folds.
        let ring_bytes = 2 * (n - 1) * len * 4 / n;
        let mut raw_res = Ok(());
        let floor = timed(&world, reps, || {
            raw_res = raw_res.clone().and(raw.exchange(ring_bytes));
        });
        raw_res?;
        let mut got = Vec::new();
        let mut res = Ok(());
        let alloc = timed(&world, reps, || {
            match all_reduce(&**pg, &x, ReduceKind::Sum, ReduceMode::Ring) {
                Ok(v) => got = v,
                Err(err) => res = Err(err),
            }
        });
        res.map_err(e)?;
        if got != want {
            return Err(format!("{mb} MB all_reduce differs from MPI's"));
        }
        if r == 0 {
            let x = |t: Duration| t.as_secs_f64() / bare.as_secs_f64();
            println!(
                "all_reduce {mb} MB f32 on {n} ranks (median of {reps}): bare rsmpi all_reduce_into {bare:?}; \
                 all_reduce_into {into:?} ({:.2}x); all_reduce (allocating) {alloc:?} ({:.2}x); \
                 point-to-point ring over MPI {p2p:?} ({:.2}x); TCP ring {tcp_t:?} ({:.2}x); \
                 TCP ring, checksummed frames {tcp_sum_t:?} ({:.2}x); \
                 bare TCP ring exchange of the same bytes {floor:?} ({:.2}x; TCP ring / it: MAC {:.2}x, checksum {:.2}x)",
                x(into),
                x(alloc),
                x(p2p),
                x(tcp_t),
                x(tcp_sum_t),
                x(floor),
                tcp_t.as_secs_f64() / floor.as_secs_f64(),
                tcp_sum_t.as_secs_f64() / floor.as_secs_f64(),
            );
        }
    }
    Ok(())
}

/// Plain loopback sockets in a ring (rank r sends to r + 1), for the floor
/// that TCP itself sets under the ring all-reduce.
struct RawRing {
    right: std::net::TcpStream,
    left: std::net::TcpStream,
    out: Vec<u8>,
    inp: Vec<u8>,
}

impl RawRing {
    fn form(world: &impl Communicator) -> std::result::Result<Self, String> {
        let (n, r) = (world.size() as usize, world.rank() as usize);
        let e = |e: std::io::Error| e.to_string();
        let l = std::net::TcpListener::bind("127.0.0.1:0").map_err(e)?;
        let port = l.local_addr().map_err(e)?.port() as u32;
        let mut ports = vec![0u32; n];
        world.all_gather_into(&port, &mut ports[..]);
        let right = std::net::TcpStream::connect(("127.0.0.1", ports[(r + 1) % n] as u16));
        let left = l.accept().map_err(e)?.0;
        let right = right.map_err(e)?;
        for s in [&left, &right] {
            s.set_nodelay(true).map_err(e)?;
        }
        Ok(RawRing {
            right,
            left,
            out: Vec::new(),
            inp: Vec::new(),
        })
    }

    /// Sends `bytes` right while receiving as many from the left.
    fn exchange(&mut self, bytes: usize) -> std::result::Result<(), String> {
        use std::io::{Read, Write};
        if self.out.len() < bytes {
            self.out.resize(bytes, 1);
            self.inp.resize(bytes, 0);
        }
        let (right, out) = (&mut self.right, &self.out[..bytes]);
        std::thread::scope(|s| {
            let tx = s.spawn(move || right.write_all(out));
            let rx = self.left.read_exact(&mut self.inp[..bytes]);
            let tx = tx.join().map_err(|_| "sender panicked".to_string())?;
            rx.and(tx).map_err(|e| e.to_string())
        })
    }
}

/// A compiled graph with `collectives.*` ops on the MPI world (bound for the
/// process) against the numpy values of tests/fixtures/graph_ops.json.
fn in_graph(pg: std::sync::Arc<MpiGroup>) -> std::result::Result<(), String> {
    use rlx_ir::{DType, Graph, HostTensor, Shape};
    let (n, r) = (pg.world_size(), pg.rank());
    let fx: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/graph_ops.json"
        ))
        .map_err(|e| e.to_string())?,
    )
    .map_err(|e| e.to_string())?;
    let case = fx["cases"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["world"].as_u64() == Some(n as u64)))
        .ok_or(format!("no graph_ops case for {n} ranks"))?;
    let floats = |v: &serde_json::Value| -> Vec<f64> {
        v["data"]
            .as_array()
            .map(|a| a.iter().filter_map(|x| x.as_f64()).collect())
            .unwrap_or_default()
    };
    bind_process_groups(std::sync::Arc::new(GroupRegistry::new(pg)));
    let mut g = Graph::new("mpi_graph");
    let x = g.input("x", Shape::new(&[2, 12], DType::F64));
    let m = all_reduce_op_mode(
        &mut g,
        x,
        GroupId(0),
        ReduceKind::Mean,
        ReduceMode::Deterministic,
    )
    .map_err(|e| e.to_string())?;
    let a = all_gather_op(&mut g, x, GroupId(0), 1, n).map_err(|e| e.to_string())?;
    g.set_outputs(vec![m, a]);
    let mut c = rlx_runtime::Session::new(rlx_runtime::Device::Cpu)
        .try_compile(g)
        .map_err(|e| e.to_string())?;
    let xt = HostTensor::from_vec(floats(&case["x"][r]), &[2, 12]).map_err(|e| e.to_string())?;
    let outs = c.try_run_typed(&[("x", &xt)]).map_err(|e| e.to_string())?;
    unbind_process_groups();
    for (k, name) in [(0, "all_reduce_mean"), (1, "all_gather_axis1")] {
        let got = outs[k].to_vec::<f64>().map_err(|e| e.to_string())?;
        let want = floats(&case["expected"][r][name]);
        let ok = got.len() == want.len()
            && got
                .iter()
                .zip(&want)
                .all(|(a, b)| (a - b).abs() <= 1e-12 * (1.0 + b.abs()));
        if !ok {
            return Err(format!("in-graph {name} differs from numpy"));
        }
    }
    Ok(())
}
