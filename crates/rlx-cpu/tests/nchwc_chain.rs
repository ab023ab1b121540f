//! Activations kept in the NCHWc blocked layout between consecutive convs
//! (`nchwc_layout.rs`): a chain `relu(conv + b)` -> `relu(conv + b + r)`
//! -> `conv + b` of 16 -> 16 3x3 convs on 9x9 maps, batch 2, constant
//! weights, against numpy float64 (tools/gen_nchwc_chain_fixtures.py) at 1
//! to 3 threads; on an AVX-512 host every conv whose only readers are the
//! next conv hands it the blocked image (the reorders between them are
//! gone), and a conv whose output is also a graph output keeps NCHW.
//! Likewise two MobileNetV2 inverted-residual blocks (24 -> 96 -> 32 with a
//! stride-2 depthwise, then 32 -> 96 -> 32 with stride 1 and the residual
//! add): the expand -> depthwise -> project edges stay blocked (1x1 and
//! depthwise kernels on blocked tensors), and so does the first block's
//! output, which the second block's expand reads as its image and its
//! project's residual add as a blocked epilogue operand; the 24-channel
//! input stays NCHW. The same with block outputs of 24 / 40 channels: the
//! projects to them read the depthwise outputs blocked and write NCHW.
//! And ResNet-like blocks: a conv writing blocked for
//! a 3x3 stride-2 max pool (odd sizes), two residual blocks (the second's
//! input read blocked as image and residual), then a global mean and a
//! 2x2 max pool with ceil-mode padding on the blocked last output. And
//! two ResNet-18 layer-1-like blocks of 64 -> 64 convs on 34 x 34 maps
//! (Winograd's shapes, run on the NCHWc kernel once blocked), and a stage
//! transition whose input a 3x3 stride-2 conv and a 1x1 stride-2
//! downsample both read blocked; and a 3-channel stem and max pool ahead of
//! a block and a stage transition on a larger map (a 1x1 stride-2
//! downsample by rows). And ResNet-18's 3 -> 64 stem, max pool and a
//! residual block at an odd size: the stem kernel writes blocked for the
//! pool, the pool writes blocked for the block's conv and residual, and
//! with the stem (pool) output also read by an average pool the stem
//! (pool) writes NCHW and the pool reads (writes) it so. And MobileNetV2's
//! start: its 3 -> 32 stride-2 stem writes blocked (the stem kernel) for
//! the depthwise, which reads it in place; and the YOLO-style start, a 3 ->
//! 16 stem + SiLU writing blocked for a 16 -> 32 stride-2 conv.

use rlx_compile::{lower, LowerOptions};
use rlx_cpu::{CpuBackend, CpuExecutable};
use rlx_driver::{Backend, Executable};
use rlx_ir::op::{BinaryOp, PoolKind, Window};
use rlx_ir::{DType, Graph, GraphExt, HostTensor, NodeId, Shape};
use serde_json::Value;

mod common;
use common::conv_window;
use common::nchwc::{assert_close, avx512};
use common::yolo_net::{floats, values};

const FIXTURE: &str = include_str!("fixtures/conv_nchwc/chain.json");
const INVERTED: &str = include_str!("fixtures/conv_nchwc/inverted_residual.json");
const RESNET_LIKE: &str = include_str!("fixtures/conv_nchwc/resnet_like.json");
const LAYER1_LIKE: &str = include_str!("fixtures/conv_nchwc/layer1_like.json");
const TRANSITION: &str = include_str!("fixtures/conv_nchwc/transition.json");
const PARTIAL: &str = include_str!("fixtures/conv_nchwc/inverted_residual_partial.json");
const STEM_STAGE: &str = include_str!("fixtures/conv_nchwc/stem_stage.json");
const STEM_POOL_BLOCK: &str = include_str!("fixtures/conv_nchwc/stem_pool_block.json");
const STEM_POOL_BLOCK_C1: &str = include_str!("fixtures/conv_nchwc/stem_pool_block_c1.json");
const STEM_DEPTHWISE: &str = include_str!("fixtures/conv_nchwc/stem_depthwise.json");
const STEM_CONV: &str = include_str!("fixtures/conv_nchwc/stem_conv.json");
const N: usize = 2;
const C: usize = 16;
const HW: usize = 9;

fn constant(g: &mut Graph, v: &[f32], dims: &[usize]) -> NodeId {
    g.constant_tensor(&HostTensor::from_slice(v, dims).unwrap())
}

fn conv(g: &mut Graph, x: NodeId, seed: u64) -> NodeId {
    conv3x3(g, x, (C, C), (seed, seed + 3))
}

