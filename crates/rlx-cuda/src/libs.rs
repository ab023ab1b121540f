//! Which CUDA libraries load on this machine, asked before any cudarc call
//! into them (cudarc's loaders panic when a library is missing).

use std::fmt;
use std::sync::OnceLock;

/// A CUDA library RLX opens at run time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CudaLib {
    /// The driver API (`libcuda`, shipped with the NVIDIA driver).
    Driver,
    /// The runtime compiler (`libnvrtc`, shipped with the toolkit or the
    /// `nvidia-cuda-nvrtc-cu12` wheel); needs no driver.
    Nvrtc,
    /// cuBLAS (`libcublas`).
    Cublas,
    /// cuBLASLt (`libcublasLt`).
    CublasLt,
}

impl CudaLib {
    /// Every library, in the order [`crate::probe()`] checks them.
    pub const ALL: [CudaLib; 4] = [
        CudaLib::Driver,
        CudaLib::Nvrtc,
        CudaLib::Cublas,
        CudaLib::CublasLt,
    ];

    /// The stem cudarc builds file names from (`cuda` -> `libcuda.so.1`, ...).
    pub fn stem(self) -> &'static str {
        match self {
            CudaLib::Driver => "cuda",
            CudaLib::Nvrtc => "nvrtc",
            CudaLib::Cublas => "cublas",
            CudaLib::CublasLt => "cublasLt",
        }
    }

    /// The file names cudarc tries, in order.
    pub fn candidates(self) -> Vec<String> {
        cudarc::get_lib_name_candidates(self.stem())
    }

    /// True when one of [`CudaLib::candidates`] loads (after
    /// [`preload_nvrtc_from_env`] for NVRTC).
    pub fn present(self) -> bool {
        if self == CudaLib::Nvrtc {
            preload_nvrtc_from_env();
        }
        // SAFETY: each call only tries `dlopen` on the candidate names and
        // closes what it opened; no symbol is called.
        unsafe {
            match self {
                CudaLib::Driver => cudarc::driver::sys::is_culib_present(),
                CudaLib::Nvrtc => cudarc::nvrtc::sys::is_culib_present(),
                CudaLib::Cublas => cudarc::cublas::sys::is_culib_present(),
                CudaLib::CublasLt => cudarc::cublaslt::sys::is_culib_present(),
            }
        }
    }
}

impl fmt::Display for CudaLib {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self {
            CudaLib::Driver => "the CUDA driver library (libcuda, from the NVIDIA driver)",
            CudaLib::Nvrtc => "NVRTC (libnvrtc, from the CUDA toolkit)",
            CudaLib::Cublas => "cuBLAS (libcublas, from the CUDA toolkit)",
            CudaLib::CublasLt => "cuBLASLt (libcublasLt, from the CUDA toolkit)",
        };
        f.write_str(what)
    }
}

/// Loads `RLX_NVRTC_LIB` (a full path to `libnvrtc.so.12`, e.g. from the
/// `nvidia-cuda-nvrtc-cu12` wheel) once and keeps it loaded, so cudarc's
/// lookup by file name finds the already-loaded library. Returns the error
/// text when the variable is set but the file does not load; `None` when it
/// is unset or loaded.
pub fn preload_nvrtc_from_env() -> Option<String> {
    static PRELOADED: OnceLock<Option<String>> = OnceLock::new();
    PRELOADED
        .get_or_init(|| {
            let path = match rlx_ir::env::vars::NVRTC_LIB.get() {
                Ok(Some(p)) => p,
                Ok(None) => return None,
                Err(e) => return Some(e.to_string()),
            };
            // SAFETY: loading NVRTC runs no initialiser with preconditions;
            // the handle is leaked on purpose so the library stays loaded.
            match unsafe { libloading::Library::new(&path) } {
                Ok(lib) => {
                    std::mem::forget(lib);
                    None
                }
                Err(e) => Some(format!("RLX_NVRTC_LIB={}: {e}", path.display())),
            }
        })
        .clone()
}
