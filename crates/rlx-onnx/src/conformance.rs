//! Running ONNX backend test cases (`model.onnx` + `test_data_set_0/*.pb`)
//! and comparing outputs the way onnx's backend runner does
//! (`np.testing.assert_allclose`, dtype and dims exact). Used by the
//! conformance example and by the fixture test.

use crate::{read_tensor_file, Device, OnnxError, OnnxModel};
use rlx_ir::{DType, HostTensor};
use std::path::Path;

/// The outcome of one case.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
pub enum Outcome {
    /// Every output matches.
    Pass,
    /// An output differs, or loading / running failed.
    Fail,
    /// The model uses an op or dtype RLX does not support.
    Unsupported,
}

/// The case's (rtol, atol) from `tolerance.txt`, else onnx's defaults.
pub fn tolerance(dir: &Path) -> (f64, f64) {
    std::fs::read_to_string(dir.join("tolerance.txt"))
        .ok()
        .and_then(|s| {
            let v: Vec<f64> = s
                .split_whitespace()
                .filter_map(|x| x.parse().ok())
                .collect();
            (v.len() == 2).then(|| (v[0], v[1]))
        })
        .unwrap_or((1e-3, 1e-7))
}

/// True for errors that mean "not supported" rather than "wrong".
pub fn is_unsupported(e: &OnnxError) -> bool {
    match e {
        OnnxError::Unsupported(_) | OnnxError::UnsupportedDType { .. } => true,
        OnnxError::Invalid(m) => m.contains("not a plain tensor"),
        OnnxError::Opset {
            version: Some(v),
            max,
            ..
        } => v > max,
        _ => false,
    }
}

/// numpy `assert_allclose`: |a - e| <= atol + rtol * |e|, NaNs equal, infinities equal.
pub fn compare(got: &HostTensor, want: &HostTensor, rtol: f64, atol: f64) -> Result<(), String> {
    if got.dtype() != want.dtype() {
        return Err(format!(
            "dtype {} vs expected {}",
            got.dtype(),
            want.dtype()
        ));
    }
    if got.dims() != want.dims() {
        return Err(format!(
            "dims {:?} vs expected {:?}",
            got.dims(),
            want.dims()
        ));
    }
    let (a, e) = (values(got), values(want));
    let exact = !want.dtype().is_float() && want.dtype() != DType::C64;
    let mut worst: Option<(usize, f64, f64)> = None;
    let mut bad = 0usize;
    for (i, (&x, &y)) in a.iter().zip(&e).enumerate() {
        let ok = if x.is_nan() || y.is_nan() {
            x.is_nan() && y.is_nan()
        } else if x.is_infinite() || y.is_infinite() || exact {
            x == y
        } else {
            (x - y).abs() <= atol + rtol * y.abs()
        };
        if !ok {
            bad += 1;
            if worst.is_none_or(|(_, wx, wy)| (x - y).abs() > (wx - wy).abs()) {
                worst = Some((i, x, y));
            }
        }
    }
    match worst {
        None => Ok(()),
        Some((i, x, y)) => Err(format!(
            "{bad}/{} values differ; worst at {i}: got {x}, expected {y}",
            a.len()
        )),
    }
}

/// Values as f64 (complex: re, im interleaved).
pub fn values(t: &HostTensor) -> Vec<f64> {
    match t.dtype() {
        DType::I64 => t
            .to_vec::<i64>()
            .unwrap()
            .into_iter()
            .map(|v| v as f64)
            .collect(),
        DType::C64 => t
            .to_vec::<rlx_ir::Complex32>()
            .unwrap()
            .into_iter()
            .flat_map(|c| [c.re as f64, c.im as f64])
            .collect(),
        _ => t.to_f64_lossy(),
    }
}

/// Runs one case directory on `device`: (outcome, detail).
pub fn run_case_on(device: Device, dir: &Path) -> (Outcome, String) {
    let (rtol, atol) = tolerance(dir);
    let data = dir.join("test_data_set_0");
    if !data.is_dir() {
        return (
            Outcome::Unsupported,
            "inputs / outputs are not plain tensors".into(),
        );
    }
    let mut model = match OnnxModel::load(dir.join("model.onnx"), device) {
        Ok(m) => m,
        Err(e) if is_unsupported(&e) => return (Outcome::Unsupported, e.to_string()),
        Err(e) => return (Outcome::Fail, format!("load: {e}")),
    };
    let names: Vec<String> = model.inputs().iter().map(|i| i.name.clone()).collect();
    let mut inputs = Vec::new();
    for (j, name) in names.iter().enumerate() {
        match read_tensor_file(data.join(format!("input_{j}.pb"))) {
            Ok((_, t)) => inputs.push((name.clone(), t)),
            Err(e) if is_unsupported(&e) => return (Outcome::Unsupported, e.to_string()),
            Err(e) => return (Outcome::Fail, format!("input {j}: {e}")),
        }
    }
    let mut expected = Vec::new();
    for j in 0..model.outputs().len() {
        match read_tensor_file(data.join(format!("output_{j}.pb"))) {
            Ok((_, t)) => expected.push(t),
            Err(e) if is_unsupported(&e) => return (Outcome::Unsupported, e.to_string()),
            Err(e) => return (Outcome::Fail, format!("output {j}: {e}")),
        }
    }
    let feed: Vec<(&str, &HostTensor)> = inputs.iter().map(|(n, t)| (n.as_str(), t)).collect();
    let outs = match model.run(&feed) {
        Ok(o) => o,
        Err(e) if is_unsupported(&e) => return (Outcome::Unsupported, e.to_string()),
        Err(e) => return (Outcome::Fail, format!("run: {e}")),
    };
    for (j, (got, want)) in outs.iter().zip(&expected).enumerate() {
        if let Err(m) = compare(got, want, rtol, atol) {
            return (Outcome::Fail, format!("output {j}: {m}"));
        }
    }
    (Outcome::Pass, String::new())
}
