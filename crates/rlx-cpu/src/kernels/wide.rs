//! Plain Rust loops compiled for the widest vector ISA the CPU has.
//!
//! The crate builds for baseline x86-64 (SSE2, 4 lanes); a loop that LLVM
//! vectorises by itself (pooling's running max, col2im's strided adds)
//! gets AVX-512 / AVX2 when it is inlined into a function with that
//! feature enabled. [`wide`] is that function: its closure, and whatever
//! `#[inline(always)]` code the closure calls, is compiled three times.

/// Runs `f` compiled for AVX-512F, else AVX2, else the baseline.
#[inline(always)]
pub(crate) fn wide<R>(f: impl FnOnce() -> R) -> R {
    #[cfg(target_arch = "x86_64")]
    {
        #[target_feature(enable = "avx512f")]
        unsafe fn avx512<R>(f: impl FnOnce() -> R) -> R {
            f()
        }
        #[target_feature(enable = "avx2")]
        unsafe fn avx2<R>(f: impl FnOnce() -> R) -> R {
            f()
        }
        if std::arch::is_x86_feature_detected!("avx512f") {
            // SAFETY: the CPU has AVX-512F.
            return unsafe { avx512(f) };
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU has AVX2.
            return unsafe { avx2(f) };
        }
    }
    f()
}
