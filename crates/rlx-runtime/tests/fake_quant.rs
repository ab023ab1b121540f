//! Post-training int8 fake-quant: calibration + Q/DQ insertion equal a numpy
//! reference (`tools/gen_fake_quant_fixtures.py`), and a quantized MLP stays
//! within the expected error of the f32 one.

use rlx_compile::{insert_fake_quant, CompileError, QuantConfig, QuantMode};
use rlx_driver::Device;
use rlx_ir::{DType, Graph, GraphExt, Shape};
use rlx_runtime::{collect_calibration, CompileOptions, Session};
use serde_json::Value;

fn floats(v: &Value) -> Vec<f32> {
    v["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d.as_f64().unwrap() as f32)
        .collect()
}

fn dims(v: &Value) -> Vec<usize> {
    v["shape"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d.as_u64().unwrap() as usize)
        .collect()
}

fn cases() -> Vec<Value> {
    let root: Value = serde_json::from_str(include_str!("fixtures/fake_quant.json")).unwrap();
    root["cases"].as_array().unwrap().clone()
}

fn mode(v: &Value) -> QuantMode {
    match v.as_str().unwrap() {
        "symmetric" => QuantMode::Symmetric,
        _ => QuantMode::Asymmetric,
    }
}

fn config(c: &Value) -> QuantConfig {
    QuantConfig {
        activations: mode(&c["activations"]),
        weights: mode(&c["weights"]),
        weights_per_channel: c["per_channel"].as_bool().unwrap(),
    }
}

fn max_abs_diff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max)
}

#[test]
fn single_matmul_fake_quant_matches_numpy_in_every_mode() {
    let s = Session::new(Device::Cpu);
    for c in cases()
        .iter()
        .filter(|c| c["name"].as_str().unwrap().starts_with("matmul"))
    {
        let mut g = Graph::new("mm");
        let x = g.input("x", Shape::new(&dims(&c["x"]), DType::F32));
        let w = g.param("w", Shape::new(&dims(&c["w"]), DType::F32));
        let y = g.mm(x, w);
        g.set_outputs(vec![y]);
        let (xv, wv) = (floats(&c["x"]), floats(&c["w"]));
        let record = collect_calibration(&s, &g, &[("w", &wv)], &[vec![("x", &xv)]]).unwrap();
        let q = insert_fake_quant(&g, &record, &config(c)).unwrap();
        let mut compiled = s.compile_with(q, &CompileOptions::default());
        compiled.set_param("w", &wv);
        let got = compiled.run(&[("x", &xv)]).remove(0);
        let want = floats(&c["want"]);
        let d = max_abs_diff(&got, &want);
        assert!(d <= 1e-5, "{}: max diff {d}", c["name"]);
        // Quantization changed the result (the reference is not the f32 product).
        let mut plain = s.compile_with(g, &CompileOptions::default());
        plain.set_param("w", &wv);
        let f32_out = plain.run(&[("x", &xv)]).remove(0);
        assert!(max_abs_diff(&f32_out, &want) > 1e-4, "{}", c["name"]);
    }
}

fn conv_graph(w_as_input: bool) -> Graph {
    let mut g = Graph::new("conv");
    let x = g.input("x", Shape::new(&[1, 2, 5, 5], DType::F32));
    let ws = Shape::new(&[3, 2, 3, 3], DType::F32);
    let w = if w_as_input {
        g.input("w", ws)
    } else {
        g.param("w", ws)
    };
    let y = GraphExt::conv2d(&mut g, x, w, None, [1, 1], [1, 1]);
    g.set_outputs(vec![y]);
    g
}

