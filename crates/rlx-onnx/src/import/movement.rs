//! Data movement: Reshape, Flatten, Squeeze, Unsqueeze, Transpose, Concat,
//! Split, Slice, Expand, Tile, Pad, DepthToSpace, SpaceToDepth, Compress,
//! ReverseSequence, CenterCropPad.

use super::symbolic::SymInt;
use super::NodeCx;
use crate::Result;
use rlx_ir::op::PadMode;
use rlx_ir::ops::broadcast_dims;
use rlx_ir::{python_slice, Dim, NodeId, Op};

op_table! {
    "Reshape" => reshape,
    "Flatten" => flatten,
    "Squeeze" => squeeze,
    "Unsqueeze" => unsqueeze,
    "Transpose" => transpose,
    "Concat" => concat,
    "Split" => split,
    "Slice" => slice,
    "Expand" => expand,
    "Tile" => tile,
    "Pad" => pad,
    "DepthToSpace" => depth_to_space,
    "SpaceToDepth" => space_to_depth,
    "Compress" => compress,
    "ReverseSequence" => reverse_sequence,
    "CenterCropPad" => center_crop_pad,
}

/// Target dims of an ONNX Reshape (`0` copies, `-1` infers; entries may be
/// dim symbols).
fn reshape_dims(
    cx: &NodeCx,
    input: &[Dim],
    target: &[SymInt],
    allow_zero: bool,
) -> Result<Vec<Dim>> {
    let mut out: Vec<Option<Dim>> = Vec::with_capacity(target.len());
    let mut hole = None;
    for (i, t) in target.iter().enumerate() {
        out.push(match t {
            SymInt::Sym(s) => Some(Dim::sym(s.clone())),
            SymInt::Int(0) if !allow_zero => Some(input.get(i).cloned().ok_or_else(|| {
                cx.err(format!("shape {target:?}: 0 at {i} beyond the input rank"))
            })?),
            SymInt::Int(-1) if hole.is_none() => {
                hole = Some(i);
                None
            }
            SymInt::Int(t) if *t >= 0 => Some(Dim::Static(*t as usize)),
            _ => return Err(cx.err(format!("invalid shape {target:?}"))),
        });
    }
    if let Some(h) = hole {
        // Cancel symbols shared by input and output, then divide what is left.
        let mut syms_in: Vec<&Dim> = input.iter().filter(|d| d.as_static().is_none()).collect();
        let mut rest_out: usize = 1;
        for d in out.iter().flatten() {
            match d.as_static() {
                Some(n) => rest_out *= n,
                None => match syms_in.iter().position(|s| *s == d) {
                    Some(p) => {
                        syms_in.remove(p);
                    }
                    None => {
                        return Err(cx.err(format!("cannot infer -1 in {target:?} from {input:?}")))
                    }
                },
            }
        }
        let rest_in: usize = input.iter().filter_map(Dim::as_static).product();
        let inferred = match syms_in.as_slice() {
            [] if rest_out != 0 && rest_in.is_multiple_of(rest_out) => {
                Dim::Static(rest_in / rest_out)
            }
            [s] if rest_out == rest_in => (*s).clone(),
            _ => return Err(cx.err(format!("cannot infer -1 in {target:?} from {input:?}"))),
        };
        out[h] = Some(inferred);
    }
    Ok(out.into_iter().map(|d| d.expect("filled")).collect())
}

fn reshape(cx: &mut NodeCx) -> Result<Vec<NodeId>> {
    let x = cx.x(0)?;
    let target: Vec<SymInt> = if cx.opset < 5 {
        cx.attr_ints("shape")
            .unwrap_or_default()
            .into_iter()
            .map(SymInt::Int)
            .collect()
    } else {
        cx.shape_ints(1, "shape")?
    };
    let dims = reshape_dims(
        cx,
        cx.shape(x).dims(),
        &target,
        cx.attr_i("allowzero", 0) != 0,
    )?;
    Ok(vec![cx.reshape(x, dims)?])
}

