//! The CPU at a thread limit is a second device: the limit set at compile
//! is what the kernels see, and results do not depend on it.

mod device_fixture;

use device_fixture::{assert_close, mlp};
use rlx_driver::Device;
use rlx_ir::custom::{register_op, CustomAttrs, CustomOp, KernelArg, KernelOut, OpExtension};
use rlx_ir::{Arity, DType, Graph, Shape};
use rlx_runtime::*;

const PROBE: &str = "devtest.thread_probe";

/// Writes the thread count the CPU kernels would split work over now.
fn probe_kernel(_: &CustomOp, _: &[KernelArg], out: &mut KernelOut) -> Result<(), String> {
    let n = rlx_cpu::num_threads() as f32;
    out.bytes.copy_from_slice(&n.to_le_bytes());
    Ok(())
}

fn probe_shape(_: &CustomOp, _: &[&Shape]) -> Result<Shape, String> {
    Ok(Shape::new(&[1], DType::F32))
}

/// A graph whose output is the kernels' thread count at run time.
fn probe_graph() -> Graph {
    register_op(
        OpExtension::new(
            PROBE,
            "the CPU kernels' thread count",
            Arity::exactly(1),
            probe_shape,
        )
        .with_kernel("cpu", probe_kernel),
    )
    .unwrap();
    let mut g = Graph::new("probe");
    let x = g.input("x", Shape::new(&[1], DType::F32));
    let n = g
        .custom(CustomOp::new(PROBE, CustomAttrs::new()), &[x])
        .unwrap();
    g.set_outputs(vec![n]);
    g
}

#[test]
fn the_compiled_thread_limit_is_what_kernels_see() {
    let g = probe_graph();
    let run = |threads: Option<usize>| {
        let opts = CompileOptions::default().threads(threads);
        let mut c = Session::new(Device::Cpu)
            .try_compile_with(g.clone(), &opts)
            .unwrap();
        c.try_run(&[("x", &[0.0])]).unwrap()[0][0]
    };
    assert_eq!(run(Some(1)), 1.0);
    assert_eq!(run(Some(3)), 3.0);
    // Without a limit: the process default, which a limited run does not change.
    assert_eq!(run(None), rlx_cpu::num_threads() as f32);
    // Two executables of one process keep their own counts.
    let mut one = DeviceCandidate::cpu_threads(1)
        .compile(g.clone(), &CompileOptions::default())
        .unwrap();
    let mut five = DeviceCandidate::cpu_threads(5)
        .compile(g.clone(), &CompileOptions::default())
        .unwrap();
    for _ in 0..2 {
        assert_eq!(one.try_run(&[("x", &[0.0])]).unwrap()[0][0], 1.0);
        assert_eq!(five.try_run(&[("x", &[0.0])]).unwrap()[0][0], 5.0);
    }
}

#[test]
fn a_zero_thread_limit_is_refused_by_name() {
    let e = Session::new(Device::Cpu)
        .try_compile_with(mlp().graph, &CompileOptions::default().threads(Some(0)))
        .unwrap_err();
    assert!(
        e.to_string()
            .contains("a thread limit must be at least 1 (0 given)"),
        "{e}"
    );
}

#[test]
fn one_thread_and_every_core_agree_bit_for_bit_and_with_numpy() {
    let m = mlp();
    let run = |c: DeviceCandidate| {
        let mut compiled = c
            .compile(m.graph.clone(), &CompileOptions::default())
            .unwrap();
        for (name, v) in m.params() {
            compiled.try_set_param(name, v).unwrap();
        }
        compiled.try_run(&m.inputs()).unwrap().remove(0)
    };
    let one = run(DeviceCandidate::cpu_threads(1));
    let all = run(DeviceCandidate::new(Device::Cpu));
    let three = run(DeviceCandidate::cpu_threads(3));
    assert_close(&one, &m.want, 1e-5);
    assert_eq!(one, all);
    assert_eq!(one, three);
}
