//! FFT family (rustfft).
use super::{KernelResult, View, ViewMut};
use rlx_ir::fft::{FftKind, FftNorm};

/// fft / ifft / rfft / irfft along the last axis.
pub fn fft(_kind: FftKind, _norm: FftNorm, _ins: &[View], _out: &mut ViewMut) -> KernelResult { Err("fft: kernel pending".into()) }
