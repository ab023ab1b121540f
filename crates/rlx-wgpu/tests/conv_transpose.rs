//! Transposed convolution on the wgpu device (its own kernel, not the
//! decomposition) against the CPU backend: 1e-5 relative for f32 (plus a
//! small absolute term for sums that cancel), 1e-2 for f16.

mod common;

use common::{assert_gpu_matches_cpu_atol, gpu_or_skip, rand, to_f16};
use rlx_driver::Backend;
use rlx_ir::op::Window;
use rlx_ir::{DType, Graph, GraphExt, HostTensor, NodeId, Op, OpKind, Shape};
use rlx_wgpu::WgpuBackend;

const RTOL: f64 = 1e-5;

fn window(stride: &[usize], padding: &[(usize, usize)], dilation: &[usize]) -> Window {
    Window {
        kernel: Vec::new(),
        stride: stride.to_vec(),
        padding: padding.to_vec(),
        dilation: dilation.to_vec(),
    }
}

fn conv_t(
    g: &mut Graph,
    inputs: &[NodeId],
    window: Window,
    output_padding: &[usize],
    groups: usize,
) -> NodeId {
    g.try_node(
        Op::ConvTranspose {
            window,
            output_padding: output_padding.to_vec(),
            groups,
        },
        inputs,
        None,
    )
    .expect("a valid transposed conv")
}

/// Every case below, over inputs of `dt`.
fn graph(dt: DType) -> Graph {
    let mut g = Graph::new(format!("conv_transpose_{dt}"));
    let mut input = |name: &str, dims: &[usize]| g.input(name, Shape::new(dims, dt));
    let x = input("x", &[2, 4, 5, 4]);
    let w = input("w", &[4, 3, 3, 3]);
    let wg = input("wg", &[4, 2, 2, 3]);
    let dw = input("dw", &[4, 1, 3, 3]);
    let bias = input("bias", &[3]);
    let x1 = input("x1", &[1, 3, 7]);
    let w1 = input("w1", &[3, 2, 4]);
    let x3 = input("x3", &[1, 2, 3, 2, 3]);
    let w3 = input("w3", &[2, 2, 2, 3, 2]);
    let outs = vec![
        // Stride 2, padding 1, output padding 1, bias (a decoder upsample).
        g.conv_transpose2d(x, w, Some(bias), [2, 2], [1, 1], [1, 1], 1),
        // Ragged padding, dilation, two groups, output padding on one axis.
        conv_t(
            &mut g,
            &[x, wg],
            window(&[2, 1], &[(2, 0), (0, 1)], &[1, 2]),
            &[1, 0],
            2,
        ),
        // Depthwise, stride 3.
        conv_t(
            &mut g,
            &[x, dw],
            window(&[3, 3], &[(0, 0), (1, 1)], &[1, 1]),
            &[0, 2],
            4,
        ),
        // One spatial dim, and three.
        conv_t(&mut g, &[x1, w1], window(&[3], &[(1, 2)], &[1]), &[0], 1),
        conv_t(
            &mut g,
            &[x3, w3],
            window(&[2, 1, 2], &[(0, 0), (1, 0), (0, 1)], &[1, 1, 2]),
            &[1, 0, 0],
            1,
        ),
    ];
    g.set_outputs(outs);
    g
}

fn feeds(dt: DType) -> Vec<(&'static str, HostTensor)> {
    [
        ("x", &[2, 4, 5, 4][..]),
        ("w", &[4, 3, 3, 3]),
        ("wg", &[4, 2, 2, 3]),
        ("dw", &[4, 1, 3, 3]),
        ("bias", &[3]),
        ("x1", &[1, 3, 7]),
        ("w1", &[3, 2, 4]),
        ("x3", &[1, 2, 3, 2, 3]),
        ("w3", &[2, 2, 2, 3, 2]),
    ]
    .into_iter()
    .enumerate()
    .map(|(k, (name, dims))| {
        let t = rand(dims, -1.0, 1.0, 80 + k as u64);
        let t = if dt == DType::F16 { to_f16(&t) } else { t };
        (name, t)
    })
    .collect()
}

#[test]
fn conv_transpose_runs_its_own_kernel_and_matches_the_cpu() {
    if !gpu_or_skip("conv_transpose_runs_its_own_kernel_and_matches_the_cpu") {
        return;
    }
    let g = graph(DType::F32);
    let lir =
        rlx_compile::lower(&g, &|op| WgpuBackend.claims(op), &Default::default()).expect("lowers");
    let kinds: Vec<OpKind> = lir.graph.nodes().iter().map(|n| n.op.kind()).collect();
    assert_eq!(
        kinds
            .iter()
            .filter(|&&k| k == OpKind::ConvTranspose)
            .count(),
        5,
        "every transposed conv stays one node: {kinds:?}"
    );
    let feeds = feeds(DType::F32);
    let refs: Vec<(&str, &HostTensor)> = feeds.iter().map(|(n, t)| (*n, t)).collect();
    // Sums of up to 27 products of values in [-1, 1).
    assert_gpu_matches_cpu_atol(&g, &[], &refs, RTOL, 1e-5);
}

#[test]
fn f16_conv_transpose_matches_the_cpu() {
    if !gpu_or_skip("f16_conv_transpose_matches_the_cpu") {
        return;
    }
    let g = graph(DType::F16);
    let feeds = feeds(DType::F16);
    let refs: Vec<(&str, &HostTensor)> = feeds.iter().map(|(n, t)| (*n, t)).collect();
    assert_gpu_matches_cpu_atol(&g, &[], &refs, 1e-2, 1e-2);
}
