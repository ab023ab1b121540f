//! Test-only reader of the numpy fixtures of `tools/gen_cnn_ops_fixtures.py`
//! (pooling and transposed conv): inputs rebuilt from the script's
//! formulas, outputs compared value by value or by the two sums.

use rlx_ir::op::Window;
use serde_json::Value;

/// `((i * a) % m - m / 2) / scale` over `0..n`, the script's inputs.
pub(crate) fn seq(n: usize, a: usize, m: usize, scale: f32) -> Vec<f32> {
    (0..n)
        .map(|i| (((i * a) % m) as f32 - (m / 2) as f32) / scale)
        .collect()
}

/// A list of non-negative integers.
pub(crate) fn dims(v: &Value) -> Vec<usize> {
    v.as_array()
        .expect("a list")
        .iter()
        .map(|d| d.as_u64().expect("a dim") as usize)
        .collect()
}

/// The cases of fixture `text`.
pub(crate) fn cases(text: &str) -> Vec<Value> {
    let fixture: Value = serde_json::from_str(text).expect("fixture JSON");
    fixture["cases"].as_array().expect("cases").clone()
}

/// The window of a case (`kernel` may be absent: a conv's comes from its weight).
pub(crate) fn window(case: &Value) -> Window {
    Window {
        kernel: case.get("kernel").map(dims).unwrap_or_default(),
        stride: dims(&case["stride"]),
        padding: case["pads"]
            .as_array()
            .expect("pads")
            .iter()
            .map(|p| {
                let p = dims(p);
                (p[0], p[1])
            })
            .collect(),
        dilation: dims(&case["dilation"]),
    }
}

/// The case's input `x`: the script's sequence with NaN at `nan_at`.
pub(crate) fn input(case: &Value) -> Vec<f32> {
    let mut x = seq(dims(&case["x"]).iter().product(), 7, 23, 8.0);
    for i in case.get("nan_at").map(dims).unwrap_or_default() {
        x[i] = f32::NAN;
    }
    x
}

/// Checks `got` against the case's numpy values (`y`, null for NaN) or
/// its two sums, within `1e-5` relative.
pub(crate) fn check(case: &Value, got: &[f32]) {
    let name = case["name"].as_str().expect("name");
    let close = |g: f64, w: f64, scale: f64| (g - w).abs() <= 1e-5 * (scale + w.abs());
    if let Some(want) = case.get("y") {
        let want = want.as_array().expect("y");
        assert_eq!(got.len(), want.len(), "{name}");
        for (i, (&g, w)) in got.iter().zip(want).enumerate() {
            match w.as_f64() {
                Some(w) => assert!(close(g as f64, w, 1.0), "{name}[{i}]: {g} vs numpy {w}"),
                None => assert!(g.is_nan(), "{name}[{i}]: {g} vs numpy NaN"),
            }
        }
        return;
    }
    let n = got.len() as f64;
    let sum: f64 = got.iter().map(|&v| v as f64).sum();
    let weighted: f64 = got
        .iter()
        .enumerate()
        .map(|(i, &v)| v as f64 * ((i * 31) % 17) as f64)
        .sum();
    let (ws, ww) = (case["sum"].as_f64(), case["weighted_sum"].as_f64());
    let (ws, ww) = (ws.expect("sum"), ww.expect("weighted_sum"));
    assert!(close(sum, ws, n), "{name}: sum {sum} vs numpy {ws}");
    assert!(
        close(weighted, ww, 16.0 * n),
        "{name}: weighted sum {weighted} vs numpy {ww}"
    );
}
