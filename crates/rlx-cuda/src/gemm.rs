//! Row-major GEMMs on cuBLAS: `c[m, n] = a[m, k] @ b[k, n]` in f32, TF32
//! (f32 storage, tensor-core inputs rounded to TF32), f16 and bf16 (both
//! accumulated in f32).
//!
//! cuBLAS is column-major; a row-major product is the column-major product
//! of the transposes, `c^T = b^T a^T`, so the operands are passed swapped.

use crate::gemm_lt::{not_supported, CudaLt, LtGemm};
use crate::gpu::{CudaGpu, GpuError};
use crate::plan::{Epilogue, GemmSpec};
use cudarc::cublas::{sys, CudaBlas, Gemm, GemmConfig};
use cudarc::driver::CudaSlice;

/// The arithmetic of a GEMM.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GemmPrecision {
    /// f32 in, f32 FMA.
    F32,
    /// f32 in, inputs rounded to TF32 on tensor cores, f32 accumulate.
    Tf32,
    /// f16 in and out, f32 accumulate.
    F16,
    /// bf16 in and out, f32 accumulate.
    Bf16,
}

/// A cuBLAS handle on a [`CudaGpu`]'s stream, and a cuBLASLt one for
/// GEMMs with fused epilogues (absent when it could not be created: the
/// plain path runs them then).
pub struct CudaGemm {
    blas: CudaBlas,
    lt: Option<CudaLt>,
}

/// `m`, `k`, `n` of `a[m, k] @ b[k, n]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GemmDims {
    /// Rows of a and c.
    pub m: usize,
    /// Columns of a, rows of b.
    pub k: usize,
    /// Columns of b and c.
    pub n: usize,
}

impl GemmDims {
    fn check(&self, a: usize, b: usize, c: usize) -> Result<(), GpuError> {
        let (m, k, n) = (self.m, self.k, self.n);
        if a != m * k || b != k * n || c != m * n {
            return Err(GpuError::BadInput(format!(
                "gemm [{m}, {k}] @ [{k}, {n}]: buffers of {a}, {b}, {c} elements"
            )));
        }
        if [m, k, n].iter().any(|&d| d > i32::MAX as usize || d == 0) {
            return Err(GpuError::BadInput(format!(
                "gemm [{m}, {k}] @ [{k}, {n}]: every dim must be in 1..=i32::MAX"
            )));
        }
        Ok(())
    }

    fn config<T>(&self, one: T, zero: T) -> GemmConfig<T> {
        let (m, k, n) = (self.m as i32, self.k as i32, self.n as i32);
        GemmConfig {
            transa: sys::cublasOperation_t::CUBLAS_OP_N,
            transb: sys::cublasOperation_t::CUBLAS_OP_N,
            m: n,
            n: m,
            k,
            alpha: one,
            lda: n,
            ldb: k,
            beta: zero,
            ldc: n,
        }
    }
}

impl CudaGemm {
    /// A cuBLAS handle on `gpu`'s stream.
    pub fn new(gpu: &CudaGpu) -> Result<CudaGemm, GpuError> {
        Ok(CudaGemm {
            blas: CudaBlas::new(gpu.stream().clone())?,
            lt: CudaLt::new(gpu).ok(),
        })
    }

    /// True when GEMMs with epilogues go through cuBLASLt.
    pub fn has_lt(&self) -> bool {
        self.lt.is_some()
    }

    /// [`CudaGemm::planned`] with `epilogue` fused by cuBLASLt; false
    /// (nothing launched) when there is no cuBLASLt handle or it has no
    /// algorithm for this GEMM, and the caller runs the plain path.
    ///
    /// # Safety
    /// As [`CudaGemm::planned`], and `bias` holds `spec.n` elements of
    /// `dtype`, c overlapping no operand.
    pub unsafe fn planned_bias(
        &self,
        gpu: &CudaGpu,
        spec: &GemmSpec,
        dtype: rlx_ir::DType,
        epilogue: Epilogue,
        places: [u64; 4],
    ) -> Result<bool, GpuError> {
        let Some(lt) = &self.lt else {
            return Ok(false);
        };
        let desc = LtGemm::new(spec, dtype, epilogue)?;
        // SAFETY: the caller's promise.
        match unsafe { lt.run(gpu, &desc, places) } {
            Ok(()) => Ok(true),
            Err(e) if not_supported(&e) => Ok(false),
            Err(e) => Err(e),
        }
    }

