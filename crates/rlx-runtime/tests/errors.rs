//! Every bad input gets an error that names the culprit, the panicking
//! forms panic with the same message, and nothing is half-changed.

use rlx_driver::Device;
use rlx_ir::{DType, Graph, GraphExt, HostTensor, Node, NodeId, NodeOrigin, Op, Shape};
use rlx_runtime::{CompiledGraph, RuntimeError, Session};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// y = x @ w + b, x [1, 2], w [2, 2], b [2].
fn affine() -> CompiledGraph {
    let mut g = Graph::new("affine");
    let x = g.input("x", Shape::new(&[1, 2], DType::F32));
    let w = g.param("w", Shape::new(&[2, 2], DType::F32));
    let b = g.param("b", Shape::new(&[2], DType::F32));
    let y = g.mm(x, w);
    let y = g.add(y, b);
    g.set_outputs(vec![y]);
    Session::new(Device::Cpu).try_compile(g).unwrap()
}

fn panic_message(f: impl FnOnce()) -> String {
    let e = catch_unwind(AssertUnwindSafe(f)).expect_err("expected a panic");
    e.downcast_ref::<String>()
        .cloned()
        .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default()
}

#[test]
fn unknown_input_is_named_with_the_known_ones() {
    let mut c = affine();
    c.set_param("w", &[1.0, 0.0, 0.0, 1.0]);
    c.set_param("b", &[0.0, 0.0]);
    let e = c.try_run(&[("x", &[1.0, 2.0]), ("z", &[1.0])]).unwrap_err();
    assert!(
        matches!(&e, RuntimeError::UnknownInput { name, .. } if name == "z"),
        "{e}"
    );
    assert_eq!(
        e.to_string(),
        "unknown input \"z\" (the graph's inputs are [\"x\"])"
    );
    let msg = panic_message(|| {
        c.run(&[("x", &[1.0, 2.0]), ("z", &[1.0])]);
    });
    assert_eq!(msg, e.to_string());
}

#[test]
fn missing_and_duplicate_inputs() {
    let mut c = affine();
    c.set_param("w", &[1.0, 0.0, 0.0, 1.0]);
    c.set_param("b", &[0.0, 0.0]);
    let e = c.try_run(&[]).unwrap_err();
    assert_eq!(e.to_string(), "missing input \"x\" of shape f32[1,2]");
    let e = c
        .try_run(&[("x", &[1.0, 2.0]), ("x", &[1.0, 2.0])])
        .unwrap_err();
    assert_eq!(e.to_string(), "input \"x\" given twice");
}

#[test]
fn wrong_length_names_input_shape_and_counts() {
    let mut c = affine();
    c.set_param("w", &[1.0, 0.0, 0.0, 1.0]);
    c.set_param("b", &[0.0, 0.0]);
    let e = c.try_run(&[("x", &[1.0, 2.0, 3.0])]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "input \"x\": expected 2 values for shape f32[1,2], given 3"
    );
}

#[test]
fn wrong_dtype_and_dims_in_typed_runs() {
    let mut c = affine();
    c.set_param("w", &[1.0, 0.0, 0.0, 1.0]);
    c.set_param("b", &[0.0, 0.0]);
    let t = HostTensor::from_vec(vec![1i32, 2], &[1, 2]).unwrap();
    let e = c.try_run_typed(&[("x", &t)]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "input \"x\": expected dtype f32 (shape f32[1,2]), given i32"
    );
    let t = HostTensor::from_vec(vec![1f32, 2.0], &[2, 1]).unwrap();
    let e = c.try_run_typed(&[("x", &t)]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "input \"x\": expected shape f32[1,2], given dims [2, 1]"
    );
}

#[test]
fn unknown_and_unset_params() {
    let mut c = affine();
    let e = c.try_set_param("v", &[1.0]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "unknown param \"v\" (the graph's params are [\"w\", \"b\"])"
    );
    c.set_param("w", &[1.0, 0.0, 0.0, 1.0]);
    let e = c.try_run(&[("x", &[1.0, 2.0])]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "param \"b\" of shape f32[2] is not set (call set_param first)"
    );
    let msg = panic_message(|| {
        c.run(&[("x", &[1.0, 2.0])]);
    });
    assert_eq!(msg, e.to_string());
}

