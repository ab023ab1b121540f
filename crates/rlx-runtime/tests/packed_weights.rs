//! Matmul weights packed once on the CPU (`rlx_cpu` packs an f32 `[K, N]`
//! param read only as matmul weights into column panels on the first run
//! after it is set): products, epilogues and gated products match f64
//! loops written here; the param's value reads back plain; setting it
//! again, writing part of it and updating it in the graph all take effect.

mod common;

use common::values;
use rlx_driver::Device;
use rlx_ir::{DType, Graph, GraphExt, Shape};
use rlx_runtime::{CompiledGraph, Session};

const M: usize = 7;
const K: usize = 37;
// Not a multiple of any panel width: the last panel is narrow.
const N: usize = 45;

fn f32s(dims: &[usize]) -> Shape {
    Shape::new(dims, DType::F32)
}

/// `x @ w` in f64, `x` `[m, k]`, `w` `[k, n]`.
fn product(x: &[f32], w: &[f32], m: usize, k: usize, n: usize) -> Vec<f64> {
    let mut out = vec![0.0; m * n];
    for i in 0..m {
        for j in 0..n {
            out[i * n + j] = (0..k)
                .map(|q| x[i * k + q] as f64 * w[q * n + j] as f64)
                .sum();
        }
    }
    out
}

fn assert_close(got: &[f32], want: &[f64], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}");
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g as f64 - w).abs() <= 1e-5 * (1.0 + w.abs()),
            "{what} [{i}]: {g} vs {w}"
        );
    }
}

/// `relu(x @ w + b)` (a fused matmul epilogue) and `x @ w` (a plain one),
/// both reading the param `w`.
fn linear() -> CompiledGraph {
    let mut g = Graph::new("linear");
    let x = g.input("x", f32s(&[M, K]));
    let w = g.param("w", f32s(&[K, N]));
    let b = g.param("b", f32s(&[N]));
    let p = g.mm(x, w);
    let biased = g.add(p, b);
    let y = g.relu(biased);
    let x2 = g.input("x2", f32s(&[2, M, K]));
    let z = g.mm(x2, w);
    g.set_outputs(vec![y, z]);
    Session::new(Device::Cpu).try_compile(g).unwrap()
}

fn linear_reference(x: &[f32], x2: &[f32], w: &[f32], b: &[f32]) -> (Vec<f64>, Vec<f64>) {
    let y = product(x, w, M, K, N)
        .iter()
        .enumerate()
        .map(|(i, v)| (v + b[i % N] as f64).max(0.0))
        .collect();
    (y, product(x2, w, 2 * M, K, N))
}

#[test]
fn products_and_epilogues_on_packed_weights_match_f64() {
    let mut c = linear();
    let (x, x2) = (values(M * K, 1, 1.0), values(2 * M * K, 2, 1.0));
    let (w, b) = (values(K * N, 3, 0.5), values(N, 4, 0.5));
    c.set_param("w", &w);
    c.set_param("b", &b);
    let (y, z) = linear_reference(&x, &x2, &w, &b);
    // The first run packs, the second reads what the first packed.
    for run in 0..2 {
        let out = c.run(&[("x", &x), ("x2", &x2)]);
        assert_close(&out[0], &y, &format!("relu(x @ w + b), run {run}"));
        assert_close(&out[1], &z, &format!("x2 @ w, run {run}"));
    }
    // The value reads back in the layout it was set in.
    let back = c.param_value("w").unwrap().to_vec::<f32>().unwrap();
    assert_eq!(back, w);
}

#[test]
fn setting_or_writing_a_packed_param_takes_effect() {
    let mut c = linear();
    let (x, x2) = (values(M * K, 1, 1.0), values(2 * M * K, 2, 1.0));
    let (w, b) = (values(K * N, 3, 0.5), values(N, 4, 0.5));
    c.set_param("w", &w);
    c.set_param("b", &b);
    c.run(&[("x", &x), ("x2", &x2)]);

    let w2 = values(K * N, 5, 0.5);
    c.set_param("w", &w2);
    let out = c.run(&[("x", &x), ("x2", &x2)]);
    let (y, z) = linear_reference(&x, &x2, &w2, &b);
    assert_close(&out[0], &y, "after set_param");
    assert_close(&out[1], &z, "after set_param");

    // Rows 3..5 of w rewritten in place, in the plain row-major layout.
    let mut w3 = w2.clone();
    let rows: Vec<f32> = values(2 * N, 6, 0.5);
    w3[3 * N..5 * N].copy_from_slice(&rows);
    let bytes: Vec<u8> = rows.iter().flat_map(|v| v.to_le_bytes()).collect();
    c.write_param_bytes("w", 3 * N * 4, &bytes).unwrap();
    let out = c.run(&[("x", &x), ("x2", &x2)]);
    let (y, z) = linear_reference(&x, &x2, &w3, &b);
    assert_close(&out[0], &y, "after write_param_bytes");
    assert_close(&out[1], &z, "after write_param_bytes");
    assert_eq!(c.param_value("w").unwrap().to_vec::<f32>().unwrap(), w3);
}

