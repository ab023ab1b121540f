//! Convolution and pooling: Conv, ConvTranspose, MaxPool, AveragePool,
//! LpPool, the global pools, MaxUnpool, Col2Im, CausalConvWithState.

use super::NodeCx;
use crate::Result;
use rlx_ir::op::{BinaryOp as B, PoolKind, ReduceOp, UnaryOp as U, Window};
use rlx_ir::{DType, NodeId, Op};

op_table! {
    "Conv" => conv,
    "ConvTranspose" => conv_transpose,
    "MaxPool" => |cx| pool(cx, PoolKind::Max),
    "AveragePool" => |cx| pool(cx, PoolKind::Avg),
    "LpPool" => lp_pool,
    "GlobalAveragePool" => |cx| global_pool(cx, ReduceOp::Mean),
    "GlobalMaxPool" => |cx| global_pool(cx, ReduceOp::Max),
    "GlobalLpPool" => global_lp_pool,
    "CausalConvWithState" => causal_conv_with_state,
    "MaxUnpool" => max_unpool,
    "Col2Im" => col2im,
}

/// Per-spatial-dim list attribute with a default.
pub(super) fn per_dim(cx: &NodeCx, name: &str, n: usize, default: usize) -> Result<Vec<usize>> {
    // Strides and dilations divide: they must be positive.
    let min = i64::from(matches!(name, "strides" | "dilations"));
    match cx.attr_ints(name) {
        Some(v) if v.len() == n && v.iter().all(|&d| d >= min) => {
            Ok(v.iter().map(|&d| d as usize).collect())
        }
        Some(v) => Err(cx.err(format!(
            "attribute {name}={v:?} needs {n} entries of at least {min}"
        ))),
        None => Ok(vec![default; n]),
    }
}

/// (before, after) padding from `pads` / `auto_pad` for input sizes `sizes`.
pub(super) fn resolve_pads(
    cx: &NodeCx,
    sizes: &[usize],
    kernel: &[usize],
    stride: &[usize],
    dilation: &[usize],
) -> Result<Vec<(usize, usize)>> {
    let n = sizes.len();
    let auto = cx.attr_s("auto_pad", "NOTSET");
    match auto.as_str() {
        "NOTSET" => {
            let p = match cx.attr_ints("pads") {
                Some(p) if p.len() == 2 * n && p.iter().all(|&d| d >= 0) => p,
                Some(p) => {
                    return Err(cx.err(format!("pads={p:?} needs {} non-negative entries", 2 * n)))
                }
                None => vec![0; 2 * n],
            };
            Ok((0..n).map(|i| (p[i] as usize, p[n + i] as usize)).collect())
        }
        "VALID" => Ok(vec![(0, 0); n]),
        "SAME_UPPER" | "SAME_LOWER" => Ok((0..n)
            .map(|i| {
                let out = sizes[i].div_ceil(stride[i]);
                let span = dilation[i] * kernel[i].saturating_sub(1) + 1;
                let total = (out.saturating_sub(1) * stride[i] + span).saturating_sub(sizes[i]);
                let small = total / 2;
                if auto == "SAME_UPPER" {
                    (small, total - small)
                } else {
                    (total - small, small)
                }
            })
            .collect()),
        other => Err(cx.err(format!("unknown auto_pad \"{other}\""))),
    }
}

/// The shared geometry of Conv / ConvTranspose.
struct ConvGeometry {
    x: NodeId,
    w: NodeId,
    xd: Vec<usize>,
    kernel: Vec<usize>,
    stride: Vec<usize>,
    dilation: Vec<usize>,
    groups: usize,
}

fn conv_geometry(cx: &NodeCx) -> Result<ConvGeometry> {
    let (x, w) = (cx.x(0)?, cx.x(1)?);
    let xd = cx.static_dims(x, cx.op_type())?;
    let wd = cx.static_dims(w, "the weight")?;
    if xd.len() < 3 || wd.len() != xd.len() {
        return Err(cx.err(format!(
            "x {xd:?} and w {wd:?} must be [N, C, *sp] and [O|C, C/g|O/g, *k]"
        )));
    }
    let n = xd.len() - 2;
    Ok(ConvGeometry {
        x,
        w,
        kernel: wd[2..].to_vec(),
        stride: per_dim(cx, "strides", n, 1)?,
        dilation: per_dim(cx, "dilations", n, 1)?,
        groups: cx.attr_i("group", 1).max(1) as usize,
        xd,
    })
}

