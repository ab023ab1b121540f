//! Codec parity: our dequantizers and quantizers against gguf-py (codecs.gguf)
//! and ggml's C reference (ggml_ref.gguf), plus error bounds where neither
//! has a reference quantizer.

mod common;
use common::{assert_bits_eq, assert_bytes_eq, open};
use rlx_gguf::{codecs, GgmlType};

fn input() -> Vec<f32> {
    open("codecs.gguf").dequantize_f32("input").unwrap()
}

fn types_listed(key: &str) -> Vec<GgmlType> {
    let r = open("codecs.gguf");
    let names = r.metadata().get_array(key).unwrap().as_strings().unwrap();
    names
        .iter()
        .map(|n| GgmlType::from_name(n).unwrap_or_else(|| panic!("unknown type {n}")))
        .collect()
}

#[test]
fn gguf_py_quantizers_are_matched_byte_for_byte() {
    let r = open("codecs.gguf");
    let x = input();
    let types = types_listed("fixture.quantized_by_gguf_py");
    assert_eq!(types.len(), 10, "{types:?}");
    for ty in types {
        let want = r.tensor_data(&format!("q.{ty}")).unwrap();
        let got = codecs::quantize(ty, &x).unwrap();
        assert_bytes_eq(&format!("quantize {ty}"), &got, want);
    }
}

#[test]
fn gguf_py_dequantization_of_its_own_quants_is_bit_exact() {
    let r = open("codecs.gguf");
    for ty in types_listed("fixture.quantized_by_gguf_py") {
        let got = r.dequantize_f32(&format!("q.{ty}")).unwrap();
        let want = r.dequantize_f32(&format!("dq.{ty}")).unwrap();
        assert_bits_eq(&format!("dequantize {ty}"), &got, &want);
    }
}

#[test]
fn gguf_py_dequantization_of_random_blocks_is_bit_exact() {
    let r = open("codecs.gguf");
    let types = types_listed("fixture.dequantized_by_gguf_py");
    assert_eq!(types.len(), 23, "{types:?}");
    for ty in types {
        let info = r.tensor_info(&format!("rand.{ty}")).unwrap();
        assert_eq!(info.ggml_type(), ty);
        assert_eq!(info.shape(), [4, 256]);
        let got = r.dequantize_f32(&format!("rand.{ty}")).unwrap();
        let want = r.dequantize_f32(&format!("rand_dq.{ty}")).unwrap();
        assert_bits_eq(&format!("dequantize random {ty}"), &got, &want);
    }
}

fn ggml_ref_types() -> Vec<GgmlType> {
    let r = open("ggml_ref.gguf");
    let names = r
        .metadata()
        .get_array("fixture.types")
        .unwrap()
        .as_strings()
        .unwrap();
    names
        .iter()
        .map(|n| GgmlType::from_name(n).unwrap())
        .collect()
}

#[test]
fn ggml_reference_quantizers_are_matched_byte_for_byte() {
    let r = open("ggml_ref.gguf");
    let x = input();
    let types = ggml_ref_types();
    assert_eq!(types.len(), 16, "{types:?}");
    for ty in types {
        let want = r.tensor_data(&format!("cq.{ty}")).unwrap();
        let got = codecs::quantize(ty, &x).unwrap();
        assert_bytes_eq(&format!("quantize {ty} vs ggml"), &got, want);
    }
}

#[test]
fn ggml_reference_dequantizers_are_matched_bit_for_bit() {
    let r = open("ggml_ref.gguf");
    let mut checked = 0;
    for ty in ggml_ref_types() {
        let Some(info) = r.tensor_info(&format!("cdq.{ty}")) else {
            continue;
        };
        let want = r.dequantize_f32(info.name()).unwrap();
        let bytes = r.tensor_data(&format!("cq.{ty}")).unwrap();
        let got = codecs::dequantize(ty, bytes, want.len()).unwrap();
        assert_bits_eq(&format!("dequantize {ty} vs ggml"), &got, &want);
        checked += 1;
    }
    assert!(
        checked >= 14,
        "only {checked} ggml dequantizers in the fixture"
    );
}