    fn math_mode(&self, tf32: bool) -> Result<(), GpuError> {
        let mode = if tf32 {
            sys::cublasMath_t::CUBLAS_TF32_TENSOR_OP_MATH
        } else {
            sys::cublasMath_t::CUBLAS_DEFAULT_MATH
        };
        // SAFETY: the handle is live for `self`.
        unsafe { sys::cublasSetMathMode(*self.blas.handle(), mode) }.result()?;
        Ok(())
    }

    /// f32 `c = a @ b` (TF32 tensor cores when `precision` is `Tf32`).
    pub fn f32(
        &self,
        a: &CudaSlice<f32>,
        b: &CudaSlice<f32>,
        c: &mut CudaSlice<f32>,
        dims: GemmDims,
        precision: GemmPrecision,
    ) -> Result<(), GpuError> {
        dims.check(a.len(), b.len(), c.len())?;
        self.math_mode(precision == GemmPrecision::Tf32)?;
        // SAFETY: lengths checked against dims above; swapped for row-major.
        unsafe { self.blas.gemm(dims.config(1.0f32, 0.0), b, a, c) }?;
        Ok(())
    }

    /// f16 `c = a @ b`, f32 accumulation.
    pub fn f16(
        &self,
        a: &CudaSlice<half::f16>,
        b: &CudaSlice<half::f16>,
        c: &mut CudaSlice<half::f16>,
        dims: GemmDims,
    ) -> Result<(), GpuError> {
        dims.check(a.len(), b.len(), c.len())?;
        self.math_mode(false)?;
        let (one, zero) = (half::f16::ONE, half::f16::ZERO);
        // SAFETY: as in `f32`.
        unsafe { self.blas.gemm(dims.config(one, zero), b, a, c) }?;
        Ok(())
    }

    /// bf16 `c = a @ b`, f32 accumulation.
    pub fn bf16(
        &self,
        a: &CudaSlice<half::bf16>,
        b: &CudaSlice<half::bf16>,
        c: &mut CudaSlice<half::bf16>,
        dims: GemmDims,
    ) -> Result<(), GpuError> {
        dims.check(a.len(), b.len(), c.len())?;
        self.math_mode(false)?;
        let (one, zero) = (half::bf16::ONE, half::bf16::ZERO);
        // SAFETY: as in `f32`.
        unsafe { self.blas.gemm(dims.config(one, zero), b, a, c) }?;
        Ok(())
    }
}

impl CudaGemm {
    /// A planned strided-batched GEMM on raw device addresses (row-major,
    /// see [`GemmSpec`]): `dtype` is the storage of a, b and c (f32 with
    /// f32 math, f16 / bf16 with f32 accumulation).
    ///
    /// # Safety
    /// `a`, `b` and `c` must address device buffers of this handle's
    /// context holding the elements `spec` reads and writes.
    pub unsafe fn planned(
        &self,
        spec: &GemmSpec,
        dtype: rlx_ir::DType,
        [a, b, c]: [u64; 3],
    ) -> Result<(), GpuError> {
        use sys::cublasOperation_t::{CUBLAS_OP_N, CUBLAS_OP_T};
        let data = match dtype {
            rlx_ir::DType::F32 => sys::cudaDataType::CUDA_R_32F,
            rlx_ir::DType::F16 => sys::cudaDataType::CUDA_R_16F,
            rlx_ir::DType::BF16 => sys::cudaDataType::CUDA_R_16BF,
            other => return Err(GpuError::BadInput(format!("no cuBLAS GEMM for {other}"))),
        };
        self.math_mode(false)?;
        let (m, k, n) = (spec.m as i32, spec.k as i32, spec.n as i32);
        // Row-major c = op(a) op(b) is column-major c^T = op(b)^T op(a)^T.
        let (op_b, ld_b) = if spec.trans_b {
            (CUBLAS_OP_T, k)
        } else {
            (CUBLAS_OP_N, n)
        };
        let (op_a, ld_a) = if spec.trans_a {
            (CUBLAS_OP_T, m)
        } else {
            (CUBLAS_OP_N, k)
        };
        let (one, zero) = (1.0f32, 0.0f32);
        cudarc::cublas::result::gemm_strided_batched_ex(
            *self.blas.handle(),
            op_b,
            op_a,
            n,
            m,
            k,
            (&one as *const f32).cast(),
            b as *const std::ffi::c_void,
            data,
            ld_b,
            spec.stride_b as i64,
            a as *const std::ffi::c_void,
            data,
            ld_a,
            spec.stride_a as i64,
            (&zero as *const f32).cast(),
            c as *mut std::ffi::c_void,
            data,
            n,
            (spec.m * spec.n) as i64,
            spec.batch as i32,
            sys::cublasComputeType_t::CUBLAS_COMPUTE_32F,
            sys::cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT,
        )?;
        Ok(())
    }
}