/// The product of dims as one dim (symbolic only when a single symbol and the rest are 1).
fn product_dim(cx: &NodeCx, dims: &[Dim]) -> Result<Dim> {
    let syms: Vec<&Dim> = dims.iter().filter(|d| d.as_static().is_none()).collect();
    let p: usize = dims.iter().filter_map(Dim::as_static).product();
    match syms.as_slice() {
        [] => Ok(Dim::Static(p)),
        [s] if p == 1 => Ok((*s).clone()),
        _ => Err(cx.err(format!("flattening {dims:?} needs static dims"))),
    }
}

fn flatten(cx: &mut NodeCx) -> Result<Vec<NodeId>> {
    let x = cx.x(0)?;
    let r = cx.rank(x);
    let axis = cx.attr_i("axis", 1);
    let axis = if axis == r as i64 {
        r
    } else {
        cx.axis(axis, r)?
    };
    let d = cx.shape(x).dims().to_vec();
    let dims = vec![product_dim(cx, &d[..axis])?, product_dim(cx, &d[axis..])?];
    Ok(vec![cx.reshape(x, dims)?])
}

fn axes_param(cx: &NodeCx, since: i64) -> Result<Option<Vec<i64>>> {
    if cx.opset >= since {
        cx.opt_const_ints(1, "axes")
    } else {
        Ok(cx.attr_ints("axes"))
    }
}

fn squeeze(cx: &mut NodeCx) -> Result<Vec<NodeId>> {
    let x = cx.x(0)?;
    let s = cx.shape(x);
    let r = s.rank();
    let axes = match axes_param(cx, 13)? {
        Some(a) => a
            .iter()
            .map(|&a| cx.axis(a, r))
            .collect::<Result<Vec<_>>>()?,
        None => (0..r).filter(|&i| s.dims()[i] == Dim::Static(1)).collect(),
    };
    for &a in &axes {
        if s.dims()[a] != Dim::Static(1) {
            return Err(cx.err(format!("axis {a} of {s} is not 1")));
        }
    }
    let dims: Vec<Dim> = (0..r)
        .filter(|i| !axes.contains(i))
        .map(|i| s.dims()[i].clone())
        .collect();
    Ok(vec![cx.reshape(x, dims)?])
}

fn unsqueeze(cx: &mut NodeCx) -> Result<Vec<NodeId>> {
    let x = cx.x(0)?;
    let s = cx.shape(x);
    let axes = axes_param(cx, 13)?.ok_or_else(|| cx.err("axes are required"))?;
    let out_rank = s.rank() + axes.len();
    let mut axes = axes
        .iter()
        .map(|&a| cx.axis(a, out_rank))
        .collect::<Result<Vec<_>>>()?;
    axes.sort_unstable();
    let mut src = s.dims().iter();
    let dims: Vec<Dim> = (0..out_rank)
        .map(|i| {
            if axes.contains(&i) {
                Dim::Static(1)
            } else {
                src.next().cloned().unwrap_or(Dim::Static(1))
            }
        })
        .collect();
    Ok(vec![cx.reshape(x, dims)?])
}

fn transpose(cx: &mut NodeCx) -> Result<Vec<NodeId>> {
    let x = cx.x(0)?;
    let r = cx.rank(x);
    let perm = match cx.attr_ints("perm") {
        Some(p) => p
            .iter()
            .map(|&a| cx.axis(a, r))
            .collect::<Result<Vec<_>>>()?,
        None => (0..r).rev().collect(),
    };
    Ok(vec![cx.transpose(x, perm)?])
}

