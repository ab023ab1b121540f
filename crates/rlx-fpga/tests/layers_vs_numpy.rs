//! One-layer designs against the numpy TFLite-semantics fixtures of
//! `tools/gen_cortexm_fixtures.py` (shared with rlx-cortexm): dense and
//! conv2d with saturation, negative zero points, odd channel counts and
//! padding at every edge; max pool; relu; arg-max ties. Each case is
//! exported, simulated with iverilog and compared value for value.

mod common;

use rlx_fpga::sim::{simulate_iverilog, verilator_lint};
use rlx_fpga::{emit_with_config, FpgaExportConfig, QuantizedModel};
use rlx_quant_int8::{Geometry, QLayer, QWeights, TensorQuant};
use serde_json::Value;

const FIXTURES: &str = include_str!("../../rlx-cortexm/tests/fixtures/kernels.json");

fn ints<T: TryFrom<i64>>(v: &Value) -> Vec<T> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| T::try_from(x.as_i64().unwrap()).ok().unwrap())
        .collect()
}

fn int(v: &Value) -> i32 {
    v.as_i64().unwrap() as i32
}

fn quant(zp: i32) -> TensorQuant {
    TensorQuant {
        scale: 1.0,
        zero_point: zp,
    }
}

fn weights(c: &Value, channels: usize) -> QWeights {
    let act: Vec<i8> = ints(&c["activation"]);
    QWeights {
        weights: ints(&c["weights"]),
        bias: ints(&c["bias"]),
        weight_scales: vec![1.0; channels],
        multiplier: ints(&c["multiplier"]),
        shift: ints(&c["shift"]),
        input: quant(int(&c["input_zero_point"])),
        output: quant(int(&c["output_zero_point"])),
        activation: (act[0], act[1]),
    }
}

fn geometry(c: &Value) -> Geometry {
    serde_json::from_value(c["geometry"].clone()).unwrap()
}

fn model(name: &str, input_shape: [usize; 3], layers: Vec<QLayer>) -> QuantizedModel {
    QuantizedModel {
        name: name.into(),
        input_shape,
        input: quant(0),
        layers,
        argmax: false,
    }
}

/// Exports `model` with `input` split into images, simulates it and
/// returns the concatenated outputs and classes.
fn simulate(name: &str, model: &QuantizedModel, input: &[i8]) -> (Vec<i8>, Vec<usize>) {
    let n = model.input_len();
    let config = FpgaExportConfig {
        testbench_images: input.chunks(n).map(<[i8]>::to_vec).collect(),
        ..Default::default()
    };
    let arts = emit_with_config(model, &config, common::scratch(name)).unwrap();
    verilator_lint(&arts).unwrap();
    let sim = simulate_iverilog(&arts).unwrap();
    for r in &sim {
        assert_eq!(r.cycles, arts.latency_cycles, "{name}: cycles");
    }
    let _ = std::fs::remove_dir_all(&arts.dir);
    (
        sim.iter().flat_map(|r| r.logits.clone()).collect(),
        sim.iter().map(|r| r.class).collect(),
    )
}

fn fixtures() -> Value {
    serde_json::from_str(FIXTURES).unwrap()
}

#[test]
fn dense_matches_numpy() {
    if !common::hdl_tools() {
        return;
    }
    for (i, c) in fixtures()["dense"].as_array().unwrap().iter().enumerate() {
        let (depth, units) = (int(&c["depth"]) as usize, int(&c["units"]) as usize);
        let m = model(
            "dense",
            [1, 1, depth],
            vec![QLayer::Dense {
                depth,
                units,
                params: weights(c, units),
            }],
        );
        let (got, _) = simulate(&format!("dense{i}"), &m, &ints::<i8>(&c["input"]));
        assert_eq!(got, ints::<i8>(&c["expected"]), "dense case {i}");
    }
}

#[test]
fn conv2d_matches_numpy() {
    if !common::hdl_tools() {
        return;
    }
    for (i, c) in fixtures()["conv2d"].as_array().unwrap().iter().enumerate() {
        let g = geometry(c);
        let m = model(
            "conv",
            [g.in_h, g.in_w, g.in_c],
            vec![QLayer::Conv2d {
                geometry: g,
                params: weights(c, g.out_c),
            }],
        );
        let (got, _) = simulate(&format!("conv{i}"), &m, &ints::<i8>(&c["input"]));
        assert_eq!(got, ints::<i8>(&c["expected"]), "conv2d case {i}");
    }
}

#[test]
fn maxpool_matches_numpy() {
    if !common::hdl_tools() {
        return;
    }
    let mut checked = 0;
    for (i, c) in fixtures()["pool"].as_array().unwrap().iter().enumerate() {
        let act: Vec<i32> = ints(&c["activation"]);
        // The exported max pool keeps the int8 range; a lower clamp is a
        // ReLU after it (an upper clamp has no layer to express it).
        if c["kind"] != "max" || act[1] != 127 {
            continue;
        }
        let g = geometry(c);
        let mut layers = vec![QLayer::MaxPool {
            geometry: g,
            quant: quant(0),
        }];
        if act[0] > -128 {
            layers.push(QLayer::Relu {
                len: g.output_len(),
                quant: quant(act[0]),
            });
        }
        let m = model("pool", [g.in_h, g.in_w, g.in_c], layers);
        let (got, _) = simulate(&format!("pool{i}"), &m, &ints::<i8>(&c["input"]));
        assert_eq!(got, ints::<i8>(&c["expected"]), "pool case {i}");
        checked += 1;
    }
    assert_eq!(checked, 2, "max-pool cases with padding and a lower clamp");
}

#[test]
fn relu_and_argmax_match_numpy() {
    if !common::hdl_tools() {
        return;
    }
    let f = fixtures();
    let relu = &f["relu"];
    let x: Vec<i8> = ints(&relu["input"]);
    let m = model(
        "relu",
        [1, 1, x.len()],
        vec![QLayer::Relu {
            len: x.len(),
            quant: quant(int(&relu["zero_point"])),
        }],
    );
    let (got, _) = simulate("relu", &m, &x);
    assert_eq!(got, ints::<i8>(&relu["expected"]));

    // Arg-max rows (with a tie: the first index wins) through an identity ReLU.
    let am = &f["argmax"];
    let classes = int(&am["classes"]) as usize;
    let m = model(
        "argmax",
        [1, 1, classes],
        vec![QLayer::Relu {
            len: classes,
            quant: quant(-128),
        }],
    );
    let (_, classes_got) = simulate("argmax", &m, &ints::<i8>(&am["input"]));
    assert_eq!(classes_got, ints::<usize>(&am["expected"]));
}
