//! A tiny CNN (conv + batch norm folded or not, depthwise, 1x1 + residual,
//! max pool, ConvTranspose, Resize, concat, SiLU) and a tiny recurrent net
//! (bidirectional LSTM / GRU / RNN, a reverse LSTM) against ONNX Runtime's
//! outputs on the same input; fixtures from `tools/gen_tiny_cnn_fixture.py`.

use rlx_ir::HostTensor;
use rlx_onnx::{Device, OnnxModel};
use std::path::Path;

fn f32s(file: &str) -> Vec<f32> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/cnn")
        .join(file);
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    bytes
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect()
}

/// Every element within 1e-4 of the reference's largest magnitude.
fn assert_close(got: &[f32], want: &[f32]) {
    assert_eq!(got.len(), want.len());
    let scale = want.iter().fold(0f32, |m, v| m.max(v.abs()));
    assert!(scale > 0.1, "a degenerate fixture");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= 1e-4 * scale,
            "element {i}: RLX {g} vs ONNX Runtime {w} (max |y| {scale})"
        );
    }
}

#[test]
fn tiny_cnn_matches_onnx_runtime() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/cnn");
    let mut model = OnnxModel::load(dir.join("tiny_cnn.onnx"), Device::Cpu).unwrap();
    let x = HostTensor::from_vec(f32s("input.bin"), &[2, 3, 12, 12]).unwrap();
    let want = f32s("output.bin");
    let out = model.run(&[("input", &x)]).unwrap();
    assert_eq!(out[0].dims(), &[2, 4, 12, 12]);
    let got: Vec<f32> = out[0].to_vec().unwrap();
    assert_close(&got, &want);
}

/// `run_into` writes ONNX Runtime's output into bound tensors from
/// `output_tensors`, twice into the same tensor (the second over the
/// first's values, NaN-filled in between); a wrong count or dims of bound
/// outputs is an error, not a panic.
#[test]
fn run_into_bound_outputs_matches_onnx_runtime() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/cnn");
    let mut model = OnnxModel::load(dir.join("tiny_cnn.onnx"), Device::Cpu).unwrap();
    let x = HostTensor::from_vec(f32s("input.bin"), &[2, 3, 12, 12]).unwrap();
    let want = f32s("output.bin");
    let mut bound = model.output_tensors(&[("input", &x)]).unwrap();
    assert_eq!(bound.len(), 1);
    assert_eq!(bound[0].dims(), &[2, 4, 12, 12]);
    for _ in 0..2 {
        model.run_into(&[("input", &x)], &mut bound).unwrap();
        assert_close(&bound[0].to_vec::<f32>().unwrap(), &want);
        let nan = HostTensor::from_vec(vec![f32::NAN; want.len()], &[2, 4, 12, 12]).unwrap();
        bound[0] = nan;
    }
    let wrong = HostTensor::from_vec(vec![0f32; 8], &[2, 4]).unwrap();
    assert!(model.run_into(&[("input", &x)], &mut [wrong]).is_err());
    assert!(model.run_into(&[("input", &x)], &mut []).is_err());
}

/// Bidirectional LSTM (bias, initial h / c, peepholes), GRU
/// (linear_before_reset) and RNN (Tanh forward, Relu backward: directions
/// that step alone), and a reverse LSTM: every output of each, at batch 3
/// (steps laid out by direction) and 1 (by gate).
#[test]
fn tiny_recurrent_net_matches_onnx_runtime() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/cnn");
    for b in [3, 1] {
        let file = format!("tiny_rnn_b{b}.onnx");
        let mut model = OnnxModel::load(dir.join(file), Device::Cpu).unwrap();
        let x: Vec<f32> = (0..5 * b * 4)
            .map(|i| (((i * 7919) % 1000) as f64 / 500.0 - 1.0) as f32)
            .collect();
        let x = HostTensor::from_vec(x, &[5, b, 4]).unwrap();
        let out = model.run(&[("input", &x)]).unwrap();
        let seq = [5, 2, b, 6];
        let last = [2, b, 6];
        let dims: [&[usize]; 8] = [&seq, &last, &last, &seq, &last, &seq, &last, &[5, 1, b, 6]];
        assert_eq!(out.len(), dims.len());
        for (i, (o, d)) in out.iter().zip(dims).enumerate() {
            assert_eq!(o.dims(), d, "batch {b}, output {i}");
            let got: Vec<f32> = o.to_vec().unwrap();
            assert_close(&got, &f32s(&format!("rnn_b{b}_output_{i}.bin")));
        }
    }
}