fn concat(cx: &mut NodeCx) -> Result<Vec<NodeId>> {
    let xs: Vec<NodeId> = (0..cx.n_inputs()).filter_map(|i| cx.opt(i)).collect();
    let first = *xs.first().ok_or_else(|| cx.err("no inputs"))?;
    let axis = cx.axis(cx.attr_i("axis", 0), cx.rank(first))?;
    // Zero-length pieces add nothing.
    let kept: Vec<NodeId> = xs
        .iter()
        .copied()
        .filter(|&x| cx.shape(x).dims().get(axis) != Some(&Dim::Static(0)))
        .collect();
    match kept.as_slice() {
        [] => Ok(vec![cx.node(Op::Concat { axis }, &xs, None)?]),
        [one] => Ok(vec![*one]),
        _ => Ok(vec![cx.node(Op::Concat { axis }, &kept, None)?]),
    }
}

fn split(cx: &mut NodeCx) -> Result<Vec<NodeId>> {
    let x = cx.x(0)?;
    let r = cx.rank(x);
    let axis = cx.axis(cx.attr_i("axis", 0), r)?;
    let n = cx.static_dims(x, "Split")?[axis];
    let parts = cx.n_outputs();
    let sizes: Vec<usize> = if let Some(s) = if cx.opset >= 13 {
        cx.opt_const_ints(1, "split")?
    } else {
        cx.attr_ints("split")
    } {
        s.iter().map(|&v| v.max(0) as usize).collect()
    } else {
        let k = cx.attr_i("num_outputs", parts as i64).max(1) as usize;
        let chunk = n.div_ceil(k);
        (0..k)
            .map(|i| chunk.min(n.saturating_sub(i * chunk)))
            .collect()
    };
    if sizes.iter().sum::<usize>() != n {
        return Err(cx.err(format!("split sizes {sizes:?} do not sum to {n}")));
    }
    let mut outs = Vec::new();
    let mut start = 0;
    for len in sizes {
        outs.push(cx.slice_axis(x, axis, start, len, 1)?);
        start += len;
    }
    Ok(outs)
}

fn slice(cx: &mut NodeCx) -> Result<Vec<NodeId>> {
    let mut x = cx.x(0)?;
    if let Some(y) = symbolic_full_slice(cx, x)? {
        return Ok(vec![y]);
    }
    let r = cx.rank(x);
    let (starts, ends, axes, steps) = if cx.opset < 10 {
        (
            cx.attr_ints("starts").unwrap_or_default(),
            cx.attr_ints("ends").unwrap_or_default(),
            cx.attr_ints("axes"),
            None,
        )
    } else {
        (
            cx.const_ints(1, "starts")?,
            cx.const_ints(2, "ends")?,
            cx.opt_const_ints(3, "axes")?,
            cx.opt_const_ints(4, "steps")?,
        )
    };
    let axes = axes.unwrap_or_else(|| (0..starts.len() as i64).collect());
    let steps = steps.unwrap_or_else(|| vec![1; starts.len()]);
    if ends.len() != starts.len() || axes.len() != starts.len() || steps.len() != starts.len() {
        return Err(cx.err("starts, ends, axes and steps differ in length"));
    }
    for i in 0..starts.len() {
        let axis = cx.axis(axes[i], r)?;
        let n = cx.static_dims(x, "Slice")?[axis];
        if steps[i] == 0 {
            return Err(cx.err("step 0"));
        }
        let (first, len) = python_slice(n, starts[i], ends[i], steps[i]);
        if first == 0 && len == n && steps[i] == 1 {
            continue;
        }
        x = cx.slice_axis(x, axis, if len == 0 { 0 } else { first }, len, steps[i])?;
    }
    Ok(vec![x])
}

