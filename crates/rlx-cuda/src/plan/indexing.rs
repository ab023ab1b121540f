//! Planning of the indexing, top-k, resampling and dequantizing ops.

use super::{float_suffix, AxisIndex, Kernel};
use crate::geometry::{Resize, Window2d};
use crate::launch::{contiguous_strides, MAX_RANK};
use rlx_ir::op::Window;
use rlx_ir::ops::upsample::InterpMode;
use rlx_ir::quant::QuantScheme;
use rlx_ir::DType;

/// The [`AxisIndex`] of indices of `idx` dims into data of `data` dims
/// along `axis` (the index dtype `idx_dt` must be i64).
pub(super) fn axis_index(
    data: &[usize],
    idx: &[usize],
    axis: usize,
    idx_dt: DType,
) -> Result<AxisIndex, String> {
    if idx_dt != DType::I64 {
        return Err(format!("indices must be i64 on CUDA, not {idx_dt}"));
    }
    if idx.len() != data.len() || axis >= data.len() || idx.len() > MAX_RANK {
        return Err(format!(
            "indices {idx:?} along axis {axis} of {data:?} (same rank, at most {MAX_RANK} dims)"
        ));
    }
    let strides = contiguous_strides(data);
    let mut data_strides = strides.clone();
    data_strides[axis] = 0;
    Ok(AxisIndex {
        dims: idx.to_vec(),
        data_strides,
        axis_stride: strides[axis],
        len: data[axis],
    })
}

/// Scatter-add accumulates with atomics (native for f32, a 32-bit
/// compare-and-swap loop for f16 / bf16).
pub(super) fn scatter_add(
    dt: DType,
    data: &[usize],
    idx: &[usize],
    axis: usize,
    idx_dt: DType,
) -> Result<Kernel, String> {
    float_suffix(dt)
        .ok_or_else(|| format!("no CUDA scatter-add of {dt}; f32, f16 and bf16 have kernels"))?;
    Ok(Kernel::ScatterAdd(axis_index(data, idx, axis, idx_dt)?))
}

/// Top-k values (`dt` a float with kernels) or i64 indices of `x`'s dtype.
pub(super) fn topk(
    x: &[usize],
    x_dt: DType,
    axis: usize,
    k: usize,
    largest: bool,
    indices: bool,
) -> Result<Kernel, String> {
    float_suffix(x_dt)
        .ok_or_else(|| format!("no CUDA top-k of {x_dt}; f32, f16 and bf16 have kernels"))?;
    if axis >= x.len() || k == 0 || k > x[axis] {
        return Err(format!("top-{k} along axis {axis} of {x:?}"));
    }
    Ok(Kernel::TopK {
        shape: [
            x[..axis].iter().product(),
            x[axis],
            x[axis + 1..].iter().product(),
        ],
        k,
        largest,
        indices,
    })
}

/// A nearest / linear resize of `x` to `y`.
pub(super) fn resize(
    x: &[usize],
    y: &[usize],
    mode: InterpMode,
    align_corners: bool,
) -> Result<Kernel, String> {
    Resize::new(x, y, mode == InterpMode::Linear, align_corners).map(Kernel::Resize)
}

/// A 2-d (or 1-d, as height 1) transposed convolution of `x` by `w
/// [in_c, out_c / groups, *k]` to `y`.
pub(super) fn conv_transpose(
    x: &[usize],
    w: &[usize],
    y: &[usize],
    window: &Window,
    groups: usize,
) -> Result<Kernel, String> {
    let kernel = w.get(2..).unwrap_or_default();
    Window2d::new(x, y, kernel, window, groups).map(Kernel::ConvTranspose2d)
}

/// The dequantize kernel of `scheme` (output f32).
pub(super) fn dequantize(scheme: QuantScheme, out: DType) -> Result<Kernel, String> {
    let format = match scheme {
        QuantScheme::GgufQ4_0 => "q4_0",
        QuantScheme::GgufQ4_1 => "q4_1",
        QuantScheme::GgufQ5_0 => "q5_0",
        QuantScheme::GgufQ5_1 => "q5_1",
        QuantScheme::GgufQ8_0 => "q8_0",
        QuantScheme::GgufQ4K => "q4_k",
        QuantScheme::GgufQ5K => "q5_k",
        QuantScheme::GgufQ6K => "q6_k",
        other => {
            return Err(format!(
            "no CUDA dequantize of {other:?} (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K and Q6_K have kernels)"
        ))
        }
    };
    if out != DType::F32 {
        return Err(format!("dequantize gives f32, not {out}"));
    }
    Ok(Kernel::Dequantize { format })
}
