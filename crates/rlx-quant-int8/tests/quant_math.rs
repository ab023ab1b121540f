//! The multiplier / shift and softmax-parameter computations against the
//! numpy port of TFLite's (`tools/gen_cortexm_fixtures.py`), and the
//! wide-integer requantization against the kernels' int32 one.
use rlx_quant_int8::math::{quantize_multiplier, requantize_reference, softmax_params};
use serde_json::Value;

fn fixtures() -> Value {
    serde_json::from_str(include_str!("fixtures/quant_math.json")).expect("quant_math.json parses")
}

#[test]
fn quantize_multiplier_matches_tflite() {
    let f = fixtures();
    let cases = f["quantize_multiplier"].as_array().unwrap();
    assert!(cases.len() > 60);
    for c in cases {
        let real = c[0].as_f64().unwrap();
        let expected = (c[1].as_i64().unwrap() as i32, c[2].as_i64().unwrap() as i32);
        assert_eq!(quantize_multiplier(real), expected, "real {real:e}");
    }
}

#[test]
fn softmax_params_match_tflite() {
    for c in fixtures()["softmax_params"].as_array().unwrap() {
        let (scale, beta) = (c[0].as_f64().unwrap(), c[1].as_f64().unwrap());
        let p = softmax_params(beta, scale);
        let got = [
            p.input_multiplier as i64,
            p.input_left_shift as i64,
            p.diff_min as i64,
        ];
        let expected = [
            c[2].as_i64().unwrap(),
            c[3].as_i64().unwrap(),
            c[4].as_i64().unwrap(),
        ];
        assert_eq!(got, expected, "scale {scale} beta {beta}");
    }
}

#[test]
fn wide_requantization_equals_the_int32_kernel_path() {
    // The kernel path is itself checked against numpy in rlx-cortexm; here
    // the reference interpreter's i128 formulation is held to it on a grid
    // with every rounding tie the shifts can produce.
    let xs = [
        i32::MIN,
        i32::MIN + 1,
        -65536,
        -3,
        -2,
        -1,
        0,
        1,
        2,
        3,
        65535,
        i32::MAX,
    ];
    let ms = [i32::MIN, -(1 << 30), 0, 1, 1 << 30, (1 << 30) + 1, i32::MAX];
    for shift in -31..=30 {
        for &x in &xs {
            for &m in &ms {
                assert_eq!(
                    requantize_reference(x, m, shift),
                    rlx_cortexm::fixed::multiply_by_quantized_multiplier(x, m, shift),
                    "x {x} m {m} shift {shift}"
                );
            }
        }
    }
}
