//! FFT family (rustfft), along the last axis with numpy's `norm=` scaling.

use super::{KernelResult, View, ViewMut};
use rlx_ir::fft::{FftKind, FftNorm};
use rlx_ir::Complex32;
use rustfft::num_complex::Complex64;
use rustfft::FftPlanner;

/// The factor applied after an unnormalised transform of length `n`.
fn scale(kind: FftKind, norm: FftNorm, n: usize) -> f64 {
    let inverse = matches!(kind, FftKind::Ifft | FftKind::Irfft);
    match (norm, inverse) {
        (FftNorm::Ortho, _) => 1.0 / (n as f64).sqrt(),
        (FftNorm::Backward, true) | (FftNorm::Forward, false) => 1.0 / n as f64,
        _ => 1.0,
    }
}

fn widen(v: Complex32) -> Complex64 {
    Complex64::new(v.re as f64, v.im as f64)
}

fn narrow(v: Complex64) -> Complex32 {
    Complex32::new(v.re as f32, v.im as f32)
}

/// fft / ifft / rfft / irfft along the last axis.
///
/// The transform runs in f64 and rounds once at the end: an f32 butterfly
/// network leaves O(n·ε·max|x|) noise in bins that are exactly zero (ONNX's
/// DFT cases and numpy, which transform in f64, give ~1e-15 there).
pub(crate) fn fft(kind: FftKind, norm: FftNorm, ins: &[View], out: &mut ViewMut) -> KernelResult {
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
    let mut planner = FftPlanner::<f64>::new();
    let plan = match kind {
        FftKind::Fft | FftKind::Rfft => planner.plan_fft_forward(n),
        FftKind::Ifft | FftKind::Irfft => planner.plan_fft_inverse(n),
    };
    let s = scale(kind, norm, n);
    let zero = Complex64::new(0.0, 0.0);
    let mut scratch = vec![zero; plan.get_inplace_scratch_len()];
    let mut buf = vec![zero; n];
    match kind {
        FftKind::Fft | FftKind::Ifft => {
            let src = x.slice::<Complex32>();
            let o = out.slice::<Complex32>();
            for (row, dst) in src.chunks_exact(n).zip(o.chunks_exact_mut(n)) {
                buf.iter_mut().zip(row).for_each(|(b, &v)| *b = widen(v));
                plan.process_with_scratch(&mut buf, &mut scratch);
                dst.iter_mut()
                    .zip(&buf)
                    .for_each(|(d, &b)| *d = narrow(b * s));
            }
        }
        FftKind::Rfft => {
            let src = x.slice::<f32>();
            let o = out.slice::<Complex32>();
            for (row, dst) in src.chunks_exact(n).zip(o.chunks_exact_mut(len_out)) {
                buf.iter_mut()
                    .zip(row)
                    .for_each(|(b, &v)| *b = Complex64::new(v as f64, 0.0));
                plan.process_with_scratch(&mut buf, &mut scratch);
                dst.iter_mut()
                    .zip(&buf)
                    .for_each(|(d, &b)| *d = narrow(b * s));
            }
        }
        FftKind::Irfft => {
            let m = len_in;
            let src: &[Complex32] = if x.numel() == 0 { &[] } else { x.slice() };
            let o = out.slice::<f32>();
            for r in 0..rows {
                let bin = |k: usize| if k < m { widen(src[r * m + k]) } else { zero };
                // Hermitian extension; numpy ignores the imaginary parts of
                // the DC and (even n) Nyquist bins.
                buf[0] = Complex64::new(bin(0).re, 0.0);
                for k in 1..n.div_ceil(2) {
                    buf[k] = bin(k);
                    buf[n - k] = bin(k).conj();
                }
                if n % 2 == 0 {
                    buf[n / 2] = Complex64::new(bin(n / 2).re, 0.0);
                }
                plan.process_with_scratch(&mut buf, &mut scratch);
                for (d, b) in o[r * n..(r + 1) * n].iter_mut().zip(&buf) {
                    *d = (b.re * s) as f32;
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::Pod;
    use rlx_ir::DType;

    fn c(re: f32, im: f32) -> Complex32 {
        Complex32::new(re, im)
    }

    fn bytes<T: Pod>(v: &[T]) -> &[u8] {
        // SAFETY: Pod values are plain bytes.
        unsafe { std::slice::from_raw_parts(v.as_ptr() as *const u8, std::mem::size_of_val(v)) }
    }

    /// Runs one transform of `x` (dims `dx`) into an output of dims `dout`.
    fn run<I: Pod, O: Pod>(
        kind: FftKind,
        norm: FftNorm,
        x: &[I],
        dx: &[usize],
        dout: &[usize],
        fill: O,
    ) -> Vec<O> {
        let (ti, to) = match kind {
            FftKind::Fft | FftKind::Ifft => (DType::C64, DType::C64),
            FftKind::Rfft => (DType::F32, DType::C64),
            FftKind::Irfft => (DType::C64, DType::F32),
        };
        let ins = [View {
            dims: dx,
            dtype: ti,
            bytes: bytes(x),
        }];
        let mut o = vec![fill; dout.iter().product()];
        // SAFETY: as in `bytes`; any byte pattern is a valid Pod value.
        let ob = unsafe {
            std::slice::from_raw_parts_mut(o.as_mut_ptr() as *mut u8, std::mem::size_of_val(&o[..]))
        };
        fft(
            kind,
            norm,
            &ins,
            &mut ViewMut {
                dims: dout,
                dtype: to,
                bytes: ob,
            },
        )
        .unwrap();
        o
    }

    fn close_c(got: &[Complex32], want: &[Complex32]) {
        assert_eq!(got.len(), want.len());
        for (g, w) in got.iter().zip(want) {
            assert!(
                (g - w).norm() <= 1e-5 * w.norm().max(1.0),
                "{got:?} vs {want:?}"
            );
        }
    }

    fn close_r(got: &[f32], want: &[f32]) {
        assert_eq!(got.len(), want.len());
        for (g, w) in got.iter().zip(want) {
            assert!(
                (g - w).abs() <= 1e-5 * w.abs().max(1.0),
                "{got:?} vs {want:?}"
            );
        }
    }

    #[test]
    fn complex_fft_all_norms() {
        let x = [
            c(1.0, 2.0),
            c(-0.5, 0.0),
            c(0.0, 3.0),
            c(2.0, -1.0),
            c(0.25, 0.0),
            c(1.0, 0.0),
            c(-1.0, -1.0),
            c(4.0, 0.0),
        ];
        // np.fft.fft(x, norm=...) / np.fft.ifft(x, norm=...), x of shape (2, 4)
        let fwd = [
            c(2.5, 4.0),
            c(2.0, 1.5),
            c(-0.5, 6.0),
            c(0.0, -3.5),
            c(4.25, -1.0),
            c(1.25, 4.0),
            c(-5.75, -1.0),
            c(1.25, -2.0),
        ];
        let inv_unscaled = [
            c(2.5, 4.0),
            c(0.0, -3.5),
            c(-0.5, 6.0),
            c(2.0, 1.5),
            c(4.25, -1.0),
            c(1.25, -2.0),
            c(-5.75, -1.0),
            c(1.25, 4.0),
        ];
        for (norm, f_scale, i_scale) in [
            (FftNorm::Backward, 1.0, 0.25),
            (FftNorm::Ortho, 0.5, 0.5),
            (FftNorm::Forward, 0.25, 1.0),
        ] {
            let got = run(FftKind::Fft, norm, &x, &[2, 4], &[2, 4], c(0.0, 0.0));
            close_c(&got, &fwd.map(|v| v * f_scale));
            let got = run(FftKind::Ifft, norm, &x, &[2, 4], &[2, 4], c(0.0, 0.0));
            close_c(&got, &inv_unscaled.map(|v| v * i_scale));
        }
    }

    #[test]
    fn rfft_half_spectrum() {
        let x5 = [1.0f32, -2.0, 0.5, 3.0, 4.0];
        let got = run(FftKind::Rfft, FftNorm::Ortho, &x5, &[5], &[3], c(0.0, 0.0));
        // np.fft.rfft([1, -2, 0.5, 3, 4], norm="ortho")
        close_c(
            &got,
            &[
                c(2.9068885, 0.0),
                c(-0.5427051, 3.2091162),
                c(0.2072949, 0.51387984),
            ],
        );

        let x6 = [
            1.0f32, -2.0, 0.5, 3.0, 4.0, -1.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0,
        ];
        let got = run(
            FftKind::Rfft,
            FftNorm::Backward,
            &x6,
            &[2, 6],
            &[2, 4],
            c(0.0, 0.0),
        );
        // np.fft.rfft([[1, -2, 0.5, 3, 4, -1], [0, 0, 1, 0, 0, 0]])
        let want = [
            c(5.5, 0.0),
            c(-5.75, 3.8971143),
            c(3.25, -2.1650636),
            c(5.5, 0.0),
            c(1.0, 0.0),
            c(-0.5, -0.8660254),
            c(-0.5, 0.8660254),
            c(1.0, 0.0),
        ];
        close_c(&got, &want);
        let got = run(
            FftKind::Rfft,
            FftNorm::Forward,
            &x6,
            &[2, 6],
            &[2, 4],
            c(0.0, 0.0),
        );
        close_c(&got, &want.map(|v| v / 6.0));

        // A non-power-of-two length: np.fft.rfft(x12) with x12 as below (float32).
        let x12 = [
            1.0f32,
            0.8648422,
            0.36996713,
            -0.2048461,
            -0.5422223,
            -0.43645668,
            0.10973918,
            0.8865124,
            1.5755659,
            1.8998586,
            1.7539022,
            1.2533739,
        ];
        let got = run(
            FftKind::Rfft,
            FftNorm::Backward,
            &x12,
            &[12],
            &[7],
            c(0.0, 0.0),
        );
        let want = [
            c(8.530236, 0.0),
            c(2.880193, 5.9930363),
            c(-0.87974393, -1.444782),
            c(-0.20026489, -0.3932039),
            c(-0.057990678, -0.17371102),
            c(-0.009145533, -0.07212628),
            c(0.0036678687, 0.0),
        ];
        close_c(&got, &want);

        // np.fft.rfft([2.5]); an empty axis gives its single zero bin.
        close_c(
            &run(
                FftKind::Rfft,
                FftNorm::Backward,
                &[2.5f32],
                &[1],
                &[1],
                c(0.0, 0.0),
            ),
            &[c(2.5, 0.0)],
        );
        let got = run::<f32, _>(
            FftKind::Rfft,
            FftNorm::Backward,
            &[],
            &[2, 0],
            &[2, 1],
            c(7.0, 7.0),
        );
        assert_eq!(got, [c(0.0, 0.0); 2]);
    }

    #[test]
    fn irfft_ignores_dc_and_nyquist_imaginary_parts() {
        let b4 = [c(3.0, 1.0), c(1.0, -2.0), c(-0.5, 0.5), c(2.0, 7.0)];
        // np.fft.irfft([3+1j, 1-2j, -0.5+0.5j, 2+7j], n=6)
        let got = run(FftKind::Irfft, FftNorm::Backward, &b4, &[4], &[6], 0f32);
        close_r(
            &got,
            &[
                1.0,
                0.84967935,
                1.4716878,
                -0.33333334,
                0.028312163,
                -0.016346036,
            ],
        );
        // ... norm="ortho"
        let got = run(FftKind::Irfft, FftNorm::Ortho, &b4, &[4], &[6], 0f32);
        close_r(
            &got,
            &[
                2.4494898,
                2.081281,
                3.6048841,
                -0.8164966,
                0.069350354,
                -0.040039446,
            ],
        );

        // np.fft.irfft([[3+1j, 1-2j, -0.5+0.5j], [1, 0, 0]], n=5, norm="forward")
        let b3 = [
            c(3.0, 1.0),
            c(1.0, -2.0),
            c(-0.5, 0.5),
            c(1.0, 0.0),
            c(0.0, 0.0),
            c(0.0, 0.0),
        ];
        let got = run(
            FftKind::Irfft,
            FftNorm::Forward,
            &b3,
            &[2, 3],
            &[2, 5],
            0f32,
        );
        close_r(
            &got,
            &[
                4.0, 7.6434917, 4.3751464, -2.2292485, 1.2106102, 1.0, 1.0, 1.0, 1.0, 1.0,
            ],
        );

        // np.fft.irfft([2.5+3j], n=1)
        close_r(
            &run(
                FftKind::Irfft,
                FftNorm::Backward,
                &[c(2.5, 3.0)],
                &[1],
                &[1],
                0f32,
            ),
            &[2.5],
        );
    }
}
