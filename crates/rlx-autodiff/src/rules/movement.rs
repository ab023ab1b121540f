//! Derivative rules of the movement family (all linear).

use crate::emit::*;
use crate::Result;
use rlx_ir::op::{PadMode, SliceSpec};
use rlx_ir::{Graph, NodeId};

/// Reverse mode of a strided slice: the cotangent is placed back, zeros elsewhere.
pub fn vjp_slice(
    g: &mut Graph,
    spec: &SliceSpec,
    x: NodeId,
    ct: NodeId,
) -> Result<Vec<Option<NodeId>>> {
    let xd = dims(g, x)?;
    let mut c = ct;
    for axis in 0..xd.len() {
        let len = dims(g, c)?[axis];
        let (start, step) = (spec.starts[axis], spec.steps[axis]);
        if len == 0 {
            let mut zd = dims(g, c)?;
            zd[axis] = xd[axis];
            c = zeros(g, &zd, dtype(g, c))?;
            continue;
        }
        // Walk forwards: a negative step reads start, start-|s|, ...; reverse it.
        let (first, stride) = if step < 0 {
            c = slice_axis(g, c, axis, len - 1, len, -1)?;
            (
                start - (len - 1) * step.unsigned_abs() as usize,
                step.unsigned_abs() as usize,
            )
        } else {
            (start, step as usize)
        };
        if stride > 1 {
            // Interleave stride-1 zeros after every element: [.., len, ..] -> [.., len * stride, ..].
            let mut d = dims(g, c)?;
            d.insert(axis + 1, 1);
            let c1 = reshape(g, c, &d)?;
            let c1 = pad_axis(g, c1, axis + 1, 0, stride - 1)?;
            let mut flat = dims(g, c)?;
            flat[axis] = len * stride;
            c = reshape(g, c1, &flat)?;
            c = slice_axis(g, c, axis, 0, (len - 1) * stride + 1, 1)?;
        }
        let span = (len - 1) * stride + 1;
        c = pad_axis(g, c, axis, first, xd[axis] - first - span)?;
    }
    Ok(vec![Some(c)])
}

/// Reverse mode of concat: each input gets its slice of the cotangent.
pub fn vjp_concat(
    g: &mut Graph,
    axis: usize,
    inputs: &[NodeId],
    ct: NodeId,
) -> Result<Vec<Option<NodeId>>> {
    let mut out = Vec::with_capacity(inputs.len());
    let mut at = 0;
    for &x in inputs {
        let n = dims(g, x)?[axis];
        out.push(Some(slice_axis(g, ct, axis, at, n, 1)?));
        at += n;
    }
    Ok(out)
}

/// Reverse mode of pad. Constant: the centre. Edge / reflect: the padded
/// cells' cotangents are added back onto the cells they copied.
pub fn vjp_pad(
    g: &mut Graph,
    pads: &[(usize, usize)],
    mode: &PadMode,
    x: NodeId,
    ct: NodeId,
) -> Result<Vec<Option<NodeId>>> {
    let xd = dims(g, x)?;
    let mut c = ct;
    for (axis, &(lo, hi)) in pads.iter().enumerate() {
        if lo == 0 && hi == 0 {
            continue;
        }
        let n = xd[axis];
        let centre = slice_axis(g, c, axis, lo, n, 1)?;
        c = match mode {
            PadMode::Constant(_) => centre,
            PadMode::Edge => {
                let mut acc = centre;
                if lo > 0 {
                    let left = slice_axis(g, c, axis, 0, lo, 1)?;
                    let s = sum(g, left, &[axis], true)?;
                    let s = pad_axis(g, s, axis, 0, n - 1)?;
                    acc = add(g, acc, s)?;
                }
                if hi > 0 {
                    let right = slice_axis(g, c, axis, lo + n, hi, 1)?;
                    let s = sum(g, right, &[axis], true)?;
                    let s = pad_axis(g, s, axis, n - 1, 0)?;
                    acc = add(g, acc, s)?;
                }
                acc
            }
            PadMode::Reflect => {
                let mut acc = centre;
                if lo > 0 {
                    // out[i] (i < lo) copies x[lo - i]: reversed, they land on x[1..=lo].
                    let left = slice_axis(g, c, axis, lo - 1, lo, -1)?;
                    let left = pad_axis(g, left, axis, 1, n - 1 - lo)?;
                    acc = add(g, acc, left)?;
                }
                if hi > 0 {
                    // out[lo + n + j] copies x[n - 2 - j]: reversed, they land on x[n-1-hi..n-1].
                    let right = slice_axis(g, c, axis, lo + n + hi - 1, hi, -1)?;
                    let right = pad_axis(g, right, axis, n - 1 - hi, 1)?;
                    acc = add(g, acc, right)?;
                }
                acc
            }
        };
    }
    Ok(vec![Some(c)])
}