/// `x[.., 0:d, ..]` where `d` is the axis' own dim symbol: the identity.
fn symbolic_full_slice(cx: &NodeCx, x: NodeId) -> Result<Option<NodeId>> {
    let Some(ends) = cx
        .shape_value(2)
        .filter(|e| e.items.iter().any(|i| matches!(i, SymInt::Sym(_))))
    else {
        return Ok(None);
    };
    let starts = cx.const_ints(1, "starts")?;
    let r = cx.rank(x);
    let n = ends.items.len();
    let axes = cx
        .opt_const_ints(3, "axes")?
        .unwrap_or_else(|| (0..n as i64).collect());
    let steps = cx.opt_const_ints(4, "steps")?.unwrap_or_else(|| vec![1; n]);
    if starts.len() != n || axes.len() != n || steps.len() != n {
        return Err(cx.err("starts, ends, axes and steps differ in length"));
    }
    let dims = cx.shape(x).dims().to_vec();
    for (i, e) in ends.items.iter().enumerate() {
        let a = cx.axis(axes[i], r)?;
        let full = match e {
            SymInt::Sym(s) => dims[a] == Dim::sym(s.clone()),
            SymInt::Int(v) => *v >= i64::MAX / 2 || dims[a].as_static() == Some(*v as usize),
        };
        if starts[i] != 0 || steps[i] != 1 || !full {
            return Err(cx.err(format!(
                "slicing {} to the symbolic end {e:?} needs the dims bound",
                cx.shape(x)
            )));
        }
    }
    Ok(Some(x))
}

fn expand(cx: &mut NodeCx) -> Result<Vec<NodeId>> {
    let x = cx.x(0)?;
    let shape = cx.shape_ints(1, "shape")?;
    let want: Vec<Dim> = shape
        .iter()
        .map(|d| d.dim().unwrap_or(Dim::Static(0)))
        .collect();
    let dims = broadcast_dims(cx.shape(x).dims(), &want).map_err(|e| cx.err(e))?;
    Ok(vec![cx.broadcast(x, dims)?])
}

fn tile(cx: &mut NodeCx) -> Result<Vec<NodeId>> {
    let x = cx.x(0)?;
    let d = cx.static_dims(x, "Tile")?;
    let reps = cx.const_ints(1, "repeats")?;
    if reps.len() != d.len() || reps.iter().any(|&r| r < 0) {
        return Err(cx.err(format!("repeats {reps:?} do not match rank {}", d.len())));
    }
    // [d0, d1] -> [1, d0, 1, d1] -> [r0, d0, r1, d1] -> [r0*d0, r1*d1].
    let inter: Vec<usize> = d.iter().flat_map(|&n| [1, n]).collect();
    let big: Vec<usize> = d
        .iter()
        .zip(&reps)
        .flat_map(|(&n, &r)| [r as usize, n])
        .collect();
    let out = d
        .iter()
        .zip(&reps)
        .map(|(&n, &r)| n.checked_mul(r as usize))
        .collect::<Option<Vec<usize>>>()
        .ok_or_else(|| cx.err(format!("repeats {reps:?} overflow")))?;
    let y = cx.reshape_static(x, &inter)?;
    let y = cx.broadcast(y, big.iter().map(|&n| Dim::Static(n)).collect())?;
    Ok(vec![cx.reshape_static(y, &out)?])
}