#[test]
fn gated_products_with_packed_and_computed_weights() {
    // silu(x @ wg) * (x @ wu): both weights params, then one of them
    // computed (so neither may be read packed by the one kernel).
    for computed_up in [false, true] {
        let mut g = Graph::new("gated");
        let x = g.input("x", f32s(&[M, K]));
        let wg = g.param("wg", f32s(&[K, N]));
        let wu = g.param("wu", f32s(&[K, N]));
        let wu_read = if computed_up {
            let s = g.input("s", f32s(&[1]));
            g.mul(wu, s)
        } else {
            wu
        };
        let gate = g.mm(x, wg);
        let gate = g.silu(gate);
        let up = g.mm(x, wu_read);
        let y = g.mul(gate, up);
        g.set_outputs(vec![y]);
        let mut c = Session::new(Device::Cpu).try_compile(g).unwrap();
        let (x, wgv, wuv) = (
            values(M * K, 1, 1.0),
            values(K * N, 2, 0.5),
            values(K * N, 3, 0.5),
        );
        c.set_param("wg", &wgv);
        c.set_param("wu", &wuv);
        let gate = product(&x, &wgv, M, K, N);
        let up = product(&x, &wuv, M, K, N);
        let want: Vec<f64> = gate
            .iter()
            .zip(&up)
            .map(|(g, u)| g / (1.0 + (-g).exp()) * u)
            .collect();
        for run in 0..2 {
            let out = if computed_up {
                c.run(&[("x", &x), ("s", &[1.0])])
            } else {
                c.run(&[("x", &x)])
            };
            assert_close(
                &out[0],
                &want,
                &format!("computed up {computed_up}, run {run}"),
            );
        }
    }
}

#[test]
fn a_weight_the_graph_updates_is_read_right_every_step() {
    // y = x @ w; w' = w * 0.5 bound as w's next value.
    let mut g = Graph::new("decay");
    let x = g.input("x", f32s(&[M, K]));
    let w = g.param("w", f32s(&[K, N]));
    let y = g.mm(x, w);
    let next = g.mul(w, g.constant(0.5, DType::F32));
    g.set_outputs(vec![y, next]);
    let mut c = Session::new(Device::Cpu).try_compile(g).unwrap();
    let (x, w) = (values(M * K, 1, 1.0), values(K * N, 2, 0.5));
    c.set_param("w", &w);
    // One plain run first (the weight may be packed by then), then updates.
    c.run(&[("x", &x)]);
    c.bind_update(1, "w").unwrap();
    let mut cur = w.clone();
    for step in 0..3 {
        let out = c.run(&[("x", &x)]);
        assert_close(
            &out[0],
            &product(&x, &cur, M, K, N),
            &format!("step {step}"),
        );
        cur.iter_mut().for_each(|v| *v *= 0.5);
    }
    assert_eq!(c.param_value("w").unwrap().to_vec::<f32>().unwrap(), cur);
}

#[test]
fn stacked_and_batched_weights_are_packed_per_matrix() {
    // q, k, v projections of one input (stacked into one [3, K, N] weight
    // by the shared-input fusion) and a batched [2, M, K] @ [2, K, N].
    let mut g = Graph::new("stacks");
    let x = g.input("x", f32s(&[M, K]));
    let names = ["q", "k", "v"];
    let projections: Vec<_> = names
        .iter()
        .map(|name| {
            let w = g.param(name, f32s(&[K, N]));
            g.mm(x, w)
        })
        .collect();
    let xb = g.input("xb", f32s(&[2, M, K]));
    let wb = g.param("wb", f32s(&[2, K, N]));
    let yb = g.mm(xb, wb);
    let mut outputs = projections.clone();
    outputs.push(yb);
    g.set_outputs(outputs);
    let mut c = Session::new(Device::Cpu).try_compile(g).unwrap();
    let stacked = c
        .lir()
        .graph
        .nodes()
        .iter()
        .any(|n| n.shape.static_dims().unwrap_or_default() == [3, M, N]);
    assert!(stacked, "{}", c.lir().graph);
    let x = values(M * K, 1, 1.0);
    let xb = values(2 * M * K, 2, 1.0);
    let ws: Vec<Vec<f32>> = (0..3).map(|i| values(K * N, 3 + i, 0.5)).collect();
    let wb = values(2 * K * N, 9, 0.5);
    for (name, w) in names.iter().zip(&ws) {
        c.set_param(name, w);
    }
    c.set_param("wb", &wb);
    for run in 0..2 {
        let out = c.run(&[("x", &x), ("xb", &xb)]);
        for (i, w) in ws.iter().enumerate() {
            assert_close(
                &out[i],
                &product(&x, w, M, K, N),
                &format!("{} run {run}", names[i]),
            );
        }
        let mut want = product(&xb[..M * K], &wb[..K * N], M, K, N);
        want.extend(product(&xb[M * K..], &wb[K * N..], M, K, N));
        assert_close(&out[3], &want, &format!("batched, run {run}"));
    }
    assert_eq!(c.param_value("wb").unwrap().to_vec::<f32>().unwrap(), wb);
}

