//! 3x3 stride-1 convs kept NCHWc-blocked on both sides run the blocked
//! Winograd F(4,3) kernel (`kernels/winograd_blocked.rs`, routed by
//! `winograd_weights.rs`): two ResNet-like residual blocks of 64 -> 64
//! convs on an 18 x 15 map (off the 4 x 4 tile both ways), batch 2, the
//! first conv reading the NCHW graph input (the NCHWc kernel), the other
//! three reading and writing blocked (the second block's residual read
//! blocked), then a global mean and a 3x3 max pool; against numpy float64
//! direct convs (tools/gen_winograd_blocked_fixtures.py, graph.json) at 1
//! to 3 threads.

use rlx_compile::{lower, LowerOptions};
use rlx_cpu::{CpuBackend, CpuExecutable};
use rlx_driver::{Backend, Executable};
use rlx_ir::{DType, Graph, GraphExt, HostTensor, NodeId, Shape};
use serde_json::Value;

mod common;
use common::conv_window;
use common::nchwc::{assert_close, avx512};
use common::yolo_net::floats;

const GRAPH: &str = include_str!("fixtures/winograd_blocked/graph.json");
const C: usize = 64;
const DIMS: [usize; 4] = [2, C, 18, 15];

/// The fixture's `seq(n, a, m, scale)`: `((i * a) % m - m / 2) / scale`.
fn seq(n: usize, a: usize, m: usize, scale: f32) -> Vec<f32> {
    (0..n)
        .map(|i| (((i * a) % m) as f32 - (m / 2) as f32) / scale)
        .collect()
}

/// Conv `k` of the fixture (weight `seq(.., 5, 17, 16 k)`, bias
/// `(o % 5 - 2) / 4`) of `x`.
fn conv(g: &mut Graph, x: NodeId, k: usize) -> NodeId {
    let w = seq(C * C * 9, 5, 17, 16.0 * k as f32);
    let w = g.constant_tensor(&HostTensor::from_slice(&w, &[C, C, 3, 3]).unwrap());
    let b: Vec<f32> = (0..C).map(|o| ((o % 5) as f32 - 2.0) / 4.0).collect();
    let b = g.constant_tensor(&HostTensor::from_slice(&b, &[C]).unwrap());
    g.conv(x, w, Some(b), conv_window(3, 1), 1)
}

fn blocks() -> CpuExecutable {
    let mut g = Graph::new("winograd_blocked");
    let x = g.input("x", Shape::new(&DIMS, DType::F32));
    let c1 = conv(&mut g, x, 1);
    let c1 = g.relu(c1);
    let r1 = conv(&mut g, c1, 2);
    let r1 = g.add(r1, x);
    let r1 = g.relu(r1);
    let c3 = conv(&mut g, r1, 3);
    let c3 = g.relu(c3);
    let r2 = conv(&mut g, c3, 4);
    let r2 = g.add(r2, r1);
    let r2 = g.relu(r2);
    let mean = g.mean(r2, &[2, 3], false);
    let q = g.max_pool2d(r2, [3, 3], [3, 3], [0, 0]);
    g.set_outputs(vec![mean, q]);
    let lir = lower(&g, &|op| CpuBackend.claims(op), &LowerOptions::default()).unwrap();
    CpuExecutable::new(lir).unwrap()
}

#[test]
fn blocked_winograd_blocks_match_numpy() {
    let fx: Value = serde_json::from_str(GRAPH).unwrap();
    let x = seq(DIMS.iter().product(), 7, 23, 8.0);
    let x = HostTensor::from_slice(&x, &DIMS).unwrap();
    let mut exe = blocks();
    if avx512() {
        // c1, r1, c3, r2 write blocked; r1, c3, r2 read blocked too.
        assert_eq!(exe.nchwc_blocked_outputs(), 4);
        assert_eq!(exe.winograd_blocked_convs(), 3);
    }
    for threads in 1..=3 {
        exe.limit_threads(Some(threads)).unwrap();
        let out = exe.run(&[&x]).unwrap();
        let what = format!("threads {threads}");
        assert_close(
            &out[0].to_vec::<f32>().unwrap(),
            &floats(&fx["g"]),
            &format!("mean, {what}"),
        );
        assert_eq!(out[1].dims(), &[2, C, 6, 5]);
        assert_close(
            &out[1].to_vec::<f32>().unwrap(),
            &floats(&fx["q"]),
            &format!("pool, {what}"),
        );
    }
}
