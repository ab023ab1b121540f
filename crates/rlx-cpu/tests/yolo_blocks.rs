//! The YOLO-style net's blocks (conv + bias + SiLU everywhere) at odd
//! sizes, batch 2, against numpy float64 (tools/gen_yolo_block_fixtures.py)
//! at 1 to 3 threads: a CSP block (a 3x3 stride-2 conv, two 1x1 branches,
//! two residual bottlenecks, a channel concat, a 1x1) and an SPPF block
//! (a 1x1, three chained 5x5 stride-1 max pools, a concat of four, a 1x1).
//! The SiLU runs as a step of the row chain, so on an AVX-512 host the
//! layout plan keeps the CSP block's conv -> conv edges and its concat in
//! the NCHWc layout (counted below); a wrong lane or offset in the blocked SiLU fails the
//! comparison. The SiLU pass itself is checked over its range (-92 .. 92,
//! a masked tail) within 1e-6 relative, the Sigmoid op it shares its
//! sigmoid with over -88 .. 27 within 3e-7, and the 5x5 stride-1 max pool with
//! NaN in its input (each window holding one is NaN).

mod common;

use common::nchwc::avx512;
use common::yolo_net::{floats, input, Cbs};
use rlx_compile::{lower, LowerOptions};
use rlx_cpu::{CpuBackend, CpuExecutable};
use rlx_driver::{Backend, Executable};
use rlx_ir::op::Window;
use rlx_ir::{DType, Graph, GraphExt, HostTensor, Shape};
use serde_json::Value;

const FIXTURE: &str = include_str!("fixtures/conv_nchwc/yolo_blocks.json");

fn compile(g: &Graph) -> CpuExecutable {
    let lir = lower(g, &|op| CpuBackend.claims(op), &LowerOptions::default()).unwrap();
    CpuExecutable::new(lir).unwrap()
}

/// The script's `csp`.
fn csp() -> CpuExecutable {
    let mut g = Graph::new("yolo_csp");
    let x = g.input("x", Shape::new(&[2, 16, 21, 25], DType::F32));
    let y = Cbs { seed: 91 }.csp(&mut g, x, 2);
    g.set_outputs(vec![y]);
    compile(&g)
}

/// The script's `sppf`.
fn sppf() -> CpuExecutable {
    let mut g = Graph::new("yolo_sppf");
    let x = g.input("x", Shape::new(&[2, 32, 9, 7], DType::F32));
    let y = Cbs { seed: 111 }.sppf(&mut g, x);
    g.set_outputs(vec![y]);
    compile(&g)
}

/// Runs `exe` on `x` at 1-3 threads against the fixture's `key`.
fn check(exe: &mut CpuExecutable, x: &HostTensor, key: &str) {
    let fx: Value = serde_json::from_str(FIXTURE).unwrap();
    let want = floats(&fx[key]["y"]);
    for threads in 1..=3 {
        exe.limit_threads(Some(threads)).unwrap();
        let got = exe.run(&[x]).unwrap()[0].to_vec::<f32>().unwrap();
        assert_eq!(got.len(), want.len(), "{key}");
        for (i, (&g, &w)) in got.iter().zip(&want).enumerate() {
            assert!(
                (g as f64 - w).abs() <= 1e-4 * (1.0 + w.abs()),
                "{key}, threads {threads} [{i}]: {g} vs {w}"
            );
        }
    }
}

#[test]
fn csp_block_matches_numpy() {
    let mut exe = csp();
    if avx512() {
        // d (read by both 1x1 branches), a0 and a1 (each read by a
        // bottleneck's 1x1 and as its blocked residual) and each
        // bottleneck's 1x1 -> 3x3 edge, a2 and bb (written blocked into
        // the concat) and the concat (read blocked by the last 1x1): 8
        // blocked outputs. Without SiLU on blocked rows: 0.
        assert_eq!(exe.nchwc_blocked_outputs(), 8);
    }
    check(&mut exe, &input(&[2, 16, 21, 25], 90), "csp");
}

#[test]
fn sppf_block_matches_numpy() {
    let mut exe = sppf();
    check(&mut exe, &input(&[2, 32, 9, 7], 110), "sppf");
}

