//! Every kernel against the numpy re-implementation of TFLite's integer
//! reference kernels (`tools/gen_cortexm_fixtures.py`).
use rlx_cortexm::fixed::multiply_by_quantized_multiplier;
use rlx_cortexm::{
    argmax, avgpool, conv2d, dense, depthwise_conv2d, maxpool, relu, softmax, ChannelQuant,
    Conv2dGeometry, KernelError, QParams, SoftmaxParams,
};
use serde_json::Value;

fn fixtures() -> Value {
    let text = include_str!("fixtures/kernels.json");
    serde_json::from_str(text).expect("kernels.json parses")
}

fn i64s(v: &Value) -> Vec<i64> {
    v.as_array()
        .expect("array")
        .iter()
        .map(|x| x.as_i64().expect("integer"))
        .collect()
}
fn i8s(v: &Value) -> Vec<i8> {
    i64s(v).into_iter().map(|x| x as i8).collect()
}
fn i32s(v: &Value) -> Vec<i32> {
    i64s(v).into_iter().map(|x| x as i32).collect()
}
fn usz(v: &Value) -> usize {
    v.as_u64().expect("size") as usize
}

fn qparams(c: &Value) -> QParams {
    let act = i64s(&c["activation"]);
    QParams {
        input_zero_point: c["input_zero_point"].as_i64().unwrap() as i32,
        output_zero_point: c["output_zero_point"].as_i64().unwrap() as i32,
        activation_min: act[0] as i8,
        activation_max: act[1] as i8,
    }
}

fn geometry(g: &Value) -> Conv2dGeometry {
    let pads: Vec<usize> = g["pads"].as_array().unwrap().iter().map(usz).collect();
    Conv2dGeometry {
        in_h: usz(&g["in_h"]),
        in_w: usz(&g["in_w"]),
        in_c: usz(&g["in_c"]),
        out_c: usz(&g["out_c"]),
        k_h: usz(&g["k_h"]),
        k_w: usz(&g["k_w"]),
        stride_h: usz(&g["stride_h"]),
        stride_w: usz(&g["stride_w"]),
        pad_top: pads[0],
        pad_bottom: pads[1],
        pad_left: pads[2],
        pad_right: pads[3],
    }
}

#[test]
fn requantization_matches_tflite() {
    let f = fixtures();
    let cases = f["mbqm"].as_array().unwrap();
    assert!(cases.len() > 500);
    for c in cases {
        let v = i64s(c);
        let got = multiply_by_quantized_multiplier(v[0] as i32, v[1] as i32, v[2] as i32);
        assert_eq!(
            got as i64, v[3],
            "x {} multiplier {} shift {}",
            v[0], v[1], v[2]
        );
    }
}

#[test]
fn dense_matches_numpy() {
    for c in fixtures()["dense"].as_array().unwrap() {
        let (mult, shift) = (i32s(&c["multiplier"]), i32s(&c["shift"]));
        let expected = i8s(&c["expected"]);
        let mut out = vec![0i8; expected.len()];
        dense(
            &i8s(&c["input"]),
            &i8s(&c["weights"]),
            &i32s(&c["bias"]),
            usz(&c["batch"]),
            usz(&c["depth"]),
            usz(&c["units"]),
            &qparams(c),
            &ChannelQuant {
                multiplier: &mult,
                shift: &shift,
            },
            &mut out,
        )
        .unwrap();
        assert_eq!(out, expected, "dense depth {}", c["depth"]);
    }
}

