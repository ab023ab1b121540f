//! Every op family with a GPU kernel, run on the wgpu device and on the
//! CPU backend (itself checked against numpy by the op matrix) on the same
//! graph: outputs agree to 1e-5 relative. Plus the named refusals.

mod common;

use common::{
    assert_gpu_matches_cpu, assert_gpu_matches_cpu_atol, compile_gpu, gpu_compile_error,
    gpu_or_skip, rand,
};
use rlx_ir::op::{BinaryOp, CmpOp, DotDims, MaskKind, PoolKind, UnaryOp, Window};
use rlx_ir::op_coverage::{every_binary, every_unary};
use rlx_ir::{DType, Graph, GraphExt, HostTensor, Shape};

const RTOL: f64 = 1e-5;

fn f32_input(g: &mut Graph, name: &str, dims: &[usize]) -> rlx_ir::NodeId {
    g.input(name, Shape::new(dims, DType::F32))
}

#[test]
fn unary_ops() {
    if !gpu_or_skip("unary_ops") {
        return;
    }
    let mut g = Graph::new("unary");
    let x = f32_input(&mut g, "x", &[3, 37]);
    let p = f32_input(&mut g, "p", &[3, 37]);
    let outs = every_unary(&mut g, x, p);
    g.set_outputs(outs);
    let (xv, pv) = (rand(&[3, 37], -4.0, 4.0, 1), rand(&[3, 37], 0.05, 6.0, 2));
    assert_gpu_matches_cpu(&g, &[], &[("x", &xv), ("p", &pv)], RTOL);
}

#[test]
fn binary_ops_broadcast() {
    if !gpu_or_skip("binary_ops_broadcast") {
        return;
    }
    let mut g = Graph::new("binary");
    let a = f32_input(&mut g, "a", &[2, 3, 4]);
    let b = f32_input(&mut g, "b", &[3, 1]);
    let pos = f32_input(&mut g, "pos", &[2, 3, 4]);
    let mut outs = every_binary(&mut g, a, b, pos);
    outs.push(g.binary_op(BinaryOp::Pow, a, g.constant(3.0, DType::F32)));
    g.set_outputs(outs);
    let (av, bv, pv) = (
        rand(&[2, 3, 4], -3.0, 3.0, 3),
        rand(&[3, 1], 0.5, 2.0, 4),
        rand(&[2, 3, 4], 0.1, 3.0, 5),
    );
    assert_gpu_matches_cpu(&g, &[], &[("a", &av), ("b", &bv), ("pos", &pv)], RTOL);
}

#[test]
fn compare_select_bool_and_casts() {
    if !gpu_or_skip("compare_select_bool_and_casts") {
        return;
    }
    let mut g = Graph::new("compare");
    let a = f32_input(&mut g, "a", &[5, 7]);
    let b = f32_input(&mut g, "b", &[7]);
    let mut outs = Vec::new();
    let mut masks = Vec::new();
    for op in CmpOp::ALL {
        let m = g.compare_op(op, a, b);
        masks.push(m);
        outs.push(g.cast(m, DType::F32));
    }
    let both = g.binary_op(BinaryOp::And, masks[2], masks[5]);
    let either = g.binary_op(BinaryOp::Or, masks[0], masks[3]);
    let not = g.unary(UnaryOp::Not, both);
    outs.push(masks[2]); // a Bool output, read back as bytes
    outs.push(g.where_(either, a, b));
    outs.push(g.where_(not, b, 0.5f32));
    let ai = g.cast(a, DType::I32);
    outs.push(ai);
    outs.push(g.cast(ai, DType::F32));
    let ai64 = g.cast(a, DType::I64);
    outs.push(ai64);
    outs.push(g.cast(ai64, DType::F32));
    outs.push(g.cast(a, DType::Bool));
    g.set_outputs(outs);
    let (av, bv) = (rand(&[5, 7], -3.0, 3.0, 6), rand(&[7], -1.0, 1.0, 7));
    assert_gpu_matches_cpu(&g, &[], &[("a", &av), ("b", &bv)], RTOL);
}