/// The chain; `y1` also a graph output when `two_outputs`.
fn chain(two_outputs: bool) -> CpuExecutable {
    let f32s = |d: &[usize]| Shape::new(d, DType::F32);
    let mut g = Graph::new("nchwc_chain");
    let x = g.input("x", f32s(&[N, C, HW, HW]));
    let r = g.input("r", f32s(&[N, C, HW, HW]));
    let c1 = conv(&mut g, x, 3);
    let y1 = g.relu(c1);
    let c2 = conv(&mut g, y1, 4);
    let s2 = g.add(c2, r);
    let y2 = g.relu(s2);
    let y3 = conv(&mut g, y2, 5);
    g.set_outputs(if two_outputs { vec![y3, y1] } else { vec![y3] });
    let lir = lower(&g, &|op| CpuBackend.claims(op), &LowerOptions::default()).unwrap();
    CpuExecutable::new(lir).unwrap()
}

#[test]
fn blocked_conv_chain_matches_numpy() {
    let fx: Value = serde_json::from_str(FIXTURE).unwrap();
    let (want1, want3) = (floats(&fx["y1"]), floats(&fx["y3"]));
    let dims = [N, C, HW, HW];
    let scaled = |seed| -> Vec<f32> {
        values(N * C * HW * HW, seed)
            .iter()
            .map(|v| v * 16.0)
            .collect()
    };
    let x = HostTensor::from_slice(&scaled(1), &dims).unwrap();
    let r = HostTensor::from_slice(&scaled(2), &dims).unwrap();
    for two_outputs in [false, true] {
        let mut exe = chain(two_outputs);
        if avx512() {
            // conv1 -> conv2 and conv2 -> conv3; conv1's output is also
            // the caller's when it is a graph output: NCHW there.
            let want = if two_outputs { 1 } else { 2 };
            assert_eq!(
                exe.nchwc_blocked_outputs(),
                want,
                "two outputs: {two_outputs}"
            );
        }
        for threads in 1..=3 {
            exe.limit_threads(Some(threads)).unwrap();
            let out = exe.run(&[&x, &r]).unwrap();
            let what = format!("threads {threads}, two outputs {two_outputs}");
            assert_close(
                &out[0].to_vec::<f32>().unwrap(),
                &want3,
                &format!("y3, {what}"),
            );
            if two_outputs {
                assert_close(
                    &out[1].to_vec::<f32>().unwrap(),
                    &want1,
                    &format!("y1, {what}"),
                );
            }
        }
    }
}

/// A conv of `x` with weight `values(.., seed)` `[o, c / groups, k, k]` and
/// bias `values(.., seed + 1)` (padding `k / 2`).
fn conv_k(
    g: &mut Graph,
    x: NodeId,
    (c, o, k): (usize, usize, usize),
    stride: usize,
    seed: u64,
) -> NodeId {
    let groups = if k == 3 { c } else { 1 };
    let w = constant(
        g,
        &values(o * c / groups * k * k, seed),
        &[o, c / groups, k, k],
    );
    let b = constant(g, &values(o, seed + 1), &[o]);
    g.conv(x, w, Some(b), conv_window(k, stride), groups)
}

fn relu6(g: &mut Graph, v: NodeId) -> NodeId {
    let lo = g.binary_op(BinaryOp::Max, v, 0.0f32);
    g.binary_op(BinaryOp::Min, lo, 6.0f32)
}

/// tools/gen_nchwc_chain_fixtures.py's two inverted-residual blocks on
/// `n` `hw` x `hw` images.
fn inverted_residual(n: usize, hw: usize) -> CpuExecutable {
    two_blocks(n, hw, (24, 96, 96, 32), 11)
}

/// The fixture script's `two_blocks`: `c` -> `e1` (expand) -> depthwise
/// stride 2 -> `p` (project) -> `e` -> depthwise -> `p` + residual, the
/// weights / biases from `seed` on.
fn two_blocks(
    n: usize,
    hw: usize,
    (c, e1c, e, p): (usize, usize, usize, usize),
    seed: u64,
) -> CpuExecutable {
    let mut g = Graph::new("inverted_residual");
    let x = g.input("x", Shape::new(&[n, c, hw, hw], DType::F32));
    let e1 = conv_k(&mut g, x, (c, e1c, 1), 1, seed);
    let e1 = relu6(&mut g, e1);
    let d1 = conv_k(&mut g, e1, (e1c, e1c, 3), 2, seed + 2);
    let d1 = relu6(&mut g, d1);
    let p1 = conv_k(&mut g, d1, (e1c, p, 1), 1, seed + 4);
    let e2 = conv_k(&mut g, p1, (p, e, 1), 1, seed + 6);
    let e2 = relu6(&mut g, e2);
    let d2 = conv_k(&mut g, e2, (e, e, 3), 1, seed + 8);
    let d2 = relu6(&mut g, d2);
    let p2 = conv_k(&mut g, d2, (e, p, 1), 1, seed + 10);
    let y = g.add(p2, p1);
    g.set_outputs(vec![y]);
    let lir = lower(&g, &|op| CpuBackend.claims(op), &LowerOptions::default()).unwrap();
    CpuExecutable::new(lir).unwrap()
}

