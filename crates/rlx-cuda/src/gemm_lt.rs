//! cuBLASLt GEMMs with a fused epilogue (bias, bias + ReLU, bias + tanh
//! GELU) for the planned [`Kernel::GemmBias`](crate::plan::Kernel::GemmBias)
//! steps. [`LtGemm::new`] turns a row-major [`GemmSpec`] into cuBLASLt's
//! column-major descriptors as plain values (unit-tested without a GPU);
//! [`CudaLt::run`] builds the descriptors, asks the heuristic for an
//! algorithm and launches. A combination cuBLASLt has no algorithm for
//! comes back as `CUBLAS_STATUS_NOT_SUPPORTED`, on which the executor runs
//! the plain cuBLAS GEMM and the elementwise kernels instead.
//!
//! Row-major `c = op(a) op(b)` is column-major `cᵀ = op(b)ᵀ op(a)ᵀ`: Lt's
//! A is our b, its B our a, and its `M` our `n`, so the bias (one value
//! per column of our c) is Lt's per-row bias, broadcast over rows and
//! batches.

use crate::gpu::{CudaGpu, GpuError};
use crate::plan::{Epilogue, GemmSpec};
use cudarc::cublaslt::result as lt;
use cudarc::cublaslt::result::CublasError;
/// cuBLASLt's C types (descriptor enums), re-exported for [`LtGemm`]'s fields.
pub use cudarc::cublaslt::sys;
use cudarc::driver::{CudaSlice, DevicePtr};
use rlx_ir::DType;
use std::ffi::c_void;

/// One matrix's cuBLASLt layout (column-major, as stored).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LtLayout {
    /// Rows.
    pub rows: u64,
    /// Columns.
    pub cols: u64,
    /// Leading dimension.
    pub ld: i64,
    /// Elements between the matrices of a batch (0: one matrix for all).
    pub stride: i64,
}

/// A cuBLASLt matmul with an epilogue, as plain values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LtGemm {
    /// Storage type of a, b, c and the bias.
    pub data: sys::cudaDataType,
    /// Compute type (f32 accumulation; never TF32).
    pub compute: sys::cublasComputeType_t,
    /// Lt's A (our b) is transposed.
    pub trans_a: bool,
    /// Lt's B (our a) is transposed.
    pub trans_b: bool,
    /// Lt's A: our b.
    pub a: LtLayout,
    /// Lt's B: our a.
    pub b: LtLayout,
    /// The result (C and D): our c, `n x m` column-major.
    pub d: LtLayout,
    /// Batch count.
    pub batch: i32,
    /// The epilogue.
    pub epilogue: sys::cublasLtEpilogue_t,
}

impl LtGemm {
    /// The descriptors of `spec` over `dtype` storage with `epilogue`.
    pub fn new(spec: &GemmSpec, dtype: DType, epilogue: Epilogue) -> Result<LtGemm, GpuError> {
        let data = match dtype {
            DType::F32 => sys::cudaDataType::CUDA_R_32F,
            DType::F16 => sys::cudaDataType::CUDA_R_16F,
            DType::BF16 => sys::cudaDataType::CUDA_R_16BF,
            other => return Err(GpuError::BadInput(format!("no cuBLASLt GEMM for {other}"))),
        };
        let (m, k, n) = (spec.m as u64, spec.k as u64, spec.n as u64);
        if spec.batch == 0 || m == 0 || k == 0 || n == 0 || spec.batch > i32::MAX as usize {
            return Err(GpuError::BadInput(format!(
                "cuBLASLt GEMM of {} x [{m}, {k}] @ [{k}, {n}]: every dim must be positive (batch within i32)",
                spec.batch
            )));
        }
        // Stored as [k, n] row-major = n x k column-major, or transposed.
        let a = match spec.trans_b {
            false => (n, k, n as i64),
            true => (k, n, k as i64),
        };
        let b = match spec.trans_a {
            false => (k, m, k as i64),
            true => (m, k, m as i64),
        };
        let layout = |(rows, cols, ld): (u64, u64, i64), stride: usize| LtLayout {
            rows,
            cols,
            ld,
            stride: stride as i64,
        };
        Ok(LtGemm {
            data,
            compute: sys::cublasComputeType_t::CUBLAS_COMPUTE_32F,
            trans_a: spec.trans_b,
            trans_b: spec.trans_a,
            a: layout(a, spec.stride_b),
            b: layout(b, spec.stride_a),
            d: layout((n, m, n as i64), spec.m * spec.n),
            batch: spec.batch as i32,
            epilogue: match epilogue {
                Epilogue::Bias => sys::cublasLtEpilogue_t::CUBLASLT_EPILOGUE_BIAS,
                Epilogue::BiasRelu => sys::cublasLtEpilogue_t::CUBLASLT_EPILOGUE_RELU_BIAS,
                Epilogue::BiasGeluTanh => sys::cublasLtEpilogue_t::CUBLASLT_EPILOGUE_GELU_BIAS,
            },
        })
    }
}

/// Frees a cuBLASLt descriptor when dropped.
struct Guard<T: Copy>(T, unsafe fn(T) -> Result<(), CublasError>);

impl<T: Copy> Drop for Guard<T> {
    fn drop(&mut self) {
        // SAFETY: created by the matching create call, freed once here; a
        // failure to free leaks only the descriptor.
        let _ = unsafe { (self.1)(self.0) };
    }
}

/// A cuBLASLt handle and its workspace on a [`CudaGpu`].
pub struct CudaLt {
    handle: sys::cublasLtHandle_t,
    workspace: CudaSlice<u8>,
}

