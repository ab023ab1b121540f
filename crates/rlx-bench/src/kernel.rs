//! Kernel-only timings: the CPU backend's matmul kernel called directly on
//! buffers, without a session's input / output copies, to separate GEMM
//! quality from per-run overhead.

use crate::{time_iterations, BenchConfig, BenchResult};
use rlx_cpu::kernels::{f32_bytes, f32_bytes_mut, linalg, View, ViewMut};
use rlx_ir::DType;

/// Times `x @ w` (`x` `m x k`, `w` `k x n`, f32) through
/// `rlx_cpu::kernels::linalg::matmul`, named by [`kernel_name`].
pub fn matmul_kernel(
    m: usize,
    k: usize,
    n: usize,
    cfg: &BenchConfig,
) -> Result<BenchResult, String> {
    let x = crate::patterns::values(m * k, 1, 1.0);
    let w = crate::patterns::values(k * n, 2, 1.0);
    let mut y = vec![0f32; m * n];
    let (xd, wd, yd) = ([m, k], [k, n], [m, n]);
    let samples = time_iterations(cfg, || {
        let ins = [
            View {
                dims: &xd,
                dtype: DType::F32,
                bytes: f32_bytes(&x),
            },
            View {
                dims: &wd,
                dtype: DType::F32,
                bytes: f32_bytes(&w),
            },
        ];
        let mut out = ViewMut {
            dims: &yd,
            dtype: DType::F32,
            bytes: f32_bytes_mut(&mut y),
        };
        linalg::matmul(&ins, &mut out)
    })?;
    let flops = 2.0 * (m * k * n) as f64;
    Ok(BenchResult::from_samples(
        &kernel_name(m, k, n),
        flops,
        samples,
    ))
}

/// The pattern name of an `m x k` by `k x n` product: `gemv_KxN` when `m`
/// is 1, `matmul_N` when square, else `mm_MxKxN`.
pub fn kernel_name(m: usize, k: usize, n: usize) -> String {
    match (m, k, n) {
        (1, k, n) => format!("gemv_{k}x{n}"),
        (m, k, n) if m == k && k == n => format!("matmul_{n}"),
        (m, k, n) => format!("mm_{m}x{k}x{n}"),
    }
}
