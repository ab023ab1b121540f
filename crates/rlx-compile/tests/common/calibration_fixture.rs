//! The calibration fixtures of `tools/gen_calibration_fixtures.py`
//! (ONNX Runtime's thresholds), decoded; shared by rlx-compile's and
//! rlx-runtime's tests through `#[path]`.
#![allow(dead_code)] // each test binary uses its own subset

use serde_json::Value;

const JSON: &str = include_str!("../fixtures/calibration.json");
const DATA: &[u8] = include_bytes!("../fixtures/calibration_data.bin");

/// One fixture tensor: its batches (values, dims), channel axis and the
/// expected ranges per method.
pub struct Tensor {
    pub name: String,
    pub axis: Option<usize>,
    pub batches: Vec<(Vec<f32>, Vec<usize>)>,
    pub methods: Value,
}

/// The method parameters and every tensor.
pub fn tensors() -> (Value, Vec<Tensor>) {
    let meta: Value = serde_json::from_str(JSON).unwrap();
    let tensors = meta["tensors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let batches = t["batches"]
                .as_array()
                .unwrap()
                .iter()
                .map(|b| {
                    let dims: Vec<usize> = b["dims"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|d| d.as_u64().unwrap() as usize)
                        .collect();
                    let off = b["offset"].as_u64().unwrap() as usize;
                    let n: usize = dims.iter().product();
                    let values = DATA[off..off + 4 * n]
                        .chunks_exact(4)
                        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
                        .collect();
                    (values, dims)
                })
                .collect();
            Tensor {
                name: t["name"].as_str().unwrap().to_string(),
                axis: t["axis"].as_u64().map(|a| a as usize),
                batches,
                methods: t["methods"].clone(),
            }
        })
        .collect();
    (meta["methods"].clone(), tensors)
}

/// The tensor called `name`.
pub fn tensor(name: &str) -> Tensor {
    tensors().1.into_iter().find(|t| t.name == name).unwrap()
}

/// The (lo, hi) thresholds of one method entry, per channel.
pub fn ranges(v: &Value) -> (Vec<f32>, Vec<f32>) {
    v.as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["lo"].as_f64().unwrap() as f32,
                r["hi"].as_f64().unwrap() as f32,
            )
        })
        .unzip()
}