/// 18 x 18 (9 x 9 after the stride 2: the NCHW 1x1 kernel's shapes),
/// 14 x 14 (7 x 7: the packed-weight GEMM's, which the blocked form
/// overrides) and one 58 x 58 image (depthwise convs on 58 x 58 and
/// 29 x 29 planes: the depthwise kernel's row bands) at 1-3 threads.
#[test]
fn inverted_residual_blocks_match_numpy() {
    let fx: Value = serde_json::from_str(INVERTED).unwrap();
    for (n, hw) in [(2, 18), (2, 14), (1, 58)] {
        let want = floats(&fx[format!("hw{hw}")]["y"]);
        // e1 -> d1 -> p1 and e2 -> d2 -> p2, and p1 -> e2 with p2's
        // residual read of p1 (blocked offsets in the row chain): five
        // blocked outputs; x has 24 channels, y is the graph's: NCHW.
        let exe = inverted_residual(n, hw);
        check_two_blocks(exe, (n, 24, hw), 10, &want, 5);
    }
}

/// Runs `exe` on `n` `c`-channel `hw` x `hw` images `values(.., seed) * 16`
/// at 1-3 threads against `want`, with `blocked` blocked outputs on AVX-512.
fn check_two_blocks(
    mut exe: CpuExecutable,
    (n, c, hw): (usize, usize, usize),
    seed: u64,
    want: &[f64],
    blocked: usize,
) {
    let xs: Vec<f32> = values(n * c * hw * hw, seed)
        .iter()
        .map(|v| v * 16.0)
        .collect();
    let x = HostTensor::from_slice(&xs, &[n, c, hw, hw]).unwrap();
    if avx512() {
        assert_eq!(exe.nchwc_blocked_outputs(), blocked, "{hw} x {hw}");
    }
    for threads in 1..=3 {
        exe.limit_threads(Some(threads)).unwrap();
        let out = exe.run(&[&x]).unwrap();
        let got = out[0].to_vec::<f32>().unwrap();
        let what = format!("two blocks {c} channels {hw} x {hw}, threads {threads}");
        assert_close(&got, want, &what);
    }
}

/// Block outputs of 24 channels (57 x 57 -> 29 x 29, both depthwise planes
/// in row bands, batch 2) and 40 (23 x 23 -> 12 x 12, batch 3) at 1-3
/// threads: the projects to 24 / 40 channels read the depthwise outputs
/// blocked and write NCHW through their last block's live lanes only (a
/// pad lane stored would overwrite the next channels' planes).
#[test]
fn inverted_residual_partial_blocks_match_numpy() {
    let fx: Value = serde_json::from_str(PARTIAL).unwrap();
    for (n, hw, p, e) in [(2, 57, 24, 144), (3, 23, 40, 240)] {
        let want = floats(&fx[format!("p{p}_hw{hw}")]["y"]);
        // e1 -> d1 -> p1 and e2 -> d2 -> p2: the expands and the depthwise
        // convs write blocked; p1 (read by e2 and by p2's residual) and y
        // have `p` channels: NCHW.
        let exe = two_blocks(n, hw, (16, 96, e, p), 41);
        check_two_blocks(exe, (n, 16, hw), 40, &want, 4);
    }
}

/// A 3x3 stride-1 conv (padding 1) of `x`, `c` -> `o` channels, with
/// weight `values(.., w_seed)` and bias `values(.., b_seed)`.
fn conv3x3(g: &mut Graph, x: NodeId, (c, o): (usize, usize), seeds: (u64, u64)) -> NodeId {
    dense(g, x, (c, o, 3), 1, seeds)
}

/// A dense `k` x `k` conv (padding `k / 2`) of `x`, `c` -> `o` channels,
/// with weight `values(.., w_seed)` and bias `values(.., b_seed)`.
fn dense(
    g: &mut Graph,
    x: NodeId,
    (c, o, k): (usize, usize, usize),
    stride: usize,
    (w_seed, b_seed): (u64, u64),
) -> NodeId {
    let w = constant(g, &values(o * c * k * k, w_seed), &[o, c, k, k]);
    let b = constant(g, &values(o, b_seed), &[o]);
    g.conv(x, w, Some(b), conv_window(k, stride), 1)
}