/// The script's `silu_range`: `silu(conv(x, identity 17 x 17 1x1))`, the
/// conv epilogue's SiLU on every value of `x`. Below x = -87 the sigmoid's
/// `e^x` (under 1.6e-38) may flush to zero, as `fastmath`'s own test
/// allows: there the absolute floor is 2e-38 (1 + |x|).
#[test]
fn silu_epilogue_matches_numpy_over_its_range() {
    let (c, dims) = (17, [1, 17, 7, 9]);
    let mut g = Graph::new("yolo_silu");
    let x = g.input("x", Shape::new(&dims, DType::F32));
    let eye: Vec<f32> = (0..c * c)
        .map(|i| if i % (c + 1) == 0 { 1.0 } else { 0.0 })
        .collect();
    let w = g.constant_tensor(&HostTensor::from_slice(&eye, &[c, c, 1, 1]).unwrap());
    let b = g.constant_tensor(&HostTensor::from_slice(&vec![0f32; c], &[c]).unwrap());
    let window = Window {
        kernel: vec![],
        stride: vec![1, 1],
        padding: vec![(0, 0); 2],
        dilation: vec![1, 1],
    };
    let v = g.conv(x, w, Some(b), window, 1);
    let s = g.sigmoid(v);
    let y = g.mul(v, s);
    g.set_outputs(vec![y]);
    let mut exe = compile(&g);
    let xs: Vec<f32> = (0..dims.iter().product::<usize>())
        .map(|i| (i as f32 - 535.0) * 0.171875)
        .collect();
    let xt = HostTensor::from_slice(&xs, &dims).unwrap();
    let fx: Value = serde_json::from_str(FIXTURE).unwrap();
    let want = floats(&fx["silu"]["y"]);
    let got = exe.run(&[&xt]).unwrap()[0].to_vec::<f32>().unwrap();
    assert_eq!(got.len(), want.len());
    for (i, (&g, &w)) in got.iter().zip(&want).enumerate() {
        let x = xs[i] as f64;
        let floor = if x < -87.0 { 2e-38 * (1.0 - x) } else { 1e-36 };
        assert!(
            (g as f64 - w).abs() <= 1e-6 * w.abs() + floor,
            "silu({}) = {g}, numpy {w}",
            xs[i]
        );
    }
}

/// The script's `sigmoid`: the elementwise Sigmoid op on 2003 values
/// (-88.15 .. 27.25, a masked tail of 3) within 3e-7 relative of numpy at
/// 1-3 threads, and `x * sigmoid(x)` (the unfused SiLU, whose bits a fused
/// conv epilogue keeps) within 1e-6. Below x = -87 the f32 result may
/// flush to zero (the true value is under 1.7e-38).
#[test]
fn sigmoid_matches_numpy_over_its_range() {
    let dims = [1, 2003];
    let mut g = Graph::new("yolo_sigmoid");
    let x = g.input("x", Shape::new(&dims, DType::F32));
    let s = g.sigmoid(x);
    let y = g.mul(x, s);
    g.set_outputs(vec![s, y]);
    let mut exe = compile(&g);
    let xs: Vec<f32> = (0..2003)
        .map(|i| (i as f32 - 1530.0) * 59.0 / 1024.0)
        .collect();
    let xt = HostTensor::from_slice(&xs, &dims).unwrap();
    let fx: Value = serde_json::from_str(FIXTURE).unwrap();
    let want = floats(&fx["sigmoid"]["y"]);
    assert_eq!(want.len(), xs.len());
    for threads in 1..=3 {
        exe.limit_threads(Some(threads)).unwrap();
        let out = exe.run(&[&xt]).unwrap();
        let sig = out[0].to_vec::<f32>().unwrap();
        let silu = out[1].to_vec::<f32>().unwrap();
        for (i, &w) in want.iter().enumerate() {
            let x = xs[i] as f64;
            let floor = if x < -87.0 { 2e-38 } else { 1e-45 };
            assert!(
                (sig[i] as f64 - w).abs() <= 3e-7 * w + floor,
                "threads {threads}: sigmoid({x}) = {}, numpy {w}",
                sig[i]
            );
            let (ws, floor) = (x * w, floor * (1.0 + x.abs()));
            assert!(
                (silu[i] as f64 - ws).abs() <= 1e-6 * ws.abs() + floor,
                "threads {threads}: silu({x}) = {}, numpy {ws}",
                silu[i]
            );
        }
    }
}

/// The script's `pool_nan`: a 5x5 stride-1 max pool over a 7 x 19 map
/// (a full vector of columns and a masked 3) with NaN at three inputs,
/// at 1-3 threads.
#[test]
fn sppf_pool_propagates_nan_as_numpy() {
    let dims = [1, 3, 7, 19];
    let mut g = Graph::new("yolo_pool_nan");
    let x = g.input("x", Shape::new(&dims, DType::F32));
    let y = g.max_pool2d(x, [5, 5], [1, 1], [2, 2]);
    g.set_outputs(vec![y]);
    let mut exe = compile(&g);
    let mut xs = input(&dims, 130).to_vec::<f32>().unwrap();
    for i in [20, 150, 398] {
        xs[i] = f32::NAN;
    }
    let xt = HostTensor::from_slice(&xs, &dims).unwrap();
    let fx: Value = serde_json::from_str(FIXTURE).unwrap();
    let want: Vec<Option<f64>> = fx["pool_nan"]["y"]
        .as_array()
        .unwrap()
        .iter()
        .map(Value::as_f64)
        .collect();
    for threads in 1..=3 {
        exe.limit_threads(Some(threads)).unwrap();
        let got = exe.run(&[&xt]).unwrap()[0].to_vec::<f32>().unwrap();
        assert_eq!(got.len(), want.len());
        for (i, (&g, w)) in got.iter().zip(&want).enumerate() {
            match w {
                None => assert!(g.is_nan(), "threads {threads} [{i}]: {g}, numpy NaN"),
                Some(w) => assert!(
                    (g as f64 - w).abs() <= 1e-6 * w.abs(),
                    "threads {threads} [{i}]: {g} vs {w}"
                ),
            }
        }
    }
}
