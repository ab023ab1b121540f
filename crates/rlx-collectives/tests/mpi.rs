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

    if std::env::var_os("COLLECTIVES_MPI_BENCH").is_some() && n > 1 {
        let world = pg.world();
        for mb in [1usize, 16, 64] {
            let len = mb * (1 << 20) / 4;
            let x: Vec<f32> = (0..len).map(|i| (i % 97) as f32).collect();
            let mut y = vec![0f32; len];
            let reps = 5;
            world.barrier();
            let t0 = Instant::now();
            for _ in 0..reps {
                world.all_reduce_into(&x[..], &mut y[..], SystemOperation::sum());
            }
            let bare = t0.elapsed() / reps;
            world.barrier();
            let t0 = Instant::now();
            let mut ours = Vec::new();
            for _ in 0..reps {
                ours = all_reduce(&*pg, &x, ReduceKind::Sum, ReduceMode::Ring)
                    .unwrap_or_else(|e| fail(e.to_string()));
            }
            let ring = t0.elapsed() / reps;
            // The same ranks in reverse order: no native path, the
            // point-to-point ring over MPI messages.
            let rev: Vec<usize> = (0..n).rev().collect();
            let sub = SubGroup::new(pg.clone(), &rev, GroupId(1))
                .unwrap()
                .expect("member");
            world.barrier();
            let t0 = Instant::now();
            for _ in 0..reps {
                let p2p = all_reduce(&sub, &x, ReduceKind::Sum, ReduceMode::Ring)
                    .unwrap_or_else(|e| fail(e.to_string()));
                if p2p != y {
                    fail(format!("{mb} MB point-to-point ring differs from MPI's"));
                }
            }
            let p2p = t0.elapsed() / reps;
            world.barrier();
            let t0 = Instant::now();
            for _ in 0..reps {
                all_reduce(&*pg, &x, ReduceKind::Sum, ReduceMode::Deterministic)
                    .unwrap_or_else(|e| fail(e.to_string()));
            }
            let detm = t0.elapsed() / reps;
            if ours != y {
                fail(format!("{mb} MB ring all_reduce differs from MPI's"));
            }
            if r == 0 {
                println!(
                    "all_reduce {mb} MB f32 on {n} ranks: bare rsmpi {bare:?}, Ring {ring:?} ({:.2}x), point-to-point ring {p2p:?} ({:.2}x), Deterministic {detm:?}",
                    ring.as_secs_f64() / bare.as_secs_f64(),
                    p2p.as_secs_f64() / bare.as_secs_f64()
                );
            }
        }
    }
}