/// `prepare` compiles for the input's shape without running (the model has
/// a compiled graph afterwards, none before); the run after it is ONNX
/// Runtime's output; a wrong shape is refused by name before any compile.
#[test]
fn prepare_compiles_ahead_of_the_first_run() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/cnn");
    let options = rlx_onnx::OnnxOptions::default().compile_cache(false);
    let mut model = OnnxModel::load_with(dir.join("tiny_cnn.onnx"), Device::Cpu, options).unwrap();
    let x = HostTensor::from_vec(f32s("input.bin"), &[2, 3, 12, 12]).unwrap();
    let wrong = HostTensor::from_vec(vec![0f32; 2 * 3 * 12 * 11], &[2, 3, 12, 11]).unwrap();
    let err = model.prepare(&[("input", &wrong)]).unwrap_err().to_string();
    assert!(
        err.contains("input \"input\"") && err.contains("[2, 3, 12, 11]"),
        "{err}"
    );
    assert!(
        model.compiled().is_none(),
        "a refused input compiled something"
    );

    model.prepare(&[("input", &x)]).unwrap();
    assert!(model.compiled().is_some(), "prepare did not compile");
    model.prepare(&[("input", &x)]).unwrap();
    let out = model.run(&[("input", &x)]).unwrap();
    assert_close(&out[0].to_vec::<f32>().unwrap(), &f32s("output.bin"));
}

/// A conv with a 2.36 MB weight (computed in the graph, folded to a
/// constant on import) and a batch norm: the fold writes the scaled weight
/// into a huge-page mapping (weights of 2 MB and up). Fixture from
/// `tools/gen_wide_conv_bn_fixture.py` (ONNX Runtime's output).
#[test]
fn wide_conv_batch_norm_fold_matches_onnx_runtime() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/cnn");
    let mut model = OnnxModel::load(dir.join("wide_conv_bn.onnx"), Device::Cpu).unwrap();
    let text = model.graph_text().unwrap();
    assert!(
        !text.contains("sqrt"),
        "the batch norm was not folded into the conv:\n{text}"
    );
    let x = HostTensor::from_vec(f32s("wide_input.bin"), &[1, 256, 3, 3]).unwrap();
    let want = f32s("wide_output.bin");
    let out = model.run(&[("input", &x)]).unwrap();
    let got: Vec<f32> = out[0].to_vec().unwrap();
    assert_close(&got, &want);
}

/// A model file over 2 MiB against ONNX Runtime's output on it
/// (`tools/gen_large_file_fixture.py`'s model, 168 KB, padded here past
/// 2 MiB with a field ONNX does not define, which decoding skips): such a
/// file is read into a huge-page mapping, and its weights are slices of
/// it. Loaded from the file and from a copy of its bytes (no mapping),
/// without the compile cache: both must match.
#[test]
fn large_file_matches_onnx_runtime() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/cnn");
    let mut bytes = std::fs::read(dir.join("large_file.onnx")).unwrap();
    let pad = 2 << 20;
    // Field 999 of ModelProto, length-delimited (wire type 2).
    for v in [999 << 3 | 2, pad] {
        let mut v: u64 = v;
        while v >= 0x80 {
            bytes.push(v as u8 | 0x80);
            v >>= 7;
        }
        bytes.push(v as u8);
    }
    bytes.resize(bytes.len() + pad as usize, 0);
    let path = std::env::temp_dir().join(format!("rlx-large-file-{}.onnx", std::process::id()));
    std::fs::write(&path, &bytes).unwrap();
    let x = HostTensor::from_vec(f32s("large_input.bin"), &[1, 32, 8, 8]).unwrap();
    let want = f32s("large_output.bin");
    let opts = || rlx_onnx::OnnxOptions::default().compile_cache(false);
    let loaded = OnnxModel::load_with(&path, Device::Cpu, opts());
    std::fs::remove_file(&path).unwrap();
    let models = [
        loaded.unwrap(),
        OnnxModel::from_bytes_with(&bytes, None, Device::Cpu, opts()).unwrap(),
    ];
    for mut model in models {
        let text = model.graph_text().unwrap();
        assert!(
            !text.contains("sqrt"),
            "a batch norm was not folded:\n{text}"
        );
        for _ in 0..2 {
            let out = model.run(&[("input", &x)]).unwrap();
            assert_close(&out[0].to_vec::<f32>().unwrap(), &want);
        }
    }
}