/// llama.cpp's tests/test-quantize-fns.cpp: data `0.1 + 2 cos(i + offset)`,
/// error `sqrt(sum (x - y)^2) / n` under a per-type threshold.
#[test]
fn round_trip_error_is_within_llama_cpp_thresholds() {
    let n = 32 * 128;
    let x: Vec<f32> = (0..n)
        .map(|i| 0.1 + 2.0 * ((i as f32) + 0.0).cos())
        .collect();
    for ty in GgmlType::ALL {
        if !codecs::can_quantize(ty) || !codecs::can_dequantize(ty) {
            continue;
        }
        let threshold = match ty {
            GgmlType::Q2_K => 0.0075,
            GgmlType::Q3_K => 0.0040,
            GgmlType::TQ1_0 | GgmlType::TQ2_0 | GgmlType::Q1_0 => 0.05,
            GgmlType::MXFP4 => 0.0030,
            _ => 0.002,
        };
        let q = codecs::quantize(ty, &x).unwrap();
        let y = codecs::dequantize(ty, &q, n).unwrap();
        let sum: f64 = x
            .iter()
            .zip(&y)
            .map(|(a, b)| f64::from(a - b).powi(2))
            .sum();
        let err = sum.sqrt() / n as f64;
        assert!(err < threshold, "{ty}: error {err} >= {threshold}");
    }
}

/// Every element of a symmetric-scale block is within half a step (plus the
/// f16 rounding of the scale) of its input; Q4_0 / Q5_0 have one more level
/// below zero than above, so the end opposite the block max may clip by up
/// to a whole step.
#[test]
fn legacy_quantizers_bound_every_element() {
    let x = input();
    for (ty, levels, steps) in [
        (GgmlType::Q4_0, 8.0f32, 1.0f32),
        (GgmlType::Q5_0, 16.0, 1.0),
        (GgmlType::Q8_0, 127.0, 0.5),
        (GgmlType::Q8_1, 127.0, 0.5),
    ] {
        let q = codecs::quantize(ty, &x).unwrap();
        let y = codecs::dequantize(ty, &q, x.len()).unwrap();
        for (b, (xs, ys)) in x.chunks(32).zip(y.chunks(32)).enumerate() {
            let amax = xs.iter().fold(0f32, |a, v| a.max(v.abs()));
            let step = amax / levels;
            // The scale is stored as f16: its rounding error scales with the level.
            let d_err = (rlx_ir::f16::from_f32(step).to_f32() - step).abs() * (levels + 1.0);
            for (i, (a, c)) in xs.iter().zip(ys).enumerate() {
                let bound = step * steps + d_err + amax * 1e-5;
                assert!(
                    (a - c).abs() <= bound,
                    "{ty} block {b} elem {i}: {a} -> {c}, bound {bound}"
                );
            }
        }
    }
}

#[test]
fn quantize_then_dequantize_is_stable_for_exact_values() {
    // Values on a Q8_0 grid survive a round trip unchanged.
    let d = 0.125f32;
    let x: Vec<f32> = (0..64)
        .map(|i| ((i % 64) as f32 - 32.0).clamp(-127.0, 127.0) * d)
        .collect();
    let mut xs = x.clone();
    xs[0] = -127.0 * d; // set the block max so d is exactly 0.125
    xs[32] = 127.0 * d;
    let q = codecs::quantize(GgmlType::Q8_0, &xs).unwrap();
    let y = codecs::dequantize(GgmlType::Q8_0, &q, 64).unwrap();
    assert_bits_eq("Q8_0 exact grid", &y, &xs);
}

#[test]
fn plain_float_codecs_round_trip() {
    let x = input();
    for ty in [GgmlType::F32, GgmlType::F64] {
        let q = codecs::quantize(ty, &x).unwrap();
        let y = codecs::dequantize(ty, &q, x.len()).unwrap();
        assert_bits_eq(&format!("{ty}"), &y, &x);
    }
}