fn pad(cx: &mut NodeCx) -> Result<Vec<NodeId>> {
    let mut x = cx.x(0)?;
    let r = cx.rank(x);
    let (pads, value, axes) = if cx.opset < 11 {
        let p = cx
            .attr_ints("pads")
            .or_else(|| cx.attr_ints("paddings"))
            .unwrap_or_default();
        (p, cx.attr_f("value", 0.0), None)
    } else {
        let v = match cx.opt(2) {
            Some(_) => cx
                .const_f64s(2, "constant_value")?
                .first()
                .copied()
                .unwrap_or(0.0),
            None => 0.0,
        };
        (cx.const_ints(1, "pads")?, v, cx.opt_const_ints(3, "axes")?)
    };
    let axes = match axes {
        Some(a) => a
            .iter()
            .map(|&a| cx.axis(a, r))
            .collect::<Result<Vec<_>>>()?,
        None => (0..r).collect(),
    };
    let k = axes.len();
    if pads.len() != 2 * k {
        return Err(cx.err(format!("pads {pads:?} need {} entries", 2 * k)));
    }
    let mode = cx.attr_s("mode", "constant");
    let mut full = vec![(0i64, 0i64); r];
    for (i, &a) in axes.iter().enumerate() {
        full[a] = (pads[i], pads[k + i]);
    }
    // Negative pads crop first.
    for (a, &(lo, hi)) in full.iter().enumerate() {
        if lo < 0 || hi < 0 {
            let n = cx.static_dims(x, "Pad")?[a] as i64;
            let start = (-lo).max(0);
            let len = (n - start - (-hi).max(0)).max(0);
            x = cx.slice_axis(x, a, start as usize, len as usize, 1)?;
        }
    }
    let pos: Vec<(usize, usize)> = full
        .iter()
        .map(|&(l, h)| (l.max(0) as usize, h.max(0) as usize))
        .collect();
    if pos.iter().all(|&p| p == (0, 0)) {
        return Ok(vec![x]);
    }
    let mode = match mode.as_str() {
        "constant" => PadMode::Constant(value),
        "reflect" => PadMode::Reflect,
        "edge" => PadMode::Edge,
        "wrap" => return Ok(vec![wrap_pad(cx, x, &pos)?]),
        other => return Err(cx.err(format!("unknown mode \"{other}\""))),
    };
    Ok(vec![cx.node(Op::Pad { pads: pos, mode }, &[x], None)?])
}

/// Circular padding as concatenated slices.
fn wrap_pad(cx: &mut NodeCx, mut x: NodeId, pads: &[(usize, usize)]) -> Result<NodeId> {
    for (a, &(lo, hi)) in pads.iter().enumerate() {
        if lo == 0 && hi == 0 {
            continue;
        }
        let n = cx.static_dims(x, "Pad wrap")?[a];
        if lo > n || hi > n {
            return Err(cx.unsupported("wrap padding larger than the axis"));
        }
        let mut parts = Vec::new();
        if lo > 0 {
            parts.push(cx.slice_axis(x, a, n - lo, lo, 1)?);
        }
        parts.push(x);
        if hi > 0 {
            parts.push(cx.slice_axis(x, a, 0, hi, 1)?);
        }
        x = cx.node(Op::Concat { axis: a }, &parts, None)?;
    }
    Ok(x)
}

fn depth_to_space(cx: &mut NodeCx) -> Result<Vec<NodeId>> {
    let x = cx.x(0)?;
    let d = cx.static_dims(x, "DepthToSpace")?;
    let b = cx.attr_i("blocksize", 0).max(1) as usize;
    let [n, c, h, w] = d[..] else {
        return Err(cx.err("input must be 4-d"));
    };
    let (inter, perm) = if cx.attr_s("mode", "DCR") == "CRD" {
        (vec![n, c / (b * b), b, b, h, w], vec![0, 1, 4, 2, 5, 3])
    } else {
        (vec![n, b, b, c / (b * b), h, w], vec![0, 3, 4, 1, 5, 2])
    };
    let y = cx.reshape_static(x, &inter)?;
    let y = cx.transpose(y, perm)?;
    Ok(vec![cx.reshape_static(y, &[n, c / (b * b), h * b, w * b])?])
}

fn space_to_depth(cx: &mut NodeCx) -> Result<Vec<NodeId>> {
    let x = cx.x(0)?;
    let d = cx.static_dims(x, "SpaceToDepth")?;
    let b = cx.attr_i("blocksize", 0).max(1) as usize;
    let [n, c, h, w] = d[..] else {
        return Err(cx.err("input must be 4-d"));
    };
    let y = cx.reshape_static(x, &[n, c, h / b, b, w / b, b])?;
    let perm = if cx.attr_s("mode", "DCR") == "CRD" {
        vec![0, 1, 3, 5, 2, 4]
    } else {
        vec![0, 3, 5, 1, 2, 4]
    };
    let y = cx.transpose(y, perm)?;
    Ok(vec![cx.reshape_static(y, &[n, c * b * b, h / b, w / b])?])
}

