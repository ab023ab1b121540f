//! The CUDA C sources of RLX's kernels and their NVRTC compilation.
//!
//! Each [`KernelSource`] is one `.cu` file of this folder, compiled after
//! `common.cuh` (storage types, layouts, block reductions) into one PTX
//! module whose `extern "C"` entry points are listed in
//! [`KernelSource::entries`]. NVRTC needs no driver, so
//! [`compile_all`] checks every source on any machine where `libnvrtc`
//! loads (`RLX_NVRTC_LIB` names a file outside the loader's path).

mod ops;

pub use ops::{BinaryOp, ReduceOp, UnaryOp};

use crate::libs::{preload_nvrtc_from_env, CudaLib};
use crate::probe::CudaUnavailable;
use cudarc::nvrtc::{compile_ptx_with_opts, CompileOptions, Ptx};
use thiserror::Error;

const COMMON: &str = include_str!("common.cuh");

/// One kernel source file and the entry points it defines.
#[derive(Clone, Copy, Debug)]
pub struct KernelSource {
    /// The module name (the file stem).
    pub name: &'static str,
    /// The CUDA C source (without `common.cuh`).
    pub source: &'static str,
    /// Its `extern "C"` kernels.
    pub entries: &'static [&'static str],
}

impl KernelSource {
    /// The full translation unit NVRTC compiles: `common.cuh`, then the file.
    pub fn translation_unit(&self) -> String {
        format!("{COMMON}\n#line 1 \"{}.cu\"\n{}", self.name, self.source)
    }
}

macro_rules! float_entries {
    ($($stem:literal),*) => {
        &[$(concat!($stem, "_f32"), concat!($stem, "_f16"), concat!($stem, "_bf16")),*]
    };
}

/// Every kernel source, in the order [`compile_all`] compiles them.
pub const SOURCES: &[KernelSource] = &[
    KernelSource {
        name: "elementwise",
        source: include_str!("elementwise.cu"),
        entries: float_entries!("rlx_unary", "rlx_binary"),
    },
    KernelSource {
        name: "reduce",
        source: include_str!("reduce.cu"),
        entries: float_entries!("rlx_reduce"),
    },
    KernelSource {
        name: "softmax",
        source: include_str!("softmax.cu"),
        entries: float_entries!("rlx_softmax"),
    },
    KernelSource {
        name: "norm",
        source: include_str!("norm.cu"),
        entries: float_entries!("rlx_layer_norm", "rlx_rms_norm"),
    },
    KernelSource {
        name: "gather",
        source: include_str!("gather.cu"),
        entries: float_entries!("rlx_gather"),
    },
    KernelSource {
        name: "movement",
        source: include_str!("movement.cu"),
        entries: &[
            "rlx_strided_copy_b1",
            "rlx_strided_copy_b2",
            "rlx_strided_copy_b4",
            "rlx_strided_copy_b8",
        ],
    },
    KernelSource {
        name: "cast",
        source: include_str!("cast.cu"),
        entries: &CAST_ENTRIES,
    },
    KernelSource {
        name: "select",
        source: include_str!("select.cu"),
        entries: &[
            "rlx_compare_f32",
            "rlx_compare_f16",
            "rlx_compare_bf16",
            "rlx_compare_i32",
            "rlx_compare_i64",
            "rlx_select_b1",
            "rlx_select_b2",
            "rlx_select_b4",
            "rlx_select_b8",
        ],
    },
    KernelSource {
        name: "iota",
        source: include_str!("iota.cu"),
        entries: &[
            "rlx_iota_f32",
            "rlx_iota_f16",
            "rlx_iota_bf16",
            "rlx_iota_i32",
            "rlx_iota_i64",
        ],
    },
    KernelSource {
        name: "im2col",
        source: include_str!("im2col.cu"),
        entries: float_entries!("rlx_im2col"),
    },
    KernelSource {
        name: "scan",
        source: include_str!("scan.cu"),
        entries: float_entries!("rlx_argreduce", "rlx_cumsum"),
    },
    KernelSource {
        name: "pad",
        source: include_str!("pad.cu"),
        entries: &["rlx_pad_b1", "rlx_pad_b2", "rlx_pad_b4", "rlx_pad_b8"],
    },
    KernelSource {
        name: "window",
        source: include_str!("window.cu"),
        entries: float_entries!("rlx_conv2d", "rlx_conv_transpose2d", "rlx_pool2d"),
    },
    KernelSource {
        name: "indexing",
        source: include_str!("indexing.cu"),
        entries: &INDEXING_ENTRIES,
    },
    KernelSource {
        name: "resample",
        source: include_str!("resample.cu"),
        entries: float_entries!("rlx_resize"),
    },
    KernelSource {
        name: "dequant",
        source: include_str!("dequant.cu"),
        entries: &[
            "rlx_dequant_q4_0",
            "rlx_dequant_q4_1",
            "rlx_dequant_q5_0",
            "rlx_dequant_q5_1",
            "rlx_dequant_q8_0",
            "rlx_dequant_q4_k",
            "rlx_dequant_q5_k",
            "rlx_dequant_q6_k",
        ],
    },
    KernelSource {
        name: "optim",
        source: include_str!("optim.cu"),
        entries: &["rlx_sgd_f32", "rlx_adam_f32"],
    },
];