fn conv(cx: &mut NodeCx) -> Result<Vec<NodeId>> {
    let ConvGeometry {
        x,
        w,
        xd,
        kernel,
        stride,
        dilation,
        groups,
    } = conv_geometry(cx)?;
    let padding = resolve_pads(cx, &xd[2..], &kernel, &stride, &dilation)?;
    let window = Window {
        kernel: vec![],
        stride,
        padding,
        dilation,
    };
    let mut ins = vec![x, w];
    ins.extend(cx.opt(2));
    Ok(vec![cx.node(Op::Conv { window, groups }, &ins, None)?])
}

fn conv_transpose(cx: &mut NodeCx) -> Result<Vec<NodeId>> {
    let ConvGeometry {
        x,
        w,
        xd,
        kernel,
        stride,
        dilation,
        groups,
    } = conv_geometry(cx)?;
    let n = xd.len() - 2;
    let mut output_padding = per_dim(cx, "output_padding", n, 0)?;
    let auto = cx.attr_s("auto_pad", "NOTSET");
    let padding = if let Some(os) = cx.attr_ints("output_shape") {
        let os: Vec<usize> = os
            .iter()
            .rev()
            .take(n)
            .rev()
            .map(|&d| d.max(0) as usize)
            .collect();
        let mut pads = Vec::new();
        for i in 0..n {
            let full = stride[i] * xd[2 + i].saturating_sub(1)
                + output_padding[i]
                + kernel[i].saturating_sub(1) * dilation[i]
                + 1;
            if full < os[i] {
                // A larger output than the full transposed conv: extra output padding.
                output_padding[i] += os[i] - full;
                pads.push((0, 0));
                continue;
            }
            let total = full - os[i];
            let small = total / 2;
            pads.push(if auto == "SAME_LOWER" {
                (total - small, small)
            } else {
                (small, total - small)
            });
        }
        pads
    } else if auto == "SAME_UPPER" || auto == "SAME_LOWER" {
        (0..n)
            .map(|i| {
                let full = stride[i] * xd[2 + i].saturating_sub(1)
                    + output_padding[i]
                    + kernel[i].saturating_sub(1) * dilation[i]
                    + 1;
                let total = full.saturating_sub(xd[2 + i] * stride[i]);
                let small = total / 2;
                if auto == "SAME_UPPER" {
                    (small, total - small)
                } else {
                    (total - small, small)
                }
            })
            .collect()
    } else {
        resolve_pads(cx, &xd[2..], &kernel, &stride, &dilation)?
    };
    let window = Window {
        kernel: vec![],
        stride,
        padding,
        dilation,
    };
    let mut ins = vec![x, w];
    ins.extend(cx.opt(2));
    Ok(vec![cx.node(
        Op::ConvTranspose {
            window,
            output_padding,
            groups,
        },
        &ins,
        None,
    )?])
}