#[test]
fn matmul_shapes() {
    if !gpu_or_skip("matmul_shapes") {
        return;
    }
    let mut g = Graph::new("matmul");
    let a = f32_input(&mut g, "a", &[2, 3, 5, 7]);
    let w = g.param("w", Shape::new(&[7, 4], DType::F32));
    let v = f32_input(&mut g, "v", &[7]);
    let big_a = f32_input(&mut g, "big_a", &[64, 96]);
    let big_b = f32_input(&mut g, "big_b", &[96, 80]);
    let outs = vec![g.mm(a, w), g.mm(a, v), g.mm(v, w), g.mm(big_a, big_b)];
    g.set_outputs(outs);
    let (av, wv, vv) = (
        rand(&[2, 3, 5, 7], -1.0, 1.0, 8),
        rand(&[7, 4], -1.0, 1.0, 9),
        rand(&[7], -1.0, 1.0, 10),
    );
    let (ba, bb) = (
        rand(&[64, 96], -1.0, 1.0, 11),
        rand(&[96, 80], -1.0, 1.0, 12),
    );
    // 96-term dot products of values in [-1, 1): a result near zero keeps
    // the rounding of its terms (~1e-7 each), whatever the summation order.
    assert_gpu_matches_cpu_atol(
        &g,
        &[("w", &wv)],
        &[("a", &av), ("v", &vv), ("big_a", &ba), ("big_b", &bb)],
        RTOL,
        1e-5,
    );
}

#[test]
fn dot_general_batch_and_contract() {
    if !gpu_or_skip("dot_general_batch_and_contract") {
        return;
    }
    let mut g = Graph::new("dot_general");
    let a = f32_input(&mut g, "a", &[4, 6, 3]);
    let b = f32_input(&mut g, "b", &[3, 5, 4]);
    let dims = DotDims {
        lhs_batch: vec![0],
        rhs_batch: vec![2],
        lhs_contract: vec![2],
        rhs_contract: vec![0],
    };
    let y = g.dot_general(a, b, dims);
    g.set_outputs(vec![y]);
    let (av, bv) = (
        rand(&[4, 6, 3], -1.0, 1.0, 13),
        rand(&[3, 5, 4], -1.0, 1.0, 14),
    );
    assert_gpu_matches_cpu(&g, &[], &[("a", &av), ("b", &bv)], RTOL);
}

#[test]
fn reductions() {
    if !gpu_or_skip("reductions") {
        return;
    }
    let mut g = Graph::new("reduce");
    let x = f32_input(&mut g, "x", &[4, 5, 6]);
    let outs = vec![
        g.sum(x, &[-1], false),
        g.sum(x, &[0, 2], true),
        g.mean(x, &[1], false),
        g.reduce_max(x, &[0], false),
        g.reduce_min(x, &[2], true),
        g.prod(x, &[1], false),
        g.sum(x, &[0, 1, 2], false),
    ];
    g.set_outputs(outs);
    let xv = rand(&[4, 5, 6], 0.5, 1.5, 15);
    assert_gpu_matches_cpu(&g, &[], &[("x", &xv)], RTOL);
}

#[test]
fn softmax_and_norms() {
    if !gpu_or_skip("softmax_and_norms") {
        return;
    }
    let mut g = Graph::new("norms");
    let x = f32_input(&mut g, "x", &[3, 4, 50]);
    let gamma = g.param("gamma", Shape::new(&[50], DType::F32));
    let beta = g.param("beta", Shape::new(&[50], DType::F32));
    let outs = vec![
        g.sm(x, -1),
        g.sm(x, 1),
        g.log_softmax(x, -1),
        g.ln(x, gamma, beta, 1e-5),
        g.ln(x, None, None, 1e-12),
        g.rms_norm(x, gamma, 1e-6),
    ];
    g.set_outputs(outs);
    let (xv, gv, bv) = (
        rand(&[3, 4, 50], -5.0, 5.0, 16),
        rand(&[50], 0.5, 1.5, 17),
        rand(&[50], -0.5, 0.5, 18),
    );
    assert_gpu_matches_cpu(&g, &[("gamma", &gv), ("beta", &bv)], &[("x", &xv)], RTOL);
}