#[test]
fn conv2d_matches_numpy_at_every_padding_edge() {
    let f = fixtures();
    let cases = f["conv2d"].as_array().unwrap();
    let mut saturated = false;
    for c in cases {
        let g = geometry(&c["geometry"]);
        let (mult, shift) = (i32s(&c["multiplier"]), i32s(&c["shift"]));
        let expected = i8s(&c["expected"]);
        let mut out = vec![0i8; expected.len()];
        conv2d(
            &i8s(&c["input"]),
            &i8s(&c["weights"]),
            &i32s(&c["bias"]),
            usz(&c["batch"]),
            &g,
            &qparams(c),
            &ChannelQuant {
                multiplier: &mult,
                shift: &shift,
            },
            &mut out,
        )
        .unwrap();
        assert_eq!(out, expected, "conv2d {g:?}");
        saturated |= expected.contains(&127) && expected.contains(&-128);
    }
    assert!(saturated, "the fixtures exercise saturation");
}

#[test]
fn depthwise_conv2d_matches_numpy() {
    for c in fixtures()["depthwise"].as_array().unwrap() {
        let g = geometry(&c["geometry"]);
        let (mult, shift) = (i32s(&c["multiplier"]), i32s(&c["shift"]));
        let expected = i8s(&c["expected"]);
        let mut out = vec![0i8; expected.len()];
        depthwise_conv2d(
            &i8s(&c["input"]),
            &i8s(&c["weights"]),
            &i32s(&c["bias"]),
            usz(&c["batch"]),
            &g,
            usz(&c["depth_multiplier"]),
            &qparams(c),
            &ChannelQuant {
                multiplier: &mult,
                shift: &shift,
            },
            &mut out,
        )
        .unwrap();
        assert_eq!(out, expected, "depthwise {g:?}");
    }
}

#[test]
fn pools_match_numpy() {
    for c in fixtures()["pool"].as_array().unwrap() {
        let g = geometry(&c["geometry"]);
        let act = i64s(&c["activation"]);
        let expected = i8s(&c["expected"]);
        let mut out = vec![0i8; expected.len()];
        let run = if c["kind"] == "max" { maxpool } else { avgpool };
        run(
            &i8s(&c["input"]),
            usz(&c["batch"]),
            &g,
            act[0] as i8,
            act[1] as i8,
            &mut out,
        )
        .unwrap();
        assert_eq!(out, expected, "{} pool {g:?}", c["kind"]);
    }
}

#[test]
fn softmax_matches_tflite_fixed_point() {
    for c in fixtures()["softmax"].as_array().unwrap() {
        let params = SoftmaxParams {
            input_multiplier: c["input_multiplier"].as_i64().unwrap() as i32,
            input_left_shift: c["input_left_shift"].as_i64().unwrap() as i32,
            diff_min: c["diff_min"].as_i64().unwrap() as i32,
        };
        let expected = i8s(&c["expected"]);
        let mut out = vec![0i8; expected.len()];
        softmax(&i8s(&c["input"]), usz(&c["classes"]), &params, &mut out).unwrap();
        assert_eq!(out, expected, "softmax classes {}", c["classes"]);
    }
}

#[test]
fn relu_and_argmax_match_numpy() {
    let f = fixtures();
    let r = &f["relu"];
    let mut data = i8s(&r["input"]);
    relu(&mut data, r["zero_point"].as_i64().unwrap() as i8);
    assert_eq!(data, i8s(&r["expected"]));
    let a = &f["argmax"];
    let expected: Vec<usize> = i64s(&a["expected"])
        .into_iter()
        .map(|v| v as usize)
        .collect();
    let mut out = vec![0usize; expected.len()];
    argmax(&i8s(&a["input"]), usz(&a["classes"]), &mut out).unwrap();
    assert_eq!(out, expected);
}

fn small_geometry() -> Conv2dGeometry {
    Conv2dGeometry {
        in_h: 4,
        in_w: 4,
        in_c: 2,
        out_c: 3,
        k_h: 3,
        k_w: 3,
        stride_h: 1,
        stride_w: 1,
        pad_top: 1,
        pad_bottom: 1,
        pad_left: 1,
        pad_right: 1,
    }
}

const Q: QParams = QParams {
    input_zero_point: 0,
    output_zero_point: 0,
    activation_min: -128,
    activation_max: 127,
};

