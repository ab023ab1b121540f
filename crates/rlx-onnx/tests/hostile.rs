//! Hostile and malformed files: each is a clear typed error, never a panic
//! or an allocation bomb.

mod common;
use common::*;
use rlx_onnx::{Device, OnnxError, OnnxModel};

fn load(m: &rlx_onnx::proto::ModelProto) -> Result<OnnxModel, OnnxError> {
    OnnxModel::from_bytes(&bytes(m), Device::Cpu)
}

fn relu_model() -> rlx_onnx::proto::ModelProto {
    model(
        vec![node("Relu", "r", &["x"], &["y"])],
        vec![value("x", &[Ok(2), Ok(3)])],
        vec![value("y", &[Ok(2), Ok(3)])],
        vec![],
    )
}

#[test]
fn truncated_file_is_a_decode_error() {
    let b = bytes(&relu_model());
    for cut in [1, b.len() / 2, b.len() - 1] {
        match OnnxModel::from_bytes(&b[..cut], Device::Cpu) {
            Err(OnnxError::Decode { what, .. }) => assert_eq!(what, "ModelProto"),
            Err(e) => panic!("cut at {cut}: unexpected error {e}"),
            Ok(_) => {
                // A prefix can itself be a valid (smaller) message; it must then fail later, cleanly.
            }
        }
    }
    assert!(matches!(
        OnnxModel::from_bytes(&[0xff, 0xff, 0xff], Device::Cpu),
        Err(OnnxError::Decode { .. })
    ));
}

#[test]
fn huge_initializer_dims_are_rejected_before_allocating() {
    let mut t = f32_tensor("w", &[1 << 31, 1 << 31, 1 << 20], &[]);
    t.raw_data = Some(vec![0; 16].into());
    let m = model(
        vec![node("Add", "a", &["x", "w"], &["y"])],
        vec![value("x", &[Ok(1)])],
        vec![value("y", &[Ok(1)])],
        vec![t],
    );
    let mut m = load(&m).unwrap();
    let e = m
        .run(&[(
            "x",
            &rlx_ir::HostTensor::from_vec(vec![1f32], &[1]).unwrap(),
        )])
        .unwrap_err();
    assert!(
        matches!(&e, OnnxError::Tensor { name, .. } if name == "w"),
        "{e}"
    );
    assert!(e.to_string().contains("exceed"), "{e}");
}

#[test]
fn raw_data_length_mismatch_names_the_tensor() {
    let mut t = f32_tensor("w", &[4], &[]);
    t.raw_data = Some(vec![0; 12].into());
    let m = model(
        vec![node("Add", "a", &["x", "w"], &["y"])],
        vec![value("x", &[Ok(4)])],
        vec![value("y", &[Ok(4)])],
        vec![t],
    );
    let e = load(&m).unwrap().import().unwrap_err();
    assert!(e.to_string().contains("raw_data holds 12 bytes"), "{e}");
}

#[test]
fn cyclic_graph_is_an_error() {
    let m = model(
        vec![
            node("Add", "a", &["x", "c"], &["b"]),
            node("Relu", "b", &["b"], &["c"]),
        ],
        vec![value("x", &[Ok(2)])],
        vec![value("c", &[Ok(2)])],
        vec![],
    );
    let e = load(&m).unwrap().import().unwrap_err();
    assert!(e.to_string().contains("cycle"), "{e}");
}

#[test]
fn missing_initializer_names_the_value_and_node() {
    let m = model(
        vec![node("MatMul", "mm", &["x", "weight"], &["y"])],
        vec![value("x", &[Ok(2), Ok(2)])],
        vec![value("y", &[Ok(2), Ok(2)])],
        vec![],
    );
    let e = load(&m).unwrap().import().unwrap_err();
    let s = e.to_string();
    assert!(s.contains("\"weight\"") && s.contains("mm"), "{s}");
}

#[test]
fn unknown_ops_are_reported_all_at_once() {
    let m = model(
        vec![
            node("FancyOp", "first", &["x"], &["a"]),
            node("Relu", "ok", &["a"], &["b"]),
            node("OtherOp", "second", &["b"], &["y"]),
        ],
        vec![value("x", &[Ok(2)])],
        vec![value("y", &[Ok(2)])],
        vec![],
    );
    match load(&m) {
        Err(OnnxError::Unsupported(list)) => {
            let names: Vec<(&str, &str)> = list
                .iter()
                .map(|u| (u.op_type.as_str(), u.node.as_str()))
                .collect();
            assert_eq!(names, vec![("FancyOp", "first"), ("OtherOp", "second")]);
        }
        other => panic!("expected Unsupported, got {other:?}"),
    }
}

#[test]
fn external_data_outside_the_model_directory_is_refused() {
    let mut t = f32_tensor("w", &[2], &[]);
    t.data_location = Some(rlx_onnx::proto::tensor_proto::DataLocation::External as i32);
    t.external_data = vec![rlx_onnx::proto::StringStringEntryProto {
        key: Some("location".into()),
        value: Some("../../etc/passwd".into()),
    }];
    let m = model(
        vec![node("Add", "a", &["x", "w"], &["y"])],
        vec![value("x", &[Ok(2)])],
        vec![value("y", &[Ok(2)])],
        vec![t],
    );
    let dir = std::env::temp_dir();
    let m = OnnxModel::from_bytes_with(&bytes(&m), Some(&dir), Device::Cpu, Default::default())
        .unwrap();
    let e = m.import().unwrap_err();
    assert!(e.to_string().contains("leaves the model directory"), "{e}");
}