#[test]
fn attention_decomposed() {
    if !gpu_or_skip("attention_decomposed") {
        return;
    }
    let mut g = Graph::new("attention");
    let q = f32_input(&mut g, "q", &[1, 2, 8, 16]);
    let k = f32_input(&mut g, "k", &[1, 2, 8, 16]);
    let v = f32_input(&mut g, "v", &[1, 2, 8, 16]);
    let plain = g.attention_(q, k, v, MaskKind::None, None);
    let causal = g.attention_(q, k, v, MaskKind::Causal, None);
    g.set_outputs(vec![plain, causal]);
    let (qv, kv, vv) = (
        rand(&[1, 2, 8, 16], -1.0, 1.0, 19),
        rand(&[1, 2, 8, 16], -1.0, 1.0, 20),
        rand(&[1, 2, 8, 16], -1.0, 1.0, 21),
    );
    assert_gpu_matches_cpu(&g, &[], &[("q", &qv), ("k", &kv), ("v", &vv)], RTOL);
}

#[test]
fn movement_ops() {
    if !gpu_or_skip("movement_ops") {
        return;
    }
    let mut g = Graph::new("movement");
    let x = f32_input(&mut g, "x", &[2, 3, 4]);
    let y = f32_input(&mut g, "y", &[2, 5, 4]);
    let p = g.param("p", Shape::new(&[6, 4], DType::F32));
    let outs = vec![
        g.transpose_(x, &[2, 0, 1]),
        g.concat_(&[x, y, x], 1),
        g.slice_(y, 1, 4, 0, -2),
        g.slice_(x, 2, 1, 4, 2),
        g.narrow_(y, 1, 1, 3),
        g.expand_(x, &[3, 2, 3, 4]),
        g.reshape_(p, &[2, 3, 4]),
        g.swap_axes(y, 0, 2),
    ];
    g.set_outputs(outs);
    let (xv, yv, pv) = (
        rand(&[2, 3, 4], -1.0, 1.0, 22),
        rand(&[2, 5, 4], -1.0, 1.0, 23),
        rand(&[6, 4], -1.0, 1.0, 24),
    );
    assert_gpu_matches_cpu(&g, &[("p", &pv)], &[("x", &xv), ("y", &yv)], RTOL);
}

fn gather_graph() -> Graph {
    let mut g = Graph::new("gather");
    let table = g.param("table", Shape::new(&[10, 6], DType::F32));
    let ids = g.input("ids", Shape::new(&[2, 3], DType::I64));
    let rows = g.gather_(table, ids, 0);
    let cols = g.gather_(table, ids, 1);
    let pos = g.iota(&[2, 3], 1, 0.0, 1.0, DType::I64);
    let by_pos = g.gather_(table, pos, 0);
    g.set_outputs(vec![rows, cols, by_pos]);
    g
}

#[test]
fn gather_with_negative_indices() {
    if !gpu_or_skip("gather_with_negative_indices") {
        return;
    }
    let table = rand(&[10, 6], -1.0, 1.0, 25);
    let ids = HostTensor::from_vec(vec![0i64, 5, -1, 3, -6, 2], &[2, 3]).unwrap();
    assert_gpu_matches_cpu(
        &gather_graph(),
        &[("table", &table)],
        &[("ids", &ids)],
        RTOL,
    );
}

#[test]
fn gather_out_of_range_is_a_named_error() {
    if !gpu_or_skip("gather_out_of_range_is_a_named_error") {
        return;
    }
    let table = rand(&[10, 6], -1.0, 1.0, 25);
    let ids = HostTensor::from_vec(vec![0i64, 5, 1, 3, 9, 2], &[2, 3]).unwrap();
    let mut exe = compile_gpu(&gather_graph()).unwrap();
    exe.set_param(0, &table).unwrap();
    // Column 9 does not exist in a table of 6 columns.
    let err = exe.run(&[&ids]).unwrap_err().to_string();
    assert!(
        err.contains("gather") && err.contains("out of range"),
        "{err}"
    );
}

