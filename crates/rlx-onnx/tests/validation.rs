//! Load-time validation (as onnx.checker / ONNX Runtime do): fixtures from
//! tools/gen_onnx_validation_fixtures.py, one per rule, each refused with a
//! typed error naming what is wrong; and a real-exporter style model with
//! `-1` and unnamed dims that loads and matches ONNX Runtime.

use rlx_ir::{Dim, HostTensor};
use rlx_onnx::conformance::compare;
use rlx_onnx::{read_tensor_file, Device, OnnxError, OnnxModel, OnnxOptions, MAX_OPSET, MIN_OPSET};
use std::path::{Path, PathBuf};

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/validation")
}

fn load_err(name: &str) -> OnnxError {
    OnnxModel::load(dir().join(format!("{name}.onnx")), Device::Cpu)
        .err()
        .unwrap_or_else(|| panic!("{name} loaded"))
}

/// (node, op, reason) of a node error.
fn node_err(name: &str) -> (String, String, String) {
    match load_err(name) {
        OnnxError::Node {
            node,
            op_type,
            reason,
        } => (node, op_type, reason),
        e => panic!("{name}: expected a node error, got {e:?}"),
    }
}

#[test]
fn the_supported_opset_range() {
    assert_eq!((MIN_OPSET, MAX_OPSET), (1, 28));
}

#[test]
fn missing_default_opset_import_is_refused() {
    let e = load_err("opset_missing");
    assert_eq!(
        e,
        OnnxError::Opset {
            version: None,
            min: 1,
            max: MAX_OPSET
        }
    );
    assert_eq!(
        e.to_string(),
        "the model imports no default-domain (ai.onnx) opset; RLX imports opsets 1 to 28"
    );
}

#[test]
fn opset_zero_is_refused() {
    let e = load_err("opset_zero");
    assert!(
        matches!(
            e,
            OnnxError::Opset {
                version: Some(0),
                ..
            }
        ),
        "{e:?}"
    );
    assert_eq!(
        e.to_string(),
        "the model imports default-domain (ai.onnx) opset 0; RLX imports opsets 1 to 28"
    );
}

#[test]
fn opset_newer_than_known_is_refused() {
    let e = load_err("opset_too_new");
    assert!(
        matches!(
            e,
            OnnxError::Opset {
                version: Some(29),
                ..
            }
        ),
        "{e:?}"
    );
    assert_eq!(
        e.to_string(),
        "the model imports default-domain (ai.onnx) opset 29; RLX imports opsets 1 to 28"
    );
    // An opset newer than RLX knows counts as unsupported, not as a wrong result.
    assert!(rlx_onnx::conformance::is_unsupported(&e));
}

#[test]
fn too_many_inputs_names_node_op_and_counts() {
    let (node, op, reason) = node_err("too_many_inputs");
    assert_eq!((node.as_str(), op.as_str()), ("relu_two", "Relu"));
    assert_eq!(
        reason,
        "2 input(s) given, Relu-14 (the schema at opset 17) allows 1"
    );
    assert_eq!(
        load_err("too_many_inputs").to_string(),
        "node \"relu_two\" (Relu): 2 input(s) given, Relu-14 (the schema at opset 17) allows 1"
    );
}

#[test]
fn too_few_inputs_names_an_unnamed_node_by_index() {
    let (node, op, reason) = node_err("too_few_inputs");
    assert_eq!((node.as_str(), op.as_str()), ("#0", "Add"));
    assert_eq!(
        reason,
        "1 input(s) given, Add-14 (the schema at opset 17) allows 2"
    );
}

#[test]
fn too_many_outputs_is_refused() {
    let (node, op, reason) = node_err("too_many_outputs");
    assert_eq!((node.as_str(), op.as_str()), ("relu_out2", "Relu"));
    assert_eq!(
        reason,
        "2 output(s) given, Relu-14 (the schema at opset 17) allows 1"
    );
}

#[test]
fn wrong_attribute_type_names_attribute_and_types() {
    let (node, op, reason) = node_err("wrong_attr_type");
    assert_eq!((node.as_str(), op.as_str()), ("cat", "Concat"));
    assert_eq!(
        reason,
        "attribute \"axis\" is INTS, Concat-13 (the schema at opset 17) expects INT"
    );
}

#[test]
fn missing_required_attribute_is_refused() {
    let (node, op, reason) = node_err("missing_attr");
    assert_eq!((node.as_str(), op.as_str()), ("cast", "Cast"));
    assert_eq!(
        reason,
        "required attribute \"to\" (INT) of Cast-13 (the schema at opset 17) is missing"
    );
}

#[test]
fn op_newer_than_the_model_opset_is_refused() {
    let (node, op, reason) = node_err("op_too_new");
    assert_eq!((node.as_str(), op.as_str()), ("gelu", "Gelu"));
    assert_eq!(
        reason,
        "Gelu does not exist at opset 11 (the model's default-domain opset); it was added in opset 20"
    );
}

/// `-1` dims, two unnamed dims of one input, and a batch dim named
/// differently per input load as distinct symbols and run as ONNX Runtime does.
#[test]
fn exporter_dims_load_and_match_onnxruntime() {
    let d = dir().join("dynamic_dims");
    let mut m = OnnxModel::load(d.join("model.onnx"), Device::Cpu).unwrap();
    let dims: Vec<Vec<Dim>> = m.inputs().iter().map(|i| i.dims.clone()).collect();
    assert_eq!(
        dims,
        vec![
            vec![Dim::sym("a:0"), Dim::Static(3)],
            vec![Dim::sym("b:0"), Dim::sym("b:1")],
            vec![Dim::sym("batch_size"), Dim::Static(3)],
            vec![Dim::sym("unk__7"), Dim::Static(3)],
        ]
    );
    assert_eq!(m.outputs()[0].dims, vec![Dim::sym("y:0"), Dim::sym("y:1")]);
    // With b's first dim and the two batch names bound (the IR checks
    // MatMul's inner dims and Add's broadcast of two different symbols
    // statically), the import keeps a's and b's unknown dims apart. A run
    // binds every symbol from the given tensors.
    let opts = OnnxOptions::default()
        .bind_dim("b:0", 3)
        .bind_dim("batch_size", 4)
        .bind_dim("unk__7", 4);
    let bound = OnnxModel::load_with(d.join("model.onnx"), Device::Cpu, opts).unwrap();
    let imported = bound.import().unwrap();
    let y = imported.graph.outputs()[0];
    assert_eq!(
        imported.graph.shape(y).dims(),
        &[Dim::sym("a:0"), Dim::sym("b:1")]
    );
    for set in ["test_data_set_0", "test_data_set_1"] {
        let read = |f: String| read_tensor_file(d.join(set).join(f)).unwrap().1;
        let ins: Vec<HostTensor> = (0..4).map(|i| read(format!("input_{i}.pb"))).collect();
        // b's two unnamed dims differ (3 x 5, then 3 x 1): they must not be one symbol.
        assert_ne!(ins[1].dims()[0], ins[1].dims()[1], "{set}");
        let names = ["a", "b", "c", "d"];
        let feed: Vec<(&str, &HostTensor)> = names.iter().copied().zip(ins.iter()).collect();
        let outs = m.run(&feed).unwrap();
        for (k, got) in outs.iter().enumerate() {
            let want = read(format!("output_{k}.pb"));
            compare(got, &want, 1e-5, 1e-6).unwrap_or_else(|e| panic!("{set} output {k}: {e}"));
        }
    }
}