#[test]
fn bad_arguments_are_named_errors() {
    let g = small_geometry();
    let (m, s) = ([1 << 30; 3], [-3; 3]);
    let cq = ChannelQuant {
        multiplier: &m,
        shift: &s,
    };
    let mut out = [0i8; 48];
    let err = conv2d(&[0; 31], &[0; 54], &[0; 3], 1, &g, &Q, &cq, &mut out).unwrap_err();
    assert_eq!(
        err,
        KernelError::Length {
            what: "input",
            expected: 32,
            actual: 31
        }
    );
    let err = conv2d(&[0; 32], &[0; 54], &[0; 2], 1, &g, &Q, &cq, &mut out).unwrap_err();
    assert!(
        matches!(err, KernelError::Length { what: "bias", .. }),
        "{err}"
    );
    let bad_shift = ChannelQuant {
        multiplier: &m,
        shift: &[31, 0, 0],
    };
    let err = conv2d(&[0; 32], &[0; 54], &[0; 3], 1, &g, &Q, &bad_shift, &mut out).unwrap_err();
    assert!(matches!(err, KernelError::QParam(_)), "{err}");
    let zero_stride = Conv2dGeometry { stride_w: 0, ..g };
    let err = conv2d(
        &[0; 32],
        &[0; 54],
        &[0; 3],
        1,
        &zero_stride,
        &Q,
        &cq,
        &mut out,
    )
    .unwrap_err();
    assert!(matches!(err, KernelError::Geometry(_)), "{err}");
    let bad_zp = QParams {
        input_zero_point: 200,
        ..Q
    };
    let err = dense(
        &[0; 4],
        &[0; 12],
        &[0; 3],
        1,
        4,
        3,
        &bad_zp,
        &cq,
        &mut [0; 3],
    )
    .unwrap_err();
    assert!(matches!(err, KernelError::QParam(_)), "{err}");
    let err = dense(
        &[0; 4],
        &[0; 12],
        &[i32::MAX, 0, 0],
        1,
        4,
        3,
        &Q,
        &cq,
        &mut [0; 3],
    );
    assert!(matches!(err, Err(KernelError::QParam(_))), "{err:?}");
    assert!(softmax(
        &[0; 7],
        3,
        &SoftmaxParams {
            input_multiplier: 1 << 30,
            input_left_shift: 20,
            diff_min: -100
        },
        &mut [0; 7]
    )
    .is_err());
}

#[test]
fn a_depth_that_can_overflow_the_accumulator_is_refused() {
    // 255 * 128 * depth > 2^30 from depth 32_898 on.
    let depth = 40_000;
    let (m, s) = ([1 << 30], [0]);
    let cq = ChannelQuant {
        multiplier: &m,
        shift: &s,
    };
    let err = dense(
        &vec![0; depth],
        &vec![0; depth],
        &[0],
        1,
        depth,
        1,
        &Q,
        &cq,
        &mut [0],
    )
    .unwrap_err();
    assert_eq!(err, KernelError::AccumulatorOverflow { depth });
    // Just below the limit runs and sums exactly: all -128 inputs with
    // zero point 127 and -128 weights give 255 * 128 per product.
    let depth = 32_000;
    let q = QParams {
        input_zero_point: 127,
        ..Q
    };
    let (m, s) = ([i32::MAX], [-31]);
    let cq = ChannelQuant {
        multiplier: &m,
        shift: &s,
    };
    let mut out = [0i8];
    dense(
        &vec![-128; depth],
        &vec![-128; depth],
        &[0],
        1,
        depth,
        1,
        &q,
        &cq,
        &mut out,
    )
    .unwrap();
    // acc = 32000 * 32640 = 1_044_480_000; * (2^31 - 1) / 2^31 / 2^31 rounds to 0.
    assert_eq!(out[0], 0);
}