fn pool(cx: &mut NodeCx, kind: PoolKind) -> Result<Vec<NodeId>> {
    let x = cx.x(0)?;
    let xd = cx.static_dims(x, "pooling")?;
    if xd.len() < 3 {
        return Err(cx.err(format!("x {xd:?} must be [N, C, *sp]")));
    }
    let n = xd.len() - 2;
    let kernel = per_dim(cx, "kernel_shape", n, 0)?;
    if kernel.contains(&0) {
        return Err(cx.err("kernel_shape is required"));
    }
    let stride = per_dim(cx, "strides", n, 1)?;
    let dilation = per_dim(cx, "dilations", n, 1)?;
    let mut padding = resolve_pads(cx, &xd[2..], &kernel, &stride, &dilation)?;
    let declared = padding.clone();
    if cx.attr_i("ceil_mode", 0) != 0 {
        // Ceil mode: pad the end so a last partial window exists, unless it
        // would start entirely in the padding.
        for i in 0..n {
            let (lo, hi) = padding[i];
            let span = dilation[i] * (kernel[i] - 1) + 1;
            let padded = xd[2 + i] + lo + hi;
            if padded < span {
                continue;
            }
            let mut out = (padded - span).div_ceil(stride[i]) + 1;
            if (out - 1) * stride[i] >= xd[2 + i] + lo {
                out -= 1;
            }
            let need = ((out - 1) * stride[i] + span).saturating_sub(padded);
            padding[i].1 += need;
        }
    }
    let mut count_include_pad = cx.attr_i("count_include_pad", 0) != 0;
    let mut x = x;
    if kind == PoolKind::Avg && count_include_pad && padding != declared {
        // The ceil-mode overhang is not padding: onnx's reference and ORT (like
        // torch) divide by the taps inside the declared pads only. Materialise
        // the declared pads as zeros and count in-bounds taps.
        x = cx.node(
            Op::Pad {
                pads: [vec![(0, 0), (0, 0)], declared.clone()].concat(),
                mode: rlx_ir::op::PadMode::Constant(0.0),
            },
            &[x],
            None,
        )?;
        for (p, d) in padding.iter_mut().zip(&declared) {
            *p = (0, p.1 - d.1);
        }
        count_include_pad = false;
    }
    let window = Window {
        kernel,
        stride,
        padding,
        dilation,
    };
    let indices = if kind == PoolKind::Max && cx.wants_output(1) {
        Some(max_pool_indices(cx, x, &window)?)
    } else {
        None
    };
    let y = cx.node(
        Op::Pool {
            kind,
            window,
            count_include_pad,
        },
        &[x],
        None,
    )?;
    Ok(std::iter::once(y).chain(indices).collect())
}

/// The flat input index of each window's maximum (MaxPool's `Indices`):
/// the window's taps stacked on a new leading axis, argmax over it, mapped
/// back to `((n * C + c) * H + h) * W + w` (column-major spatial order with
/// `storage_order = 1`).
fn max_pool_indices(cx: &mut NodeCx, x: NodeId, w: &Window) -> Result<NodeId> {
    let xd = cx.static_dims(x, "MaxPool")?;
    let k = xd.len() - 2;
    let padded = cx.node(
        Op::Pad {
            pads: [vec![(0, 0), (0, 0)], w.padding.clone()].concat(),
            mode: rlx_ir::op::PadMode::Constant(f64::NEG_INFINITY),
        },
        &[x],
        None,
    )?;
    let pd = cx.static_dims(padded, "MaxPool")?;
    let out: Vec<usize> = (0..k)
        .map(|d| {
            let span = w.dilation[d] * w.kernel[d].saturating_sub(1) + 1;
            pd[2 + d].checked_sub(span).map(|r| r / w.stride[d] + 1)
        })
        .collect::<Option<Vec<usize>>>()
        .ok_or_else(|| cx.err("the window exceeds the padded input"))?;
    let taps: usize = w.kernel.iter().product();
    let kstrides = rlx_ir::contiguous_strides(&w.kernel);
    let mut slices = Vec::with_capacity(taps);
    let mut one = xd[..2].to_vec();
    one.extend(&out);
    let mut stacked_dims = vec![1];
    stacked_dims.extend(&one);
    for t in 0..taps {
        let mut y = padded;
        for d in 0..k {
            let o = (t / kstrides[d]) % w.kernel[d];
            y = cx.slice_axis(y, 2 + d, o * w.dilation[d], out[d], w.stride[d] as i64)?;
        }
        slices.push(cx.reshape_static(y, &stacked_dims)?);
    }
    let stacked = if taps == 1 {
        slices[0]
    } else {
        cx.node(Op::Concat { axis: 0 }, &slices, None)?
    };
    let best = cx.node(
        Op::ArgReduce {
            op: rlx_ir::op::ArgReduceOp::ArgMax,
            axis: 0,
            keep_dim: false,
        },
        &[stacked],
        None,
    )?;
    let shape = rlx_ir::Shape::new(&one, DType::I64);
    let iota = |cx: &mut NodeCx, axis: usize| -> Result<NodeId> {
        cx.node(
            Op::Iota {
                axis,
                start: 0.0,
                step: 1.0,
            },
            &[],
            Some(shape.clone()),
        )
    };
    let col_major = cx.attr_i("storage_order", 0) != 0;
    // Spatial position of the maximum per dim.
    let mut pos = Vec::with_capacity(k);
    for (d, &ks) in kstrides.iter().enumerate() {
        let q = cx.bin_scalar(B::Div, best, ks as f64)?;
        let o = cx.bin_scalar(B::Mod, q, w.kernel[d] as f64)?;
        let o = cx.bin_scalar(B::Mul, o, w.dilation[d] as f64)?;
        let i = iota(cx, 2 + d)?;
        let i = cx.bin_scalar(B::Mul, i, w.stride[d] as f64)?;
        let p = cx.bin(B::Add, i, o)?;
        pos.push(cx.bin_scalar(B::Sub, p, w.padding[d].0 as f64)?);
    }
    let order: Vec<usize> = if col_major {
        (0..k).rev().collect()
    } else {
        (0..k).collect()
    };
    let sp = &xd[2..];
    let mut flat = {
        let n = iota(cx, 0)?;
        let n = cx.bin_scalar(B::Mul, n, xd[1] as f64)?;
        let c = iota(cx, 1)?;
        cx.bin(B::Add, n, c)?
    };
    for &d in &order {
        flat = cx.bin_scalar(B::Mul, flat, sp[d] as f64)?;
        flat = cx.bin(B::Add, flat, pos[d])?;
    }
    Ok(flat)
}

