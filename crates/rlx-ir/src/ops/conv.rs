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

/// The patches of a padded `x [N, C, *sp]` for every kernel offset, stacked
/// as `[N, C, K, *out]` (K = product of the kernel dims, row-major).
fn patches(
    g: &mut crate::Graph,
    x: crate::NodeId,
    kernel: &[usize],
    w: &Window,
    pad_value: f64,
) -> Result<(crate::NodeId, Vec<usize>), crate::IrError> {
    use crate::op::{PadMode, SliceSpec};
    use crate::{IrError, Op, Shape};
    let xd = super::emit::static_dims(g, x, "conv")?;
    let dt = g.shape(x).dtype();
    let spatial = xd.len() - 2;
    let mut pads = vec![(0, 0), (0, 0)];
    pads.extend_from_slice(&w.padding);
    let xp = if pads.iter().all(|&p| p == (0, 0)) {
        x
    } else {
        g.try_node(
            Op::Pad {
                pads,
                mode: PadMode::Constant(pad_value),
            },
            &[x],
            None,
        )?
    };
    let out: Vec<usize> = (0..spatial)
        .map(|i| {
            window_out_len(
                xd[2 + i],
                kernel[i],
                w.stride[i],
                w.padding[i],
                w.dilation[i],
            )
        })
        .collect::<Option<_>>()
        .ok_or_else(|| IrError::invalid("conv", "the window exceeds the input"))?;
    let kcount: usize = kernel.iter().product();
    let mut cols = Vec::with_capacity(kcount);
    for k in 0..kcount {
        // Row-major kernel offset of tap k.
        let mut rem = k;
        let mut offs = vec![0; spatial];
        for i in (0..spatial).rev() {
            offs[i] = rem % kernel[i];
            rem /= kernel[i];
        }
        let mut starts = vec![0, 0];
        starts.extend((0..spatial).map(|i| offs[i] * w.dilation[i]));
        let mut steps = vec![1, 1];
        steps.extend(w.stride.iter().map(|&s| s as i64));
        let mut sd = xd[..2].to_vec();
        sd.extend_from_slice(&out);
        let s = g.try_node(
            Op::Slice(SliceSpec { starts, steps }),
            &[xp],
            Some(Shape::new(&sd, dt)),
        )?;
        let mut rd = xd[..2].to_vec();
        rd.push(1);
        rd.extend_from_slice(&out);
        cols.push(super::emit::reshape(g, s, &rd)?);
    }
    let stacked = if cols.len() == 1 {
        cols[0]
    } else {
        g.try_node(Op::Concat { axis: 2 }, &cols, None)?
    };
    Ok((stacked, out))
}

/// Convolution as primitives (im2col): pad, one strided slice per kernel
/// tap, concat, and a grouped matmul. The reference semantics of
/// [`crate::Op::Conv`], and the form transforms differentiate.
pub fn decompose_conv(
    g: &mut crate::Graph,
    inputs: &[crate::NodeId],
    w: &Window,
    groups: usize,
) -> Result<crate::NodeId, crate::IrError> {
    use crate::op::BinaryOp;
    let (x, wt) = (inputs[0], inputs[1]);
    let xd = super::emit::static_dims(g, x, "conv")?;
    let wd = super::emit::static_dims(g, wt, "conv")?;
    let (n, c, o) = (xd[0], xd[1], wd[0]);
    let kernel = &wd[2..];
    let kcount: usize = kernel.iter().product();
    let (cols, out) = patches(g, x, kernel, w, 0.0)?;
    let p: usize = out.iter().product();
    let cols = super::emit::reshape(g, cols, &[n, groups, (c / groups) * kcount, p])?;
    let wg = super::emit::reshape(g, wt, &[groups, o / groups, (c / groups) * kcount])?;
    let y = g.try_node(crate::Op::MatMul, &[wg, cols], None)?;
    let mut yd = vec![n, o];
    yd.extend_from_slice(&out);
    let y = super::emit::reshape(g, y, &yd)?;
    match inputs.get(2) {
        Some(&b) => {
            let mut bd = vec![o];
            bd.extend(std::iter::repeat_n(1, out.len()));
            let b = super::emit::reshape(g, b, &bd)?;
            super::emit::bin(g, BinaryOp::Add, y, b)
        }
        None => Ok(y),
    }
}

