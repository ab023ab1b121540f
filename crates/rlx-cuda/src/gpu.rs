//! [`CudaGpu`]: one device's context, a stream, the kernel modules
//! (compiled by NVRTC once, for the device's architecture) and the caching
//! allocator. Created only after [`crate::probe()`] says CUDA is usable.

use crate::kernels::{self, KernelError};
use crate::pool::{Pool, SizedBuffer};
use crate::probe::{probe, CudaUnavailable};
use cudarc::driver::{
    CudaContext, CudaFunction, CudaModule, CudaSlice, CudaStream, DeviceRepr, DriverError,
    ValidAsZeroBits,
};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use thiserror::Error;

/// A failure of the CUDA device layer.
#[derive(Debug, Error)]
pub enum GpuError {
    /// CUDA is not usable on this machine.
    #[error("CUDA unavailable: {0}")]
    Unavailable(#[from] CudaUnavailable),
    /// No device has this ordinal.
    #[error("no CUDA device {ordinal} ({count} present)")]
    NoSuchDevice {
        /// The ordinal asked for.
        ordinal: usize,
        /// Devices present.
        count: usize,
    },
    /// Kernel compilation failed.
    #[error(transparent)]
    Kernel(#[from] KernelError),
    /// A driver call failed.
    #[error("CUDA driver: {0}")]
    Driver(#[from] DriverError),
    /// A cuBLAS call failed.
    #[error("cuBLAS: {0}")]
    Blas(#[from] cudarc::cublas::result::CublasError),
    /// A cuBLASLt call failed.
    #[error("cuBLASLt: {0}")]
    Lt(#[from] cudarc::cublaslt::result::CublasError),
    /// A kernel reported bad input (e.g. an index out of range).
    #[error("{0}")]
    BadInput(String),
}

impl SizedBuffer for CudaSlice<u8> {
    fn bytes(&self) -> usize {
        self.len()
    }
}

/// One CUDA device ready to run RLX kernels.
pub struct CudaGpu {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    modules: HashMap<&'static str, Arc<CudaModule>>,
    pool: Mutex<Pool<CudaSlice<u8>>>,
}

impl CudaGpu {
    /// Opens device `ordinal`, creates a stream and compiles every kernel
    /// module for the device's architecture.
    pub fn new(ordinal: usize) -> Result<CudaGpu, GpuError> {
        let info = probe()?;
        let dev = info.devices.get(ordinal).ok_or(GpuError::NoSuchDevice {
            ordinal,
            count: info.devices.len(),
        })?;
        let arch = kernels::arch_for(dev.compute_capability);
        let ctx = CudaContext::new(ordinal)?;
        let stream = ctx.new_stream()?;
        let mut modules = HashMap::new();
        for (name, ptx) in kernels::compile_all(arch)? {
            modules.insert(name, ctx.load_module(ptx)?);
        }
        Ok(CudaGpu {
            ctx,
            stream,
            modules,
            pool: Mutex::new(Pool::default()),
        })
    }

    /// The context.
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    /// The stream every launch and copy of this device goes on.
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// Kernel `entry` of module `module` (see [`kernels::SOURCES`]).
    pub fn function(&self, module: &str, entry: &str) -> Result<CudaFunction, GpuError> {
        let m = self
            .modules
            .get(module)
            .ok_or_else(|| GpuError::BadInput(format!("no kernel module {module}")))?;
        Ok(m.load_function(entry)?)
    }

    /// A byte buffer of at least `bytes` from the cache, else a new zeroed one.
    pub fn take_bytes(&self, bytes: usize) -> Result<CudaSlice<u8>, GpuError> {
        let cached = self
            .pool
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take(bytes);
        match cached {
            Some(b) => Ok(b),
            None => Ok(self.stream.alloc_zeros::<u8>(bytes.max(1))?),
        }
    }

    /// Returns a buffer to the cache.
    pub fn give_bytes(&self, b: CudaSlice<u8>) {
        self.pool.lock().unwrap_or_else(|p| p.into_inner()).give(b);
    }

    /// Bytes held by the caching allocator.
    pub fn cached_bytes(&self) -> usize {
        self.pool
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .cached_bytes()
    }

    /// Copies `host` to a new device buffer.
    pub fn upload<T: DeviceRepr>(&self, host: &[T]) -> Result<CudaSlice<T>, GpuError> {
        Ok(self.stream.clone_htod(host)?)
    }

    /// A zeroed device buffer of `len` elements.
    pub fn zeros<T: DeviceRepr + ValidAsZeroBits>(
        &self,
        len: usize,
    ) -> Result<CudaSlice<T>, GpuError> {
        Ok(self.stream.alloc_zeros::<T>(len)?)
    }

    /// Copies `bytes` bytes from device address `src` to `dst`, ordered on
    /// the stream.
    ///
    /// # Safety
    /// Both must be live addresses of this device's allocations with
    /// `bytes` bytes from them, not overlapping.
    pub(crate) unsafe fn copy_at(&self, dst: u64, src: u64, bytes: usize) -> Result<(), GpuError> {
        self.ctx.bind_to_thread()?;
        // SAFETY: the caller's promise; the stream is this device's.
        unsafe {
            cudarc::driver::result::memcpy_dtod_async(dst, src, bytes, self.stream.cu_stream())
        }?;
        Ok(())
    }

    /// Copies a device buffer back (waits for the stream).
    pub fn download<T: DeviceRepr + Default + Clone>(
        &self,
        dev: &CudaSlice<T>,
    ) -> Result<Vec<T>, GpuError> {
        Ok(self.stream.clone_dtoh(dev)?)
    }
}