// SAFETY: the handle is used only through `&self` on the device's one stream
// (cuBLASLt handles are thread-safe for use from one stream).
unsafe impl Send for CudaLt {}
// SAFETY: as above.
unsafe impl Sync for CudaLt {}

/// Workspace for cuBLASLt's split-k algorithms (NVIDIA's advice for Hopper).
const WORKSPACE: usize = 32 << 20;

impl CudaLt {
    /// A handle and workspace on `gpu`.
    pub fn new(gpu: &CudaGpu) -> Result<CudaLt, GpuError> {
        Ok(CudaLt {
            handle: lt::create_handle()?,
            workspace: gpu.zeros::<u8>(WORKSPACE)?,
        })
    }

    /// Launches `desc` on `gpu`'s stream: `c = epilogue(a @ b + bias)`.
    ///
    /// # Safety
    /// `a`, `b`, `bias` and `c` must address device buffers of this
    /// device holding the elements `desc` reads and writes (the bias one
    /// value per column of c), c overlapping none of the others.
    pub unsafe fn run(
        &self,
        gpu: &CudaGpu,
        desc: &LtGemm,
        [a, b, bias, c]: [u64; 4],
    ) -> Result<(), GpuError> {
        use sys::cublasLtMatmulDescAttributes_t as D;
        use sys::cublasLtMatrixLayoutAttribute_t as L;
        let set_desc = |h: sys::cublasLtMatmulDesc_t, attr: D, v: *const c_void, size: usize| {
            // SAFETY: `v` points at `size` bytes of the attribute's type.
            unsafe { lt::set_matmul_desc_attribute(h, attr, v, size) }
        };
        // cublasOperation_t as an i32: 0 N, 1 T.
        let op = |t: bool| i32::from(t);
        let md = Guard(
            lt::create_matmul_desc(desc.compute, sys::cudaDataType::CUDA_R_32F)?,
            lt::destroy_matmul_desc,
        );
        let (ta, tb) = (op(desc.trans_a), op(desc.trans_b));
        set_desc(
            md.0,
            D::CUBLASLT_MATMUL_DESC_TRANSA,
            (&ta as *const i32).cast(),
            std::mem::size_of_val(&ta),
        )?;
        set_desc(
            md.0,
            D::CUBLASLT_MATMUL_DESC_TRANSB,
            (&tb as *const i32).cast(),
            std::mem::size_of_val(&tb),
        )?;
        let ep = desc.epilogue;
        set_desc(
            md.0,
            D::CUBLASLT_MATMUL_DESC_EPILOGUE,
            (&ep as *const sys::cublasLtEpilogue_t).cast(),
            std::mem::size_of_val(&ep),
        )?;
        set_desc(
            md.0,
            D::CUBLASLT_MATMUL_DESC_BIAS_POINTER,
            (&bias as *const u64).cast(),
            8,
        )?;
        let layout = |l: &LtLayout| -> Result<Guard<sys::cublasLtMatrixLayout_t>, GpuError> {
            let g = Guard(
                lt::create_matrix_layout(desc.data, l.rows, l.cols, l.ld)?,
                lt::destroy_matrix_layout,
            );
            let (count, stride) = (desc.batch, l.stride);
            // SAFETY: i32 batch count and i64 stride, the attributes' types.
            unsafe {
                lt::set_matrix_layout_attribute(
                    g.0,
                    L::CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT,
                    (&count as *const i32).cast(),
                    4,
                )?;
                lt::set_matrix_layout_attribute(
                    g.0,
                    L::CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                    (&stride as *const i64).cast(),
                    8,
                )?;
            }
            Ok(g)
        };
        let (la, lb, ld) = (layout(&desc.a)?, layout(&desc.b)?, layout(&desc.d)?);
        let pref = Guard(lt::create_matmul_pref()?, lt::destroy_matmul_pref);
        let ws = self.workspace.len();
        // SAFETY: a usize, the attribute's type.
        unsafe {
            lt::set_matmul_pref_attribute(
                pref.0,
                sys::cublasLtMatmulPreferenceAttributes_t::CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                (&ws as *const usize).cast(),
                std::mem::size_of_val(&ws),
            )
        }?;
        // SAFETY: every descriptor is live until the guards drop below.
        let heuristic = unsafe {
            lt::get_matmul_algo_heuristic(self.handle, md.0, la.0, lb.0, ld.0, ld.0, pref.0)
        }?;
        let (one, zero) = (1.0f32, 0.0f32);
        let (w, _w) = self.workspace.device_ptr(gpu.stream());
        // SAFETY: the caller's promise on the buffers; beta 0 reads no C.
        unsafe {
            lt::matmul(
                self.handle,
                md.0,
                (&one as *const f32).cast(),
                (&zero as *const f32).cast(),
                b as *const c_void,
                la.0,
                a as *const c_void,
                lb.0,
                c as *const c_void,
                ld.0,
                c as *mut c_void,
                ld.0,
                &heuristic.algo,
                w as *mut c_void,
                ws,
                gpu.stream().cu_stream() as sys::cudaStream_t,
            )
        }?;
        Ok(())
    }
}

impl Drop for CudaLt {
    fn drop(&mut self) {
        // SAFETY: created in `new`, destroyed once.
        let _ = unsafe { lt::destroy_handle(self.handle) };
    }
}

/// True when a cuBLASLt failure means "no algorithm for this combination"
/// (the caller then runs the plain cuBLAS path).
pub fn not_supported(e: &GpuError) -> bool {
    matches!(e, GpuError::Lt(c) if c.0 == sys::cublasStatus_t::CUBLAS_STATUS_NOT_SUPPORTED)
}
