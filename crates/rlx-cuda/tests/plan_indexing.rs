//! The indexing, top-k, transposed-convolution, resize and dequantize
//! kernels, planned on any machine and run by the host interpreter (which
//! computes each op from its definition) against the CPU backend.

mod common;

use common::graphs::{gguf_blocks, indexing_and_resampling, rand};
use common::interp::interpret;
use common::plan_check::{assert_plan_matches_cpu, assert_plan_matches_cpu_of, lir_of};
use common::reference::ordered_inputs;
use rlx_cuda::plan::{plan, Kernel};
use rlx_driver::BackendError;
use rlx_gguf::GgmlType;
use rlx_ir::op::Window;
use rlx_ir::ops::upsample::InterpMode;
use rlx_ir::quant::QuantScheme;
use rlx_ir::{DType, Graph, GraphExt, HostTensor, Op, Shape};

fn indices(v: &[i64], dims: &[usize]) -> HostTensor {
    HostTensor::from_vec(v.to_vec(), dims).unwrap()
}

fn kinds(p: &rlx_cuda::plan::LaunchPlan) -> Vec<String> {
    p.steps.iter().map(|s| s.kernel.to_string()).collect()
}

#[test]
fn gather_elements_along_every_axis_with_negative_indices_matches_the_cpu() {
    let x = rand(&[3, 5, 4], -1.0, 1.0, 1);
    // Index dims may be smaller than the data's off the axis (torch gather).
    let cases: [(i64, [usize; 3], Vec<i64>); 3] = [
        (
            1,
            [3, 2, 4],
            vec![
                0, 4, -1, 2, 3, -5, 1, 1, 2, 0, 4, 3, -2, 1, 0, 4, 3, 3, 2, 1, 0, -4, 2, 1,
            ],
        ),
        (0, [2, 3, 4], (0..24).map(|i| (i * 7 % 6) - 3).collect()),
        (-1, [2, 4, 3], (0..24).map(|i| i * 5 % 4).collect()),
    ];
    for (axis, dims, idx) in cases {
        let mut g = Graph::new("gather_elements");
        let xi = g.input("x", Shape::new(&[3, 5, 4], DType::F32));
        let ii = g.input("i", Shape::new(&dims, DType::I64));
        let y = g.gather_elements(xi, ii, axis);
        g.set_outputs(vec![y]);
        let i = indices(&idx, &dims);
        let p = assert_plan_matches_cpu(&g, &[], &[("x", &x), ("i", &i)], 0.0);
        assert!(
            matches!(p.steps[0].kernel, Kernel::GatherElements(_)),
            "{:?}",
            kinds(&p)
        );
    }
}

#[test]
fn scatter_add_accumulates_repeated_indices_like_the_cpu() {
    let base = rand(&[4, 3], -1.0, 1.0, 2);
    for (axis, dims, idx) in [
        (
            0i64,
            [5usize, 3usize],
            vec![0i64, 3, 1, 3, 3, -1, 2, 0, 0, 1, 1, 2, -4, 3, 0],
        ),
        (1, [4, 2], vec![2, 2, 0, -1, 1, 1, 0, 2]),
    ] {
        let upd = rand(&dims, -1.0, 1.0, 3);
        let mut g = Graph::new("scatter_add");
        let b = g.input("b", Shape::new(&[4, 3], DType::F32));
        let i = g.input("i", Shape::new(&dims, DType::I64));
        let u = g.input("u", Shape::new(&dims, DType::F32));
        let y = g.scatter_add(b, i, u, axis);
        g.set_outputs(vec![y]);
        let it = indices(&idx, &dims);
        let p = assert_plan_matches_cpu(&g, &[], &[("b", &base), ("i", &it), ("u", &upd)], 1e-6);
        assert!(p
            .steps
            .iter()
            .any(|s| matches!(s.kernel, Kernel::ScatterAdd(_))));
    }
}

