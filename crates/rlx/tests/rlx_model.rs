//! `#[rlx_model]` through the `rlx` prelude: params, safetensors loading
//! with named errors, lazy compilation and re-tracing on a new input shape.
//! Expected values are worked out by hand in the comments.

use rlx::prelude::*;
use rlx::save_safetensors;
use rlx::tensor::TensorError;

#[rlx_model]
struct TwoLayer {
    #[param(shape = [2, 3], name = "fc1.weight")]
    w1: Tensor,
    #[param(shape = [3])]
    b1: Tensor,
    #[param(shape = [3, 1])]
    w2: Tensor,
}

impl TwoLayer {
    fn forward(&self, x: &Tensor) -> Tensor {
        (x.matmul(&self.w1) + &self.b1).relu().matmul(&self.w2)
    }
}

fn t(v: &[f32], dims: &[usize]) -> HostTensor {
    HostTensor::from_vec(v.to_vec(), dims).unwrap()
}

/// w1 = [[1, 0, -1], [0, 1, 1]], b1 = [0, 0, 0.5], w2 = [1, 2, 3]^T.
fn weights() -> Vec<(&'static str, HostTensor)> {
    vec![
        ("fc1.weight", t(&[1.0, 0.0, -1.0, 0.0, 1.0, 1.0], &[2, 3])),
        ("b1", t(&[0.0, 0.0, 0.5], &[3])),
        ("w2", t(&[1.0, 2.0, 3.0], &[3, 1])),
    ]
}

fn temp_file(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("rlx_model_test_{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

#[test]
fn params_are_listed_with_names_and_shapes() {
    let m = TwoLayer::model();
    let names: Vec<(&str, Vec<usize>)> = m
        .params()
        .iter()
        .map(|(n, s)| (n.as_str(), s.static_dims().unwrap()))
        .collect();
    assert_eq!(
        names,
        vec![
            ("fc1.weight", vec![2, 3]),
            ("b1", vec![3]),
            ("w2", vec![3, 1])
        ]
    );
}

#[test]
fn loads_safetensors_and_runs_forward() {
    let path = temp_file("ok.safetensors");
    let w = weights();
    save_safetensors(&path, w.iter().map(|(n, t)| (*n, t)), None).unwrap();
    let mut m = TwoLayer::model();
    m.load_safetensors(&path).unwrap();
    // x = [1, 2]: h = relu([1, 2, 1.5]) ; y = 1 + 4 + 4.5 = 9.5
    // x = [3, -1]: h = relu([3, -1, -3.5]) = [3, 0, 0]; y = 3
    let x = t(&[1.0, 2.0, 3.0, -1.0], &[2, 2]);
    let y = m.forward(&[&x]).unwrap();
    assert_eq!(y[0].to_vec::<f32>().unwrap(), vec![9.5, 3.0]);
    assert_eq!(m.traces(), 1);
    // Same shape: no new trace. A new batch size: one more.
    m.forward(&[&x]).unwrap();
    assert_eq!(m.traces(), 1);
    let x1 = t(&[0.0, 1.0], &[1, 2]);
    // h = relu([0, 1, 1.5]); y = 2 + 4.5 = 6.5
    assert_eq!(
        m.forward(&[&x1]).unwrap()[0].to_vec::<f32>().unwrap(),
        vec![6.5]
    );
    assert_eq!(m.traces(), 2);
    // A param set later reaches every compiled signature.
    m.set_param("w2", &t(&[0.0, 0.0, 1.0], &[3, 1])).unwrap();
    assert_eq!(
        m.forward(&[&x]).unwrap()[0].to_vec::<f32>().unwrap(),
        vec![1.5, 0.0]
    );
    assert_eq!(
        m.forward(&[&x1]).unwrap()[0].to_vec::<f32>().unwrap(),
        vec![1.5]
    );
}

#[test]
fn a_weights_file_that_does_not_fit_is_a_named_error() {
    let w = weights();
    let mut m = TwoLayer::model();

    // A misshaped tensor.
    let path = temp_file("shape.safetensors");
    let bad_b1 = t(&[0.0; 4], &[4]);
    let tensors = [("fc1.weight", &w[0].1), ("b1", &bad_b1), ("w2", &w[2].1)];
    save_safetensors(&path, tensors, None).unwrap();
    let err = m.load_safetensors(&path).unwrap_err();
    assert!(matches!(err, TensorError::Model { .. }), "{err}");
    let msg = err.to_string();
    assert!(msg.contains("\"b1\"") && msg.contains("[4]"), "{msg}");

    // A missing tensor.
    let path = temp_file("missing.safetensors");
    save_safetensors(&path, [("fc1.weight", &w[0].1), ("b1", &w[1].1)], None).unwrap();
    let msg = m.load_safetensors(&path).unwrap_err().to_string();
    assert!(msg.contains("no tensor for param \"w2\""), "{msg}");

    // A tensor that is no param (e.g. the old name of fc1.weight).
    let path = temp_file("extra.safetensors");
    let tensors = [("w1", &w[0].1), ("b1", &w[1].1), ("w2", &w[2].1)];
    save_safetensors(&path, tensors, None).unwrap();
    let msg = m.load_safetensors(&path).unwrap_err().to_string();
    assert!(msg.contains("\"w1\" is not a param"), "{msg}");

    // No file.
    let err = m
        .load_safetensors(temp_file("absent.safetensors"))
        .unwrap_err();
    assert!(matches!(err, TensorError::Weights { .. }), "{err}");

    // Nothing was set by the failed loads.
    assert!(m.param("b1").is_none());
}

#[test]
fn misuse_at_run_time_is_a_named_error() {
    let mut m = TwoLayer::model();
    let x = t(&[1.0, 2.0], &[1, 2]);
    let msg = m.forward(&[&x]).unwrap_err().to_string();
    assert!(msg.contains("TwoLayer") && msg.contains("not set"), "{msg}");
    let msg = m.set_param("w9", &t(&[1.0], &[1])).unwrap_err().to_string();
    assert!(msg.contains("w9") && msg.contains("fc1.weight"), "{msg}");
    let msg = m
        .set_param("b1", &t(&[1.0, 2.0], &[2]))
        .unwrap_err()
        .to_string();
    assert!(msg.contains("b1"), "{msg}");
    for (n, w) in weights() {
        m.set_param(n, &w).unwrap();
    }
    // forward takes one input.
    let msg = m.forward(&[&x, &x]).unwrap_err().to_string();
    assert!(msg.contains("forward takes 1 inputs, given 2"), "{msg}");
    // [1, 3] @ [2, 3] does not contract.
    let bad = t(&[1.0, 2.0, 3.0], &[1, 3]);
    assert!(m.forward(&[&bad]).is_err());
}

rlx::pipeline_schedule! {
    Stages { b => [a], a => [] }
}

#[test]
fn pipeline_schedule_is_in_the_prelude() {
    assert_eq!(Stages::ORDER, ["a", "b"]);
}

static REGISTERED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

fn register_one() {
    REGISTERED.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
}

fn register_ten() {
    REGISTERED.fetch_add(10, std::sync::atomic::Ordering::SeqCst);
}

#[test]
fn register_backends_calls_each_registration_once() {
    rlx::register_backends! {
        one => register_one,
        ten => register_ten,
    }
    rlx::register_backends! {}
    assert_eq!(REGISTERED.load(std::sync::atomic::Ordering::SeqCst), 11);
}