/// tools/gen_nchwc_chain_fixtures.py's `resnet_like`: a 3x3 conv of
/// `x` with weight `values(.., seed)` `[32, c, 3, 3]` and bias `seed + 1`;
/// `r2` also a graph output when `r2_out`.
fn resnet_like(r2_out: bool) -> CpuExecutable {
    let mut g = Graph::new("resnet_like");
    let x = g.input("x", Shape::new(&[2, 16, 11, 13], DType::F32));
    let conv3 = |g: &mut Graph, v, c, seed| conv3x3(g, v, (c, 32), (seed, seed + 1));
    let a = conv3(&mut g, x, 16, 31);
    let a = g.relu(a);
    let m = g.max_pool2d(a, [3, 3], [2, 2], [1, 1]);
    let c1 = conv3(&mut g, m, 32, 33);
    let c1 = g.relu(c1);
    let r1 = conv3(&mut g, c1, 32, 35);
    let r1 = g.add(r1, m);
    let r1 = g.relu(r1);
    let c3 = conv3(&mut g, r1, 32, 37);
    let c3 = g.relu(c3);
    let r2 = conv3(&mut g, c3, 32, 39);
    let r2 = g.add(r2, r1);
    let r2 = g.relu(r2);
    let more = if r2_out { vec![r2] } else { vec![] };
    mean_pool_and(g, r2, &more)
}

/// The stem-like conv writes blocked for its max pool, which writes
/// blocked for the first block's conv and residual; the second block's
/// input (read as image and as blocked residual) and both blocks' inner
/// edges stay blocked, and the last output is pooled blocked twice; at
/// 1-3 threads against numpy.
#[test]
fn resnet_like_blocks_match_numpy() {
    let fx: Value = serde_json::from_str(RESNET_LIKE).unwrap();
    let xs: Vec<f32> = values(2 * 16 * 11 * 13, 30)
        .iter()
        .map(|v| v * 16.0)
        .collect();
    let x = HostTensor::from_slice(&xs, &[2, 16, 11, 13]).unwrap();
    for r2_out in [false, true] {
        let mut exe = resnet_like(r2_out);
        if avx512() {
            // a -> pool, m -> (c1, r1's residual), c1 -> r1, r1 -> (c3,
            // r2's residual), c3 -> r2, r2 -> (mean, pool). With r2 a graph
            // output, r2 is NCHW (its row chain gathers r1's blocked lanes).
            assert_eq!(exe.nchwc_blocked_outputs(), if r2_out { 5 } else { 6 });
        }
        for threads in 1..=3 {
            exe.limit_threads(Some(threads)).unwrap();
            let out = exe.run(&[&x]).unwrap();
            let what = format!("resnet-like, r2 an output {r2_out}, threads {threads}");
            if r2_out {
                assert_close(
                    &out[2].to_vec::<f32>().unwrap(),
                    &floats(&fx["r2"]),
                    &format!("r2, {what}"),
                );
            }
            assert_close(
                &out[0].to_vec::<f32>().unwrap(),
                &floats(&fx["g"]),
                &format!("mean, {what}"),
            );
            assert_eq!(
                out[1].dims().to_vec(),
                floats(&fx["q_shape"])
                    .iter()
                    .map(|&d| d as usize)
                    .collect::<Vec<_>>()
            );
            assert_close(
                &out[1].to_vec::<f32>().unwrap(),
                &floats(&fx["q"]),
                &format!("max pool, {what}"),
            );
        }
    }
}

/// tools/gen_nchwc_chain_fixtures.py's `layer1_like`: two residual
/// blocks of 64 -> 64 3x3 convs on 34 x 34 maps (Winograd's shapes), the
/// first block's residual the NCHW input, the second's the first block's
/// blocked output, then a global mean and a 4x4 max pool.
fn layer1_like() -> CpuExecutable {
    let mut g = Graph::new("layer1_like");
    let x = g.input("x", Shape::new(&[2, 64, 34, 34], DType::F32));
    let conv3 = |g: &mut Graph, v, seed| conv3x3(g, v, (64, 64), (seed, seed + 1));
    let c1 = conv3(&mut g, x, 51);
    let c1 = g.relu(c1);
    let r1 = conv3(&mut g, c1, 53);
    let r1 = g.add(r1, x);
    let r1 = g.relu(r1);
    let c3 = conv3(&mut g, r1, 55);
    let c3 = g.relu(c3);
    let r2 = conv3(&mut g, c3, 57);
    let r2 = g.add(r2, r1);
    let r2 = g.relu(r2);
    let mean = g.mean(r2, &[2, 3], true);
    let q = g.max_pool2d(r2, [4, 4], [4, 4], [0, 0]);
    g.set_outputs(vec![mean, q]);
    let lir = lower(&g, &|op| CpuBackend.claims(op), &LowerOptions::default()).unwrap();
    CpuExecutable::new(lir).unwrap()
}

