//! FFT family (rustfft), along the last axis with numpy's `norm=` scaling.

use super::{KernelResult, View, ViewMut};
use rlx_ir::fft::{FftKind, FftNorm};
use rlx_ir::Complex32;
use rustfft::FftPlanner;

/// The factor applied after an unnormalised transform of length `n`.
fn scale(kind: FftKind, norm: FftNorm, n: usize) -> f32 {
    let inverse = matches!(kind, FftKind::Ifft | FftKind::Irfft);
    let s = match (norm, inverse) {
        (FftNorm::Ortho, _) => 1.0 / (n as f64).sqrt(),
        (FftNorm::Backward, true) | (FftNorm::Forward, false) => 1.0 / n as f64,
        _ => 1.0,
    };
    s as f32
}

/// fft / ifft / rfft / irfft along the last axis.
pub fn fft(kind: FftKind, norm: FftNorm, ins: &[View], out: &mut ViewMut) -> KernelResult {
    let x = &ins[0];
    let (&len_in, &len_out) = match (x.dims.last(), out.dims.last()) {
        (Some(a), Some(b)) => (a, b),
        _ => return Err("fft of a scalar".into()),
    };
    if out.numel() == 0 {
        return Ok(());
    }
    let n = if kind == FftKind::Irfft {
        len_out
    } else {
        len_in
    };
    if n == 0 {
        // rfft of an empty axis still has its one (zero) bin.
        out.bytes.fill(0);
        return Ok(());
    }
    let rows = out.numel() / len_out;
    let mut planner = FftPlanner::<f32>::new();
    let plan = match kind {
        FftKind::Fft | FftKind::Rfft => planner.plan_fft_forward(n),
        FftKind::Ifft | FftKind::Irfft => planner.plan_fft_inverse(n),
    };
    let s = scale(kind, norm, n);
    let zero = Complex32::new(0.0, 0.0);
    let mut scratch = vec![zero; plan.get_inplace_scratch_len()];
    match kind {
        FftKind::Fft | FftKind::Ifft => {
            let o = out.slice::<Complex32>();
            o.copy_from_slice(x.slice::<Complex32>());
            plan.process_with_scratch(o, &mut scratch);
            if s != 1.0 {
                o.iter_mut().for_each(|v| *v *= s);
            }
        }
        FftKind::Rfft => {
            let src = x.slice::<f32>();
            let o = out.slice::<Complex32>();
            let mut buf = vec![zero; n];
            for (row, dst) in src.chunks_exact(n).zip(o.chunks_exact_mut(len_out)) {
                buf.iter_mut()
                    .zip(row)
                    .for_each(|(b, &v)| *b = Complex32::new(v, 0.0));
                plan.process_with_scratch(&mut buf, &mut scratch);
                dst.iter_mut().zip(&buf).for_each(|(d, &b)| *d = b * s);
            }
        }
        FftKind::Irfft => {
            let m = len_in;
            let src: &[Complex32] = if x.numel() == 0 { &[] } else { x.slice() };
            let o = out.slice::<f32>();
            let mut buf = vec![zero; n];
            for r in 0..rows {
                let bin = |k: usize| if k < m { src[r * m + k] } else { zero };
                // Hermitian extension; numpy ignores the imaginary parts of
                // the DC and (even n) Nyquist bins.
                buf[0] = Complex32::new(bin(0).re, 0.0);
                for k in 1..n.div_ceil(2) {
                    buf[k] = bin(k);
                    buf[n - k] = bin(k).conj();
                }
                if n % 2 == 0 {
                    buf[n / 2] = Complex32::new(bin(n / 2).re, 0.0);
                }
                plan.process_with_scratch(&mut buf, &mut scratch);
                for (d, b) in o[r * n..(r + 1) * n].iter_mut().zip(&buf) {
                    *d = b.re * s;
                }
            }
        }
    }
    Ok(())
}
