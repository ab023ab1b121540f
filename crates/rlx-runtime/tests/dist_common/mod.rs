//! Shared helpers of the ship-graph tests: the numpy fixture, worlds of
//! ranks on loopback threads or TCP sockets, and a hard deadline.
#![allow(dead_code)]

use rlx_collectives::{LoopbackGroup, ProcessGroup, TcpConfig, TcpGroup};
use rlx_ir::HostTensor;
use serde_json::Value;
use std::sync::{mpsc, Arc};
use std::time::Duration;

/// `tools/gen_dist_fixtures.py`'s output.
pub fn fixture() -> Value {
    serde_json::from_str(include_str!("../fixtures/dist.json")).unwrap()
}

/// An f32 tensor from a fixture `{dims, data}`.
pub fn tensor(v: &Value) -> HostTensor {
    let dims: Vec<usize> = v["dims"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d.as_u64().unwrap() as usize)
        .collect();
    let data: Vec<f32> = v["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d.as_f64().unwrap() as f32)
        .collect();
    HostTensor::from_vec(data, &dims).unwrap()
}

/// The f64 values of a fixture `{dims, data}`.
pub fn values(v: &Value) -> Vec<f64> {
    v["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d.as_f64().unwrap())
        .collect()
}

/// Which transport a world uses.
#[derive(Debug, Clone, Copy)]
pub enum Transport {
    Loopback,
    Tcp,
}

pub const SECRET: &[u8] = b"dist test secret";

/// Runs `f(group)` on every rank of a new world (one thread per rank);
/// results in rank order.
pub fn on_world<R: Send + 'static>(
    transport: Transport,
    world: usize,
    timeout: Duration,
    f: impl Fn(Arc<dyn ProcessGroup>) -> R + Send + Sync + 'static,
) -> Vec<R> {
    let f = Arc::new(f);
    let groups: Vec<Box<dyn FnOnce() -> Arc<dyn ProcessGroup> + Send>> = match transport {
        Transport::Loopback => LoopbackGroup::new_world(world, timeout)
            .unwrap()
            .into_iter()
            .map(|g| {
                Box::new(move || Arc::new(g) as Arc<dyn ProcessGroup>)
                    as Box<dyn FnOnce() -> _ + Send>
            })
            .collect(),
        Transport::Tcp => {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            let addr = l.local_addr().unwrap().to_string();
            let mut l = Some(l);
            (0..world)
                .map(|r| {
                    let cfg = TcpConfig::new(addr.clone(), r, world, SECRET)
                        .timeout(timeout)
                        .rendezvous_timeout(Duration::from_secs(20));
                    let l = if r == 0 { l.take() } else { None };
                    Box::new(move || {
                        Arc::new(match l {
                            Some(l) => TcpGroup::join_with_listener(cfg, l).unwrap(),
                            None => TcpGroup::join(cfg).unwrap(),
                        }) as Arc<dyn ProcessGroup>
                    }) as Box<dyn FnOnce() -> _ + Send>
                })
                .collect()
        }
    };
    let hs: Vec<_> = groups
        .into_iter()
        .map(|make| {
            let f = f.clone();
            std::thread::spawn(move || f(make()))
        })
        .collect();
    hs.into_iter().map(|h| h.join().unwrap()).collect()
}

/// Runs `f` on another thread and fails the test if it takes over `secs`.
pub fn with_deadline<R: Send + 'static>(secs: u64, f: impl FnOnce() -> R + Send + 'static) -> R {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(Duration::from_secs(secs))
        .unwrap_or_else(|_| panic!("test did not finish within {secs} s (hang or panic)"))
}

#[path = "../../../rlx-collectives/tests/common/procs.rs"]
mod procs;
#[allow(unused_imports)] // not every test binary spawns children
pub use procs::zombies;