#[test]
fn scatter_add_of_an_integer_type_is_a_named_error() {
    let mut g = Graph::new("scatter_add_i32");
    let b = g.input("b", Shape::new(&[4], DType::I32));
    let i = g.input("i", Shape::new(&[2], DType::I64));
    let u = g.input("u", Shape::new(&[2], DType::I32));
    let y = g.scatter_add(b, i, u, 0);
    g.set_outputs(vec![y]);
    let err = plan(&lir_of(&g), 0).unwrap_err();
    assert!(matches!(err, BackendError::Unsupported { .. }), "{err}");
    assert!(
        err.to_string().contains("scatter_add") && err.to_string().contains("i32"),
        "{err}"
    );
}

/// Values rounded to halves in [-2, 2): many ties.
fn with_ties(dims: &[usize], seed: u64) -> HostTensor {
    let v: Vec<f32> = rand(dims, -2.0, 2.0, seed)
        .to_vec::<f32>()
        .unwrap()
        .iter()
        .map(|a| (a * 2.0).round() / 2.0)
        .collect();
    HostTensor::from_vec(v, dims).unwrap()
}

#[test]
fn topk_values_and_indices_with_ties_match_the_cpu_both_ways() {
    let x = with_ties(&[2, 7, 3], 4);
    for axis in [0i64, 1, 2] {
        let len = [2, 7, 3][axis as usize];
        for k in [1, len.min(3), len] {
            for largest in [true, false] {
                let mut g = Graph::new("topk");
                let xi = g.input("x", Shape::new(&[2, 7, 3], DType::F32));
                let (v, i) = g.topk(xi, k, axis, largest);
                g.set_outputs(vec![v, i]);
                let p = assert_plan_matches_cpu(&g, &[], &[("x", &x)], 0.0);
                assert_eq!(p.steps.len(), 2, "{:?}", kinds(&p));
            }
        }
    }
}

#[test]
fn topk_ranks_nan_above_every_number_like_the_cpu() {
    let nan = f32::NAN;
    let x = HostTensor::from_vec(
        vec![3.0, 1.0, nan, 3.0, -2.0, 5.0, 0.0, -0.0, 2.0, 2.0, nan, nan],
        &[2, 6],
    )
    .unwrap();
    for largest in [true, false] {
        let mut g = Graph::new("topk_nan");
        let xi = g.input("x", Shape::new(&[2, 6], DType::F32));
        let (v, i) = g.topk(xi, 4, -1, largest);
        g.set_outputs(vec![v, i]);
        assert_plan_matches_cpu(&g, &[], &[("x", &x)], 0.0);
    }
}

#[test]
fn nearest_and_linear_resizes_of_one_two_and_three_spatial_dims_match_the_cpu() {
    let cases: [(&[usize], &[usize]); 5] = [
        (&[1, 2, 3, 4], &[5, 3]),
        (&[2, 1, 3, 4], &[2, 7]),
        (&[1, 1, 3, 4], &[1, 7]),
        (&[1, 3, 9], &[4]),
        (&[1, 2, 3, 4, 2], &[5, 2, 3]),
    ];
    for (k, (dims, size)) in cases.into_iter().enumerate() {
        let x = rand(dims, -1.0, 1.0, 10 + k as u64);
        for (mode, align) in [
            (InterpMode::Nearest, false),
            (InterpMode::Linear, false),
            (InterpMode::Linear, true),
        ] {
            let mut g = Graph::new("resize");
            let xi = g.input("x", Shape::new(dims, DType::F32));
            let y = g.upsample(xi, size, mode, align);
            g.set_outputs(vec![y]);
            let p = assert_plan_matches_cpu(&g, &[], &[("x", &x)], 1e-5);
            assert!(
                matches!(p.steps[0].kernel, Kernel::Resize(_)),
                "{:?}",
                kinds(&p)
            );
        }
    }
}