/// The entry points of `indexing.cu`.
const INDEXING_ENTRIES: [&str; 9] = [
    "rlx_gather_elements_f32",
    "rlx_gather_elements_f16",
    "rlx_gather_elements_bf16",
    "rlx_scatter_add_f32",
    "rlx_scatter_add_f16",
    "rlx_scatter_add_bf16",
    "rlx_topk_f32",
    "rlx_topk_f16",
    "rlx_topk_bf16",
];

/// `rlx_cast_<from>_<to>` for every pair `cast.cu` instantiates.
const CAST_ENTRIES: [&str; 20] = [
    "rlx_cast_f32_f32",
    "rlx_cast_f32_f16",
    "rlx_cast_f32_bf16",
    "rlx_cast_f32_i32",
    "rlx_cast_f16_f32",
    "rlx_cast_f16_f16",
    "rlx_cast_f16_bf16",
    "rlx_cast_f16_i32",
    "rlx_cast_bf16_f32",
    "rlx_cast_bf16_f16",
    "rlx_cast_bf16_bf16",
    "rlx_cast_bf16_i32",
    "rlx_cast_i32_f32",
    "rlx_cast_i32_f16",
    "rlx_cast_i32_bf16",
    "rlx_cast_i32_i32",
    "rlx_cast_i64_f32",
    "rlx_cast_i64_f16",
    "rlx_cast_i64_bf16",
    "rlx_cast_i64_i32",
];

/// A kernel source that could not be compiled.
#[derive(Debug, Error)]
pub enum KernelError {
    /// NVRTC is not loadable here.
    #[error("cannot compile CUDA kernels: {0}")]
    NoNvrtc(CudaUnavailable),
    /// `RLX_NVRTC_LIB` is set but does not load.
    #[error("cannot compile CUDA kernels: {0}")]
    BadNvrtcPath(String),
    /// NVRTC refused the source; `log` is its compiler output.
    #[error("NVRTC failed on {module}.cu: {log}")]
    Compile {
        /// The module.
        module: &'static str,
        /// NVRTC's log (or error).
        log: String,
    },
    /// The PTX lacks an entry point the module lists.
    #[error("{module}.cu: PTX has no entry point {entry}")]
    MissingEntry {
        /// The module.
        module: &'static str,
        /// The kernel name.
        entry: &'static str,
    },
}

/// The virtual architecture kernels are compiled for by default: sm_80
/// (Ampere) is the oldest with native bf16; the driver JIT-compiles the
/// PTX for newer devices.
pub const DEFAULT_ARCH: &str = "compute_80";

/// The NVRTC architecture for a device of compute capability `cc`
/// ([`DEFAULT_ARCH`] below 8.0 or for one NVRTC 12 may not know).
pub fn arch_for(cc: (i32, i32)) -> &'static str {
    match cc {
        (8, 6) => "compute_86",
        (8, 9) => "compute_89",
        (9, 0) => "compute_90",
        _ => DEFAULT_ARCH,
    }
}

/// Checks that NVRTC loads (after `RLX_NVRTC_LIB`).
pub fn nvrtc_ready() -> Result<(), KernelError> {
    if let Some(why) = preload_nvrtc_from_env() {
        return Err(KernelError::BadNvrtcPath(why));
    }
    if !CudaLib::Nvrtc.present() {
        return Err(KernelError::NoNvrtc(CudaUnavailable::LibraryMissing {
            library: CudaLib::Nvrtc,
            tried: CudaLib::Nvrtc.candidates(),
        }));
    }
    Ok(())
}

/// Compiles one source for `arch` and checks every listed entry is in the PTX.
pub fn compile(source: &KernelSource, arch: &'static str) -> Result<Ptx, KernelError> {
    nvrtc_ready()?;
    let opts = CompileOptions {
        arch: Some(arch),
        name: Some(format!("{}.cu", source.name)),
        options: vec!["--std=c++17".into()],
        ..Default::default()
    };
    let ptx = compile_ptx_with_opts(source.translation_unit(), opts).map_err(|e| {
        let log = match &e {
            cudarc::nvrtc::CompileError::CompileError { log, .. } => {
                log.to_string_lossy().into_owned()
            }
            other => format!("{other:?}"),
        };
        KernelError::Compile {
            module: source.name,
            log,
        }
    })?;
    let text = ptx.to_src();
    if let Some(entry) = source
        .entries
        .iter()
        .find(|e| !text.contains(&format!(".entry {e}(")))
    {
        return Err(KernelError::MissingEntry {
            module: source.name,
            entry,
        });
    }
    Ok(ptx)
}

/// Compiles every source of [`SOURCES`] for `arch`, in order.
pub fn compile_all(arch: &'static str) -> Result<Vec<(&'static str, Ptx)>, KernelError> {
    SOURCES
        .iter()
        .map(|s| Ok((s.name, compile(s, arch)?)))
        .collect()
}