fn global_pool(cx: &mut NodeCx, op: ReduceOp) -> Result<Vec<NodeId>> {
    let x = cx.x(0)?;
    let axes: Vec<usize> = (2..cx.rank(x)).collect();
    Ok(vec![cx.reduce(op, x, axes, true)?])
}

/// `(sum |x|^p)^(1/p)` over `axes` (keeping them).
fn lp_reduce(cx: &mut NodeCx, x: NodeId, axes: Vec<usize>, p: f64) -> Result<NodeId> {
    let a = cx.un(U::Abs, x)?;
    let ap = cx.bin_scalar(B::Pow, a, p)?;
    let s = cx.reduce(ReduceOp::Sum, ap, axes, true)?;
    cx.bin_scalar(B::Pow, s, 1.0 / p)
}

fn global_lp_pool(cx: &mut NodeCx) -> Result<Vec<NodeId>> {
    let x = cx.x(0)?;
    let p = cx.attr_i("p", 2) as f64;
    let axes: Vec<usize> = (2..cx.rank(x)).collect();
    Ok(vec![lp_reduce(cx, x, axes, p)?])
}

/// LpPool as a sum pool of `|x|^p` (average pool times the window size).
fn lp_pool(cx: &mut NodeCx) -> Result<Vec<NodeId>> {
    let x = cx.x(0)?;
    let xd = cx.static_dims(x, "LpPool")?;
    if xd.len() < 3 {
        return Err(cx.err(format!("x {xd:?} must be [N, C, *sp]")));
    }
    let n = xd.len() - 2;
    let p = cx.attr_i("p", 2) as f64;
    let kernel = per_dim(cx, "kernel_shape", n, 0)?;
    if kernel.contains(&0) {
        return Err(cx.err("kernel_shape is required"));
    }
    let stride = per_dim(cx, "strides", n, 1)?;
    let dilation = per_dim(cx, "dilations", n, 1)?;
    let padding = resolve_pads(cx, &xd[2..], &kernel, &stride, &dilation)?;
    let size: usize = kernel.iter().product();
    let a = cx.un(U::Abs, x)?;
    let ap = cx.bin_scalar(B::Pow, a, p)?;
    let window = Window {
        kernel,
        stride,
        padding,
        dilation,
    };
    let avg = cx.node(
        Op::Pool {
            kind: PoolKind::Avg,
            window,
            count_include_pad: true,
        },
        &[ap],
        None,
    )?;
    let s = cx.bin_scalar(B::Mul, avg, size as f64)?;
    Ok(vec![cx.bin_scalar(B::Pow, s, 1.0 / p)?])
}