#[test]
fn strided_padded_grouped_conv_transpose2d_with_bias_matches_the_cpu() {
    let (x, w, b) = (
        rand(&[2, 4, 3, 5], -1.0, 1.0, 20),
        rand(&[4, 3, 3, 2], -1.0, 1.0, 21),
        rand(&[6], -1.0, 1.0, 22),
    );
    for (stride, padding, output_padding, bias) in [
        ([2, 1], [1, 0], [1, 0], true),
        ([1, 1], [0, 0], [0, 0], false),
        ([3, 2], [2, 1], [2, 1], true),
    ] {
        let mut g = Graph::new("conv_transpose2d");
        let xi = g.input("x", Shape::new(&[2, 4, 3, 5], DType::F32));
        let wi = g.param("w", Shape::new(&[4, 3, 3, 2], DType::F32));
        let bi = bias.then(|| g.param("b", Shape::new(&[6], DType::F32)));
        let y = g.conv_transpose2d(xi, wi, bi, stride, padding, output_padding, 2);
        g.set_outputs(vec![y]);
        let params: Vec<(&str, &HostTensor)> = if bias {
            vec![("w", &w), ("b", &b)]
        } else {
            vec![("w", &w)]
        };
        let p = assert_plan_matches_cpu(&g, &params, &[("x", &x)], 1e-5);
        assert!(
            matches!(p.steps[0].kernel, Kernel::ConvTranspose2d(_)),
            "{:?}",
            kinds(&p)
        );
    }
}

#[test]
fn dilated_conv_transpose1d_matches_the_cpu() {
    let (x, w) = (
        rand(&[1, 2, 6], -1.0, 1.0, 23),
        rand(&[2, 3, 3], -1.0, 1.0, 24),
    );
    let mut g = Graph::new("conv_transpose1d");
    let xi = g.input("x", Shape::new(&[1, 2, 6], DType::F32));
    let wi = g.param("w", Shape::new(&[2, 3, 3], DType::F32));
    let window = Window {
        kernel: Vec::new(),
        stride: vec![2],
        padding: vec![(1, 1)],
        dilation: vec![2],
    };
    let op = Op::ConvTranspose {
        window,
        output_padding: vec![1],
        groups: 1,
    };
    let y = g.try_node(op, &[xi, wi], None).unwrap();
    g.set_outputs(vec![y]);
    assert_plan_matches_cpu(&g, &[("w", &w)], &[("x", &x)], 1e-5);
}

/// `[dequantize(w), x · dequantize(w)ᵀ]`, the product as the composite
/// `dequant_matmul` or (`spelled_out`) as its primitives: the CPU's own
/// quantized matmul rounds the activations to 8 bits per block (ggml's
/// math), so the CUDA plan of the composite is checked against the
/// primitives' definition.
fn dequant_graph(
    scheme: QuantScheme,
    bytes: usize,
    n: usize,
    k: usize,
    spelled_out: bool,
) -> Graph {
    let mut g = Graph::new("dequant");
    let xi = g.input("x", Shape::new(&[3, k], DType::F32));
    let wi = g.input("w", Shape::new(&[bytes], DType::U8));
    let deq = Op::Dequantize { scheme };
    let wf = g
        .try_node(deq, &[wi], Some(Shape::new(&[n, k], DType::F32)))
        .unwrap();
    let y = if spelled_out {
        let wt = g.transpose_(wf, &[1, 0]);
        g.mm(xi, wt)
    } else {
        g.dequant_matmul(xi, wi, Some(scheme), n, k)
    };
    g.set_outputs(vec![wf, y]);
    g
}

#[test]
fn legacy_quant_dequantize_and_dequant_matmul_match_the_cpu() {
    let (n, k) = (6, 64);
    for scheme in [
        QuantScheme::GgufQ4_0,
        QuantScheme::GgufQ4_1,
        QuantScheme::GgufQ5_0,
        QuantScheme::GgufQ5_1,
        QuantScheme::GgufQ8_0,
    ] {
        let bytes = gguf_blocks(scheme, n * k / 32, 30);
        let wt = HostTensor::from_vec(bytes.clone(), &[bytes.len()]).unwrap();
        let x = rand(&[3, k], -1.0, 1.0, 31);
        let g = dequant_graph(scheme, bytes.len(), n, k, false);
        let reference = dequant_graph(scheme, bytes.len(), n, k, true);
        let p = assert_plan_matches_cpu_of(&g, &reference, &[], &[("x", &x), ("w", &wt)], 1e-5);
        assert!(
            p.steps
                .iter()
                .any(|s| matches!(s.kernel, Kernel::Dequantize { .. })),
            "{:?}",
            kinds(&p)
        );
    }
}

