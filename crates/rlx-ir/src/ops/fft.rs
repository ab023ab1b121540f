//! FFT family along the last axis: fft, ifft (complex), rfft, irfft (real <-> half spectrum).

use super::{arity, static_dim, InferResult};
use crate::{DType, Dim, Shape};

/// Which transform an [`crate::Op::Fft`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FftKind {
    /// Complex -> complex forward.
    Fft,
    /// Complex -> complex inverse.
    Ifft,
    /// Real -> the `n/2 + 1` non-negative frequencies.
    Rfft,
    /// Half spectrum -> real of the declared length `n`.
    Irfft,
}

/// Scaling convention (numpy's `norm=`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum FftNorm {
    /// No scaling forward, `1/n` inverse (numpy's default).
    #[default]
    Backward,
    /// `1/sqrt(n)` both ways.
    Ortho,
    /// `1/n` forward, none inverse.
    Forward,
}

pub(crate) fn infer_fft(kind: FftKind, inputs: &[&Shape], declared: Option<&Shape>) -> InferResult {
    arity(inputs, 1, 1)?;
    let x = inputs[0];
    if x.rank() == 0 {
        return Err("fft of a scalar".into());
    }
    let last = x.rank() - 1;
    match kind {
        FftKind::Fft | FftKind::Ifft => {
            if x.dtype() != DType::C64 {
                return Err(format!(
                    "{kind:?} needs a c64 input, given {x} (cast it first)"
                ));
            }
            Ok(x.clone())
        }
        FftKind::Rfft => {
            if x.dtype() != DType::F32 {
                return Err(format!("rfft needs an f32 input, given {x}"));
            }
            let n = static_dim(&x.dims()[last], "the transformed dim")?;
            let mut dims = x.dims().to_vec();
            dims[last] = Dim::Static(n / 2 + 1);
            Ok(Shape::from_dims(dims, DType::C64))
        }
        FftKind::Irfft => {
            if x.dtype() != DType::C64 {
                return Err(format!("irfft needs a c64 input, given {x}"));
            }
            let m = static_dim(&x.dims()[last], "the transformed dim")?;
            let out = declared.ok_or("irfft needs its output length declared")?;
            let n = static_dim(
                out.dims().last().ok_or("irfft output of rank 0")?,
                "the output length",
            )?;
            if out.dtype() != DType::F32
                || out.rank() != x.rank()
                || out.dims()[..last] != x.dims()[..last]
                || n == 0
                || n / 2 + 1 != m
            {
                return Err(format!(
                    "irfft of {x} gives f32 with last dim n where n/2+1 = {m}; declared {out}"
                ));
            }
            Ok(out.clone())
        }
    }
}