/// CausalConvWithState: a depthwise causal conv1d over `[past_state | input]`
/// (zeros without a past), an optional SiLU, and the last `K - 1` steps as
/// the new state.
fn causal_conv_with_state(cx: &mut NodeCx) -> Result<Vec<NodeId>> {
    let (x, w) = (cx.x(0)?, cx.x(1)?);
    let xd = cx.static_dims(x, "CausalConvWithState")?;
    let wd = cx.static_dims(w, "the weight")?;
    if xd.len() != 3 || wd.len() != 3 {
        return Err(cx.err(format!(
            "input {xd:?} / weight {wd:?} must be [B, C, L] / [C, 1, K]"
        )));
    }
    let k1 = wd[2].saturating_sub(1);
    let past = match cx.opt(3) {
        Some(p) => p,
        None => {
            let z = cx.scalar(0.0, cx.dtype(x));
            cx.broadcast(
                z,
                [xd[0], xd[1], k1]
                    .iter()
                    .map(|&n| rlx_ir::Dim::Static(n))
                    .collect(),
            )?
        }
    };
    let padded = if k1 == 0 {
        x
    } else {
        cx.node(Op::Concat { axis: 2 }, &[past, x], None)?
    };
    let window = Window {
        kernel: vec![],
        stride: vec![1],
        padding: vec![(0, 0)],
        dilation: vec![1],
    };
    let mut ins = vec![padded, w];
    ins.extend(cx.opt(2));
    let mut y = cx.node(
        Op::Conv {
            window,
            groups: xd[1],
        },
        &ins,
        None,
    )?;
    match cx.attr_s("activation", "").as_str() {
        "silu" | "swish" => {
            let dt = cx.dtype(y);
            let yf = cx.cast(y, rlx_ir::DType::F32)?;
            let s = cx.un(U::Silu, yf)?;
            y = cx.cast(s, dt)?;
        }
        "" | "none" => {}
        other => return Err(cx.unsupported(format!("activation \"{other}\""))),
    }
    let total = xd[2] + k1;
    let state = cx.slice_axis(padded, 2, total - k1, k1, 1)?;
    Ok(vec![y, state])
}

/// MaxUnpool: scatters `X` to the flat positions `I` (as MaxPool's Indices
/// give them) of a zero tensor of the unpooled shape.
fn max_unpool(cx: &mut NodeCx) -> Result<Vec<NodeId>> {
    let (x, idx) = (cx.x(0)?, cx.x(1)?);
    let xd = cx.static_dims(x, "MaxUnpool")?;
    let k = xd.len().saturating_sub(2);
    // The shape MaxPool ran on (what the indices address).
    let kernel = per_dim(cx, "kernel_shape", k, 0)?;
    let stride = per_dim(cx, "strides", k, 1)?;
    let pads = cx
        .attr_ints("pads")
        .filter(|p| p.len() == 2 * k)
        .unwrap_or_else(|| vec![0; 2 * k]);
    if xd.len() < 3 || kernel.len() != k {
        return Err(cx.err(format!("X {xd:?} must be [N, C, *sp]")));
    }
    let mut pooled = xd[..2].to_vec();
    for d in 0..k {
        let full = xd[2 + d].saturating_sub(1) * stride[d] + kernel[d];
        pooled.push(full.saturating_sub((pads[d] + pads[k + d]).max(0) as usize));
    }
    let out: Vec<usize> = match cx.opt(2) {
        Some(_) => cx
            .const_ints(2, "output_shape")?
            .iter()
            .map(|&d| d.max(0) as usize)
            .collect(),
        None => pooled.clone(),
    };
    if out.len() != pooled.len() {
        return Err(cx.err(format!(
            "output_shape {out:?} does not match rank {}",
            pooled.len()
        )));
    }
    let total: usize = out.iter().product();
    let numel: usize = xd.iter().product();
    let zero = cx.scalar(0.0, cx.dtype(x));
    let base = cx.broadcast(zero, vec![rlx_ir::Dim::Static(total)])?;
    let xf = cx.reshape_static(x, &[numel])?;
    let mut i = cx.cast(idx, DType::I64)?;
    if out != pooled {
        // Re-address each index from the pooled-input shape to `output_shape`.
        let ps = rlx_ir::contiguous_strides(&pooled);
        let os = rlx_ir::contiguous_strides(&out);
        let mut flat: Option<NodeId> = None;
        for d in 0..pooled.len() {
            let q = cx.bin_scalar(B::Div, i, ps[d] as f64)?;
            let c = cx.bin_scalar(B::Mod, q, pooled[d] as f64)?;
            let t = cx.bin_scalar(B::Mul, c, os[d] as f64)?;
            flat = Some(match flat {
                Some(f) => cx.bin(B::Add, f, t)?,
                None => t,
            });
        }
        i = flat.expect("rank >= 1");
    }
    let i = cx.reshape_static(i, &[numel])?;
    let y = cx.node(Op::ScatterAdd { axis: 0 }, &[base, i, xf], None)?;
    Ok(vec![cx.reshape_static(y, &out)?])
}

