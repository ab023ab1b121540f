//! Bad input gets a typed error naming the tensor / type / reason, never a
//! panic; the report's table prints the figures it holds.

use rlx_gguf::{GgmlType, GgufReader};
use rlx_gguf_convert::{ConvertError, Converter};
use rlx_ir::{DType, HostTensor};

fn tensor(name: &str, values: Vec<f32>, dims: &[usize]) -> (String, HostTensor) {
    (
        name.to_string(),
        HostTensor::from_vec(values, dims).unwrap(),
    )
}

fn ramp(n: usize) -> Vec<f32> {
    (0..n).map(|i| (i as f32 * 0.3).sin()).collect()
}

#[test]
fn unencodable_types_are_refused_by_name_before_anything_is_converted() {
    let t = vec![tensor("w", ramp(256), &[1, 256])];
    let e = Converter::new(GgmlType::IQ2_XXS)
        .convert_tensors(t.clone())
        .unwrap_err();
    assert!(
        matches!(&e, ConvertError::CannotQuantize { ty: GgmlType::IQ2_XXS, context, .. } if context == "default type"),
        "{e}"
    );
    let e = Converter::new(GgmlType::Q8_0)
        .override_name("w", GgmlType::I32)
        .convert_tensors(t.clone())
        .unwrap_err();
    assert!(
        e.to_string().contains("override 'w'") && e.to_string().contains("I32"),
        "{e}"
    );
    let e = Converter::new(GgmlType::Q8_0)
        .fallback_type(GgmlType::Q4_0)
        .convert_tensors(t.clone())
        .unwrap_err();
    assert!(e.to_string().starts_with("fallback type"), "{e}");
    let e = Converter::new(GgmlType::Q8_0)
        .override_if(|_, _| Some(GgmlType::IQ4_NL))
        .convert_tensors(t)
        .unwrap_err();
    assert!(
        e.to_string().contains("tensor 'w' (predicate 0)") && e.to_string().contains("IQ4_NL"),
        "{e}"
    );
}

#[test]
fn non_finite_values_in_a_block_type_are_an_error_naming_the_element() {
    let mut v = ramp(64);
    v[37] = f32::NAN;
    let e = Converter::new(GgmlType::Q4_0)
        .convert_tensors(vec![tensor("blk.1.w", v, &[2, 32])])
        .unwrap_err();
    assert!(
        matches!(&e, ConvertError::NonFinite { tensor, index: 37, ty: GgmlType::Q4_0, .. } if tensor == "blk.1.w"),
        "{e}"
    );
}

#[test]
fn dtypes_without_a_gguf_type_are_refused() {
    let t = HostTensor::from_vec(vec![1u8, 2, 3], &[3]).unwrap();
    let e = Converter::new(GgmlType::Q8_0)
        .convert_tensors(vec![("mask", t)])
        .unwrap_err();
    assert!(
        matches!(&e, ConvertError::UnsupportedDtype { tensor, .. } if tensor == "mask"),
        "{e}"
    );
    assert_eq!(DType::U8.to_string(), "u8");
    assert!(e.to_string().contains("u8"), "{e}");
}

#[test]
fn corrupt_sources_are_typed_errors() {
    let src = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/source.safetensors"
    ))
    .unwrap();
    let c = Converter::new(GgmlType::Q8_0);
    // Every truncation of the header and data, and a huge header length.
    for cut in [0, 4, 8, 100, src.len() / 2, src.len() - 1] {
        let e = c.convert_safetensors_bytes(&src[..cut]).unwrap_err();
        assert!(
            matches!(e, ConvertError::Safetensors { .. }),
            "cut {cut}: {e}"
        );
    }
    let mut huge = src.clone();
    huge[..8].copy_from_slice(&u64::MAX.to_le_bytes());
    assert!(matches!(
        c.convert_safetensors_bytes(&huge).unwrap_err(),
        ConvertError::Safetensors { .. }
    ));
    let onnx = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/source.onnx"
    ))
    .unwrap();
    for cut in [1, onnx.len() / 3, onnx.len() - 3] {
        let e = c.convert_onnx_bytes(&onnx[..cut], None).unwrap_err();
        assert!(matches!(e, ConvertError::Onnx { .. }), "cut {cut}: {e}");
    }
    let e = c
        .convert_file("/nonexistent/model.safetensors", "/tmp/x.gguf")
        .unwrap_err();
    assert!(matches!(e, ConvertError::Io { .. }), "{e}");
    let e = c.convert_file("model.bin", "/tmp/x.gguf").unwrap_err();
    assert!(e.to_string().contains(".safetensors"), "{e}");
}