#[test]
fn conv_weights_quantize_per_output_channel_as_numpy_does() {
    let c = cases().into_iter().find(|c| c["name"] == "conv").unwrap();
    let s = Session::new(Device::Cpu);
    let (x, w) = (floats(&c["x"]), floats(&c["w"]));
    // The conv run on numpy's fake-quantized tensors.
    let (x_fq, w_fq) = (floats(&c["x_fq"]), floats(&c["w_fq"]));
    let want = s
        .compile_with(conv_graph(true), &CompileOptions::default())
        .run(&[("x", &x_fq), ("w", &w_fq)])
        .remove(0);
    // Weight as a param (stats from its value) and as an input (stats from the sample).
    for w_as_input in [false, true] {
        let g = conv_graph(w_as_input);
        let (params, sample): (Vec<(&str, &[f32])>, _) = if w_as_input {
            (vec![], vec![("x", x.as_slice()), ("w", w.as_slice())])
        } else {
            (vec![("w", w.as_slice())], vec![("x", x.as_slice())])
        };
        let record = collect_calibration(&s, &g, &params, std::slice::from_ref(&sample)).unwrap();
        let q = insert_fake_quant(&g, &record, &config(&c)).unwrap();
        let mut compiled = s.compile_with(q, &CompileOptions::default());
        for (n, v) in &params {
            compiled.set_param(n, v);
        }
        let got = compiled.run(&sample).remove(0);
        let d = max_abs_diff(&got, &want);
        assert!(d <= 1e-5, "w as input {w_as_input}: max diff {d}");
    }
}

fn mlp_graph() -> Graph {
    let mut g = Graph::new("mlp");
    let x = g.input("x", Shape::new(&[8, 16], DType::F32));
    let w1 = g.param("w1", Shape::new(&[16, 32], DType::F32));
    let b1 = g.param("b1", Shape::new(&[32], DType::F32));
    let w2 = g.param("w2", Shape::new(&[32, 8], DType::F32));
    let b2 = g.param("b2", Shape::new(&[8], DType::F32));
    let h = g.mm(x, w1);
    let h = g.add(h, b1);
    let h = g.relu(h);
    let y = g.mm(h, w2);
    let y = g.add(y, b2);
    g.set_outputs(vec![y]);
    g
}

#[test]
fn calibrated_mlp_matches_numpy_and_stays_near_f32() {
    let c = cases().into_iter().find(|c| c["name"] == "mlp").unwrap();
    let s = Session::new(Device::Cpu);
    let g = mlp_graph();
    let names = ["w1", "b1", "w2", "b2"];
    let values: Vec<Vec<f32>> = names.iter().map(|n| floats(&c["params"][*n])).collect();
    let params: Vec<(&str, &[f32])> = names
        .iter()
        .zip(&values)
        .map(|(n, v)| (*n, v.as_slice()))
        .collect();
    let samples: Vec<Vec<f32>> = c["samples"]
        .as_array()
        .unwrap()
        .iter()
        .map(floats)
        .collect();
    let runs: Vec<Vec<(&str, &[f32])>> =
        samples.iter().map(|v| vec![("x", v.as_slice())]).collect();
    let record = collect_calibration(&s, &g, &params, &runs).unwrap();
    assert_eq!(record.runs, 4);
    // x, w1, the relu output, w2.
    assert_eq!(record.stats.len(), 4);
    let q = insert_fake_quant(&g, &record, &config(&c)).unwrap();
    let mut compiled = s.compile_with(q, &CompileOptions::default());
    for (n, v) in &params {
        compiled.set_param(n, v);
    }
    let x = floats(&c["x"]);
    let got = compiled.run(&[("x", &x)]).remove(0);
    let want = floats(&c["want"]);
    // A float32 rounding of the hidden layer may land one quantization step
    // of it away: allow that step times the largest |w2|.
    let w2_max = values[2].iter().map(|v| v.abs()).fold(0.0, f32::max);
    let step = c["h_scale"].as_f64().unwrap() as f32;
    let d = max_abs_diff(&got, &want);
    assert!(d <= 1.01 * step * w2_max + 1e-5, "vs numpy fake-quant: {d}");
    // int8 error budget against the f32 network: 3% of the output range.
    let want_f32 = floats(&c["want_f32"]);
    let range = want_f32.iter().map(|v| v.abs()).fold(0.0, f32::max);
    let e = max_abs_diff(&got, &want_f32);
    assert!(e <= 0.03 * range && e > 0.0, "vs f32: {e} (range {range})");
}

#[test]
fn missing_calibration_is_a_typed_error_naming_the_node() {
    let g = mlp_graph();
    let empty = rlx_compile::CalibrationRecord::new(&g);
    let e = insert_fake_quant(&g, &empty, &QuantConfig::default()).unwrap_err();
    assert!(
        matches!(&e, CompileError::Calibration { reason } if reason.contains("input \"x\"") || reason.contains("\"x\"")),
        "{e}"
    );
}
