//! The kernels of scans, padding, convolution and pooling, planned on any
//! machine and run by the host interpreter (which indexes each op from its
//! definition) against the CPU backend.

mod common;

use common::graphs::{binary_graph, rand, scans_and_windows, unary_graph};
use common::plan_check::assert_plan_matches_cpu;
use rlx_cuda::plan::Kernel;
use rlx_ir::op::{PadMode, PoolKind, Window};
use rlx_ir::{DType, Graph, GraphExt, HostTensor, NodeId, Shape};

/// `g` with input `x` of `dims` and `build`'s outputs.
fn one_input(
    name: &str,
    dims: &[usize],
    build: impl Fn(&mut Graph, NodeId) -> Vec<NodeId>,
) -> Graph {
    let mut g = Graph::new(name);
    let x = g.input("x", Shape::new(dims, DType::F32));
    let outs = build(&mut g, x);
    g.set_outputs(outs);
    g
}

/// Values of `dims` in `[-2, 2)` with ties: rounded to quarters.
fn with_ties(dims: &[usize], seed: u64) -> HostTensor {
    let v: Vec<f32> = rand(dims, -2.0, 2.0, seed)
        .to_vec::<f32>()
        .unwrap()
        .iter()
        .map(|a| (a * 4.0).round() / 4.0)
        .collect();
    HostTensor::from_vec(v, dims).unwrap()
}

#[test]
fn argmax_and_argmin_pick_the_first_extremum_like_the_cpu() {
    let x = with_ties(&[3, 5, 4], 1);
    for axis in [0i64, 1, -1] {
        for keep in [false, true] {
            let g = one_input("arg", &[3, 5, 4], |g, x| {
                vec![g.argmax(x, axis, keep), g.argmin(x, axis, keep)]
            });
            let p = assert_plan_matches_cpu(&g, &[], &[("x", &x)], 0.0);
            assert!(p
                .steps
                .iter()
                .any(|s| matches!(s.kernel, Kernel::ArgReduce { argmin: true, .. })));
        }
    }
}

#[test]
fn cumsum_every_direction_matches_the_cpu() {
    let x = rand(&[2, 6, 3], -1.0, 1.0, 2);
    for axis in [0i64, 1, 2] {
        for exclusive in [false, true] {
            for reverse in [false, true] {
                let g = one_input("cumsum", &[2, 6, 3], |g, x| {
                    vec![g.cumsum(x, axis, exclusive, reverse)]
                });
                assert_plan_matches_cpu(&g, &[], &[("x", &x)], 1e-5);
            }
        }
    }
}

#[test]
fn pads_of_every_mode_match_the_cpu() {
    let x = rand(&[2, 3, 4], -1.0, 1.0, 3);
    for mode in [
        PadMode::Constant(0.0),
        PadMode::Constant(-2.5),
        PadMode::Edge,
        PadMode::Reflect,
    ] {
        // Reflection takes pads shorter than the axis.
        let pads = if mode == PadMode::Reflect {
            [(1, 0), (2, 1), (3, 2)]
        } else {
            [(1, 0), (2, 1), (3, 5)]
        };
        let g = one_input("pad", &[2, 3, 4], |g, x| vec![g.pad_(x, &pads, mode)]);
        let p = assert_plan_matches_cpu(&g, &[], &[("x", &x)], 0.0);
        assert!(matches!(p.steps[0].kernel, Kernel::Pad { width: 4, .. }));
    }
}

fn window(
    kernel: &[usize],
    stride: &[usize],
    padding: &[(usize, usize)],
    dilation: &[usize],
) -> Window {
    Window {
        kernel: kernel.to_vec(),
        stride: stride.to_vec(),
        padding: padding.to_vec(),
        dilation: dilation.to_vec(),
    }
}

