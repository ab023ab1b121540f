//! Fixture and data loading shared by the tests.
#![allow(dead_code)]

use serde_json::Value;

pub fn load(name: &str) -> Value {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

pub fn f64s(v: &Value) -> Vec<f64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect()
}

pub fn matrix(v: &Value) -> (Vec<f64>, usize) {
    let rows = v.as_array().unwrap();
    let cols = rows[0].as_array().unwrap().len();
    (rows.iter().flat_map(f64s).collect(), cols)
}

pub fn usizes(v: &Value) -> Vec<usize> {
    v.as_array()
        .unwrap()
        .iter()
        .flat_map(|r| match r.as_array() {
            Some(a) => a.iter().map(|x| x.as_u64().unwrap() as usize).collect(),
            None => vec![r.as_u64().unwrap() as usize],
        })
        .collect()
}

#[path = "../../examples/common/digits.rs"]
mod digits_file;

/// The digits pixels (raw 0..16, `[1797, 64]`) and labels.
pub fn digits() -> (Vec<f64>, Vec<usize>) {
    digits_file::load_digits().unwrap()
}

pub fn to_f64(v: &[f32]) -> Vec<f64> {
    v.iter().map(|&x| x as f64).collect()
}