/// Pooling as primitives: pad (with -inf for max), one strided slice per
/// window tap, concat, and a max / mean over the taps (the mean divides by
/// the in-bounds count unless `count_include_pad`).
pub fn decompose_pool(
    g: &mut crate::Graph,
    x: crate::NodeId,
    kind: crate::op::PoolKind,
    w: &Window,
    count_include_pad: bool,
) -> Result<crate::NodeId, crate::IrError> {
    use crate::op::{BinaryOp, PoolKind, ReduceOp};
    use crate::{HostTensor, Op};
    let xd = super::emit::static_dims(g, x, "pool")?;
    let fill = if kind == PoolKind::Max {
        f64::NEG_INFINITY
    } else {
        0.0
    };
    let (cols, out) = patches(g, x, &w.kernel, w, fill)?;
    let red = if kind == PoolKind::Max {
        ReduceOp::Max
    } else {
        ReduceOp::Sum
    };
    let y = g.try_node(
        Op::Reduce {
            op: red,
            axes: vec![2],
            keep_dim: false,
        },
        &[cols],
        None,
    )?;
    if kind == PoolKind::Max {
        return Ok(y);
    }
    // Divisor per output cell, counted on the host from the window geometry.
    let spatial = out.len();
    let total: usize = out.iter().product();
    let mut counts = vec![0f64; total];
    for (cell, cnt) in counts.iter_mut().enumerate() {
        let mut rem = cell;
        let mut n = 1usize;
        for i in (0..spatial).rev() {
            let oi = rem % out[i];
            rem /= out[i];
            let start = (oi * w.stride[i]) as isize - w.padding[i].0 as isize;
            let inside = (0..w.kernel[i])
                .filter(|&k| {
                    let p = start + (k * w.dilation[i]) as isize;
                    count_include_pad || (p >= 0 && (p as usize) < xd[2 + i])
                })
                .count();
            n *= inside;
        }
        *cnt = n.max(1) as f64;
    }
    let dt = g.shape(x).dtype();
    let t = HostTensor::from_vec(counts, &out)?;
    let c = g.constant_tensor(&t);
    let c = if dt == crate::DType::F64 {
        c
    } else {
        g.try_node(Op::Cast, &[c], Some(crate::Shape::new(&out, dt)))?
    };
    super::emit::bin(g, BinaryOp::Div, y, c)
}

/// Transposed convolution as primitives: the input is dilated by the
/// stride (zeros between elements), padded by `dilation * (k - 1)` (plus
/// `output_padding` at the end), convolved at stride 1 with the flipped
/// weight regrouped to `[O, C/groups, *k]`, and cropped by the padding.
pub fn decompose_conv_transpose(
    g: &mut crate::Graph,
    inputs: &[crate::NodeId],
    w: &Window,
    output_padding: &[usize],
    groups: usize,
) -> Result<crate::NodeId, crate::IrError> {
    use crate::op::{PadMode, SliceSpec};
    use crate::{Op, Shape};
    let (x, wt) = (inputs[0], inputs[1]);
    let xd = super::emit::static_dims(g, x, "conv_transpose")?;
    let wd = super::emit::static_dims(g, wt, "conv_transpose")?;
    let dt = g.shape(x).dtype();
    let spatial = xd.len() - 2;
    let kernel = wd[2..].to_vec();
    let (c, og) = (xd[1], wd[1]);
    // Dilate each spatial axis by its stride: [.., n, ..] -> [.., (n-1)s+1, ..].
    let mut xs = x;
    for i in 0..spatial {
        let s = w.stride[i];
        if s == 1 {
            continue;
        }
        let mut d = super::emit::static_dims(g, xs, "conv_transpose")?;
        let n = d[2 + i];
        d.insert(3 + i, 1);
        let e = super::emit::reshape(g, xs, &d)?;
        let mut pads = vec![(0, 0); d.len()];
        pads[3 + i] = (0, s - 1);
        let e = g.try_node(
            Op::Pad {
                pads,
                mode: PadMode::Constant(0.0),
            },
            &[e],
            None,
        )?;
        d.remove(3 + i);
        d[2 + i] = n * s;
        let e = super::emit::reshape(g, e, &d)?;
        xs = super::emit_more::narrow(g, e, 2 + i, 0, (n - 1) * s + 1)?;
    }
    let mut pads = vec![(0, 0), (0, 0)];
    pads.extend((0..spatial).map(|i| {
        let edge = w.dilation[i] * (kernel[i] - 1);
        (edge, edge + output_padding[i])
    }));
    let xp = g.try_node(
        Op::Pad {
            pads,
            mode: PadMode::Constant(0.0),
        },
        &[xs],
        None,
    )?;
    // w [C, O/g, *k] -> [g, C/g, O/g, *k] -> [g, O/g, C/g, *k] -> [O, C/g, *k], flipped.
    let mut gd = vec![groups, c / groups, og];
    gd.extend_from_slice(&kernel);
    let wg = super::emit::reshape(g, wt, &gd)?;
    let mut perm = vec![0, 2, 1];
    perm.extend(3..3 + spatial);
    let wg = g.try_node(Op::Transpose { perm }, &[wg], None)?;
    let mut od = vec![og * groups, c / groups];
    od.extend_from_slice(&kernel);
    let wo = super::emit::reshape(g, wg, &od)?;
    let mut starts = vec![0, 0];
    starts.extend(kernel.iter().map(|&k| k - 1));
    let mut steps = vec![1, 1];
    steps.extend(std::iter::repeat_n(-1, spatial));
    let wf = g.try_node(
        Op::Slice(SliceSpec { starts, steps }),
        &[wo],
        Some(Shape::new(&od, dt)),
    )?;
    let inner = Window {
        kernel: kernel.clone(),
        stride: vec![1; spatial],
        padding: vec![(0, 0); spatial],
        dilation: w.dilation.clone(),
    };
    let mut conv_in = vec![xp, wf];
    conv_in.extend(inputs.get(2).copied());
    let mut y = decompose_conv(g, &conv_in, &inner, groups)?;
    for i in 0..spatial {
        let (lo, hi) = w.padding[i];
        if lo == 0 && hi == 0 {
            continue;
        }
        let full = super::emit::static_dims(g, y, "conv_transpose")?[2 + i];
        y = super::emit_more::narrow(g, y, 2 + i, lo, full - hi)?;
    }
    Ok(y)
}
