//! Import + compile time of one ONNX model, split into its stages (for
//! profiling issue 28's import speed): `cnn_import <model.onnx> [reps]`.
//! Prints the file read + decode, the import to a graph, `prepare` (import
//! and compile for the input's shape), and the first run against a steady
//! run. `RLX_CPU_PROFILE=1` prints the executable's per-op table at the
//! end (`runs` steady runs).

use rlx_ir::HostTensor;
use rlx_onnx::OnnxModel;
use rlx_runtime::Device;
use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let path = args
        .next()
        .ok_or("usage: cnn_import <model.onnx> [reps] [runs]")?;
    let reps: usize = args.next().map(|r| r.parse()).transpose()?.unwrap_or(1);
    let runs: usize = args.next().map(|r| r.parse()).transpose()?.unwrap_or(1);
    for _ in 0..reps {
        let t = Instant::now();
        let mut model = OnnxModel::load(&path, Device::Cpu)?;
        let load = t.elapsed();
        let t = Instant::now();
        let imported = model.import()?;
        let import = t.elapsed();
        drop(imported);
        let dims: Vec<usize> = model.inputs()[0]
            .dims
            .iter()
            .map(|d| d.as_static().ok_or("symbolic input dim"))
            .collect::<Result<_, _>>()?;
        let x = HostTensor::from_vec(vec![0.5f32; dims.iter().product()], &dims)?;
        let name = model.inputs()[0].name.clone();
        let t = Instant::now();
        model.prepare(&[(&name, &x)])?;
        let prepare = t.elapsed();
        let t = Instant::now();
        model.run(&[(&name, &x)])?;
        let first = t.elapsed();
        let t = Instant::now();
        for _ in 0..runs.max(1) {
            model.run(&[(&name, &x)])?;
        }
        let steady = t.elapsed() / runs.max(1) as u32;
        println!(
            "load {:.1} ms, import {:.1} ms, prepare (import + compile) {:.1} ms, first run {:.1} ms, steady run {:.1} ms",
            load.as_secs_f64() * 1e3,
            import.as_secs_f64() * 1e3,
            prepare.as_secs_f64() * 1e3,
            first.as_secs_f64() * 1e3,
            steady.as_secs_f64() * 1e3
        );
    }
    // The compile cache keeps the executable (and its `RLX_CPU_PROFILE`
    // table, printed when it is dropped) alive until it is cleared.
    rlx_onnx::clear_compile_cache();
    Ok(())
}
