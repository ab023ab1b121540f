//! Kernel-only timings: the CPU backend's matmul kernel called directly on
//! buffers, without a session's input / output copies, to separate GEMM
//! quality from per-run overhead.

use crate::{time_iterations, BenchConfig, BenchResult};
use rlx_cpu::kernels::{f32_bytes, linalg, KernelError, View, ViewMut};
use rlx_ir::DType;

/// Times `x @ w` (`x` `m x k`, `w` `k x n`, f32) through
/// `rlx_cpu::kernels::linalg::matmul`, named by [`kernel_name`].
pub fn matmul_kernel(
    m: usize,
    k: usize,
    n: usize,
    cfg: &BenchConfig,
) -> Result<BenchResult, KernelError> {
    typed_matmul_kernel(m, k, n, DType::F32, cfg)
}

/// [`matmul_kernel`] with operands and result of `dtype` (F32 or BF16:
/// the `vdpbf16ps` kernel where the CPU has AVX-512 BF16), named
/// `matmul_bf16_N` for a square BF16 product.
pub fn typed_matmul_kernel(
    m: usize,
    k: usize,
    n: usize,
    dtype: DType,
    cfg: &BenchConfig,
) -> Result<BenchResult, KernelError> {
    let encode = |v: Vec<f32>| -> Vec<u8> {
        match dtype {
            DType::BF16 => v
                .iter()
                .flat_map(|&x| half::bf16::from_f32(x).to_le_bytes())
                .collect(),
            _ => f32_bytes(&v).to_vec(),
        }
    };
    // u64-backed so the byte views are aligned for any element type.
    let aligned = |b: Vec<u8>| -> Vec<u64> {
        let mut w = vec![0u64; b.len().div_ceil(8)];
        for (i, c) in b.chunks(8).enumerate() {
            let mut word = [0u8; 8];
            word[..c.len()].copy_from_slice(c);
            w[i] = u64::from_le_bytes(word);
        }
        w
    };
    let width = dtype.size_bytes();
    let x = aligned(encode(crate::patterns::values(m * k, 1, 1.0)));
    let w = aligned(encode(crate::patterns::values(k * n, 2, 1.0)));
    let mut y = vec![0u64; (m * n * width).div_ceil(8)];
    let (xd, wd, yd) = ([m, k], [k, n], [m, n]);
    let samples = time_iterations(cfg, || {
        let ins = [
            View {
                dims: &xd,
                dtype,
                bytes: &u64_bytes(&x)[..m * k * width],
            },
            View {
                dims: &wd,
                dtype,
                bytes: &u64_bytes(&w)[..k * n * width],
            },
        ];
        let mut out = ViewMut {
            dims: &yd,
            dtype,
            bytes: &mut u64_bytes_mut(&mut y)[..m * n * width],
        };
        linalg::matmul(&ins, &mut out)
    })?;
    let flops = 2.0 * (m * k * n) as f64;
    let name = match dtype {
        DType::BF16 if m == k && k == n => format!("matmul_bf16_{n}"),
        _ => kernel_name(m, k, n),
    };
    Ok(BenchResult::from_samples(&name, flops, samples))
}

fn u64_bytes(v: &[u64]) -> &[u8] {
    // SAFETY: u64 has no padding; u8 has alignment 1.
    unsafe { std::slice::from_raw_parts(v.as_ptr() as *const u8, v.len() * 8) }
}

fn u64_bytes_mut(v: &mut [u64]) -> &mut [u8] {
    // SAFETY: as above, with a unique borrow; any byte pattern is a valid u64.
    unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr() as *mut u8, v.len() * 8) }
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
