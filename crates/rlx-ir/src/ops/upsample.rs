//! Resampling family: nearest / linear upsampling of the spatial dims.

use super::{arity, InferResult};
use crate::Shape;

/// Interpolation of [`crate::Op::Upsample`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum InterpMode {
    /// Nearest neighbour: source index `floor(dst * in / out)` (PyTorch `nearest`).
    Nearest,
    /// Linear along each spatial dim (bilinear in 2-d), half-pixel centres
    /// unless `align_corners`.
    Linear,
}

pub(crate) fn infer_upsample(inputs: &[&Shape], declared: &Shape) -> InferResult {
    arity(inputs, 1, 1)?;
    let x = inputs[0];
    if x.rank() < 3 || !x.dtype().is_float() {
        return Err(format!("upsample needs a float x [N, C, *sp], given {x}"));
    }
    if declared.rank() != x.rank()
        || declared.dims()[..2] != x.dims()[..2]
        || declared.dtype() != x.dtype()
    {
        return Err(format!(
            "upsample of {x} keeps N, C and the dtype; declared {declared}"
        ));
    }
    if !declared.is_static() || !x.is_static() {
        return Err("upsample needs static spatial dims".into());
    }
    Ok(declared.clone())
}
