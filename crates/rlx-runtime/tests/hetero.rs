//! Heterogeneous placement: a graph split across CPU thread pools equals the
//! numpy reference (tools/gen_hetero_fixtures.py) and the one-device run.

use rlx_ir::{DType, Graph, GraphExt, HostTensor, NodeId, Shape};
use rlx_runtime::hetero::Transfer;
use rlx_runtime::{Device, DeviceCandidate, DeviceMap, HeteroExecutable, RuntimeError, Session};
use serde_json::Value;

fn fixture() -> Value {
    serde_json::from_str(include_str!("fixtures/hetero_mlp.json")).unwrap()
}

fn vec_of(v: &Value, key: &str) -> Vec<f32> {
    v[key]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap() as f32)
        .collect()
}

/// `[y, h]` with h = tanh(x @ w1 + b1), y = h @ w2; returns the graph and the tanh node.
fn mlp() -> (Graph, NodeId) {
    let mut g = Graph::new("mlp");
    let x = g.input("x", Shape::new(&[3, 4], DType::F32));
    let w1 = g.param("w1", Shape::new(&[4, 5], DType::F32));
    let b1 = g.param("b1", Shape::new(&[5], DType::F32));
    let w2 = g.param("w2", Shape::new(&[5, 2], DType::F32));
    let a = g.mm(x, w1);
    let a = g.add(a, b1);
    let h = g.tanh(a);
    let y = g.mm(h, w2);
    g.set_outputs(vec![y, h]);
    (g, h)
}

fn params(f: &Value) -> Vec<(&'static str, HostTensor)> {
    vec![
        (
            "w1",
            HostTensor::from_vec(vec_of(f, "w1"), &[4, 5]).unwrap(),
        ),
        ("b1", HostTensor::from_vec(vec_of(f, "b1"), &[5]).unwrap()),
        (
            "w2",
            HostTensor::from_vec(vec_of(f, "w2"), &[5, 2]).unwrap(),
        ),
    ]
}

fn run_hetero(g: &Graph, map: &DeviceMap) -> (Vec<Vec<f32>>, Vec<Transfer>, usize) {
    let f = fixture();
    let mut exe = HeteroExecutable::compile(g, map).unwrap();
    for (n, t) in params(&f) {
        exe.set_param_typed(n, &t).unwrap();
    }
    let x = HostTensor::from_vec(vec_of(&f, "x"), &[3, 4]).unwrap();
    let outs = exe.run(&[("x", &x)]).unwrap();
    let outs = outs.iter().map(|t| t.to_vec::<f32>().unwrap()).collect();
    (outs, exe.transfers().to_vec(), exe.segment_devices().len())
}

fn run_one_device(g: &Graph) -> Vec<Vec<f32>> {
    let f = fixture();
    let mut exe = Session::new(Device::Cpu).try_compile(g.clone()).unwrap();
    for (n, t) in params(&f) {
        exe.set_param_typed(n, &t).unwrap();
    }
    let x = HostTensor::from_vec(vec_of(&f, "x"), &[3, 4]).unwrap();
    let outs = exe.try_run_typed(&[("x", &x)]).unwrap();
    outs.iter().map(|t| t.to_vec::<f32>().unwrap()).collect()
}

fn assert_matches(outs: &[Vec<f32>], what: &str) {
    let f = fixture();
    for (got, key) in outs.iter().zip(["y", "h"]) {
        let want = f[key].as_array().unwrap();
        assert_eq!(got.len(), want.len(), "{what} {key}");
        for (i, (a, b)) in got.iter().zip(want).enumerate() {
            let b = b.as_f64().unwrap();
            assert!(
                (*a as f64 - b).abs() <= 1e-5 * (1.0 + b.abs()),
                "{what} {key}[{i}]: {a} vs {b}"
            );
        }
    }
    let one = run_one_device(&mlp().0);
    for (got, want) in outs.iter().zip(&one) {
        for (a, b) in got.iter().zip(want) {
            assert!(
                (a - b).abs() <= 1e-6 * (1.0 + b.abs()),
                "{what}: {a} vs one-device {b}"
            );
        }
    }
}

#[test]
fn split_at_a_node_moves_one_value() {
    let (g, tanh) = mlp();
    let one = DeviceCandidate::cpu_threads(1);
    let two = DeviceCandidate::cpu_threads(2);
    let (outs, transfers, segments) = run_hetero(&g, &DeviceMap::split_at(tanh, one, two));
    assert_matches(&outs, "split");
    assert_eq!(segments, 2);
    // Only the pre-activation (3 × 5 f32) crosses the cut.
    assert_eq!(transfers.len(), 1);
    assert_eq!(transfers[0].from, (0, one));
    assert_eq!(transfers[0].to, (1, two));
    assert_eq!(transfers[0].bytes, Some(60));
}

#[test]
fn placement_by_op_kind_and_by_node() {
    let (g, tanh) = mlp();
    let one = DeviceCandidate::cpu_threads(1);
    let two = DeviceCandidate::cpu_threads(2);
    // matmul | add, tanh | matmul: three segments, two transfers.
    let by_op = DeviceMap::new(one).op("matmul", two);
    let (outs, transfers, segments) = run_hetero(&g, &by_op);
    assert_matches(&outs, "by op");
    assert_eq!((segments, transfers.len()), (3, 2), "{transfers:?}");
    // Only the tanh elsewhere: three segments.
    let by_node = DeviceMap::new(one).nodes(&[tanh], two);
    let (outs, transfers, segments) = run_hetero(&g, &by_node);
    assert_matches(&outs, "by node");
    assert_eq!((segments, transfers.len()), (3, 2), "{transfers:?}");
    // Everything on one device: one segment, nothing moves.
    let (outs, transfers, segments) = run_hetero(&g, &DeviceMap::new(two));
    assert_matches(&outs, "one device");
    assert_eq!((segments, transfers.len()), (1, 0));
}

#[test]
fn misuse_is_a_named_error() {
    let (g, _) = mlp();
    let one = DeviceCandidate::cpu_threads(1);
    let far = DeviceMap::new(one).nodes(&[NodeId(99)], one);
    let err = HeteroExecutable::compile(&g, &far).err().unwrap();
    assert!(err.to_string().contains("node %99"), "{err}");
    let mut exe = HeteroExecutable::compile(&g, &DeviceMap::new(one)).unwrap();
    let t = HostTensor::from_vec(vec![0f32; 5], &[5]).unwrap();
    assert!(matches!(
        exe.set_param_typed("nope", &t),
        Err(RuntimeError::UnknownParam { .. })
    ));
    assert!(matches!(
        exe.run(&[("nope", &t)]),
        Err(RuntimeError::UnknownInput { .. })
    ));
}

#[test]
fn every_available_device_takes_the_second_half() {
    let (g, tanh) = mlp();
    for cand in DeviceCandidate::available() {
        let map = DeviceMap::split_at(tanh, DeviceCandidate::cpu_threads(1), cand);
        let (outs, transfers, _) = run_hetero(&g, &map);
        assert_matches(&outs, &format!("{cand:?}"));
        assert_eq!(
            transfers.len(),
            usize::from(cand != DeviceCandidate::cpu_threads(1))
        );
    }
}