/// Winograd-shaped 64 -> 64 convs run the NCHWc kernel with their edges
/// blocked (`Conv2d::nchwc_wins_blocked`): c1 -> r1, r1 -> (c3, r2's
/// residual), c3 -> r2, r2 -> (mean, pool); at 1-3 threads against numpy.
#[test]
fn layer1_like_blocks_match_numpy() {
    let fx: Value = serde_json::from_str(LAYER1_LIKE).unwrap();
    let n = 2 * 64 * 34 * 34;
    let xs: Vec<f32> = values(n, 50).iter().map(|v| v * 16.0).collect();
    let x = HostTensor::from_slice(&xs, &[2, 64, 34, 34]).unwrap();
    let mut exe = layer1_like();
    if avx512() {
        // x is the graph's input (NCHW, also r1's residual); every conv
        // output after it stays blocked.
        assert_eq!(exe.nchwc_blocked_outputs(), 4);
    }
    for threads in 1..=3 {
        exe.limit_threads(Some(threads)).unwrap();
        let out = exe.run(&[&x]).unwrap();
        let what = format!("layer-1-like, threads {threads}");
        assert_close(
            &out[0].to_vec::<f32>().unwrap(),
            &floats(&fx["g"]),
            &format!("mean, {what}"),
        );
        assert_eq!(out[1].dims(), &[2, 64, 8, 8]);
        assert_close(
            &out[1].to_vec::<f32>().unwrap(),
            &floats(&fx["q"]),
            &format!("pool, {what}"),
        );
    }
}

/// tools/gen_nchwc_chain_fixtures.py's `transition`: a ResNet stage
/// transition, the stage input read by a 3x3 stride-2 conv and a 1x1
/// stride-2 downsample whose output is the block's residual.
fn transition() -> CpuExecutable {
    let mut g = Graph::new("transition");
    let x = g.input("x", Shape::new(&[2, 32, 14, 14], DType::F32));
    let a = conv3x3(&mut g, x, (32, 32), (71, 72));
    let a = g.relu(a);
    let t = dense(&mut g, a, (32, 64, 3), 2, (73, 74));
    let t = g.relu(t);
    let d = dense(&mut g, a, (32, 64, 1), 2, (75, 76));
    let y = conv3x3(&mut g, t, (64, 64), (77, 78));
    let y = g.add(y, d);
    let y = g.relu(y);
    mean_and_pool(g, y)
}

/// The 1x1 stride-2 downsample runs the NCHWc kernel blocked on both sides
/// (`Conv2d::nchwc_wins_blocked`), so the stage input stays blocked for
/// both its readers; at 1-3 threads against numpy.
#[test]
fn stage_transition_matches_numpy() {
    let fx: Value = serde_json::from_str(TRANSITION).unwrap();
    let n = 2 * 32 * 14 * 14;
    let xs: Vec<f32> = values(n, 70).iter().map(|v| v * 16.0).collect();
    let x = HostTensor::from_slice(&xs, &[2, 32, 14, 14]).unwrap();
    let mut exe = transition();
    if avx512() {
        // a -> (t, d), t -> y, d -> y's residual, y -> (mean, pool).
        assert_eq!(exe.nchwc_blocked_outputs(), 4);
    }
    check_mean_and_pool(&mut exe, &x, &fx, &[2, 64, 4, 4], "stage transition");
}

/// Runs `exe` on `x` at 1-3 threads and compares its two outputs, a
/// global mean and a max pool of `q_dims`, with the fixture's `g` / `q`.
fn check_mean_and_pool(
    exe: &mut CpuExecutable,
    x: &HostTensor,
    fx: &Value,
    q_dims: &[usize],
    name: &str,
) {
    for threads in 1..=3 {
        exe.limit_threads(Some(threads)).unwrap();
        let out = exe.run(&[x]).unwrap();
        let what = format!("{name}, threads {threads}");
        assert_close(
            &out[0].to_vec::<f32>().unwrap(),
            &floats(&fx["g"]),
            &format!("mean, {what}"),
        );
        assert_eq!(out[1].dims(), q_dims);
        assert_close(
            &out[1].to_vec::<f32>().unwrap(),
            &floats(&fx["q"]),
            &format!("pool, {what}"),
        );
    }
}

