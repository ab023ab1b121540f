//! Every kernel source compiles to PTX with NVRTC and defines the entry
//! points its module lists. NVRTC needs no GPU or driver: this runs
//! wherever `libnvrtc` loads (on the loader path, or named by
//! `RLX_NVRTC_LIB`, e.g. `pip install nvidia-cuda-nvrtc-cu12` and point it
//! at `site-packages/nvidia/cuda_nvrtc/lib/libnvrtc.so.12`); elsewhere it
//! says so and passes (`RLX_REQUIRE_CUDA=1` makes a missing NVRTC a failure).

use rlx_cuda::kernels::{self, KernelError, DEFAULT_ARCH, SOURCES};

fn required() -> bool {
    rlx_ir::env::vars::REQUIRE_CUDA
        .get()
        .ok()
        .flatten()
        .unwrap_or(false)
}

#[test]
fn every_kernel_source_compiles_to_ptx_with_its_entry_points() {
    match kernels::nvrtc_ready() {
        Ok(()) => {}
        Err(e @ (KernelError::NoNvrtc(_) | KernelError::BadNvrtcPath(_))) if !required() => {
            eprintln!("skipped: {e}");
            return;
        }
        Err(e) => panic!("{e}"),
    }
    for arch in [DEFAULT_ARCH, "compute_90"] {
        let compiled = kernels::compile_all(arch).unwrap_or_else(|e| panic!("{arch}: {e}"));
        assert_eq!(compiled.len(), SOURCES.len());
        for (name, ptx) in compiled {
            let text = ptx.to_src();
            assert!(
                text.contains(&format!(".target sm_{}", &arch[8..])),
                "{name}: {arch}"
            );
        }
    }
}

#[test]
fn a_source_with_an_error_is_refused_with_nvrtcs_log() {
    if kernels::nvrtc_ready().is_err() && !required() {
        eprintln!("skipped: NVRTC not loadable");
        return;
    }
    let bad = kernels::KernelSource {
        name: "bad",
        source: "extern \"C\" __global__ void rlx_bad(float* x) { x[0] = undefined_name; }",
        entries: &["rlx_bad"],
    };
    let err = kernels::compile(&bad, DEFAULT_ARCH)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("bad.cu") && err.contains("undefined_name"),
        "{err}"
    );
    let missing = kernels::KernelSource {
        name: "missing",
        source: "extern \"C\" __global__ void rlx_other(float* x) { x[0] = 1.0f; }",
        entries: &["rlx_wanted"],
    };
    let err = kernels::compile(&missing, DEFAULT_ARCH)
        .unwrap_err()
        .to_string();
    assert!(err.contains("no entry point rlx_wanted"), "{err}");
}
