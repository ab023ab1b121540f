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
