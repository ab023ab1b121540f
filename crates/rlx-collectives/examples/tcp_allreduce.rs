//! Times the TCP ring all-reduce with every rank a thread of this process
//! (real localhost sockets, no MPI needed): a harness for `perf record`
//! and for A/B runs of the transport. `tests/mpi.rs`' bench compares the
//! same ring with MPI and with bare sockets across processes.
//!
//! `cargo run --release -p rlx-collectives --example tcp_allreduce -- [MB] [reps] [mac|checksum] [world]`
use rlx_collectives::prelude::*;
use std::net::TcpListener;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

fn main() {
    let arg = |i: usize| std::env::args().nth(i);
    let mb: usize = arg(1).map_or(16, |s| s.parse().expect("MB"));
    let reps: usize = arg(2).map_or(21, |s| s.parse().expect("reps"));
    let check = match arg(3).as_deref() {
        Some("mac") => FrameCheck::Mac,
        None | Some("checksum") => FrameCheck::Checksum,
        Some(o) => panic!("frame check {o}: expected mac or checksum"),
    };
    let world: usize = arg(4).map_or(2, |s| s.parse().expect("world"));
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("address").to_string();
    let mut listener = Some(listener);
    let barrier = Arc::new(Barrier::new(world));
    let len = mb * (1 << 20) / 4;
    let ranks: Vec<_> = (0..world)
        .map(|r| {
            let cfg = TcpConfig::new(addr.clone(), r, world, b"bench secret")
                .timeout(Duration::from_secs(60))
                .frame_check(check);
            let l = listener.take();
            let barrier = barrier.clone();
            std::thread::spawn(move || {
                let pg = match l {
                    Some(l) => TcpGroup::join_with_listener(cfg, l),
                    None => TcpGroup::join(cfg),
                }
                .expect("join");
                let x: Vec<f32> = (0..len).map(|i| ((i + r) % 97) as f32).collect();
                let mut out = vec![0f32; len];
                let mut times: Vec<Duration> = (0..reps)
                    .map(|_| {
                        barrier.wait();
                        let t = Instant::now();
                        all_reduce_into(&pg, &x, &mut out, ReduceKind::Sum, ReduceMode::Ring)
                            .expect("all_reduce");
                        t.elapsed()
                    })
                    .collect();
                // Closed form: every rank's value at i is (i + r) % 97.
                let bad = (0..len)
                    .find(|&i| out[i] != (0..world).map(|q| ((i + q) % 97) as f32).sum::<f32>());
                assert!(bad.is_none(), "rank {r}: wrong sum at {bad:?}");
                times.sort();
                times[reps / 2]
            })
        })
        .collect();
    let t: Vec<Duration> = ranks.into_iter().map(|h| h.join().expect("rank")).collect();
    println!(
        "TCP ring all_reduce {mb} MB f32, {world} ranks, {}: median {:?} (rank 0)",
        check.name(),
        t[0]
    );
}