/// Col2Im: sums the columns `[N, C * prod(block), L]` back into an image
/// of `image_shape`: a scatter-add into the padded image at constant
/// positions, then the padding is cut.
fn col2im(cx: &mut NodeCx) -> Result<Vec<NodeId>> {
    let x = cx.x(0)?;
    let xd = cx.static_dims(x, "Col2Im")?;
    let image: Vec<usize> = cx
        .const_ints(1, "image_shape")?
        .iter()
        .map(|&d| d.max(0) as usize)
        .collect();
    let block: Vec<usize> = cx
        .const_ints(2, "block_shape")?
        .iter()
        .map(|&d| d.max(1) as usize)
        .collect();
    let k = image.len();
    if block.len() != k || xd.len() != 3 {
        return Err(cx.err(format!(
            "input {xd:?}, image {image:?}, block {block:?} do not match"
        )));
    }
    let stride = per_dim(cx, "strides", k, 1)?;
    let dilation = per_dim(cx, "dilations", k, 1)?;
    let pads = match cx.attr_ints("pads") {
        Some(p) if p.len() == 2 * k => p.iter().map(|&v| v.max(0) as usize).collect(),
        _ => vec![0; 2 * k],
    };
    let padded: Vec<usize> = (0..k).map(|d| image[d] + pads[d] + pads[k + d]).collect();
    let blocks: Vec<usize> = (0..k)
        .map(|d| {
            let span = dilation[d] * (block[d] - 1) + 1;
            padded[d].checked_sub(span).map_or(0, |r| r / stride[d] + 1)
        })
        .collect();
    let kn: usize = block.iter().product();
    let ln: usize = blocks.iter().product();
    if xd[2] != ln || xd[1] % kn != 0 {
        return Err(cx.err(format!("input {xd:?} does not hold {kn} x {ln} columns")));
    }
    let c = xd[1] / kn;
    let (ks, ls, ps) = (
        rlx_ir::contiguous_strides(&block),
        rlx_ir::contiguous_strides(&blocks),
        rlx_ir::contiguous_strides(&padded),
    );
    let mut idx = Vec::with_capacity(kn * ln);
    for kf in 0..kn {
        for lf in 0..ln {
            let mut flat = 0;
            for d in 0..k {
                let (ki, li) = ((kf / ks[d]) % block[d], (lf / ls[d]) % blocks[d]);
                flat += (li * stride[d] + ki * dilation[d]) * ps[d];
            }
            idx.push(flat as i64);
        }
    }
    let total: usize = padded.iter().product();
    let n = xd[0];
    let idx = cx.constant(
        &rlx_ir::HostTensor::from_vec(idx, &[1, 1, kn * ln]).map_err(|e| cx.err(e.to_string()))?,
    );
    let idx = cx.broadcast(
        idx,
        [n, c, kn * ln]
            .iter()
            .map(|&d| rlx_ir::Dim::Static(d))
            .collect(),
    )?;
    let upd = cx.reshape_static(x, &[n, c, kn * ln])?;
    let zero = cx.scalar(0.0, cx.dtype(x));
    let base = cx.broadcast(
        zero,
        [n, c, total]
            .iter()
            .map(|&d| rlx_ir::Dim::Static(d))
            .collect(),
    )?;
    let y = cx.node(Op::ScatterAdd { axis: 2 }, &[base, idx, upd], None)?;
    let mut dims = vec![n, c];
    dims.extend(&padded);
    let mut y = cx.reshape_static(y, &dims)?;
    for d in 0..k {
        if pads[d] > 0 || pads[k + d] > 0 {
            y = cx.slice_axis(y, 2 + d, pads[d], image[d], 1)?;
        }
    }
    Ok(vec![y])
}