#[test]
fn grouped_strided_dilated_conv2d_with_bias_matches_the_cpu() {
    let (x, w, b) = (
        rand(&[2, 4, 7, 6], -1.0, 1.0, 4),
        rand(&[6, 2, 3, 2], -1.0, 1.0, 5),
        rand(&[6], -1.0, 1.0, 6),
    );
    let mut g = Graph::new("conv2d");
    let xi = g.input("x", Shape::new(&[2, 4, 7, 6], DType::F32));
    let wi = g.param("w", Shape::new(&[6, 2, 3, 2], DType::F32));
    let bi = g.param("b", Shape::new(&[6], DType::F32));
    let win = window(&[], &[2, 1], &[(1, 2), (0, 1)], &[1, 2]);
    let y = g.conv(xi, wi, Some(bi), win, 2);
    g.set_outputs(vec![y]);
    let p = assert_plan_matches_cpu(&g, &[("w", &w), ("b", &b)], &[("x", &x)], 1e-5);
    assert!(p
        .steps
        .iter()
        .any(|s| matches!(s.kernel, Kernel::Conv2d(_))));
}

#[test]
fn conv1d_without_bias_is_planned_as_height_one() {
    let (x, w) = (
        rand(&[1, 3, 9], -1.0, 1.0, 7),
        rand(&[4, 3, 3], -1.0, 1.0, 8),
    );
    let mut g = Graph::new("conv1d");
    let xi = g.input("x", Shape::new(&[1, 3, 9], DType::F32));
    let wi = g.param("w", Shape::new(&[4, 3, 3], DType::F32));
    let y = g.conv1d(xi, wi, None, 2, 1, 1, 1);
    g.set_outputs(vec![y]);
    let p = assert_plan_matches_cpu(&g, &[("w", &w)], &[("x", &x)], 1e-5);
    match &p.steps[0].kernel {
        Kernel::Conv2d(w) => assert_eq!((w.h, w.kh, w.oh, w.ow), (1, 1, 1, 5)),
        k => panic!("{k}"),
    }
}

#[test]
fn max_and_average_pooling_with_padding_match_the_cpu() {
    let x = rand(&[2, 3, 7, 8], -1.0, 1.0, 9);
    let win = window(&[3, 2], &[2, 3], &[(1, 1), (1, 0)], &[1, 1]);
    for (kind, count_pad) in [
        (PoolKind::Max, false),
        (PoolKind::Avg, false),
        (PoolKind::Avg, true),
    ] {
        let g = one_input("pool", &[2, 3, 7, 8], |g, x| {
            vec![g.pool(x, kind, win.clone(), count_pad)]
        });
        let p = assert_plan_matches_cpu(&g, &[], &[("x", &x)], 1e-5);
        assert!(matches!(p.steps[0].kernel, Kernel::Pool2d { .. }));
    }
    // 1-d, dilated.
    let x = rand(&[1, 2, 11], -1.0, 1.0, 10);
    let win = window(&[3], &[2], &[(2, 1)], &[2]);
    let g = one_input("pool1d", &[1, 2, 11], |g, x| {
        vec![g.pool(x, PoolKind::Avg, win.clone(), true)]
    });
    assert_plan_matches_cpu(&g, &[], &[("x", &x)], 1e-5);
}

#[test]
fn every_float_unary_and_binary_op_plans_and_matches_the_cpu() {
    let (x, p) = (rand(&[3, 37], -4.0, 4.0, 11), rand(&[3, 37], 0.05, 6.0, 12));
    assert_plan_matches_cpu(&unary_graph(), &[], &[("x", &x), ("p", &p)], 1e-5);
    let (a, b, pos) = (
        rand(&[2, 3, 4], -2.0, 2.0, 13),
        rand(&[3, 1], 0.5, 2.0, 14),
        rand(&[2, 3, 4], 0.1, 3.0, 15),
    );
    let ins = [("a", &a), ("b", &b), ("pos", &pos)];
    assert_plan_matches_cpu(&binary_graph(), &[], &ins, 1e-5);
}

#[test]
fn the_executor_suites_scan_and_window_graph_matches_the_cpu() {
    let (x, w, b) = (
        rand(&[2, 4, 7, 6], -1.0, 1.0, 41),
        rand(&[6, 2, 3, 2], -1.0, 1.0, 42),
        rand(&[6], -1.0, 1.0, 43),
    );
    let p = assert_plan_matches_cpu(
        &scans_and_windows(),
        &[("w", &w), ("b", &b)],
        &[("x", &x)],
        1e-5,
    );
    assert_eq!(p.steps.len(), 7);
}