#[test]
fn q4_0_q4_1_q5_0_q5_1_and_q8_0_dequantize_bit_exactly_like_rlx_gguf() {
    let (n, k) = (6, 64);
    for (scheme, ty) in [
        (QuantScheme::GgufQ4_0, GgmlType::Q4_0),
        (QuantScheme::GgufQ4_1, GgmlType::Q4_1),
        (QuantScheme::GgufQ5_0, GgmlType::Q5_0),
        (QuantScheme::GgufQ5_1, GgmlType::Q5_1),
        (QuantScheme::GgufQ8_0, GgmlType::Q8_0),
    ] {
        let bytes = gguf_blocks(scheme, n * k / 32, 50);
        let wt = HostTensor::from_vec(bytes.clone(), &[bytes.len()]).unwrap();
        let x = rand(&[3, k], -1.0, 1.0, 51);
        let g = dequant_graph(scheme, bytes.len(), n, k, false);
        let lir = lir_of(&g);
        let p = plan(&lir, 0).unwrap();
        p.check().unwrap();
        let got = interpret(&p, &ordered_inputs(&lir, &[("x", &x), ("w", &wt)]), &[]);
        let want = rlx_gguf::codecs::dequantize(ty, &bytes, n * k).unwrap();
        for (i, (a, b)) in got[0].iter().zip(&want).enumerate() {
            assert_eq!(*a as f32, *b, "{ty:?} value {i}");
        }
    }
}

#[test]
fn q4_k_q5_k_and_q6_k_dequantize_bit_exactly_like_rlx_gguf() {
    let (n, k) = (4, 512);
    for (scheme, ty) in [
        (QuantScheme::GgufQ4K, GgmlType::Q4_K),
        (QuantScheme::GgufQ5K, GgmlType::Q5_K),
        (QuantScheme::GgufQ6K, GgmlType::Q6_K),
    ] {
        let bytes = gguf_blocks(scheme, n * k / 256, 40);
        let wt = HostTensor::from_vec(bytes.clone(), &[bytes.len()]).unwrap();
        let x = rand(&[3, k], -1.0, 1.0, 41);
        let g = dequant_graph(scheme, bytes.len(), n, k, false);
        let lir = lir_of(&g);
        let p = plan(&lir, 0).unwrap();
        p.check().unwrap();
        let got = interpret(&p, &ordered_inputs(&lir, &[("x", &x), ("w", &wt)]), &[]);
        let want = rlx_gguf::codecs::dequantize(ty, &bytes, n * k).unwrap();
        for (i, (a, b)) in got[0].iter().zip(&want).enumerate() {
            assert_eq!(*a as f32, *b, "{ty:?} value {i}");
        }
        // The quantized matmul (SmolLM2 Q4_K_M's projections) against the
        // CPU backend running its primitives: f32 sums of 512 products of
        // random-scale weights (up to ~100) against the interpreter's f64.
        let reference = dequant_graph(scheme, bytes.len(), n, k, true);
        assert_plan_matches_cpu_of(&g, &reference, &[], &[("x", &x), ("w", &wt)], 1e-4);
    }
}

#[test]
fn a_gguf_format_without_a_kernel_is_a_named_error() {
    let mut g = Graph::new("q3k");
    let wi = g.input("w", Shape::new(&[110], DType::U8));
    let deq = Op::Dequantize {
        scheme: QuantScheme::GgufQ3K,
    };
    let y = g
        .try_node(deq, &[wi], Some(Shape::new(&[256], DType::F32)))
        .unwrap();
    g.set_outputs(vec![y]);
    let err = plan(&lir_of(&g), 0).unwrap_err().to_string();
    assert!(err.contains("GgufQ3K") && err.contains("Q6_K"), "{err}");
}

#[test]
fn the_executor_suites_indexing_and_resampling_graph_matches_the_cpu() {
    let (g, inputs, params) = indexing_and_resampling();
    let ins: Vec<(&str, &HostTensor)> = inputs.iter().map(|(n, t)| (*n, t)).collect();
    let ps: Vec<(&str, &HostTensor)> = params.iter().map(|(n, t)| (*n, t)).collect();
    let p = assert_plan_matches_cpu(&g, &ps, &ins, 1e-5);
    assert_eq!(p.steps.len(), 8, "{:?}", kinds(&p));
}
