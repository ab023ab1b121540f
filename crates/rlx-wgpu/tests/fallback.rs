//! CPU fallback placement: a graph with an op the wgpu device has no kernel
//! for (cumsum) is a named compile error by default, and with the policy's
//! fallback on runs that node on the CPU, reports it and the bytes moved,
//! and gives the CPU backend's values.

mod common;

use common::{gpu_or_skip, rand};
use rlx_ir::op::{BinaryOp, UnaryOp};
use rlx_ir::{DType, Graph, GraphExt, Shape};
use rlx_runtime::{Device, DeviceCandidate, DevicePolicy, HeteroExecutable, Session};

/// `cumsum(tanh(x) * 2) + x`, then a matmul: GPU, CPU, GPU.
fn graph() -> Graph {
    let mut g = Graph::new("fallback");
    let x = g.input("x", Shape::new(&[4, 6], DType::F32));
    let w = g.param("w", Shape::new(&[6, 3], DType::F32));
    let t = g.unary(UnaryOp::Tanh, x);
    let t = g.binary_op(BinaryOp::Mul, t, 2.0f32);
    let c = g.cumsum(t, 1, false, false);
    let y = g.binary_op(BinaryOp::Add, c, x);
    let z = g.mm(y, w);
    g.set_outputs(vec![z, c]);
    g
}

#[test]
fn a_node_without_a_kernel_falls_back_to_the_cpu_only_when_allowed() {
    if !gpu_or_skip("a_node_without_a_kernel_falls_back_to_the_cpu_only_when_allowed") {
        return;
    }
    let g = graph();
    let gpu = DeviceCandidate::new(Device::Gpu);

    // By default (a plain session) and with fallback off: the node's named error.
    let err = match Session::new(Device::Gpu).try_compile(g.clone()) {
        Err(e) => e.to_string(),
        Ok(_) => panic!("compiled a node without a kernel"),
    };
    assert!(
        err.contains("no kernel for") && err.contains("cumsum"),
        "{err}"
    );
    let off = DevicePolicy::default().fallback(false);
    let err = match HeteroExecutable::compile_with_fallback(&g, gpu, &off) {
        Err(e) => e.to_string(),
        Ok(_) => panic!("fell back with fallback off"),
    };
    assert!(err.contains("cumsum"), "{err}");
    // Fallback on but the CPU denied: still the error.
    let no_cpu = DevicePolicy::default().deny(Device::Cpu);
    assert!(HeteroExecutable::compile_with_fallback(&g, gpu, &no_cpu).is_err());

    // Fallback on: cumsum on the CPU, the rest on the GPU.
    let mut exe = HeteroExecutable::compile_with_fallback(&g, gpu, &DevicePolicy::default())
        .unwrap_or_else(|e| panic!("fallback placement failed: {e}"));
    let report = exe.fallback_report();
    println!("{report}");
    assert_eq!(report.cpu_nodes.len(), 1, "{report}");
    assert!(report.cpu_nodes[0].label.contains("cumsum"), "{report}");
    assert!(report.cpu_nodes[0].reason.contains("no kernel"), "{report}");
    let devices: Vec<Device> = exe.segment_devices().iter().map(|d| d.device).collect();
    assert_eq!(devices, [Device::Gpu, Device::Cpu, Device::Gpu]);
    // 2 * tanh(x) to the CPU, the cumsum back: two 4 x 6 f32 values.
    assert_eq!(report.bytes_moved, Some(2 * 4 * 6 * 4), "{report}");

    let (xv, wv) = (rand(&[4, 6], -2.0, 2.0, 50), rand(&[6, 3], -1.0, 1.0, 51));
    exe.set_param_typed("w", &wv).unwrap();
    let got = exe.run(&[("x", &xv)]).unwrap();
    let mut cpu = Session::new(Device::Cpu).try_compile(g).unwrap();
    cpu.set_param_typed("w", &wv).unwrap();
    let want = cpu.try_run_typed(&[("x", &xv)]).unwrap();
    for (k, (a, b)) in got.iter().zip(&want).enumerate() {
        let (a, b): (Vec<f32>, Vec<f32>) = (a.to_vec().unwrap(), b.to_vec().unwrap());
        assert_eq!(a.len(), b.len());
        for (x, y) in a.iter().zip(&b) {
            assert!(
                (x - y).abs() <= 1e-6 + 1e-5 * y.abs(),
                "output {k}: gpu+cpu {x} vs cpu {y}"
            );
        }
    }
}
