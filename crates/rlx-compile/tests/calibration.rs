//! Calibration thresholds against ONNX Runtime's own quantization classes
//! (`tools/gen_calibration_fixtures.py`: `HistogramCollector` for
//! percentile / entropy, per batch, per channel where the tensor has an
//! axis; `compute_scale_zp` for the Q/DQ params), and the scales
//! `insert_fake_quant` builds from them.

use rlx_compile::{
    insert_fake_quant, quant_params, CalibrationCollector, CalibrationMethod, QuantConfig,
    QuantMode,
};
use rlx_ir::{DType, Graph, GraphExt, NodeId, Op, Shape};
use serde_json::Value;

#[path = "common/calibration_fixture.rs"]
mod calibration_fixture;
use calibration_fixture::{tensors, Tensor};

/// The method a fixture key names, with the fixture's parameters.
fn method(key: &str, params: &Value) -> CalibrationMethod {
    if key == "minmax" {
        return CalibrationMethod::MinMax;
    }
    let p = &params[key];
    let num_bins = p["num_bins"].as_u64().unwrap() as usize;
    match p["method"].as_str().unwrap() {
        "percentile" => CalibrationMethod::Percentile {
            percentile: p["percentile"].as_f64().unwrap(),
            num_bins,
            symmetric: p["symmetric"].as_bool().unwrap(),
        },
        _ => CalibrationMethod::Entropy {
            num_bins,
            num_quantized_bins: p["num_quantized_bins"].as_u64().unwrap() as usize,
        },
    }
}

fn graph_for(t: &Tensor) -> (Graph, NodeId) {
    let mut g = Graph::new(&t.name);
    let x = g.input("x", Shape::new(&t.batches[0].1, DType::F32));
    (g, x)
}

#[test]
fn thresholds_and_qdq_params_equal_onnxruntime() {
    let (params, tensors) = tensors();
    let mut checked = 0;
    for t in &tensors {
        for (key, want) in t.methods.as_object().unwrap() {
            let (g, x) = graph_for(t);
            let mut c = CalibrationCollector::new(&g, method(key, &params)).unwrap();
            for (values, dims) in &t.batches {
                c.observe(x, values, dims, t.axis).unwrap();
            }
            let record = c.finish();
            let stats = record.get(x).unwrap();
            let want = want.as_array().unwrap();
            assert_eq!(stats.min.len(), want.len(), "{} {key}", t.name);
            for (ch, w) in want.iter().enumerate() {
                let (lo, hi) = (stats.min[ch], stats.max[ch]);
                let (wlo, whi) = (
                    w["lo"].as_f64().unwrap() as f32,
                    w["hi"].as_f64().unwrap() as f32,
                );
                assert_eq!((lo, hi), (wlo, whi), "{} {key} channel {ch}", t.name);
                for (mode, name) in [
                    (QuantMode::Symmetric, "symmetric"),
                    (QuantMode::Asymmetric, "asymmetric"),
                ] {
                    let (s, z) = quant_params(lo, hi, mode);
                    let ws = w["qdq"][name]["scale"].as_f64().unwrap() as f32;
                    let wz = w["qdq"][name]["zero_point"].as_f64().unwrap() as f32;
                    assert!(
                        (s - ws).abs() <= f32::EPSILON * ws,
                        "{} {key} {name}: scale {s} vs {ws}",
                        t.name
                    );
                    assert_eq!(z, wz, "{} {key} {name}: zero point", t.name);
                }
                checked += 1;
            }
        }
    }
    assert_eq!(checked, 5 * (3 + 4));
}

/// The entropy thresholds clip outliers (the search is not a no-op) and
/// `insert_fake_quant` writes the scale ORT derives from them.
#[test]
fn fake_quant_uses_the_calibrated_scales() {
    let (params, tensors) = tensors();
    let t = tensors
        .iter()
        .find(|t| t.name == "normal_outliers")
        .unwrap();
    let want = &t.methods["entropy"][0];
    let minmax = &t.methods["minmax"][0];
    assert!(want["hi"].as_f64().unwrap() < 0.6 * minmax["hi"].as_f64().unwrap());
    let (mut g, x) = graph_for(t);
    let n = t.batches[0].1[0];
    let w = g.param("w", Shape::new(&[n, 2], DType::F32));
    let y = g.mm(x, w);
    g.set_outputs(vec![y]);
    let mut c = CalibrationCollector::new(&g, method("entropy", &params)).unwrap();
    for (values, dims) in &t.batches {
        c.observe(x, values, dims, None).unwrap();
    }
    let weights: Vec<f32> = (0..2 * n).map(|i| (i as f32 * 0.37).sin()).collect();
    c.observe_min_max(w, &weights, &[n, 2], Some(1)).unwrap();
    let record = c.finish();
    let cfg = QuantConfig {
        activations: QuantMode::Asymmetric,
        weights: QuantMode::Symmetric,
        weights_per_channel: true,
    };
    let q = insert_fake_quant(&g, &record, &cfg).unwrap();
    let scalar_constants: Vec<f32> = q
        .nodes()
        .iter()
        .filter_map(|n| match &n.op {
            Op::Constant { bytes } if bytes.len() == 4 => {
                Some(f32::from_le_bytes(bytes[..4].try_into().unwrap()))
            }
            _ => None,
        })
        .collect();
    let ws = want["qdq"]["asymmetric"]["scale"].as_f64().unwrap() as f32;
    let wz = want["qdq"]["asymmetric"]["zero_point"].as_f64().unwrap() as f32;
    assert!(
        scalar_constants
            .iter()
            .any(|&s| (s - ws).abs() <= f32::EPSILON * ws),
        "{scalar_constants:?} lacks {ws}"
    );
    assert!(
        scalar_constants.contains(&wz),
        "{scalar_constants:?} lacks zero point {wz}"
    );
}

#[test]
fn bad_calibration_settings_and_batches_are_errors() {
    let mut g = Graph::new("g");
    let x = g.input("x", Shape::new(&[2, 3], DType::F32));
    let bad = CalibrationMethod::Percentile {
        percentile: 101.0,
        num_bins: 8,
        symmetric: false,
    };
    assert!(CalibrationCollector::new(&g, bad)
        .unwrap_err()
        .to_string()
        .contains("101"));
    let zero_bins = CalibrationMethod::Entropy {
        num_bins: 0,
        num_quantized_bins: 4,
    };
    assert!(CalibrationCollector::new(&g, zero_bins).is_err());
    let mut c = CalibrationCollector::new(&g, CalibrationMethod::entropy()).unwrap();
    assert!(c.observe(x, &[1.0; 5], &[2, 3], None).is_err());
    assert!(c.observe(x, &[1.0; 6], &[2, 3], Some(2)).is_err());
    c.observe(x, &[1.0; 6], &[2, 3], Some(1)).unwrap();
    let err = c.observe(x, &[1.0; 6], &[2, 3], Some(0)).unwrap_err();
    assert!(err.to_string().contains("does not match"), "{err}");
    assert!(c
        .observe(
            x,
            &[1.0, f32::INFINITY, 0.0, 0.0, 0.0, 0.0],
            &[2, 3],
            Some(1)
        )
        .is_err());
}
