//! Conversion checked against gguf-py and numpy (tools/gen_convert_fixtures.py):
//! chosen types, gguf-py's quantized bytes, report figures, and gguf-py's
//! reading of the files we write.

use rlx_gguf::{GgmlType, GgufReader, Value};
use rlx_gguf_convert::{Choice, Conversion, Converter, TensorReport};
use serde_json::Value as Json;
use std::path::PathBuf;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn read(name: &str) -> Vec<u8> {
    std::fs::read(fixture(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn json(name: &str) -> Json {
    serde_json::from_slice(&read(name)).unwrap()
}

fn ty(name: &str) -> GgmlType {
    GgmlType::from_name(name).unwrap_or_else(|| panic!("type {name}"))
}

/// The converter a case of cases.json describes (the CLI's flags, plus the
/// one predicate the generator spells out).
fn converter(case: &Json) -> Converter {
    let mut c = Converter::new(ty(case["default"].as_str().unwrap()));
    for spec in case["overrides"].as_array().unwrap() {
        c = c.override_spec(spec.as_str().unwrap()).unwrap();
    }
    if let Some(meta) = case.get("meta").and_then(Json::as_object) {
        for (k, v) in meta {
            c = c.metadata(k, v.as_str().unwrap());
        }
    }
    if let Some(a) = case.get("alignment").and_then(Json::as_u64) {
        c = c.alignment(a as u32);
    }
    match case.get("predicate").and_then(Json::as_str) {
        None => c,
        Some("attn_rows_ge_32_q6_k") => c.override_if(|name, shape| {
            (name.contains("attn") && shape.len() >= 2 && shape[0] >= 32).then_some(GgmlType::Q6_K)
        }),
        Some(other) => panic!("unknown predicate {other}"),
    }
}

fn convert(case: &Json) -> Conversion {
    let c = converter(case);
    if case["name"].as_str().unwrap().starts_with("onnx") {
        c.convert_onnx_bytes(&read("source.onnx"), None).unwrap()
    } else {
        c.convert_safetensors_bytes(&read("source.safetensors"))
            .unwrap()
    }
}

fn source_values(case: &Json, name: &str) -> Vec<f32> {
    // The source as f32, read back through the converter itself would be
    // circular; read it with the safetensors / ONNX readers instead.
    let t = if case["name"].as_str().unwrap().starts_with("onnx") {
        let m = read("source.onnx");
        onnx_initializer(&m, name)
    } else {
        let bytes = read("source.safetensors");
        let st = safetensors::SafeTensors::deserialize(&bytes).unwrap();
        let v = st.tensor(name).unwrap();
        let dtype = match v.dtype() {
            safetensors::Dtype::F32 => rlx_ir::DType::F32,
            safetensors::Dtype::F16 => rlx_ir::DType::F16,
            safetensors::Dtype::BF16 => rlx_ir::DType::BF16,
            d => panic!("{d:?}"),
        };
        rlx_ir::HostTensor::from_bytes(dtype, v.shape(), v.data().to_vec()).unwrap()
    };
    t.to_f64_lossy().into_iter().map(|x| x as f32).collect()
}

fn onnx_initializer(model: &[u8], name: &str) -> rlx_ir::HostTensor {
    use prost::Message;
    let m = rlx_onnx::proto::ModelProto::decode(model).unwrap();
    let g = m.graph.unwrap();
    let t = g
        .initializer
        .iter()
        .find(|t| t.name.as_deref() == Some(name))
        .unwrap();
    rlx_onnx::tensor_from_proto(t, None).unwrap()
}

fn choice_name(c: &Choice) -> &'static str {
    match c {
        Choice::Default => "default",
        Choice::Exact => "exact",
        Choice::Pattern(_) => "pattern",
        Choice::Predicate(_) => "predicate",
        Choice::OneDimensional => "1d",
        Choice::Integer => "integer",
    }
}

/// One full quantization step over the super-block's worst-case range: a
/// K-quant with `bits`-bit levels never errs by more (the 6-bit sub-block
/// scales only shrink a sub-block's step below the super-block's).
fn kquant_error_bound(ty: GgmlType) -> Option<f32> {
    let bits = match ty {
        GgmlType::Q2_K => 2,
        GgmlType::Q3_K => 3,
        GgmlType::Q4_K => 4,
        GgmlType::Q5_K => 5,
        GgmlType::Q6_K => 6,
        _ => return None,
    };
    Some(2.0 / ((1u32 << bits) - 1) as f32)
}

fn check_against_expected(case: &Json, row: &Json, t: &TensorReport, ours: &[u8]) {
    let case_name = case["name"].as_str().unwrap();
    let what = format!("{case_name} / {}", t.name);
    let shape: Vec<usize> = row["shape"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d.as_u64().unwrap() as usize)
        .collect();
    assert_eq!(t.shape, shape, "{what}");
    assert!(
        t.source_dtype
            .eq_ignore_ascii_case(row["source_dtype"].as_str().unwrap()),
        "{what}: {}",
        t.source_dtype
    );
    assert_eq!(
        t.requested,
        ty(row["requested"].as_str().unwrap()),
        "{what}"
    );
    assert_eq!(t.ty, ty(row["type"].as_str().unwrap()), "{what}");
    assert_eq!(
        choice_name(&t.choice),
        row["choice"].as_str().unwrap(),
        "{what}"
    );
    assert_eq!(t.fell_back, row["fell_back"].as_bool().unwrap(), "{what}");
    assert_eq!(
        t.bytes_before,
        row["bytes_before"].as_u64().unwrap(),
        "{what}"
    );
    assert_eq!(
        t.bytes_after,
        row["bytes_after"].as_u64().unwrap(),
        "{what}"
    );
    assert_eq!(ours.len() as u64, t.bytes_after, "{what}");
    if let Some(off) = row["gguf_py_offset"].as_u64() {
        let bin = read(&format!("gguf_py_{case_name}.bin"));
        let theirs = &bin[off as usize..off as usize + ours.len()];
        assert!(
            ours == theirs,
            "{what}: bytes differ from gguf-py's {}",
            t.ty
        );
    }
    if let Some(c) = row["cosine"].as_f64() {
        assert!(
            (t.cosine - c).abs() < 1e-9,
            "{what}: cosine {} vs numpy {c}",
            t.cosine
        );
    } else {
        // gguf-py has no quantizer for this type: bound every element.
        let bound = kquant_error_bound(t.ty).unwrap_or_else(|| panic!("{what}: no bound"));
        let src = source_values(case, &t.name);
        let back = rlx_gguf::codecs::dequantize(t.ty, ours, src.len()).unwrap();
        let per_block = t.ty.block_size();
        for (b, (x, y)) in src
            .chunks(per_block)
            .zip(back.chunks(per_block))
            .enumerate()
        {
            let amax = x.iter().fold(0f32, |m, v| m.max(v.abs()));
            for (i, (a, q)) in x.iter().zip(y).enumerate() {
                let err = (a - q).abs();
                assert!(
                    err <= bound * amax + 1e-6,
                    "{what}: block {b} elem {i}: |{a} - {q}| > {bound} * {amax}"
                );
            }
        }
        let c = rlx_gguf_convert::cosine(&src, &back);
        assert!(
            (t.cosine - c).abs() < 1e-12 && c > 0.99,
            "{what}: cosine {c}"
        );
    }
}

#[test]
fn every_case_matches_gguf_py_types_bytes_and_numpy_figures() {
    let cases = json("cases.json");
    let cases = cases["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 5);
    for case in cases {
        let conv = convert(case);
        let bytes = conv.to_bytes().unwrap();
        let r = GgufReader::new(&bytes[..]).unwrap();
        let rows = case["tensors"].as_array().unwrap();
        assert_eq!(conv.report.tensors.len(), rows.len());
        for (row, t) in rows.iter().zip(&conv.report.tensors) {
            assert_eq!(t.name, row["name"].as_str().unwrap());
            check_against_expected(case, row, t, r.tensor_data(&t.name).unwrap());
        }
        let name = case["name"].as_str().unwrap();
        assert_eq!(
            conv.report.bytes_before(),
            case["bytes_before"].as_u64().unwrap(),
            "{name}"
        );
        assert_eq!(
            conv.report.bytes_after(),
            case["bytes_after"].as_u64().unwrap(),
            "{name}"
        );
        let ratio = case["ratio"].as_f64().unwrap();
        assert!(
            (conv.report.compression_ratio() - ratio).abs() < 1e-12,
            "{name}"
        );
    }
}

/// gguf-py's `GGUFValueType` names in id order.
const GGUF_PY_VALUE_TYPES: [&str; 13] = [
    "UINT8", "INT8", "UINT16", "INT16", "UINT32", "INT32", "FLOAT32", "BOOL", "STRING", "ARRAY",
    "UINT64", "INT64", "FLOAT64",
];

fn json_matches_value(want: &Json, got: &Value) -> bool {
    match (want, got) {
        (Json::Array(w), Value::Array(a)) => {
            w.len() == a.len()
                && w.iter()
                    .zip(a.values())
                    .all(|(w, g)| json_matches_value(w, g))
        }
        (Json::String(s), _) => got.as_str() == Some(s),
        (Json::Bool(b), _) => got.as_bool() == Some(*b),
        (Json::Number(n), _) => match (n.as_i64(), got.as_i64()) {
            (Some(i), Some(g)) => i == g,
            _ => n.as_f64() == got.as_f64(),
        },
        _ => false,
    }
}

#[test]
fn gguf_py_reads_our_files_as_we_wrote_them() {
    let cases = json("cases.json");
    let readback = json("gguf_py_readback.json");
    let readback = readback.as_object().unwrap();
    assert_eq!(readback.len(), 3);
    for (name, rb) in readback {
        let case = cases["cases"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == name.as_str())
            .unwrap();
        let conv = convert(case);
        let bytes = conv.to_bytes().unwrap();
        // The file gguf-py read is the one we write today, byte for byte.
        let committed = read(&format!("rust_{name}.gguf"));
        assert!(
            bytes == committed,
            "{name}: output differs from rust_{name}.gguf"
        );
        let r = GgufReader::new(&bytes[..]).unwrap();
        assert_eq!(r.alignment(), rb["alignment"].as_u64().unwrap(), "{name}");
        assert_eq!(
            r.content().data_offset(),
            rb["data_offset"].as_u64().unwrap()
        );

        let meta = rb["metadata"].as_object().unwrap();
        // (serde_json sorts keys; the order is pinned by the committed bytes.)
        let mut ours: Vec<&str> = r.metadata().iter().map(|(k, _)| k).collect();
        ours.sort();
        let theirs: Vec<&str> = meta.keys().map(String::as_str).collect();
        assert_eq!(ours, theirs, "{name}: metadata keys");
        for (k, v) in r.metadata().iter() {
            let (types, value) = (&meta[k][0], &meta[k][1]);
            let id = GGUF_PY_VALUE_TYPES
                .iter()
                .position(|t| *t == types[0].as_str().unwrap())
                .unwrap();
            assert_eq!(id as u32, v.value_type() as u32, "{name}: {k}: value type");
            assert!(
                json_matches_value(value, v),
                "{name}: {k}: {v:?} vs gguf-py {value}"
            );
        }

        let tensors = rb["tensors"].as_array().unwrap();
        assert_eq!(r.tensors().len(), tensors.len());
        for (info, t) in r.tensors().iter().zip(tensors) {
            let what = format!("{name} / {}", info.name());
            assert_eq!(info.name(), t["name"].as_str().unwrap());
            assert_eq!(info.ggml_type(), ty(t["type"].as_str().unwrap()), "{what}");
            let ne: Vec<u64> = t["ne"]
                .as_array()
                .unwrap()
                .iter()
                .map(|d| d.as_u64().unwrap())
                .collect();
            assert_eq!(info.dims(), &ne[..], "{what}");
            assert_eq!(info.n_bytes(), t["n_bytes"].as_u64().unwrap(), "{what}");
            assert_eq!(
                info.file_offset(),
                t["data_offset"].as_u64().unwrap(),
                "{what}"
            );
            if let Some(eq) = t.get("ints_equal_source") {
                assert_eq!(eq, &Json::Bool(true), "{what}");
                continue;
            }
            if let Some(eq) = t.get("bytes_equal_gguf_py") {
                assert_eq!(eq, &Json::Bool(true), "{what}");
            }
            let ours = r.dequantize_f32(info.name()).unwrap();
            let src = source_values(case, info.name());
            let sum: f64 = ours.iter().map(|&x| f64::from(x)).sum();
            let sumsq: f64 = ours.iter().map(|&x| f64::from(x).powi(2)).sum();
            let dot: f64 = ours
                .iter()
                .zip(&src)
                .map(|(&a, &b)| f64::from(a) * f64::from(b))
                .sum();
            let maxerr = ours
                .iter()
                .zip(&src)
                .map(|(a, b)| (a - b).abs())
                .fold(0f32, f32::max);
            let close = |a: f64, key: &str| {
                let b = t[key].as_f64().unwrap();
                assert!(
                    (a - b).abs() <= 1e-9 * b.abs().max(1.0),
                    "{what}: {key} {a} vs gguf-py {b}"
                );
            };
            close(sum, "sum");
            close(sumsq, "sumsq");
            close(dot, "dot_source");
            close(f64::from(maxerr), "max_abs_err");
            close(conv.report.tensor(info.name()).unwrap().cosine, "cosine");
        }
    }
}

#[test]
fn file_conversion_writes_the_committed_bytes_and_reports_the_file_size() {
    let cases = json("cases.json");
    let case = &cases["cases"][0];
    let out = std::env::temp_dir().join(format!("rlx_convert_{}.gguf", std::process::id()));
    let report = converter(case)
        .convert_file(fixture("source.safetensors"), &out)
        .unwrap();
    let written = std::fs::read(&out).unwrap();
    std::fs::remove_file(&out).unwrap();
    assert!(written == read("rust_q8_0.gguf"));
    assert_eq!(report.file_bytes, Some(written.len() as u64));
    let onnx_case = &cases["cases"][4];
    let report = converter(onnx_case)
        .convert_file(fixture("source.onnx"), &out)
        .unwrap();
    std::fs::remove_file(&out).unwrap();
    assert_eq!(
        report.bytes_after(),
        onnx_case["bytes_after"].as_u64().unwrap()
    );
}
