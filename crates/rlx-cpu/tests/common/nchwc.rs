//! Helpers of the NCHWc layout tests (nchwc_chain, nchwc_concat,
//! yolo_blocks).

/// True where the blocked-layout kernels run (AVX-512 and no ISA override),
/// so the layout plan's blocked counts apply.
pub fn avx512() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx512f") && std::env::var("RLX_CPU_GEMM_ISA").is_err()
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// `got` matches numpy's `want` within 1e-4 relative (plus 1e-4 absolute).
pub fn assert_close(got: &[f32], want: &[f64], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}");
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g as f64 - w).abs() <= 1e-4 * (1.0 + w.abs()),
            "{what} [{i}]: {g} vs {w}"
        );
    }
}
