//! Fully connected layer (TFLite `FullyConnected`, per-channel weights).

use crate::error::{check_len, KernelError};
use crate::fixed::multiply_by_quantized_multiplier;
use crate::mac::dot_offset;
use crate::qparams::{check_accumulator, ChannelQuant, QParams};

/// Biases beyond this magnitude could push an accumulator out of int32.
pub(crate) const BIAS_LIMIT: i32 = 1 << 30;

/// Checks a bias vector of `channels` entries, each within `±2^30`.
pub(crate) fn check_bias(bias: &[i32], channels: usize) -> Result<(), KernelError> {
    check_len("bias", channels, bias.len())?;
    if bias.iter().any(|b| b.unsigned_abs() > BIAS_LIMIT as u32) {
        return Err(KernelError::QParam("bias outside ±2^30"));
    }
    Ok(())
}

/// `out[b][o] = clamp(requant(bias[o] + sum_k (x[b][k] - zp_in) * w[o][k]) + zp_out)`
/// for `batch` rows of `depth` inputs; `weights` is `[units][depth]`.
#[allow(clippy::too_many_arguments)]
pub fn dense(
    input: &[i8],
    weights: &[i8],
    bias: &[i32],
    batch: usize,
    depth: usize,
    units: usize,
    q: &QParams,
    cq: &ChannelQuant<'_>,
    output: &mut [i8],
) -> Result<(), KernelError> {
    if depth == 0 || units == 0 {
        return Err(KernelError::Geometry(
            "dense depth and units must be positive",
        ));
    }
    q.validate()?;
    cq.validate(units)?;
    check_accumulator(depth)?;
    check_bias(bias, units)?;
    check_len("input", batch * depth, input.len())?;
    check_len("weights", units * depth, weights.len())?;
    check_len("output", batch * units, output.len())?;
    let offset = -q.input_zero_point;
    for (row, out_row) in input
        .chunks_exact(depth)
        .zip(output.chunks_exact_mut(units))
    {
        for (o, out) in out_row.iter_mut().enumerate() {
            let acc = dot_offset(row, &weights[o * depth..(o + 1) * depth], offset, bias[o]);
            *out = q.finish(multiply_by_quantized_multiplier(
                acc,
                cq.multiplier[o],
                cq.shift[o],
            ));
        }
    }
    Ok(())
}
