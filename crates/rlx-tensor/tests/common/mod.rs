//! Shared test helpers: fixtures, compile + run on the CPU, comparison.

#![allow(dead_code)]

use rlx_ir::{DType, Graph, HostTensor};
use rlx_runtime::{Device, Session};
use serde_json::Value;

/// One fixture tensor.
pub struct Fx {
    pub name: String,
    pub dtype: DType,
    pub dims: Vec<usize>,
    pub data: Vec<f64>,
}

pub fn parse_tensor(v: &Value) -> Fx {
    let dtype = match v["dtype"].as_str().unwrap() {
        "f32" => DType::F32,
        "i32" => DType::I32,
        "bool" => DType::Bool,
        d => panic!("fixture dtype {d}"),
    };
    Fx {
        name: v
            .get("name")
            .and_then(|n| n.as_str())
            .unwrap_or("")
            .to_string(),
        dtype,
        dims: v["shape"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d.as_u64().unwrap() as usize)
            .collect(),
        data: v["data"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d.as_f64().unwrap_or(f64::NAN))
            .collect(), // null = NaN
    }
}

pub fn host(fx: &Fx) -> HostTensor {
    match fx.dtype {
        DType::F32 => HostTensor::from_vec(
            fx.data.iter().map(|&v| v as f32).collect::<Vec<f32>>(),
            &fx.dims,
        )
        .unwrap(),
        DType::I32 => HostTensor::from_vec(
            fx.data.iter().map(|&v| v as i32).collect::<Vec<i32>>(),
            &fx.dims,
        )
        .unwrap(),
        DType::Bool => HostTensor::from_vec(
            fx.data.iter().map(|&v| v != 0.0).collect::<Vec<bool>>(),
            &fx.dims,
        )
        .unwrap(),
        d => panic!("{d}"),
    }
}

/// Compiles `g` on the CPU and runs it on the named inputs.
pub fn run(g: Graph, inputs: &[(&str, HostTensor)]) -> Vec<HostTensor> {
    let mut c = Session::new(Device::Cpu).try_compile(g).expect("compile");
    let refs: Vec<(&str, &HostTensor)> = inputs.iter().map(|(n, t)| (*n, t)).collect();
    c.try_run_typed(&refs).expect("run")
}

/// `got` against `want`: same dims, dtype class, values within `atol + rtol |want|`.
pub fn compare(
    what: &str,
    got: &HostTensor,
    want: &Fx,
    rtol: f64,
    atol: f64,
) -> Result<(), String> {
    if got.dims() != want.dims.as_slice() {
        return Err(format!(
            "{what}: dims {:?}, want {:?}",
            got.dims(),
            want.dims
        ));
    }
    let float_got = got.dtype().is_float();
    let float_want = want.dtype == DType::F32;
    if float_got != float_want || (want.dtype == DType::Bool) != (got.dtype() == DType::Bool) {
        return Err(format!(
            "{what}: dtype {}, want {:?}",
            got.dtype(),
            want.dtype
        ));
    }
    let g = got.to_f64_lossy();
    let scale = want.data.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    for (i, (a, b)) in g.iter().zip(&want.data).enumerate() {
        let tol = atol * scale.max(1.0) + rtol * b.abs();
        if !((a - b).abs() <= tol || (a.is_nan() && b.is_nan()) || a == b) {
            return Err(format!(
                "{what}: element {i} is {a}, want {b} (tol {tol:.3e})"
            ));
        }
    }
    Ok(())
}