#[test]
fn an_op_without_a_kernel_is_refused_by_name() {
    if !gpu_or_skip("an_op_without_a_kernel_is_refused_by_name") {
        return;
    }
    let mut g = Graph::new("cumsum");
    let x = f32_input(&mut g, "x", &[4]);
    let y = g.cumsum(x, 0, false, false);
    g.set_outputs(vec![y]);
    let err = gpu_compile_error(&g);
    assert!(
        err.contains("gpu: no kernel for") && err.contains("cumsum"),
        "{err}"
    );

    let mut g = Graph::new("f64");
    let x = g.input("x", Shape::new(&[4], DType::F64));
    let y = g.unary(UnaryOp::Exp, x);
    g.set_outputs(vec![y]);
    let err = gpu_compile_error(&g);
    assert!(err.contains("dtype f64 has no GPU kernel"), "{err}");
}

#[test]
fn params_update_on_the_device_and_read_back() {
    if !gpu_or_skip("params_update_on_the_device_and_read_back") {
        return;
    }
    // w <- w - 0.5 * x, returned as output 0 and written over param 0.
    let mut g = Graph::new("update");
    let w = g.param("w", Shape::new(&[5], DType::F32));
    let x = f32_input(&mut g, "x", &[5]);
    let step = g.binary_op(BinaryOp::Mul, x, 0.5f32);
    let next = g.binary_op(BinaryOp::Sub, w, step);
    let total = g.sum(w, &[0], false);
    g.set_outputs(vec![next, total]);
    let mut exe = compile_gpu(&g).unwrap();
    exe.set_param(
        0,
        &HostTensor::from_vec(vec![1.0f32, 2.0, 3.0, 4.0, 5.0], &[5]).unwrap(),
    )
    .unwrap();
    let xv = HostTensor::from_vec(vec![2.0f32; 5], &[5]).unwrap();
    let outs = exe.run_updating(&[&xv], &[(0, 0)]).unwrap();
    assert_eq!(outs[0].to_vec::<f32>().unwrap(), [15.0]); // the sum before the update
    let outs = exe.run_updating(&[&xv], &[(0, 0)]).unwrap();
    assert_eq!(outs[0].to_vec::<f32>().unwrap(), [10.0]);
    assert_eq!(
        exe.param_value(0).unwrap().to_vec::<f32>().unwrap(),
        [-1.0, 0.0, 1.0, 2.0, 3.0]
    );
    let err = exe.run(&[]).unwrap_err().to_string();
    assert!(err.contains("0 inputs given for 1"), "{err}");
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
fn conv2d_stride_padding_dilation_groups() {
    if !gpu_or_skip("conv2d_stride_padding_dilation_groups") {
        return;
    }
    let mut g = Graph::new("conv2d");
    let x = f32_input(&mut g, "x", &[2, 4, 7, 6]);
    let w = f32_input(&mut g, "w", &[6, 4, 3, 3]);
    let wg = f32_input(&mut g, "wg", &[6, 2, 3, 2]);
    let dw = f32_input(&mut g, "dw", &[4, 1, 3, 3]);
    let bias = f32_input(&mut g, "bias", &[6]);
    let x1 = f32_input(&mut g, "x1", &[1, 3, 9]);
    let w1 = f32_input(&mut g, "w1", &[2, 3, 4]);
    let outs = vec![
        // Plain, with bias and symmetric padding.
        GraphExt::conv(
            &mut g,
            x,
            w,
            Some(bias),
            window(&[], &[1, 1], &[(1, 1), (1, 1)], &[1, 1]),
            1,
        ),
        // Strided, ragged padding, dilated, two groups.
        GraphExt::conv(
            &mut g,
            x,
            wg,
            None,
            window(&[], &[2, 1], &[(2, 0), (0, 1)], &[1, 2]),
            2,
        ),
        // Depthwise.
        GraphExt::conv(
            &mut g,
            x,
            dw,
            None,
            window(&[], &[1, 2], &[(1, 1), (1, 1)], &[2, 1]),
            4,
        ),
        // One spatial dim.
        g.conv1d(x1, w1, None, 2, 1, 1, 1),
    ];
    g.set_outputs(outs);
    let feeds = [
        ("x", rand(&[2, 4, 7, 6], -1.0, 1.0, 30)),
        ("w", rand(&[6, 4, 3, 3], -1.0, 1.0, 31)),
        ("wg", rand(&[6, 2, 3, 2], -1.0, 1.0, 32)),
        ("dw", rand(&[4, 1, 3, 3], -1.0, 1.0, 33)),
        ("bias", rand(&[6], -1.0, 1.0, 34)),
        ("x1", rand(&[1, 3, 9], -1.0, 1.0, 35)),
        ("w1", rand(&[2, 3, 4], -1.0, 1.0, 36)),
    ];
    let feeds: Vec<(&str, &HostTensor)> = feeds.iter().map(|(n, t)| (*n, t)).collect();
    // Up to 36-term sums of values in [-1, 1): near-zero results keep the
    // rounding of their terms, whatever the order.
    assert_gpu_matches_cpu_atol(&g, &[], &feeds, RTOL, 1e-5);
}

#[test]
fn max_avg_and_global_pooling() {
    if !gpu_or_skip("max_avg_and_global_pooling") {
        return;
    }
    let mut g = Graph::new("pool");
    let x = f32_input(&mut g, "x", &[2, 3, 7, 6]);
    let xi = g.input("xi", Shape::new(&[1, 2, 5, 5], DType::I32));
    let outs = vec![
        g.max_pool2d(x, [3, 3], [2, 2], [1, 1]),
        g.avg_pool2d(x, [3, 2], [2, 1], [1, 1]),
        g.pool(
            x,
            PoolKind::Avg,
            window(&[3, 3], &[2, 2], &[(1, 2), (0, 1)], &[1, 1]),
            true,
        ),
        g.pool(
            x,
            PoolKind::Max,
            window(&[2, 2], &[1, 2], &[(0, 0), (1, 0)], &[2, 2]),
            false,
        ),
        // Global pooling: one window over the whole plane, and the mean.
        g.pool(
            x,
            PoolKind::Avg,
            window(&[7, 6], &[1, 1], &[(0, 0), (0, 0)], &[1, 1]),
            false,
        ),
        g.pool(
            x,
            PoolKind::Max,
            window(&[7, 6], &[1, 1], &[(0, 0), (0, 0)], &[1, 1]),
            false,
        ),
        g.mean(x, &[2, 3], true),
        g.max_pool2d(xi, [2, 2], [2, 2], [0, 0]),
    ];
    g.set_outputs(outs);
    let xv = rand(&[2, 3, 7, 6], -2.0, 2.0, 37);
    let xiv = HostTensor::from_vec(
        (0..50).map(|i| (i * 37 % 23) - 11).collect::<Vec<i32>>(),
        &[1, 2, 5, 5],
    )
    .unwrap();
    assert_gpu_matches_cpu(&g, &[], &[("x", &xv), ("xi", &xiv)], RTOL);
}

#[test]
fn scatter_add_and_gather_elements() {
    if !gpu_or_skip("scatter_add_and_gather_elements") {
        return;
    }
    let mut g = Graph::new("scatter");
    let base = f32_input(&mut g, "base", &[3, 5]);
    let upd = f32_input(&mut g, "upd", &[3, 4]);
    let ids = g.input("ids", Shape::new(&[3, 4], DType::I64));
    let rows = g.input("rows", Shape::new(&[2, 5], DType::I32));
    let ibase = g.input("ibase", Shape::new(&[3, 5], DType::I32));
    let upd_rows = f32_input(&mut g, "upd_rows", &[2, 5]);
    let iupd = g.cast(upd, DType::I32);
    let outs = vec![
        // Repeated and negative indices along the last axis.
        g.scatter_add(base, ids, upd, 1),
        // Along the first axis, an index smaller than the base.
        g.scatter_add(base, rows, upd_rows, 0),
        g.scatter_add(ibase, ids, iupd, -1),
        g.gather_elements(base, ids, 1),
        g.gather_elements(base, rows, 0),
    ];
    g.set_outputs(outs);
    let ids_v =
        HostTensor::from_vec(vec![0i64, 2, 2, -1, 4, 4, 4, 0, -5, 1, 3, 3], &[3, 4]).unwrap();
    let rows_v = HostTensor::from_vec(vec![0i32, 2, 2, -1, 1, 0, 0, 1, 2, 2], &[2, 5]).unwrap();
    let ibase_v = HostTensor::from_vec((0..15).collect::<Vec<i32>>(), &[3, 5]).unwrap();
    let (bv, uv, urv) = (
        rand(&[3, 5], -1.0, 1.0, 40),
        rand(&[3, 4], -8.0, 8.0, 41),
        rand(&[2, 5], -1.0, 1.0, 42),
    );
    assert_gpu_matches_cpu(
        &g,
        &[],
        &[
            ("base", &bv),
            ("upd", &uv),
            ("ids", &ids_v),
            ("rows", &rows_v),
            ("ibase", &ibase_v),
            ("upd_rows", &urv),
        ],
        RTOL,
    );

    // An index past the axis is the node's named error, not a wrong sum.
    let mut g = Graph::new("scatter_bad");
    let base = f32_input(&mut g, "base", &[3, 5]);
    let upd = f32_input(&mut g, "upd", &[3, 4]);
    let ids = g.input("ids", Shape::new(&[3, 4], DType::I64));
    let y = g.scatter_add(base, ids, upd, 1);
    g.set_outputs(vec![y]);
    let mut exe = compile_gpu(&g).unwrap();
    let bad = HostTensor::from_vec(vec![0i64, 1, 2, 3, 4, 5, 0, 0, 0, 0, 0, 0], &[3, 4]).unwrap();
    let err = exe.run(&[&bv, &uv, &bad]).unwrap_err().to_string();
    assert!(
        err.contains("scatter_add") && err.contains("out of range"),
        "{err}"
    );
}

#[test]
fn f16_matmul_and_elementwise() {
    if !gpu_or_skip("f16_matmul_and_elementwise") {
        return;
    }
    let mut g = Graph::new("f16");
    let a = g.input("a", Shape::new(&[5, 24], DType::F16));
    let b = g.input("b", Shape::new(&[24, 7], DType::F16));
    let c = g.input("c", Shape::new(&[7], DType::F16));
    let mm = g.mm(a, b);
    let biased = g.binary_op(BinaryOp::Add, mm, c);
    let act = g.unary(UnaryOp::Tanh, biased);
    let scaled = g.binary_op(BinaryOp::Mul, act, c);
    let widened = g.cast(scaled, DType::F32);
    let odd = g.slice_(a, 1, 0, 3, 1); // 5 x 3: an odd element count
    let odd = g.unary(UnaryOp::Exp, odd);
    g.set_outputs(vec![mm, scaled, widened, odd]);
    let half = |dims: &[usize], seed| {
        let n = dims.iter().product();
        let v: Vec<half::f16> = common::uniform(n, -1.0, 1.0, seed)
            .into_iter()
            .map(half::f16::from_f32)
            .collect();
        HostTensor::from_vec(v, dims).unwrap()
    };
    let (av, bv, cv) = (half(&[5, 24], 43), half(&[24, 7], 44), half(&[7], 45));
    assert_gpu_matches_cpu_atol(&g, &[], &[("a", &av), ("b", &bv), ("c", &cv)], 1e-2, 1e-2);
}