#[test]
fn bad_settings_are_typed_errors() {
    let t = vec![tensor("w", ramp(64), &[2, 32])];
    let e = Converter::new(GgmlType::Q8_0)
        .alignment(48)
        .convert_tensors(t.clone())
        .unwrap_err();
    assert!(e.to_string().contains("general.alignment"), "{e}");
    for spec in ["w", "w=Q9_9"] {
        let e = Converter::new(GgmlType::Q8_0)
            .override_spec(spec)
            .unwrap_err();
        assert!(matches!(e, ConvertError::UnknownTypeName { .. }), "{e}");
    }
    // A duplicate tensor name is the writer's error, naming the tensor.
    let e = Converter::new(GgmlType::Q8_0)
        .convert_tensors(vec![t[0].clone(), t[0].clone()])
        .unwrap_err();
    assert!(e.to_string().contains("tensor 'w'"), "{e}");
}

#[test]
fn rules_apply_in_the_documented_order_and_the_table_prints_the_figures() {
    let tensors = vec![
        tensor("a.weight", ramp(64), &[2, 32]),
        tensor("b.weight", ramp(64), &[2, 32]),
        tensor("c.weight", ramp(64), &[2, 32]),
        tensor("norm", ramp(32), &[32]),
        tensor("odd", ramp(40), &[1, 40]),
    ];
    let conv = Converter::new(GgmlType::Q4_0)
        .override_name("a.weight", GgmlType::Q8_0)
        .override_pattern("?.weight", GgmlType::Q5_0)
        .override_pattern("a.*", GgmlType::F16)
        .override_if(|name, _| name.starts_with('c').then_some(GgmlType::F32))
        .keep_1d_f32(false)
        .alignment(64)
        .metadata("general.name", "order")
        .convert_tensors(tensors)
        .unwrap();
    let types: Vec<GgmlType> = conv.report.tensors.iter().map(|t| t.ty).collect();
    use GgmlType::*;
    // exact > first glob > predicate; 1-D quantized when keep_1d_f32(false);
    // 40 values do not fill Q4_0's 32-blocks: F16.
    assert_eq!(types, [Q8_0, Q5_0, Q5_0, Q4_0, F16]);
    assert_eq!(
        conv.report
            .fallbacks()
            .map(|t| t.name.as_str())
            .collect::<Vec<_>>(),
        ["odd"]
    );
    let bytes = conv.to_bytes().unwrap();
    let r = GgufReader::new(&bytes[..]).unwrap();
    assert_eq!(r.alignment(), 64);
    assert_eq!(r.metadata().get_str("general.name").unwrap(), "order");
    assert_eq!(
        r.metadata()
            .get_u64("general.quantization_version")
            .unwrap(),
        2
    );
    let table = conv.report.to_string();
    // 2*34 + 2*22 + 2*22 + 18 + 80 bytes after; 4*(64*3 + 32 + 40) before.
    assert_eq!(conv.report.bytes_after(), 68 + 44 + 44 + 18 + 80);
    assert_eq!(conv.report.bytes_before(), 4 * (64 * 3 + 32 + 40));
    assert!(
        table.contains("total: 5 tensors, 1056 -> 254 bytes, compression 4.157x"),
        "{table}"
    );
    assert!(table.contains("fallback from Q4_0"), "{table}");
    assert!(
        table
            .lines()
            .any(|l| l.starts_with("a.weight") && l.contains("Q8_0") && l.contains("name")),
        "{table}"
    );
}