#[test]
fn constant_weights_are_packed_when_built() {
    // ONNX initializers arrive as constants: `relu(x @ W + b)` with both
    // constant, and W also read by a second, batched matmul.
    let (w, b) = (values(K * N, 3, 0.5), values(N, 4, 0.5));
    let mut g = Graph::new("constants");
    let x = g.input("x", f32s(&[M, K]));
    let x2 = g.input("x2", f32s(&[2, M, K]));
    let wc = g.constant_tensor(&rlx_ir::HostTensor::from_slice(&w, &[K, N]).unwrap());
    let bc = g.constant_tensor(&rlx_ir::HostTensor::from_slice(&b, &[N]).unwrap());
    let p = g.mm(x, wc);
    let biased = g.add(p, bc);
    let y = g.relu(biased);
    let z = g.mm(x2, wc);
    g.set_outputs(vec![y, z]);
    let mut c = Session::new(Device::Cpu).try_compile(g).unwrap();
    let (xv, x2v) = (values(M * K, 1, 1.0), values(2 * M * K, 2, 1.0));
    let (y, z) = linear_reference(&xv, &x2v, &w, &b);
    for run in 0..2 {
        let out = c.run(&[("x", &xv), ("x2", &x2v)]);
        assert_close(&out[0], &y, &format!("relu(x @ W + b), run {run}"));
        assert_close(&out[1], &z, &format!("x2 @ W, run {run}"));
    }
}

#[test]
fn tall_products_on_a_packed_weight_split_by_rows() {
    // 640 x 37 x 45 is past the threading grain and taller than wide: the
    // packed product splits its rows over the team, the fused one runs
    // blocks of rows with the bias + relu per block; the short product
    // reads the same packed weight.
    const TALL: usize = 640;
    let mut g = Graph::new("tall");
    let x = g.input("x", f32s(&[M, K]));
    let xt = g.input("xt", f32s(&[TALL, K]));
    let xt2 = g.input("xt2", f32s(&[TALL, K]));
    let w = g.param("w", f32s(&[K, N]));
    let b = g.param("b", f32s(&[N]));
    let y = g.mm(x, w);
    let yt = g.mm(xt, w);
    let pt = g.mm(xt2, w);
    let biased = g.add(pt, b);
    let zt = g.relu(biased);
    g.set_outputs(vec![y, yt, zt]);
    let mut c = Session::new(Device::Cpu).try_compile(g).unwrap();
    let (xv, xtv, xt2v, wv, bv) = (
        values(M * K, 1, 1.0),
        values(TALL * K, 2, 1.0),
        values(TALL * K, 5, 1.0),
        values(K * N, 3, 0.5),
        values(N, 4, 0.5),
    );
    c.set_param("w", &wv);
    c.set_param("b", &bv);
    let tall = product(&xtv, &wv, TALL, K, N);
    let relu: Vec<f64> = product(&xt2v, &wv, TALL, K, N)
        .iter()
        .enumerate()
        .map(|(i, v)| (v + bv[i % N] as f64).max(0.0))
        .collect();
    for run in 0..2 {
        let out = c.run(&[("x", &xv), ("xt", &xtv), ("xt2", &xt2v)]);
        assert_close(
            &out[0],
            &product(&xv, &wv, M, K, N),
            &format!("short, run {run}"),
        );
        assert_close(&out[1], &tall, &format!("tall, run {run}"));
        assert_close(&out[2], &relu, &format!("relu(xt2 @ w + b), run {run}"));
    }
}
