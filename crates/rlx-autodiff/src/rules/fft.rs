//! Reverse mode of the FFT family.
//!
//! Complex cotangents follow JAX's convention (`jax.vjp`): a cotangent is
//! a covector, so the VJP of a complex-linear map is its plain transpose
//! (no conjugation), and for a real loss `L` of a complex value `z` the
//! cotangent is `dL/dRe(z) - i dL/dIm(z)`. Casting real -> complex
//! transposes to taking the real part, and complex -> real (the real part)
//! to the embedding. The DFT matrix is symmetric, so `fft` and `ifft` are
//! their own transposes; `rfft` and `irfft` follow JAX's
//! `_rfft_transpose` / `_irfft_transpose`.

use crate::emit::*;
use crate::Result;
use rlx_ir::fft::{FftKind, FftNorm};
use rlx_ir::{Complex32, DType, Graph, HostTensor, NodeId, Op, Shape};

fn fft(
    g: &mut Graph,
    kind: FftKind,
    norm: FftNorm,
    x: NodeId,
    out: Option<Shape>,
) -> Result<NodeId> {
    Ok(g.try_node(Op::Fft { kind, norm }, &[x], out)?)
}

/// Cotangent of the input of an FFT node with input `x` and output cotangent `ct`.
pub fn vjp_fft(
    g: &mut Graph,
    kind: FftKind,
    norm: FftNorm,
    x: NodeId,
    ct: NodeId,
) -> Result<NodeId> {
    match kind {
        FftKind::Fft | FftKind::Ifft => fft(g, kind, norm, ct, None),
        FftKind::Rfft => {
            // Transpose of `x -> fft(complex(x))[.., :n/2+1]`: zero-extend, fft, real part.
            let n = *dims(g, x)?.last().unwrap_or(&0);
            let m = *dims(g, ct)?.last().unwrap_or(&0);
            let axis = g.shape(ct).rank() - 1;
            let full = pad_axis(g, ct, axis, 0, n - m)?;
            let f = fft(g, FftKind::Fft, norm, full, None)?;
            cast(g, f, DType::F32)
        }
        FftKind::Irfft => {
            // conj(s * mask * rfft(ct)) with `s` the inverse scale; the
            // conjugate of a real signal's spectrum is the spectrum of the
            // signal reversed mod n.
            let d = dims(g, ct)?;
            let axis = d.len() - 1;
            let n = d[axis];
            let rev = if n > 1 {
                let head = slice_axis(g, ct, axis, 0, 1, 1)?;
                let tail = slice_axis(g, ct, axis, n - 1, n - 1, -1)?;
                g.try_node(Op::Concat { axis }, &[head, tail], None)?
            } else {
                ct
            };
            let scaled_norm = match norm {
                FftNorm::Backward => FftNorm::Forward,
                FftNorm::Ortho => FftNorm::Ortho,
                FftNorm::Forward => FftNorm::Backward,
            };
            let spec = fft(g, FftKind::Rfft, scaled_norm, rev, None)?;
            let m = n / 2 + 1;
            let mask: Vec<Complex32> = (0..m)
                .map(|k| {
                    let edge = k == 0 || (n % 2 == 0 && k == m - 1);
                    Complex32::new(if edge { 1.0 } else { 2.0 }, 0.0)
                })
                .collect();
            let c = g.constant_tensor(&HostTensor::from_vec(mask, &[m])?);
            mul(g, spec, c)
        }
    }
}