/// `g` with outputs the global mean of `y` and its 2x2 stride-2 max pool
/// (ceil-mode padding), compiled.
fn mean_and_pool(g: Graph, y: NodeId) -> CpuExecutable {
    mean_pool_and(g, y, &[])
}

/// [`mean_and_pool`] with `more` graph outputs after those two.
fn mean_pool_and(mut g: Graph, y: NodeId, more: &[NodeId]) -> CpuExecutable {
    let mean = g.mean(y, &[2, 3], true);
    let window = Window {
        kernel: vec![2, 2],
        stride: vec![2, 2],
        padding: vec![(0, 1); 2],
        dilation: vec![1, 1],
    };
    let q = g.pool(y, PoolKind::Max, window, false);
    g.set_outputs([mean, q].iter().chain(more).copied().collect());
    let lir = lower(&g, &|op| CpuBackend.claims(op), &LowerOptions::default()).unwrap();
    CpuExecutable::new(lir).unwrap()
}

/// tools/gen_nchwc_chain_fixtures.py's `stem_stage`: a 3-channel 7x7
/// stride-2 stem -> max pool -> residual block -> stage transition on a
/// map whose 1x1 stride-2 downsample has more than 64 output pixels.
fn stem_stage() -> CpuExecutable {
    let mut g = Graph::new("stem_stage");
    let x = g.input("x", Shape::new(&[2, 3, 67, 71], DType::F32));
    let s = dense(&mut g, x, (3, 32, 7), 2, (91, 92));
    let s = g.relu(s);
    let m = g.max_pool2d(s, [3, 3], [2, 2], [1, 1]);
    let c1 = conv3x3(&mut g, m, (32, 32), (93, 94));
    let c1 = g.relu(c1);
    let r1 = conv3x3(&mut g, c1, (32, 32), (95, 96));
    let r1 = g.add(r1, m);
    let r1 = g.relu(r1);
    let t = dense(&mut g, r1, (32, 64, 3), 2, (97, 98));
    let t = g.relu(t);
    let d = dense(&mut g, r1, (32, 64, 1), 2, (99, 100));
    let y = conv3x3(&mut g, t, (64, 64), (101, 102));
    let y = g.add(y, d);
    let y = g.relu(y);
    mean_and_pool(g, y)
}

/// The block after the stem and pool stays blocked inside, and the 1x1
/// stride-2 downsample on a 9 x 9 output runs by rows on its blocked image
/// read in place (`Conv2d::nchwc_wins_blocked`); at 1-3 threads against
/// numpy.
#[test]
fn stem_and_stage_match_numpy() {
    let fx: Value = serde_json::from_str(STEM_STAGE).unwrap();
    let n = 2 * 3 * 67 * 71;
    let xs: Vec<f32> = values(n, 90).iter().map(|v| v * 16.0).collect();
    let x = HostTensor::from_slice(&xs, &[2, 3, 67, 71]).unwrap();
    let mut exe = stem_stage();
    if avx512() {
        // s -> pool, m -> (c1, r1's residual), c1 -> r1, r1 -> (t, d),
        // t -> y, d -> y's residual, y -> (mean, pool); the stem of 32
        // outputs (not a full 4-block NCHWc tile) runs the stem kernel,
        // which writes blocked for the pool.
        assert_eq!(exe.nchwc_blocked_outputs(), 7);
    }
    check_mean_and_pool(&mut exe, &x, &fx, &[2, 64, 5, 5], "stem and stage");
}

/// Which extra reader keeps a value of [`stem_pool_block`] NCHW.
#[derive(Clone, Copy, Debug, PartialEq)]
enum SideOutput {
    /// None: every edge from the stem to the block's output is blocked.
    No,
    /// A 64 -> 128 1x1 conv of the stem output `s`, average pooled (a
    /// graph output): the 1x1 would read `s` blocked but write NCHW, which
    /// does not pay, so `s` goes back to NCHW after the pool was planned
    /// to write blocked.
    Stem,
    /// An average pool of the pool output `m` (a graph output).
    Pool,
}

