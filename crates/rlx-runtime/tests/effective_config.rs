//! `effective_config` prints the options after the environment overlay,
//! the environment snapshot and the thread count (one test: the overrides
//! are process-wide).

use rlx_ir::env;
use rlx_runtime::{effective_config, CompileOptions, EffectiveConfig, Precision, RuntimeError};

#[test]
fn effective_config_shows_options_after_the_overlay_and_the_env() {
    let opts = CompileOptions::default()
        .precision(Precision::BF16)
        .bind_dim("batch", 8)
        .cse(false);
    env::set("RLX_NO_FUSION", "1");
    env::set("RLX_ARENA_ALIGN", "256");
    env::set("RLX_NUM_THREADS", "3");
    env::set("RLX_CPU_GEMM_ISA", "AVX2");
    let cfg = EffectiveConfig::of(&opts).unwrap();
    assert_eq!(cfg.threads, 3);
    // A compile's own thread limit wins over the variable.
    let limited = EffectiveConfig::of(&opts.clone().threads(Some(2))).unwrap();
    assert_eq!(limited.threads, 2);
    assert_eq!(cfg.options.lower.alignment, 256);
    assert!(!cfg.options.lower.fusion.elementwise);
    assert_eq!(cfg.env.cpu_gemm_isa.as_deref(), Some("avx2"));
    // The caller's options are not changed by the overlay.
    assert!(opts.lower.fusion.elementwise);
    let text = effective_config(&opts).unwrap();
    for want in [
        "precision: BF16",
        "cse off",
        "dim bindings: batch=8",
        "arena alignment: 256 bytes",
        "cpu threads: 3",
        "  RLX_NO_FUSION=1",
        "  RLX_NUM_THREADS=3",
        "  RLX_CPU_GEMM_ISA=avx2",
    ] {
        assert!(text.contains(want), "{want:?} missing from\n{text}");
    }
    env::set("RLX_NUM_THREADS", "zero");
    let e = effective_config(&opts).unwrap_err();
    assert!(
        matches!(&e, RuntimeError::Env(v) if v.name == "RLX_NUM_THREADS" && v.value == "zero"),
        "{e}"
    );
    for v in [
        "RLX_NO_FUSION",
        "RLX_ARENA_ALIGN",
        "RLX_NUM_THREADS",
        "RLX_CPU_GEMM_ISA",
    ] {
        env::unset(v);
    }
    let text = effective_config(&CompileOptions::default()).unwrap();
    assert!(
        !text.contains("RLX_NO_FUSION") && text.contains("cse on"),
        "{text}"
    );
}
