//! A channel concat kept in the NCHWc blocked layout (`nchwc_layout.rs`):
//! a U-Net-like skip — a conv read by a 2x2 max pool (the down path), by a
//! second conv and by the concat of both convs, which a third conv reads —
//! on a 13 x 11 map, against numpy float64
//! (tools/gen_nchwc_concat_fixtures.py) at 1 to 3 threads, at batch 1 (the
//! concat joined in place: both convs write their channel blocks straight
//! into it) and batch 2 (the concat copies each image's blocks). On an
//! AVX-512 host the skip conv, the pool, the second conv and the concat
//! are written blocked; with the concat also a graph output, none is (the
//! concat withdrawn keeps its parts NCHW).

mod common;

use common::conv_window;
use common::nchwc::{assert_close, avx512};
use common::yolo_net::{floats, input, values};
use rlx_compile::{lower, LowerOptions};
use rlx_cpu::{CpuBackend, CpuExecutable};
use rlx_driver::{Backend, Executable};
use rlx_ir::{DType, Graph, GraphExt, HostTensor, NodeId, Op, Shape};
use serde_json::Value;

const FIXTURE: &str = include_str!("fixtures/conv_nchwc/concat_skip.json");
const C: usize = 16;
const H: usize = 13;
const W: usize = 11;

/// A 3x3 stride-1 conv (padding 1) of `x` to `o` channels, weight and bias
/// `values(.., seed)` / `values(.., seed + 1)`.
fn conv3x3(g: &mut Graph, x: NodeId, (c, o): (usize, usize), seed: u64) -> NodeId {
    let w = HostTensor::from_slice(&values(o * c * 9, seed), &[o, c, 3, 3]).unwrap();
    let b = HostTensor::from_slice(&values(o, seed + 1), &[o]).unwrap();
    let (w, b) = (g.constant_tensor(&w), g.constant_tensor(&b));
    g.conv(x, w, Some(b), conv_window(3, 1), 1)
}

/// The fixture's graph at batch `n`, outputs `[y, d]` (and `cat` when
/// `cat_out`); with whether the lowered graph's concat was joined in place.
fn concat_skip(n: usize, cat_out: bool) -> (CpuExecutable, bool) {
    let mut g = Graph::new("nchwc_concat_skip");
    let x = g.input("x", Shape::new(&[n, C, H, W], DType::F32));
    let a = conv3x3(&mut g, x, (C, 16), 41);
    let a = g.relu(a);
    let p = g.max_pool2d(a, [2, 2], [2, 2], [0, 0]);
    let d = conv3x3(&mut g, p, (16, 32), 43);
    let b = conv3x3(&mut g, a, (16, 32), 45);
    let b = g.relu(b);
    let cat = g.concat(&[a, b], 1, Shape::new(&[n, 48, H, W], DType::F32));
    let y = conv3x3(&mut g, cat, (48, 16), 47);
    g.set_outputs(if cat_out { vec![y, d, cat] } else { vec![y, d] });
    let lir = lower(&g, &|op| CpuBackend.claims(op), &LowerOptions::default()).unwrap();
    let joined = lir
        .graph
        .ids()
        .filter(|&id| matches!(lir.graph.node(id).op, Op::Concat { .. }))
        .all(|id| lir.plan.is_joined(id.index()));
    (CpuExecutable::new(lir).unwrap(), joined)
}

/// The skip conv, its pool, the second conv and the concat stay blocked
/// (none with the concat a graph output); every output matches numpy at
/// batch 1 (joined concat) and 2 (copied), 1-3 threads.
#[test]
fn blocked_concat_skip_matches_numpy() {
    let fx: Value = serde_json::from_str(FIXTURE).unwrap();
    for n in [1, 2] {
        let key = format!("n{n}");
        let x = input(&[n, C, H, W], 40);
        for cat_out in [false, true] {
            let (mut exe, joined) = concat_skip(n, cat_out);
            assert_eq!(
                joined,
                n == 1 && !cat_out,
                "batch {n}, cat an output {cat_out}"
            );
            if avx512() {
                let want = if cat_out { 0 } else { 4 };
                assert_eq!(
                    exe.nchwc_blocked_outputs(),
                    want,
                    "batch {n}, cat an output {cat_out}"
                );
            }
            for threads in 1..=3 {
                exe.limit_threads(Some(threads)).unwrap();
                let out = exe.run(&[&x]).unwrap();
                let names: &[&str] = if cat_out {
                    &["y", "d", "cat"]
                } else {
                    &["y", "d"]
                };
                for (got, name) in out.iter().zip(names) {
                    assert_close(
                        &got.to_vec::<f32>().unwrap(),
                        &floats(&fx[&key][name]),
                        &format!("{name}, batch {n}, cat an output {cat_out}, threads {threads}"),
                    );
                }
            }
        }
    }
}

