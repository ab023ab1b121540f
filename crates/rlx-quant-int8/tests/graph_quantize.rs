//! Import of an RLX graph, checked against the CPU backend running the same
//! graph; quantization of it; and the named errors for bad graphs.
use rlx_ir::{DType, Graph, GraphExt, NodeId, Shape};
use rlx_quant_int8::{float_model_from_graph, quantize, QuantError, MAX_DEPTH};
use rlx_runtime::{Device, Session};
use std::collections::HashMap;

/// splitmix64 values in [-bound, bound].
fn values(seed: u64, n: usize, bound: f32) -> Vec<f32> {
    let mut s = seed;
    (0..n)
        .map(|_| {
            s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = s;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^= z >> 31;
            ((z >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0) * bound
        })
        .collect()
}

fn param(
    g: &mut Graph,
    params: &mut HashMap<String, Vec<f32>>,
    name: &str,
    dims: &[usize],
    bound: f32,
) -> NodeId {
    let n = dims.iter().product();
    params.insert(
        name.into(),
        values(name.len() as u64 * 977 + n as u64, n, bound),
    );
    g.param(name, Shape::new(dims, DType::F32))
}

/// x [1, 3, 7, 6] -> conv 3x3 s1 p1 (5) + relu -> depthwise 3x3 s2 p1 (x2)
/// + bias + relu -> avgpool 2 s1 -> flatten -> dense 10 -> softmax.
fn cnn(params: &mut HashMap<String, Vec<f32>>) -> Graph {
    let mut g = Graph::new("mixed_cnn");
    let x = g.input("x", Shape::new(&[1, 3, 7, 6], DType::F32));
    let w1 = param(&mut g, params, "w1", &[5, 3, 3, 3], 0.4);
    let b1 = param(&mut g, params, "b1", &[5], 0.2);
    let h = GraphExt::conv2d(&mut g, x, w1, Some(b1), [1, 1], [1, 1]);
    let h = g.relu(h);
    let w2 = param(&mut g, params, "w2", &[10, 1, 3, 3], 0.5);
    let window = rlx_ir::op::Window {
        kernel: Vec::new(),
        stride: vec![2, 2],
        padding: vec![(1, 1), (1, 1)],
        dilation: vec![1, 1],
    };
    let h = g.conv(h, w2, None, window, 5);
    let b2 = param(&mut g, params, "b2", &[1, 10, 1, 1], 0.1);
    let h = g.add(h, b2);
    let h = g.relu(h);
    let h = g.avg_pool2d(h, [2, 2], [1, 1], [0, 0]);
    let h = g.reshape_(h, &[1, 60]);
    let w3 = param(&mut g, params, "w3", &[60, 10], 0.3);
    let b3 = param(&mut g, params, "b3", &[10], 0.1);
    let h = g.mm(h, w3);
    let h = g.add(h, b3);
    let h = g.softmax(h, 1, Shape::new(&[1, 10], DType::F32));
    g.set_outputs(vec![h]);
    g
}

fn nchw_to_nhwc(x: &[f32], c: usize, h: usize, w: usize) -> Vec<f32> {
    let mut out = vec![0.0; x.len()];
    for ch in 0..c {
        for p in 0..h * w {
            out[p * c + ch] = x[ch * h * w + p];
        }
    }
    out
}

#[test]
fn imported_float_model_matches_the_cpu_backend() {
    let mut params = HashMap::new();
    let g = cnn(&mut params);
    let model = float_model_from_graph(&g, &params).unwrap();
    assert_eq!(model.layers.len(), 5, "{:#?}", model.layers);
    let mut c = Session::new(Device::Cpu).try_compile(g).unwrap();
    for (n, v) in &params {
        c.try_set_param(n, v).unwrap();
    }
    for seed in 0..4 {
        let x = values(100 + seed, 3 * 7 * 6, 1.0);
        let want = c.try_run(&[("x", &x)]).unwrap().remove(0);
        let got = model.forward_all(&nchw_to_nhwc(&x, 3, 7, 6)).pop().unwrap();
        for (a, b) in got.iter().zip(&want) {
            assert!((a - b).abs() < 1e-5, "{got:?} vs {want:?}");
        }
    }
}

#[test]
fn quantized_cnn_tracks_the_float_model_and_the_kernels_match_the_reference() {
    let mut params = HashMap::new();
    let g = cnn(&mut params);
    let model = float_model_from_graph(&g, &params).unwrap();
    let calibration: Vec<Vec<f32>> = (0..64).map(|s| values(1000 + s, 126, 1.0)).collect();
    let q = quantize(&model, &calibration).unwrap();
    for s in 0..16 {
        let x = values(5000 + s, 126, 1.0);
        let image = q.quantize_input(&x);
        let all = q.run_reference_all(&image).unwrap();
        let kernels = q.run_cortexm(&image).unwrap();
        assert_eq!(all.last().unwrap(), &kernels, "image {s}");
        // Probabilities (scale 1/256) within a few steps of the float ones.
        let float = model.forward_all(&x).pop().unwrap();
        for (p, &v) in float.iter().zip(all.last().unwrap()) {
            let deq = (v as f32 + 128.0) / 256.0;
            assert!((p - deq).abs() < 0.05, "{float:?} vs {:?}", all.last());
        }
    }
}

#[test]
fn an_op_without_an_int8_kernel_is_named() {
    let mut g = Graph::new("tanh_mlp");
    let x = g.input("x", Shape::new(&[1, 4], DType::F32));
    let w = g.param("w", Shape::new(&[4, 3], DType::F32));
    let h = g.mm(x, w);
    let h = g.tanh(h);
    g.set_outputs(vec![h]);
    let params = HashMap::from([("w".to_string(), vec![0.1; 12])]);
    let err = float_model_from_graph(&g, &params).unwrap_err();
    match &err {
        QuantError::UnsupportedOp { op, .. } => assert_eq!(op, "tanh"),
        other => panic!("expected UnsupportedOp, got {other:?}"),
    }
    assert!(err.to_string().contains("tanh"), "{err}");
}

#[test]
fn a_missing_param_value_is_named() {
    let mut g = Graph::new("dense");
    let x = g.input("x", Shape::new(&[1, 4], DType::F32));
    let w = g.param("w", Shape::new(&[4, 3], DType::F32));
    let h = g.mm(x, w);
    g.set_outputs(vec![h]);
    let err = float_model_from_graph(&g, &HashMap::new()).unwrap_err();
    assert!(
        matches!(&err, QuantError::Structure(m) if m.contains("\"w\"")),
        "{err}"
    );
}

#[test]
fn a_depth_that_overflows_the_accumulator_is_refused_at_quantization() {
    let depth = MAX_DEPTH + 1;
    let mut g = Graph::new("wide");
    let x = g.input("x", Shape::new(&[1, depth], DType::F32));
    let w = g.param("w", Shape::new(&[depth, 2], DType::F32));
    let h = g.mm(x, w);
    g.set_outputs(vec![h]);
    let params = HashMap::from([("w".to_string(), vec![0.01; depth * 2])]);
    let model = float_model_from_graph(&g, &params).unwrap();
    let err = quantize(&model, &[vec![0.5; depth]]).unwrap_err();
    assert_eq!(err, QuantError::AccumulatorOverflow { layer: 0, depth });
}

#[test]
fn a_bias_too_large_for_int32_is_refused() {
    let mut g = Graph::new("biased");
    let x = g.input("x", Shape::new(&[1, 2], DType::F32));
    let w = g.param("w", Shape::new(&[2, 1], DType::F32));
    let b = g.param("b", Shape::new(&[1], DType::F32));
    let h = g.mm(x, w);
    let h = g.add(h, b);
    g.set_outputs(vec![h]);
    let params = HashMap::from([
        ("w".to_string(), vec![1e-6, -1e-6]),
        ("b".to_string(), vec![1e6]),
    ]);
    let model = float_model_from_graph(&g, &params).unwrap();
    let err = quantize(&model, &[vec![1e-3, 0.0]]).unwrap_err();
    assert!(
        matches!(
            err,
            QuantError::BiasOverflow {
                layer: 0,
                channel: 0,
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn no_calibration_data_is_refused() {
    let mut g = Graph::new("dense");
    let x = g.input("x", Shape::new(&[1, 2], DType::F32));
    let w = g.param("w", Shape::new(&[2, 1], DType::F32));
    let h = g.mm(x, w);
    g.set_outputs(vec![h]);
    let params = HashMap::from([("w".to_string(), vec![1.0, 1.0])]);
    let model = float_model_from_graph(&g, &params).unwrap();
    assert!(matches!(
        quantize(&model, &[]),
        Err(QuantError::Calibration(_))
    ));
    assert!(matches!(
        quantize(&model, &[vec![1.0; 3]]),
        Err(QuantError::Calibration(_))
    ));
}
