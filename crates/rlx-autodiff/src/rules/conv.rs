//! Closed-form reverse mode of N-d convolution (stride, padding, dilation,
//! groups, optional bias), so the gradient graph never holds the im2col
//! matrix of the decomposition:
//! - `dx` is a transposed conv of `dy` with the conv's own weight (a conv
//!   weight `[O, C/g, *k]` is the transposed conv's `[C_T, O_T/g, *k]`),
//!   its `output_padding` restoring the input positions the last window
//!   never reached;
//! - `dw` is a conv of `x` with `dy` with batch and channel axes swapped
//!   (stride and dilation exchanged), cropped to the kernel;
//! - `dbias` sums `dy` over batch and space.
//!
//! Forward mode is the generic bilinear rule on the whole op (`rules/mod.rs`).

use crate::emit::*;
use crate::Result;
use rlx_ir::op::Window;
use rlx_ir::{Graph, NodeId, Op};

/// Cotangents of `x [N, C, *sp], w [O, C/groups, *k] [, bias [O]]` of a
/// conv with `window` and `groups`, given the output cotangent `ct`.
pub fn conv_vjp(
    g: &mut Graph,
    window: &Window,
    groups: usize,
    x: &[NodeId],
    ct: NodeId,
) -> Result<Vec<Option<NodeId>>> {
    let xd = dims(g, x[0])?;
    let wd = dims(g, x[1])?;
    let yd = dims(g, ct)?;
    let mut out = vec![
        Some(conv_input_grad(g, window, groups, &xd, x[1], ct)?),
        Some(conv_weight_grad(g, window, groups, x[0], &wd, &yd, ct)?),
    ];
    if x.len() > 2 {
        let axes: Vec<usize> = (0..yd.len()).filter(|&a| a != 1).collect();
        out.push(Some(sum(g, ct, &axes, false)?));
    }
    Ok(out)
}

/// The padded extent read by `out` windows of a `k` kernel along dim `i`.
fn span(window: &Window, i: usize, out: usize, k: usize) -> usize {
    (out - 1) * window.stride[i] + window.dilation[i] * (k - 1) + 1
}

/// `dx = conv_transpose(dy, w)`: along each spatial dim, `output_padding`
/// is the remainder of the padded input that no window covered.
fn conv_input_grad(
    g: &mut Graph,
    window: &Window,
    groups: usize,
    xd: &[usize],
    w: NodeId,
    ct: NodeId,
) -> Result<NodeId> {
    let kd = dims(g, w)?;
    let yd = dims(g, ct)?;
    let output_padding: Vec<usize> = (0..xd.len() - 2)
        .map(|i| {
            let (lo, hi) = window.padding[i];
            xd[2 + i] + lo + hi - span(window, i, yd[2 + i], kd[2 + i])
        })
        .collect();
    let op = Op::ConvTranspose {
        window: Window {
            kernel: Vec::new(),
            ..window.clone()
        },
        output_padding,
        groups,
    };
    Ok(g.try_node(op, &[ct, w], None)?)
}

/// `dw[o, c, t] = sum_{n, p} dy[n, o, p] x_pad[n, c, p s + t d]`: a conv of
/// `x` viewed as `[C/g, g N, *sp]` (batch = in-group channel, channels =
/// (group, sample)) with the weight `dy` viewed as `[O, N, *sp']`, stride
/// `d`, dilation `s` and `groups` groups; its `[C/g, O, *k']` result is
/// cropped to the kernel and transposed to `[O, C/g, *k]`.
fn conv_weight_grad(
    g: &mut Graph,
    window: &Window,
    groups: usize,
    x: NodeId,
    wd: &[usize],
    yd: &[usize],
    ct: NodeId,
) -> Result<NodeId> {
    let xd = dims(g, x)?;
    let spatial = xd.len() - 2;
    let (n, c) = (xd[0], xd[1]);
    let cg = c / groups;
    // x [N, C, *sp] -> [N, g, C/g, *sp] -> [C/g, g, N, *sp] -> [C/g, g N, *sp].
    let mut split = vec![n, groups, cg];
    split.extend_from_slice(&xd[2..]);
    let xs = reshape(g, x, &split)?;
    let mut perm = vec![2, 1, 0];
    perm.extend(3..3 + spatial);
    let xs = transpose(g, xs, &perm)?;
    let mut merged = vec![cg, groups * n];
    merged.extend_from_slice(&xd[2..]);
    let xs = reshape(g, xs, &merged)?;
    let swap: Vec<usize> = [1, 0].into_iter().chain(2..2 + spatial).collect();
    let dyt = transpose(g, ct, &swap)?;
    // High padding that no forward window reached is dropped; a longer
    // result than the kernel (input no window reached) is cropped below.
    let padding: Vec<(usize, usize)> = (0..spatial)
        .map(|i| {
            let (lo, hi) = window.padding[i];
            let reached = span(window, i, yd[2 + i], wd[2 + i]);
            (lo, reached.saturating_sub(xd[2 + i] + lo).min(hi))
        })
        .collect();
    let inner = Window {
        kernel: Vec::new(),
        stride: window.dilation.clone(),
        padding,
        dilation: window.stride.clone(),
    };
    let mut dw = g.try_node(
        Op::Conv {
            window: inner,
            groups,
        },
        &[xs, dyt],
        None,
    )?;
    for i in 0..spatial {
        if dims(g, dw)?[2 + i] != wd[2 + i] {
            dw = slice_axis(g, dw, 2 + i, 0, wd[2 + i], 1)?;
        }
    }
    transpose(g, dw, &swap)
}