const UP_FIXTURE: &str = include_str!("fixtures/conv_nchwc/concat_up.json");

/// tools/gen_nchwc_concat_fixtures.py's U-Net up step at batch `n`:
/// outputs `[y]`, or `[y, u]` when `up_out` (the up-conv a graph output).
fn concat_up(n: usize, up_out: bool) -> CpuExecutable {
    let mut g = Graph::new("nchwc_concat_up");
    let s = g.input("s", Shape::new(&[n, 16, 6, 18], DType::F32));
    let a = conv3x3(&mut g, s, (16, 16), 51);
    let a = g.relu(a);
    let p = g.max_pool2d(a, [2, 2], [2, 2], [0, 0]);
    let d = conv3x3(&mut g, p, (16, 32), 53);
    let d = g.relu(d);
    let wu = HostTensor::from_slice(&values(32 * 32 * 4, 55), &[32, 32, 2, 2]).unwrap();
    let bu = HostTensor::from_slice(&values(32, 56), &[32]).unwrap();
    let (wu, bu) = (g.constant_tensor(&wu), g.constant_tensor(&bu));
    let u = g.conv_transpose2d(d, wu, Some(bu), [2, 2], [0, 0], [0, 0], 1);
    let cat = g.concat(&[a, u], 1, Shape::new(&[n, 48, 6, 18], DType::F32));
    let y = conv3x3(&mut g, cat, (48, 16), 57);
    g.set_outputs(if up_out { vec![y, u] } else { vec![y] });
    let lir = lower(&g, &|op| CpuBackend.claims(op), &LowerOptions::default()).unwrap();
    CpuExecutable::new(lir).unwrap()
}

/// The 2x2 stride-2 up-conv writes its 32 channels blocked, so the skip
/// concat (skip conv + up-conv) stays blocked and its reader takes it in
/// place: on AVX-512 the skip conv, its pool, the up-conv and the concat
/// are written blocked (the up-conv's image `d` stays NCHW); with the
/// up-conv a graph output none is (the concat withdrawn: its skip part
/// then stays NCHW, and so does the pool reading it). Every
/// output matches numpy at batch 1 and 2, 1-3 threads (3 x 9 up-conv
/// input rows: two 4-pixel tiles and a 1-pixel tail per row).
#[test]
fn blocked_up_conv_concat_matches_numpy() {
    let fx: Value = serde_json::from_str(UP_FIXTURE).unwrap();
    for n in [1, 2] {
        let key = format!("n{n}");
        let s = input(&[n, 16, 6, 18], 50);
        for up_out in [false, true] {
            let mut exe = concat_up(n, up_out);
            if avx512() {
                let want = if up_out { 0 } else { 4 };
                assert_eq!(
                    exe.nchwc_blocked_outputs(),
                    want,
                    "batch {n}, up-conv an output {up_out}"
                );
            }
            for threads in 1..=3 {
                exe.limit_threads(Some(threads)).unwrap();
                let out = exe.run(&[&s]).unwrap();
                let names: &[&str] = if up_out { &["y", "u"] } else { &["y"] };
                for (got, name) in out.iter().zip(names) {
                    assert_close(
                        &got.to_vec::<f32>().unwrap(),
                        &floats(&fx[&key][name]),
                        &format!(
                            "{name}, batch {n}, up-conv an output {up_out}, threads {threads}"
                        ),
                    );
                }
            }
        }
    }
}
