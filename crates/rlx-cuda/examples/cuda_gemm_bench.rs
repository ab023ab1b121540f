//! GEMM throughput of rlx-cuda's cuBLAS paths (f32, TF32, f16, bf16) at
//! `N x N x N` (default 4096), timed with CUDA events on the device's
//! stream: one warm-up, then the median of `--reps` runs. Prints one row
//! per precision: `gemm <prec> <N>^3: <ms> ms, <TFLOP/s>`.
//!
//! `cargo run --release -p rlx-cuda --example cuda_gemm_bench -- [N] [reps]`

use half::{bf16, f16};
use rlx_cuda::gemm::{CudaGemm, GemmDims, GemmPrecision};
use rlx_cuda::gpu::CudaGpu;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let n: usize = args.next().map(|s| s.parse()).transpose()?.unwrap_or(4096);
    let reps: usize = args.next().map(|s| s.parse()).transpose()?.unwrap_or(20);
    let gpu = CudaGpu::new(0)?;
    let blas = CudaGemm::new(&gpu)?;
    let dims = GemmDims { m: n, k: n, n };
    let host: Vec<f32> = (0..n * n)
        .map(|i| ((i * 7919) % 1000) as f32 / 1000.0 - 0.5)
        .collect();
    let a = gpu.upload(&host)?;
    let b = gpu.upload(&host)?;
    let mut c = gpu.zeros::<f32>(n * n)?;
    let h16: Vec<f16> = host.iter().map(|&v| f16::from_f32(v)).collect();
    let (a16, b16) = (gpu.upload(&h16)?, gpu.upload(&h16)?);
    let mut c16 = gpu.zeros::<f16>(n * n)?;
    let hb: Vec<bf16> = host.iter().map(|&v| bf16::from_f32(v)).collect();
    let (ab, bb) = (gpu.upload(&hb)?, gpu.upload(&hb)?);
    let mut cb = gpu.zeros::<bf16>(n * n)?;

    let time = |name: &str,
                run: &mut dyn FnMut() -> Result<(), rlx_cuda::gpu::GpuError>|
     -> Result<(), Box<dyn std::error::Error>> {
        run()?;
        let stream = gpu.stream();
        let mut ms = Vec::with_capacity(reps);
        for _ in 0..reps {
            let start =
                stream.record_event(Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT))?;
            run()?;
            let end =
                stream.record_event(Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT))?;
            end.synchronize()?;
            ms.push(start.elapsed_ms(&end)? as f64);
        }
        ms.sort_by(f64::total_cmp);
        let med = ms[ms.len() / 2];
        let tflops = 2.0 * (n as f64).powi(3) / (med * 1e-3) / 1e12;
        println!("gemm {name:<4} {n}^3: {med:.3} ms, {tflops:.1} TFLOP/s");
        Ok(())
    };
    time("f32", &mut || {
        blas.f32(&a, &b, &mut c, dims, GemmPrecision::F32)
    })?;
    time("tf32", &mut || {
        blas.f32(&a, &b, &mut c, dims, GemmPrecision::Tf32)
    })?;
    time("f16", &mut || blas.f16(&a16, &b16, &mut c16, dims))?;
    time("bf16", &mut || blas.bf16(&ab, &bb, &mut cb, dims))?;
    Ok(())
}