/// Compress: the slices where a (constant) condition holds.
fn compress(cx: &mut NodeCx) -> Result<Vec<NodeId>> {
    let x = cx.x(0)?;
    let cond = cx.const_ints(1, "condition")?;
    let (x, axis) = match cx.has_attr("axis") {
        true => (x, cx.axis(cx.attr_i("axis", 0), cx.rank(x))?),
        false => {
            let n: usize = cx.static_dims(x, "Compress")?.iter().product();
            (cx.reshape_static(x, &[n])?, 0)
        }
    };
    let n = cx.static_dims(x, "Compress")?[axis];
    let picks: Vec<i64> = (0..cond.len().min(n))
        .filter(|&i| cond[i] != 0)
        .map(|i| i as i64)
        .collect();
    let idx = cx.i64s(&picks);
    Ok(vec![cx.node(Op::Gather { axis }, &[x, idx], None)?])
}

/// ReverseSequence: reverses the first `len[b]` steps of each batch entry.
fn reverse_sequence(cx: &mut NodeCx) -> Result<Vec<NodeId>> {
    let x = cx.x(0)?;
    let d = cx.static_dims(x, "ReverseSequence")?;
    let lens = cx.const_ints(1, "sequence_lens")?;
    let r = d.len();
    let bax = cx.axis(cx.attr_i("batch_axis", 1), r)?;
    let tax = cx.axis(cx.attr_i("time_axis", 0), r)?;
    let (nb, nt) = (d[bax], d[tax]);
    if lens.len() != nb {
        return Err(cx.err(format!("{} sequence lengths for batch {nb}", lens.len())));
    }
    // Index along the time axis for every (time, batch), broadcast over the rest.
    let mut small = vec![1usize; r];
    small[tax] = nt;
    small[bax] = nb;
    let mut idx = vec![0i64; nt * nb];
    for t in 0..nt {
        for (b, &len) in lens.iter().enumerate() {
            let len = len.clamp(0, nt as i64);
            let src = if (t as i64) < len {
                len - 1 - t as i64
            } else {
                t as i64
            };
            let at = if tax < bax { t * nb + b } else { b * nt + t };
            idx[at] = src;
        }
    }
    let t = rlx_ir::HostTensor::from_vec(idx, &small).map_err(|e| cx.err(e.to_string()))?;
    let idx = cx.constant(&t);
    let idx = cx.broadcast(idx, d.iter().map(|&n| Dim::Static(n)).collect())?;
    Ok(vec![cx.node(
        Op::GatherElements { axis: tax },
        &[x, idx],
        None,
    )?])
}

/// CenterCropPad: crops or zero-pads each listed axis around its centre.
fn center_crop_pad(cx: &mut NodeCx) -> Result<Vec<NodeId>> {
    let mut x = cx.x(0)?;
    let target = cx.const_ints(1, "shape")?;
    let r = cx.rank(x);
    let axes = match cx.attr_ints("axes") {
        Some(a) => a
            .iter()
            .map(|&a| cx.axis(a, r))
            .collect::<Result<Vec<_>>>()?,
        None => (0..r).collect(),
    };
    if axes.len() != target.len() {
        return Err(cx.err(format!("shape {target:?} does not match axes {axes:?}")));
    }
    for (&a, &want) in axes.iter().zip(&target) {
        let n = cx.static_dims(x, "CenterCropPad")?[a];
        let want = want.max(0) as usize;
        if want < n {
            x = cx.slice_axis(x, a, (n - want) / 2, want, 1)?;
        } else if want > n {
            let mut pads = vec![(0, 0); r];
            let lo = (want - n) / 2;
            pads[a] = (lo, want - n - lo);
            x = cx.node(
                Op::Pad {
                    pads,
                    mode: PadMode::Constant(0.0),
                },
                &[x],
                None,
            )?;
        }
    }
    Ok(vec![x])
}
