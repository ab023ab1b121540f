//! The OnnxModel API: signatures, dynamic dims, graph text, dispatch report.

mod common;
use common::*;
use rlx_ir::{Dim, HostTensor};
use rlx_onnx::{Device, OnnxModel, OnnxOptions};

/// y = reshape(x, [batch, 2, 2]) with the shape computed from Shape(x):
/// a Shape -> Gather -> Concat -> Reshape subgraph over a dynamic batch.
fn dynamic_model() -> rlx_onnx::proto::ModelProto {
    let mut gather = node("Gather", "g", &["shape", "zero"], &["b"]);
    gather.attribute.push(int_attr("axis", 0));
    let mut unsq = node("Unsqueeze", "u", &["b", "axes0"], &["b1"]);
    unsq.attribute.clear();
    let mut cat = node("Concat", "c", &["b1", "two_two"], &["newshape"]);
    cat.attribute.push(int_attr("axis", 0));
    model(
        vec![
            node("Shape", "s", &["x"], &["shape"]),
            gather,
            unsq,
            cat,
            node("Reshape", "r", &["x", "newshape"], &["r_out"]),
            node("Relu", "relu", &["r_out"], &["y"]),
        ],
        vec![value("x", &[Err("batch"), Ok(4)])],
        vec![value("y", &[Err("batch"), Ok(2), Ok(2)])],
        vec![
            i64_tensor("zero", &[], &[0]),
            i64_tensor("axes0", &[1], &[0]),
            i64_tensor("two_two", &[2], &[2, 2]),
        ],
    )
}

#[test]
fn dynamic_batch_compiles_per_shape_and_folds_shape_subgraphs() {
    let mut m = OnnxModel::from_bytes(&bytes(&dynamic_model()), Device::Cpu).unwrap();
    assert_eq!(m.inputs()[0].dims, vec![Dim::sym("batch"), Dim::Static(4)]);
    assert_eq!(m.info().default_opset(), 17);
    assert_eq!(m.info().producer_name, "rlx-onnx tests");
    for batch in [1usize, 3] {
        let vals: Vec<f32> = (0..batch * 4).map(|i| i as f32 - 5.0).collect();
        let x = HostTensor::from_vec(vals.clone(), &[batch, 4]).unwrap();
        let out = m.run_named(&[("x", &x)]).unwrap();
        assert_eq!(out[0].0, "y");
        assert_eq!(out[0].1.dims(), &[batch, 2, 2]);
        let want: Vec<f32> = vals.iter().map(|v| v.max(0.0)).collect();
        assert_eq!(out[0].1.to_vec::<f32>().unwrap(), want);
    }
    let text = m.graph_text().unwrap();
    assert!(text.contains("reshape") && text.contains("relu"), "{text}");
    // The shape subgraph folded away: no gather / concat is left.
    assert!(
        !text.contains("gather") && !text.contains("concat"),
        "{text}"
    );
    let report = m.dispatch_report().unwrap();
    assert!(
        report.contains("Reshape") && report.contains("native"),
        "{report}"
    );
}

#[test]
fn bound_dims_import_statically() {
    let opts = OnnxOptions::default().bind_dim("batch", 2);
    let m = OnnxModel::from_bytes_with(&bytes(&dynamic_model()), None, Device::Cpu, opts).unwrap();
    let g = m.graph().unwrap();
    let out = g.outputs()[0];
    assert_eq!(g.shape(out).static_dims(), Some(vec![2, 2, 2]));
}

#[test]
fn shape_subgraphs_stay_symbolic_without_bindings() {
    let m = OnnxModel::from_bytes(&bytes(&dynamic_model()), Device::Cpu).unwrap();
    let imported = m.import().unwrap();
    let out = imported.graph.outputs()[0];
    assert_eq!(
        imported.graph.shape(out).dims(),
        &[Dim::sym("batch"), Dim::Static(2), Dim::Static(2)]
    );
    assert_eq!(imported.outputs[0].dims[0], Dim::sym("batch"));
}
