//! The session's lowering options reach control-flow bodies: a Scan body
//! compiled with `Precision::F16` computes in F16 (checked against f16
//! rounding done with the `half` crate), and the fusion setting decides
//! whether the body's elementwise chain is fused.

use half::f16;
use rlx_driver::Device;
use rlx_ir::ops::control::try_scan;
use rlx_ir::{DType, Graph, GraphExt, HostTensor, Shape};
use rlx_runtime::{CompileOptions, CompiledGraph, Precision, Session};

const N: usize = 2;
const STEPS: usize = 4;
const C0: [f32; N] = [2048.0, 1024.0];
const X: [f32; N] = [1.0, 0.5];

fn f32s(d: &[usize]) -> Shape {
    Shape::new(d, DType::F32)
}

/// `e = relu(c + x_t)` (an elementwise chain), `c' = e @ w`; carries
/// `(c, w)`, stacks `e`.
fn body() -> Graph {
    let mut b = Graph::new("step");
    let c = b.input("c", f32s(&[N]));
    let w = b.input("w", f32s(&[N, N]));
    let x = b.input("x_t", f32s(&[N]));
    let t = b.add(c, x);
    let e = b.relu(t);
    let c2 = b.mm(e, w);
    b.set_outputs(vec![c2, w, e]);
    b
}

fn graph() -> Graph {
    let mut g = Graph::new("scan");
    let c = g.input("c0", f32s(&[N]));
    let w = g.input("w", f32s(&[N, N]));
    let xs = g.input("xs", f32s(&[STEPS, N]));
    let (carry, _ys) = try_scan(&mut g, body(), &[c, w], &[xs], false).unwrap();
    g.set_outputs(vec![carry[0]]);
    g
}

fn run(c: &mut CompiledGraph) -> Vec<f32> {
    let eye = [1.0f32, 0.0, 0.0, 1.0];
    let xs: Vec<f32> = (0..STEPS).flat_map(|_| X).collect();
    let feeds = [
        ("c0", HostTensor::from_slice(&C0, &[N]).unwrap()),
        ("w", HostTensor::from_slice(&eye, &[N, N]).unwrap()),
        ("xs", HostTensor::from_slice(&xs, &[STEPS, N]).unwrap()),
    ];
    let f: Vec<(&str, &HostTensor)> = feeds.iter().map(|(n, t)| (*n, t)).collect();
    c.try_run_typed(&f).unwrap()[0].to_vec::<f32>().unwrap()
}

/// The carry when every body op rounds to f16 (the identity matmul and
/// relu of positive values are exact, so only the add rounds).
fn f16_reference() -> Vec<f32> {
    let mut c: Vec<f16> = C0.iter().map(|&v| f16::from_f32(v)).collect();
    for _ in 0..STEPS {
        for (ci, &x) in c.iter_mut().zip(&X) {
            *ci = f16::from_f32(ci.to_f32() + f16::from_f32(x).to_f32());
        }
    }
    c.iter().map(|v| v.to_f32()).collect()
}

fn compile(opts: &CompileOptions) -> CompiledGraph {
    Session::new(Device::Cpu).compile_with(graph(), opts)
}

#[test]
fn f16_precision_reaches_the_scan_body() {
    let want = f16_reference();
    // 2048 + 1 and 1024 + 0.5 are ties that f16 rounds back down every step.
    assert_eq!(want, C0);
    let mut c = compile(&CompileOptions::default().precision(Precision::F16));
    let subs = c.subgraph_lirs();
    assert_eq!(subs.len(), 1);
    let body = &subs[0].1.graph;
    assert!(
        body.nodes().iter().any(|n| n.shape.dtype() == DType::F16),
        "the body was not lowered in F16:\n{}",
        rlx_ir::inspect_graph(body)
    );
    assert_eq!(run(&mut c), want);
    // In F32 the same body accumulates every step.
    let mut c = compile(&CompileOptions::default());
    assert_eq!(run(&mut c), [2052.0, 1026.0]);
}

#[test]
fn the_fusion_setting_reaches_the_scan_body() {
    let regions = |c: &CompiledGraph| c.subgraph_lirs()[0].1.fusion.regions.len();
    let mut on = compile(&CompileOptions::default());
    let mut off = compile(&CompileOptions::default().fusion(false));
    assert!(regions(&on) > 0, "fusion on fused nothing in the body");
    assert_eq!(regions(&off), 0, "fusion off still fused the body");
    assert_eq!(run(&mut on), run(&mut off));
}

#[test]
fn a_dynamic_graph_lowers_its_bodies_with_the_session_options() {
    let opts = CompileOptions::default()
        .precision(Precision::F16)
        .fusion(false);
    let mut d = Session::new(Device::Cpu)
        .compile_dynamic(graph(), &opts)
        .unwrap();
    let eye = [1.0f32, 0.0, 0.0, 1.0];
    let xs: Vec<f32> = (0..STEPS).flat_map(|_| X).collect();
    let c0 = HostTensor::from_slice(&C0, &[N]).unwrap();
    let w = HostTensor::from_slice(&eye, &[N, N]).unwrap();
    let xs = HostTensor::from_slice(&xs, &[STEPS, N]).unwrap();
    let out = d.run_typed(&[("c0", &c0), ("w", &w), ("xs", &xs)]).unwrap();
    assert_eq!(out[0].to_vec::<f32>().unwrap(), f16_reference());
}