/// tools/gen_nchwc_chain_fixtures.py's `stem_pool_block`: ResNet-18's
/// `c` -> 64 7x7 stride-2 stem, max pool and a residual block on an image
/// of `c` x `h` x `w`, then the mean and max pool of the block output, and
/// `side`'s average pool as a third output.
fn stem_pool_block(side: SideOutput, (c, h, w): (usize, usize, usize)) -> CpuExecutable {
    let mut g = Graph::new("stem_pool_block");
    let x = g.input("x", Shape::new(&[2, c, h, w], DType::F32));
    let s = dense(&mut g, x, (c, 64, 7), 2, (111, 112));
    let s = g.relu(s);
    let m = g.max_pool2d(s, [3, 3], [2, 2], [1, 1]);
    let c1 = conv3x3(&mut g, m, (64, 64), (113, 114));
    let c1 = g.relu(c1);
    let r1 = conv3x3(&mut g, c1, (64, 64), (115, 116));
    let r1 = g.add(r1, m);
    let r1 = g.relu(r1);
    let avg = |g: &mut Graph, v, k| {
        let window = Window {
            kernel: vec![k, k],
            stride: vec![k, k],
            padding: vec![(0, 0); 2],
            dilation: vec![1, 1],
        };
        g.pool(v, PoolKind::Avg, window, false)
    };
    let more = match side {
        SideOutput::No => vec![],
        SideOutput::Stem => {
            let e = dense(&mut g, s, (64, 128, 1), 1, (117, 118));
            vec![avg(&mut g, e, 4)]
        }
        SideOutput::Pool => vec![avg(&mut g, m, 2)],
    };
    mean_pool_and(g, r1, &more)
}

/// The stem (on the NCHWc kernel, its image read as NCHW planes) writes
/// its 64 channels blocked for the max pool, which writes blocked for the
/// block's conv and residual; with the stem output also read by a 1x1
/// conv that must not read it blocked, the stem writes NCHW and the pool
/// transposes it in, and with the pool output also read by an average
/// pool the pool writes NCHW. An RGB image of 37 x 41 and a one-channel
/// one of 29 x 33 (padding 3, stride 2: odd maps, a partial last tile),
/// at 1-3 threads against numpy.
#[test]
fn stem_pool_block_matches_numpy() {
    // (image, fixture, dims of the pool of r1, of `a`, of `b`).
    let cases = [
        (
            (3, 37, 41),
            STEM_POOL_BLOCK,
            [2, 64, 5, 6],
            [2, 128, 4, 5],
            [2, 64, 5, 5],
        ),
        (
            (1, 29, 33),
            STEM_POOL_BLOCK_C1,
            [2, 64, 4, 5],
            [2, 128, 3, 4],
            [2, 64, 4, 4],
        ),
    ];
    for ((c, h, w), fixture, q_dims, a_dims, b_dims) in cases {
        let fx: Value = serde_json::from_str(fixture).unwrap();
        let xs: Vec<f32> = values(2 * c * h * w, 110)
            .iter()
            .map(|v| v * 16.0)
            .collect();
        let x = HostTensor::from_slice(&xs, &[2, c, h, w]).unwrap();
        for side in [SideOutput::No, SideOutput::Stem, SideOutput::Pool] {
            let mut exe = stem_pool_block(side, (c, h, w));
            if avx512() {
                // s -> pool, m -> (c1, r1's residual), c1 -> r1, r1 -> (mean,
                // pool); less the side output's producer.
                let want = if side == SideOutput::No { 4 } else { 3 };
                assert_eq!(exe.nchwc_blocked_outputs(), want, "{c} channels, {side:?}");
            }
            let name = format!("stem of {c} channels, pool and block, {side:?}");
            check_mean_and_pool(&mut exe, &x, &fx, &q_dims, &name);
            let (key, dims) = match side {
                SideOutput::No => continue,
                SideOutput::Stem => ("a", a_dims),
                SideOutput::Pool => ("b", b_dims),
            };
            for threads in 1..=3 {
                exe.limit_threads(Some(threads)).unwrap();
                let out = exe.run(&[&x]).unwrap();
                assert_eq!(out[2].dims(), &dims);
                assert_close(
                    &out[2].to_vec::<f32>().unwrap(),
                    &floats(&fx[key]),
                    &format!("{name}, average pool, threads {threads}"),
                );
            }
        }
    }
}

