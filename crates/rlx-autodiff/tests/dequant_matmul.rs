//! `Op::DequantMatMul` under the transforms: the gradient flows to `x` only
//! (the quantized weight is not differentiable), and vmap over `x`'s batch
//! equals running each example; both against `dequant(W)` from rlx-gguf.

use rlx_autodiff::{grad_with_loss, vmap};
use rlx_driver::Device;
use rlx_gguf::{codecs, GgmlType};
use rlx_ir::quant::QuantScheme;
use rlx_ir::{DType, Graph, GraphExt, HostTensor, Shape};
use rlx_runtime::Session;

const N: usize = 3;
const K: usize = 256;

fn weight() -> (Vec<u8>, Vec<f32>) {
    let wf: Vec<f32> = (0..N * K).map(|i| (i as f32 * 0.17).sin()).collect();
    let w = codecs::quantize(GgmlType::Q6_K, &wf).unwrap();
    let wd = codecs::dequantize(GgmlType::Q6_K, &w, N * K).unwrap();
    (w, wd)
}

/// `y = dequant_matmul(x [m, K], w)`, outputs `[sum(y * c)]` (c = 1..) or `[y]`.
fn graph(m: usize, w_len: usize, weighted_sum: bool) -> Graph {
    let mut g = Graph::new("qmm");
    let x = g.input("x", Shape::new(&[m, K], DType::F32));
    let w = g.param("w", Shape::new(&[w_len], DType::U8));
    let y = g.dequant_matmul(x, w, Some(QuantScheme::GgufQ6K), N, K);
    if weighted_sum {
        let c: Vec<f32> = (0..m * N).map(|i| 1.0 + i as f32).collect();
        let c = g.constant_tensor(&HostTensor::from_vec(c, &[m, N]).unwrap());
        let p = g.mul(y, c);
        let s = g.sum(p, &[0, 1], false);
        g.set_outputs(vec![s]);
    } else {
        g.set_outputs(vec![y]);
    }
    g
}

fn run(g: Graph, w: &[u8], x: &[f32]) -> Vec<Vec<f32>> {
    let mut c = Session::new(Device::Cpu).try_compile(g).unwrap();
    let wt = HostTensor::from_bytes(DType::U8, &[w.len()], w.to_vec()).unwrap();
    c.set_param_typed("w", &wt).unwrap();
    c.try_run(&[("x", x)]).unwrap()
}

#[test]
fn gradient_wrt_x_is_the_dequantized_weight() {
    let (w, wd) = weight();
    let m = 2;
    let g = graph(m, w.len(), true);
    let x_id = g.inputs()[0].0;
    let d = grad_with_loss(&g, &[x_id]).unwrap();
    let x: Vec<f32> = (0..m * K).map(|i| (i as f32 * 0.05).cos()).collect();
    let out = run(d, &w, &x);
    // d/dx_it sum_ij c_ij sum_t x_it W_jt = sum_j c_ij W_jt
    for i in 0..m {
        for t in 0..K {
            let want: f32 = (0..N).map(|j| (1 + i * N + j) as f32 * wd[j * K + t]).sum();
            let got = out[1][i * K + t];
            assert!(
                (got - want).abs() <= 1e-5 * (1.0 + want.abs()),
                "dx[{i},{t}] {got} vs {want}"
            );
        }
    }
}

#[test]
fn vmap_over_x_equals_each_example() {
    let (w, _) = weight();
    let (b, m) = (3, 2);
    let v = vmap(&graph(m, w.len(), false), &["x"], b).unwrap();
    let xs: Vec<f32> = (0..b * m * K)
        .map(|i| (i as f32 * 0.031).sin() * 2.0)
        .collect();
    let batched = run(v, &w, &xs).remove(0);
    assert_eq!(batched.len(), b * m * N);
    for e in 0..b {
        let one = run(
            graph(m, w.len(), false),
            &w,
            &xs[e * m * K..(e + 1) * m * K],
        )
        .remove(0);
        let got = &batched[e * m * N..(e + 1) * m * N];
        for (a, o) in got.iter().zip(&one) {
            assert!(
                (a - o).abs() <= 1e-4 * (1.0 + o.abs()),
                "example {e}: {a} vs {o}"
            );
        }
    }
}

#[test]
fn jvp_wrt_x_is_the_op_applied_to_the_tangent() {
    let (w, _) = weight();
    let m = 2;
    let g = graph(m, w.len(), false);
    let x_id = g.inputs()[0].0;
    let j = rlx_autodiff::jvp(&g, &[x_id]).unwrap();
    let x: Vec<f32> = (0..m * K).map(|i| (i as f32 * 0.05).cos()).collect();
    let t: Vec<f32> = (0..m * K).map(|i| (i as f32 * 0.09).sin()).collect();
    let mut c = Session::new(Device::Cpu).try_compile(j).unwrap();
    let wt = HostTensor::from_bytes(DType::U8, &[w.len()], w.clone()).unwrap();
    c.set_param_typed("w", &wt).unwrap();
    let out = c.try_run(&[("x", &x[..]), ("tangent_x", &t[..])]).unwrap();
    // Linear in x: the tangent output is the op applied to t.
    let want = run(graph(m, w.len(), false), &w, &t).remove(0);
    assert_eq!(out[1], want);
}

#[test]
fn a_plain_float_weight_is_differentiated_through_the_decomposition() {
    // scheme None: y = x · Wᵀ with an f32 W; d sum(y) / dW[j, t] = sum_i x[i, t].
    let (m, n, k) = (2, 3, 4);
    let mut g = Graph::new("plain");
    let x = g.input("x", Shape::new(&[m, k], DType::F32));
    let w = g.param("w", Shape::new(&[n, k], DType::F32));
    let y = g.dequant_matmul(x, w, None, n, k);
    let s = g.sum(y, &[0, 1], false);
    g.set_outputs(vec![s]);
    let d = grad_with_loss(&g, &[x, w]).unwrap();
    let mut c = Session::new(Device::Cpu).try_compile(d).unwrap();
    let wv: Vec<f32> = (0..n * k).map(|i| i as f32 * 0.5 - 1.0).collect();
    c.try_set_param("w", &wv).unwrap();
    let xv: Vec<f32> = (0..m * k).map(|i| (i as f32).cos()).collect();
    let out = c.try_run(&[("x", &xv[..])]).unwrap();
    for t in 0..k {
        let dx: f32 = (0..n).map(|j| wv[j * k + t]).sum();
        let dw: f32 = (0..m).map(|i| xv[i * k + t]).sum();
        for i in 0..m {
            assert!((out[1][i * k + t] - dx).abs() < 1e-5, "dx");
        }
        for j in 0..n {
            assert!((out[2][j * k + t] - dw).abs() < 1e-5, "dw");
        }
    }
}

#[test]
fn vmap_over_quantized_weight_bytes_is_a_named_missing_rule() {
    // Per-example quantized weights: an input of block bytes, batched.
    let mut g = Graph::new("qw");
    let x = g.input("x", Shape::new(&[1, K], DType::F32));
    let w = g.input("w", Shape::new(&[N * 210], DType::U8));
    let y = g.dequant_matmul(x, w, Some(QuantScheme::GgufQ6K), N, K);
    g.set_outputs(vec![y]);
    let e = vmap(&g, &["w"], 2).unwrap_err().to_string();
    assert!(e.contains("vmap") && e.contains("quantized weights"), "{e}");
}
