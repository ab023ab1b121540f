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
            == format!(
                "device cuda:0 is not available: {}",
                rlx_runtime::devices::unavailable_reason(Device::Cuda(0))
            ),
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

/// Every error of `e`'s chain, `e` first (walking `Error::source`).
fn chain<'a>(
    e: &'a (dyn std::error::Error + 'static),
) -> Vec<&'a (dyn std::error::Error + 'static)> {
    let mut out = vec![e];
    while let Some(s) = out.last().unwrap().source() {
        out.push(s);
    }
    out
}

#[test]
fn a_failing_sub_graph_keeps_its_error_as_the_source() {
    use rlx_driver::BackendError;
    use rlx_ir::ops::control::{try_tuple_op, WhileSpec};
    use std::sync::Arc;
    let scalar = || Shape::new(&[], DType::F32);
    // else: a While whose condition never turns false (max_iterations 10).
    let mut body = Graph::new("b");
    let c = body.input("c", scalar());
    let c1 = body.add(c, body.constant(1.0, DType::F32));
    body.set_outputs(vec![c1]);
    let mut cond = Graph::new("forever");
    let c = cond.input("c", scalar());
    let t = cond.ge(c, cond.constant(0.0, DType::F32));
    cond.set_outputs(vec![t]);
    let mut bad = Graph::new("bad");
    let c = bad.input("c", scalar());
    let spec = WhileSpec {
        cond: Arc::new(cond),
        body: Arc::new(body),
        max_iterations: 10,
    };
    let r = try_tuple_op(&mut bad, Op::While(spec), &[c]).unwrap();
    bad.set_outputs(r);
    let mut good = Graph::new("good");
    let c = good.input("c", scalar());
    let c = good.neg(c);
    good.set_outputs(vec![c]);
    let mut g = Graph::new("if");
    let p = g.input("p", Shape::scalar(DType::Bool));
    let c = g.input("c", scalar());
    let r = g.if_(p, good, bad, &[c]);
    g.set_outputs(r);
    let mut compiled = Session::new(Device::Cpu).try_compile(g).unwrap();
    let (p, x) = (HostTensor::scalar(false), HostTensor::scalar(2.0f32));
    let e = compiled.try_run_typed(&[("p", &p), ("c", &x)]).unwrap_err();

    // The outer error names the If node and the branch.
    let RuntimeError::Backend(BackendError::SubGraph { node, role, .. }) = &e else {
        panic!("expected a sub-graph error, got {e:?}");
    };
    assert!(node.contains("if"), "{node}");
    assert_eq!(role, "else");
    assert!(e.to_string().contains("else sub-graph"), "{e}");
    // Its source is the sub-graph's own typed error, naming the While node.
    let links = chain(&e);
    let inner = links
        .iter()
        .find_map(|l| match l.downcast_ref::<BackendError>() {
            Some(BackendError::Kernel { node, message }) => Some((node, message)),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no inner kernel error in the chain of {e}"));
    assert!(inner.0.contains("while"), "{}", inner.0);
    assert!(inner.1.contains("max_iterations"), "{}", inner.1);
    // And the outer message still shows it.
    assert!(e.to_string().contains("max_iterations"), "{e}");
}

#[test]
fn a_truncated_weights_file_keeps_the_safetensors_error_as_the_source() {
    use rlx_runtime::{BytesWeightLoader, WeightError};
    let dir = std::env::temp_dir().join(format!("rlx-errors-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("truncated.safetensors");
    // Tensor "w" needs 8 data bytes; the file stops after 6.
    let header = r#"{"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}"#;
    let mut bytes = (header.len() as u64).to_le_bytes().to_vec();
    bytes.extend_from_slice(header.as_bytes());
    bytes.extend_from_slice(&[0; 6]);
    std::fs::write(&path, bytes).unwrap();

    let e: RuntimeError = BytesWeightLoader::open(&path).unwrap_err().into();
    let shown = e.to_string();
    assert!(shown.contains("truncated.safetensors"), "{shown}");
    assert!(shown.contains("tensor \"w\""), "{shown}");
    let links = chain(&e);
    assert!(
        links
            .iter()
            .any(|l| l.downcast_ref::<safetensors::SafeTensorError>().is_some()),
        "no safetensors error in the chain of {e}"
    );

    // A file that is not there keeps the OS error.
    let missing = dir.join("missing.safetensors");
    let e: RuntimeError = BytesWeightLoader::open(&missing).unwrap_err().into();
    assert!(
        matches!(e, RuntimeError::Weights(WeightError::Io { .. })),
        "{e:?}"
    );
    assert!(e.to_string().contains("missing.safetensors"), "{e}");
    let io = chain(&e)
        .iter()
        .find_map(|l| l.downcast_ref::<std::io::Error>())
        .map(std::io::Error::kind);
    assert_eq!(io, Some(std::io::ErrorKind::NotFound), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}
