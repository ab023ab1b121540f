//! `collect_calibration_with`: activation ranges by ONNX Runtime's
//! calibration methods (fixtures of rlx-compile, made with ORT's own
//! `HistogramCollector` by `tools/gen_calibration_fixtures.py`), through a
//! real compiled graph, per tensor and per channel; the per-channel
//! activation scales reach `insert_fake_quant`.

use rlx_compile::{
    insert_fake_quant, CalibrationMethod, CalibrationOptions, QuantConfig, QuantMode,
};
use rlx_driver::Device;
use rlx_ir::{DType, Graph, GraphExt, Op, Shape};
use rlx_runtime::{collect_calibration_with, CompileOptions, Session};
use serde_json::Value;

#[path = "../../rlx-compile/tests/common/calibration_fixture.rs"]
mod calibration_fixture;
use calibration_fixture::{ranges, tensor};

/// The batches, their dims and the expected ranges of fixture tensor `name`.
fn fixture(name: &str) -> (Vec<Vec<f32>>, Vec<usize>, Value) {
    let t = tensor(name);
    let dims = t.batches[0].1.clone();
    (
        t.batches.into_iter().map(|b| b.0).collect(),
        dims,
        t.methods,
    )
}

/// `x @ w` with `x` of `dims` and a `[last, 3]` weight.
fn matmul_graph(dims: &[usize]) -> (Graph, Vec<f32>) {
    let mut g = Graph::new("calib");
    let x = g.input("x", Shape::new(dims, DType::F32));
    let k = *dims.last().unwrap();
    let w = g.param("w", Shape::new(&[k, 3], DType::F32));
    let y = g.mm(x, w);
    g.set_outputs(vec![y]);
    let weights = (0..3 * k).map(|i| (i as f32 * 0.61).cos() * 0.2).collect();
    (g, weights)
}

#[test]
fn entropy_ranges_through_a_compiled_graph_equal_onnxruntime() {
    let (batches, dims, methods) = fixture("normal_outliers");
    let (g, w) = matmul_graph(&dims);
    let session = Session::new(Device::Cpu);
    let samples: Vec<Vec<(&str, &[f32])>> = batches.iter().map(|b| vec![("x", &b[..])]).collect();
    for (key, method) in [
        (
            "entropy",
            CalibrationMethod::Entropy {
                num_bins: 2048,
                num_quantized_bins: 128,
            },
        ),
        ("entropy_ort_default", CalibrationMethod::entropy()),
        ("percentile_99_99", CalibrationMethod::percentile(99.99)),
        ("minmax", CalibrationMethod::MinMax),
    ] {
        let opts = CalibrationOptions {
            method,
            activation_axis: None,
        };
        let record = collect_calibration_with(&session, &g, &[("w", &w)], &samples, &opts).unwrap();
        let x = g.find_input("x").unwrap();
        let s = record.get(x).unwrap();
        assert_eq!(
            (s.min.clone(), s.max.clone()),
            ranges(&methods[key]),
            "{key}"
        );
        assert_eq!(record.runs, 3);
        // The weight keeps its per-output-channel min / max.
        let wid = g.find_param("w").unwrap();
        assert_eq!(record.get(wid).unwrap().min.len(), 3);
    }
}

#[test]
fn per_channel_activation_ranges_reach_fake_quant() {
    let (batches, dims, methods) = fixture("per_channel");
    let (g, w) = matmul_graph(&dims);
    let session = Session::new(Device::Cpu);
    let samples: Vec<Vec<(&str, &[f32])>> = batches.iter().map(|b| vec![("x", &b[..])]).collect();
    let opts = CalibrationOptions {
        method: CalibrationMethod::percentile(99.99),
        activation_axis: Some(1),
    };
    let record = collect_calibration_with(&session, &g, &[("w", &w)], &samples, &opts).unwrap();
    let x = g.find_input("x").unwrap();
    let s = record.get(x).unwrap();
    assert_eq!(s.axis, Some(1));
    assert_eq!(
        (s.min.clone(), s.max.clone()),
        ranges(&methods["percentile_99_99"])
    );
    let cfg = QuantConfig {
        activations: QuantMode::Asymmetric,
        ..QuantConfig::default()
    };
    let q = insert_fake_quant(&g, &record, &cfg).unwrap();
    // The activation scale constant is [1, 4, 1] and holds ORT's scales.
    let want: Vec<f32> = methods["percentile_99_99"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["qdq"]["asymmetric"]["scale"].as_f64().unwrap() as f32)
        .collect();
    let scales = q
        .nodes()
        .iter()
        .find_map(|n| match &n.op {
            Op::Constant { bytes } if n.shape.static_dims() == Some(vec![1, 4, 1]) => Some(
                bytes
                    .chunks_exact(4)
                    .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
                    .collect::<Vec<_>>(),
            ),
            _ => None,
        })
        .expect("a per-channel scale constant");
    for (s, w) in scales.iter().zip(&want) {
        assert!((s - w).abs() <= f32::EPSILON * w, "{scales:?} vs {want:?}");
    }
    // The quantized graph runs and stays within the quantization error.
    let run = |g: &Graph| {
        let mut c = Session::new(Device::Cpu)
            .try_compile_with(g.clone(), &CompileOptions::default())
            .unwrap();
        c.try_set_param("w", &w).unwrap();
        c.try_run(&[("x", &batches[0])]).unwrap().remove(0)
    };
    let (exact, fq) = (run(&g), run(&q));
    let err = exact
        .iter()
        .zip(&fq)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0f32, f32::max);
    assert!(err > 0.0 && err < 0.05, "max error {err}");
}

#[test]
fn an_activation_axis_out_of_range_is_an_error() {
    let (g, w) = matmul_graph(&[2, 5]);
    let x = [0.5f32; 10];
    let opts = CalibrationOptions {
        method: CalibrationMethod::MinMax,
        activation_axis: Some(2),
    };
    let err = collect_calibration_with(
        &Session::new(Device::Cpu),
        &g,
        &[("w", &w)],
        &[vec![("x", &x[..])]],
        &opts,
    )
    .unwrap_err();
    assert!(err.to_string().contains("activation axis 2"), "{err}");
}