/// tools/gen_nchwc_chain_fixtures.py's `stem_depthwise`: MobileNetV2's
/// 3 -> 32 3x3 stride-2 stem + ReLU6, depthwise 3x3 + ReLU6, 32 -> 16 1x1.
fn stem_depthwise(n: usize, (h, w): (usize, usize)) -> CpuExecutable {
    let mut g = Graph::new("stem_depthwise");
    let x = g.input("x", Shape::new(&[n, 3, h, w], DType::F32));
    let s = dense(&mut g, x, (3, 32, 3), 2, (131, 132));
    let s = relu6(&mut g, s);
    let d = conv_k(&mut g, s, (32, 32, 3), 1, 133);
    let d = relu6(&mut g, d);
    let y = conv_k(&mut g, d, (32, 16, 1), 1, 135);
    g.set_outputs(vec![y]);
    let lir = lower(&g, &|op| CpuBackend.claims(op), &LowerOptions::default()).unwrap();
    CpuExecutable::new(lir).unwrap()
}

/// The stem kernel writes its 32 channels blocked for the depthwise, which
/// writes blocked for the project (two blocked outputs): odd images with
/// padding on every edge at stride 2 (35 x 33 -> 18 x 17, batch 2; 57 x
/// 59 -> 29 x 30, the depthwise's plane over 28 x 28 in row bands), 1-3
/// threads against numpy.
#[test]
fn blocked_stem_depthwise_matches_numpy() {
    let fx: Value = serde_json::from_str(STEM_DEPTHWISE).unwrap();
    for (n, (h, w)) in [(2, (35, 33)), (1, (57, 59))] {
        let case = &fx[format!("n{n}_{h}x{w}")];
        let xs: Vec<f32> = values(n * 3 * h * w, 130)
            .iter()
            .map(|v| v * 16.0)
            .collect();
        let x = HostTensor::from_slice(&xs, &[n, 3, h, w]).unwrap();
        let mut exe = stem_depthwise(n, (h, w));
        if avx512() {
            assert_eq!(exe.nchwc_blocked_outputs(), 2, "{n} x {h} x {w}");
        }
        let dims: Vec<usize> = case["shape"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d.as_u64().unwrap() as usize)
            .collect();
        for threads in 1..=3 {
            exe.limit_threads(Some(threads)).unwrap();
            let out = exe.run(&[&x]).unwrap();
            assert_eq!(out[0].dims(), &dims[..]);
            assert_close(
                &out[0].to_vec::<f32>().unwrap(),
                &floats(&case["y"]),
                &format!("{n} x {h} x {w}, threads {threads}"),
            );
        }
    }
}

/// tools/gen_nchwc_chain_fixtures.py's `stem_conv`: a 3 -> 16 3x3 stem
/// (`stride`) + SiLU, then a 16 -> 32 3x3 stride-2 conv + SiLU.
fn stem_conv(n: usize, (h, w): (usize, usize), stride: usize) -> CpuExecutable {
    let mut g = Graph::new("stem_conv");
    let x = g.input("x", Shape::new(&[n, 3, h, w], DType::F32));
    let silu = |g: &mut Graph, v: NodeId| {
        let s = g.sigmoid(v);
        g.mul(v, s)
    };
    let s = dense(&mut g, x, (3, 16, 3), stride, (141, 142));
    let s = silu(&mut g, s);
    let y = dense(&mut g, s, (16, 32, 3), 2, (143, 144));
    let y = silu(&mut g, y);
    g.set_outputs(vec![y]);
    let lir = lower(&g, &|op| CpuBackend.claims(op), &LowerOptions::default()).unwrap();
    CpuExecutable::new(lir).unwrap()
}

/// The stem kernel writes its 16 channels blocked (8 x 16 transposes, the
/// SiLU on blocked rows) for the stride-2 conv: stride 2 on 37 x 35 and
/// stride 1 on 9 x 35 (padding on every edge, partial vectors), batch 2,
/// 1-3 threads against numpy.
#[test]
fn blocked_stem_conv_matches_numpy() {
    let fx: Value = serde_json::from_str(STEM_CONV).unwrap();
    for ((h, w), stride) in [((37, 35), 2), ((9, 35), 1)] {
        let case = &fx[format!("n2_{h}x{w}_s{stride}")];
        let xs: Vec<f32> = values(2 * 3 * h * w, 140)
            .iter()
            .map(|v| v * 16.0)
            .collect();
        let x = HostTensor::from_slice(&xs, &[2, 3, h, w]).unwrap();
        let mut exe = stem_conv(2, (h, w), stride);
        if avx512() {
            assert_eq!(exe.nchwc_blocked_outputs(), 1, "{h} x {w} stride {stride}");
        }
        let want = floats(&case["y"]);
        for threads in 1..=3 {
            exe.limit_threads(Some(threads)).unwrap();
            let out = exe.run(&[&x]).unwrap();
            assert_close(
                &out[0].to_vec::<f32>().unwrap(),
                &want,
                &format!("{h} x {w} stride {stride}, threads {threads}"),
            );
        }
    }
}
