//! Convolution family: conv (1-d / 2-d / N-d), transposed conv, pooling.

use super::{arity, static_dim, InferResult};
use crate::op::Window;
use crate::{DType, Dim, Shape};

fn check_window(w: &Window, spatial: usize, with_kernel: bool) -> Result<(), String> {
    let ok = w.stride.len() == spatial
        && w.padding.len() == spatial
        && w.dilation.len() == spatial
        && (!with_kernel || w.kernel.len() == spatial);
    if !ok {
        return Err(format!("window {w:?} does not have {spatial} spatial dims"));
    }
    if w.stride.contains(&0) || w.dilation.contains(&0) {
        return Err(format!("window {w:?} has a zero stride or dilation"));
    }
    Ok(())
}

/// Output length of a strided window along one dim.
pub fn window_out_len(
    input: usize,
    kernel: usize,
    stride: usize,
    pad: (usize, usize),
    dilation: usize,
) -> Option<usize> {
    let padded = input + pad.0 + pad.1;
    let span = dilation * (kernel.max(1) - 1) + 1;
    if kernel == 0 || padded < span {
        return None;
    }
    Some((padded - span) / stride + 1)
}

fn numeric_float(x: &Shape) -> Result<(), String> {
    if !x.dtype().is_float() {
        return Err(format!("needs a floating-point input, given {x}"));
    }
    Ok(())
}

pub(crate) fn infer_conv(w: &Window, groups: usize, inputs: &[&Shape]) -> InferResult {
    arity(inputs, 2, 3)?;
    let (x, wt) = (inputs[0], inputs[1]);
    numeric_float(x)?;
    if wt.dtype() != x.dtype() || wt.rank() != x.rank() || x.rank() < 3 {
        return Err(format!(
            "conv needs x [N, C, *sp] and w [O, C/groups, *k] of one dtype, given {x} and {wt}"
        ));
    }
    let spatial = x.rank() - 2;
    check_window(w, spatial, false)?;
    let c = static_dim(&x.dims()[1], "the channel dim")?;
    let o = static_dim(&wt.dims()[0], "the output channels")?;
    let cg = static_dim(&wt.dims()[1], "the weight's input channels")?;
    if groups == 0 || c % groups != 0 || o % groups != 0 || cg * groups != c {
        return Err(format!(
            "channels do not match groups = {groups}: x {x} has {c}, w {wt} expects {cg} per group, {o} outputs"
        ));
    }
    if let Some(b) = inputs.get(2) {
        if b.dims() != [Dim::Static(o)] || b.dtype() != x.dtype() {
            return Err(format!("bias {b} must be {}[{o}]", x.dtype()));
        }
    }
    let mut dims = vec![x.dims()[0].clone(), Dim::Static(o)];
    for i in 0..spatial {
        let n = static_dim(&x.dims()[2 + i], "a spatial dim")?;
        let k = static_dim(&wt.dims()[2 + i], "a kernel dim")?;
        let out =
            window_out_len(n, k, w.stride[i], w.padding[i], w.dilation[i]).ok_or_else(|| {
                format!(
                    "the kernel {k} (dilation {}) exceeds the padded input {n} on spatial dim {i}",
                    w.dilation[i]
                )
            })?;
        dims.push(Dim::Static(out));
    }
    Ok(x.with_dims(dims))
}

pub(crate) fn infer_conv_transpose(
    w: &Window,
    output_padding: &[usize],
    groups: usize,
    inputs: &[&Shape],
) -> InferResult {
    arity(inputs, 2, 3)?;
    let (x, wt) = (inputs[0], inputs[1]);
    numeric_float(x)?;
    if wt.dtype() != x.dtype() || wt.rank() != x.rank() || x.rank() < 3 {
        return Err(format!("conv_transpose needs x [N, C, *sp] and w [C, O/groups, *k] of one dtype, given {x} and {wt}"));
    }
    let spatial = x.rank() - 2;
    check_window(w, spatial, false)?;
    if output_padding.len() != spatial {
        return Err(format!(
            "output_padding {output_padding:?} needs {spatial} entries"
        ));
    }
    let c = static_dim(&x.dims()[1], "the channel dim")?;
    let wc = static_dim(&wt.dims()[0], "the weight's input channels")?;
    let og = static_dim(&wt.dims()[1], "the weight's output channels")?;
    if groups == 0 || wc != c || c % groups != 0 {
        return Err(format!(
            "channels do not match: x {x}, w {wt}, groups {groups}"
        ));
    }
    let o = og * groups;
    if let Some(b) = inputs.get(2) {
        if b.dims() != [Dim::Static(o)] || b.dtype() != x.dtype() {
            return Err(format!("bias {b} must be {}[{o}]", x.dtype()));
        }
    }
    let mut dims = vec![x.dims()[0].clone(), Dim::Static(o)];
    #[allow(clippy::needless_range_loop)] // i indexes five parallel per-dim lists
    for i in 0..spatial {
        let n = static_dim(&x.dims()[2 + i], "a spatial dim")?;
        let k = static_dim(&wt.dims()[2 + i], "a kernel dim")?;
        let full =
            (n.max(1) - 1) * w.stride[i] + w.dilation[i] * (k.max(1) - 1) + output_padding[i] + 1;
        let (lo, hi) = w.padding[i];
        if n == 0 || full < lo + hi + 1 {
            return Err(format!(
                "padding ({lo}, {hi}) leaves no output on spatial dim {i}"
            ));
        }
        dims.push(Dim::Static(full - lo - hi));
    }
    Ok(x.with_dims(dims))
}

pub(crate) fn infer_pool(w: &Window, inputs: &[&Shape]) -> InferResult {
    arity(inputs, 1, 1)?;
    let x = inputs[0];
    if x.rank() < 3 || x.dtype() == DType::Bool || x.dtype() == DType::C64 {
        return Err(format!(
            "pooling needs x [N, C, *sp] of a real type, given {x}"
        ));
    }
    let spatial = x.rank() - 2;
    check_window(w, spatial, true)?;
    let mut dims = x.dims()[..2].to_vec();
    for i in 0..spatial {
        let n = static_dim(&x.dims()[2 + i], "a spatial dim")?;
        let (lo, hi) = w.padding[i];
        if lo >= w.kernel[i].max(1) || hi >= w.kernel[i].max(1) {
            return Err(format!(
                "padding ({lo}, {hi}) must be smaller than the kernel {}",
                w.kernel[i]
            ));
        }
        let out = window_out_len(n, w.kernel[i], w.stride[i], w.padding[i], w.dilation[i])
            .ok_or_else(|| {
                format!(
                    "the window {} exceeds the padded input {n} on spatial dim {i}",
                    w.kernel[i]
                )
            })?;
        dims.push(Dim::Static(out));
    }
    Ok(x.with_dims(dims))
}