#[test]
fn external_data_is_read_and_bounds_checked() {
    let dir = std::env::temp_dir().join(format!("rlx_onnx_ext_{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let data: Vec<u8> = [0f32, 1.5, -2.0, 4.0]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    std::fs::write(dir.join("w.bin"), &data).unwrap();
    let ext = |offset: &str, len: &str| {
        let mut t = f32_tensor("w", &[2], &[]);
        t.data_location = Some(rlx_onnx::proto::tensor_proto::DataLocation::External as i32);
        let kv = |k: &str, v: &str| rlx_onnx::proto::StringStringEntryProto {
            key: Some(k.into()),
            value: Some(v.into()),
        };
        t.external_data = vec![
            kv("location", "w.bin"),
            kv("offset", offset),
            kv("length", len),
        ];
        model(
            vec![node("Add", "a", &["x", "w"], &["y"])],
            vec![value("x", &[Ok(2)])],
            vec![value("y", &[Ok(2)])],
            vec![t],
        )
    };
    std::fs::write(dir.join("m.onnx"), bytes(&ext("4", "8"))).unwrap();
    let mut m = OnnxModel::load(dir.join("m.onnx"), Device::Cpu).unwrap();
    let x = rlx_ir::HostTensor::from_vec(vec![1f32, 1.0], &[2]).unwrap();
    let y = m.run(&[("x", &x)]).unwrap();
    assert_eq!(y[0].to_vec::<f32>().unwrap(), vec![2.5, -1.0]);
    std::fs::write(dir.join("m.onnx"), bytes(&ext("12", "8"))).unwrap();
    let e = OnnxModel::load(dir.join("m.onnx"), Device::Cpu)
        .unwrap()
        .import()
        .unwrap_err();
    assert!(e.to_string().contains("runs past the end"), "{e}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn wrong_inputs_are_errors_naming_them() {
    let mut m = load(&relu_model()).unwrap();
    let bad = rlx_ir::HostTensor::from_vec(vec![1f32; 4], &[2, 2]).unwrap();
    let e = m.run(&[("x", &bad)]).unwrap_err().to_string();
    assert!(e.contains("\"x\"") && e.contains("[2, 2]"), "{e}");
    let e = m.run(&[("nope", &bad)]).unwrap_err().to_string();
    assert!(e.contains("unknown input \"nope\""), "{e}");
    let e = m.run(&[]).unwrap_err().to_string();
    assert!(e.contains("missing input \"x\""), "{e}");
}

/// Seeded byte mutations of valid models: never a panic.
#[test]
fn mutated_models_never_panic() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/node");
    let mut seeds: Vec<Vec<u8>> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| std::fs::read(e.unwrap().path().join("model.onnx")).ok())
        .take(40)
        .collect();
    seeds.push(bytes(&relu_model()));
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for i in 0..3000 {
        let mut b = seeds[i % seeds.len()].clone();
        for _ in 0..1 + next() % 4 {
            let at = (next() as usize) % b.len().max(1);
            match next() % 3 {
                0 => b[at] = next() as u8,
                1 => b.truncate(at),
                _ => b.insert(at, next() as u8),
            }
            if b.is_empty() {
                break;
            }
        }
        if let Ok(m) = OnnxModel::from_bytes(&b, Device::Cpu) {
            let _ = m.import();
        }
    }
}

/// Inputs the fuzzer found (crates/rlx-onnx/fuzz): each must be an error or
/// a clean import, never a panic.
#[test]
fn fuzzer_findings_do_not_panic() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fuzz");
    for e in std::fs::read_dir(&dir).unwrap() {
        let b = std::fs::read(e.unwrap().path()).unwrap();
        if let Ok(m) = OnnxModel::from_bytes(&b, Device::Cpu) {
            let _ = m.import();
        }
    }
}

#[test]
fn absurd_input_dims_are_rejected() {
    let m = model(
        vec![node("Relu", "r", &["x"], &["y"])],
        vec![value("x", &[Ok(1 << 40), Ok(1 << 40)])],
        vec![value("y", &[Ok(1), Ok(1)])],
        vec![],
    );
    let e = load(&m).unwrap_err();
    assert!(
        matches!(&e, OnnxError::Invalid(s) if s.contains("exceed")),
        "{e}"
    );
}

#[test]
fn absurd_expand_target_is_an_error() {
    let m = model(
        vec![node("Expand", "e", &["x", "shape"], &["y"])],
        vec![value("x", &[Ok(1)])],
        vec![value("y", &[Ok(1)])],
        vec![i64_tensor("shape", &[3], &[1 << 30, 1 << 30, 1 << 30])],
    );
    let e = load(&m).unwrap().import().unwrap_err();
    assert!(e.to_string().contains("exceed"), "{e}");
}