#[test]
fn failed_set_param_keeps_the_old_value() {
    let mut c = affine();
    c.set_param("w", &[1.0, 0.0, 0.0, 1.0]);
    c.set_param("b", &[10.0, 20.0]);
    let e = c.try_set_param("b", &[1.0, 2.0, 3.0]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "param \"b\": expected 2 values for shape f32[2], given 3"
    );
    let bad = HostTensor::from_vec(vec![1.0f64, 2.0], &[2]).unwrap();
    assert!(c
        .set_param_typed("b", &bad)
        .unwrap_err()
        .to_string()
        .contains("expected dtype f32"));
    // x @ I + b with the old b.
    assert_eq!(c.run(&[("x", &[1.0, 2.0])]), vec![vec![11.0, 22.0]]);
}

#[test]
fn builder_shape_mismatch_is_an_error_and_the_same_panic() {
    let mut g = Graph::new("bad");
    let x = g.input("x", Shape::new(&[1, 4], DType::F32));
    let w = g.param("w", Shape::new(&[4, 2], DType::F32));
    let e = g
        .try_node(Op::MatMul, &[x, w], Some(Shape::new(&[1, 3], DType::F32)))
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "matmul: given shape f32[1,3] but inference gives f32[1,2]"
    );
    let len = g.len();
    let msg = panic_message(|| {
        g.matmul(x, w, Shape::new(&[1, 3], DType::F32));
    });
    assert_eq!(msg, e.to_string());
    assert_eq!(g.len(), len, "a failed builder call adds no node");
    let e = g.try_node(Op::MatMul, &[w, w], None).unwrap_err();
    assert_eq!(
        e.to_string(),
        "matmul: inner dims differ: lhs f32[4,2] has 2, rhs f32[4,2] has 4"
    );
}

#[test]
fn dangling_ids_and_missing_outputs_are_named() {
    let mut g = Graph::new("dangling");
    let x = g.input("x", Shape::new(&[2], DType::F32));
    let e = g
        .try_node(Op::Binary(rlx_ir::op::BinaryOp::Add), &[x, NodeId(7)], None)
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "add: input %7 does not exist (the graph has 1 nodes)"
    );

    // A node smuggled in without checks, and an output that does not exist.
    g.push_verified(Node {
        op: Op::Unary(rlx_ir::op::UnaryOp::Exp),
        inputs: vec![NodeId(5)],
        shape: Shape::new(&[2], DType::F32),
        name: None,
        origin: NodeOrigin::User,
    });
    g.set_outputs(vec![NodeId(1), NodeId(9)]);
    let e = Session::new(Device::Cpu)
        .try_compile(g)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("%1: exp: input %5 is not an earlier node"),
        "{e}"
    );
    assert!(
        e.contains("output %9 does not exist (the graph has 2 nodes)"),
        "{e}"
    );
}

#[test]
fn absent_device_says_why() {
    let mut g = Graph::new("g");
    let x = g.input("x", Shape::new(&[2], DType::F32));
    g.set_outputs(vec![x]);
    let e = Session::new(Device::Cuda(0)).try_compile(g).unwrap_err();
    assert!(matches!(
        e,
        RuntimeError::DeviceUnavailable {
            device: Device::Cuda(0),
            ..
        }
    ));
    assert!(
        e.to_string()
            .starts_with("device cuda:0 is not available: no CUDA:0 backend"),
        "{e}"
    );
}

#[test]
fn kernel_errors_name_the_node() {
    let mut g = Graph::new("take");
    let x = g.input("x", Shape::new(&[3], DType::F32));
    let i = g.input("i", Shape::new(&[1], DType::I64));
    let y = g.gather_(x, i, 0);
    g.set_name(y, "lookup");
    g.set_outputs(vec![y]);
    let mut c = Session::new(Device::Cpu).try_compile(g).unwrap();
    let xs = HostTensor::from_vec(vec![1f32, 2.0, 3.0], &[3]).unwrap();
    let idx = HostTensor::from_vec(vec![5i64], &[1]).unwrap();
    let e = c
        .try_run_typed(&[("x", &xs), ("i", &idx)])
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("%2 gather{axis=0} \"lookup\": "), "{e}");
    assert!(e.contains('5'), "{e}");
}
