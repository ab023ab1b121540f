//! The CPU backend as the reference the CUDA plans and runs are compared
//! with (itself checked against numpy by the op matrix).

use rlx_compile::{lower, LowerOptions};
use rlx_driver::{Backend, Executable};
use rlx_ir::{Graph, HostTensor};

/// `g` compiled for `backend` with the default pipeline.
pub fn compile(backend: &dyn Backend, g: &Graph) -> Box<dyn Executable> {
    let lir = lower(g, &|op| backend.claims(op), &LowerOptions::default()).unwrap();
    backend.compile(lir).unwrap()
}

/// Sets params by name and runs once with inputs by name.
pub fn run(
    exe: &mut dyn Executable,
    params: &[(&str, &HostTensor)],
    inputs: &[(&str, &HostTensor)],
) -> Vec<HostTensor> {
    for (k, (_, name, _)) in exe.lir().io.params.clone().iter().enumerate() {
        let v = params
            .iter()
            .find(|p| p.0 == name)
            .unwrap_or_else(|| panic!("no param {name}"));
        exe.set_param(k, v.1).unwrap();
    }
    let ins = ordered_inputs(exe.lir(), inputs);
    exe.run(&ins).unwrap()
}

/// `inputs` in `lir`'s manifest order.
pub fn ordered_inputs<'a>(
    lir: &rlx_compile::LirModule,
    inputs: &[(&str, &'a HostTensor)],
) -> Vec<&'a HostTensor> {
    lir.io
        .inputs
        .iter()
        .map(|(_, name, _)| {
            inputs
                .iter()
                .find(|i| i.0 == name)
                .unwrap_or_else(|| panic!("no input {name}"))
                .1
        })
        .collect()
}

/// `params` in `lir`'s manifest order.
pub fn ordered_params<'a>(
    lir: &rlx_compile::LirModule,
    params: &[(&str, &'a HostTensor)],
) -> Vec<&'a HostTensor> {
    lir.io
        .params
        .iter()
        .map(|(_, name, _)| {
            params
                .iter()
                .find(|i| i.0 == name)
                .unwrap_or_else(|| panic!("no param {name}"))
                .1
        })
        .collect()
}

/// Largest `|a - b| / (atol + rtol |b|)` over every element: at most 1 passes.
pub fn worst(a: &[f64], b: &[f64], rtol: f64, atol: f64) -> f64 {
    assert_eq!(a.len(), b.len(), "lengths differ");
    a.iter()
        .zip(b)
        .map(|(x, y)| {
            if x == y || (x.is_nan() && y.is_nan()) {
                0.0
            } else {
                (x - y).abs() / (atol + rtol * y.abs())
            }
        })
        .fold(0.0, f64::max)
}

/// A tensor's values as f64 (f32 / f16 / i64 / i32 tensors).
pub fn f64s(t: &HostTensor) -> Vec<f64> {
    match t.dtype() {
        rlx_ir::DType::F32 => t
            .to_vec::<f32>()
            .unwrap()
            .into_iter()
            .map(f64::from)
            .collect(),
        rlx_ir::DType::F16 => t
            .to_vec::<half::f16>()
            .unwrap()
            .into_iter()
            .map(f64::from)
            .collect(),
        rlx_ir::DType::I64 => t
            .to_vec::<i64>()
            .unwrap()
            .into_iter()
            .map(|v| v as f64)
            .collect(),
        rlx_ir::DType::I32 => t
            .to_vec::<i32>()
            .unwrap()
            .into_iter()
            .map(f64::from)
            .collect(),
        rlx_ir::DType::Bool => t.bytes().iter().map(|&b| f64::from(b)).collect(),
        other => panic!("no f64 view of {other}"),
    }
}
