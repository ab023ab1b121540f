//! Indexing and tensor creation: Gather, GatherElements, GatherND,
//! ScatterElements, ScatterND, TopK, Range, Shape, Size, ConstantOfShape,
//! Constant, OneHot, NonZero, Trilu, EyeLike, AffineGrid, TensorScatter.

use super::elementwise::{cmp_scalar, select};
use super::symbolic::SymInt;
use super::NodeCx;
use crate::tensor::{checked_dims, dtype_of};
use crate::Result;
use rlx_ir::op::{BinaryOp as B, CmpOp, ReduceOp, TopKOutput};
use rlx_ir::{DType, Dim, HostTensor, NodeId, Op, Shape};

op_table! {
    "Gather" => gather,
    "GatherElements" => gather_elements,
    "GatherND" => gather_nd,
    "ScatterElements" => scatter_elements,
    "Scatter" => scatter_elements,
    "ScatterND" => scatter_nd,
    "TopK" => topk,
    "Range" => range,
    "Shape" => shape,
    "Size" => size,
    "ConstantOfShape" => constant_of_shape,
    "Constant" => constant,
    "OneHot" => one_hot,
    "NonZero" => non_zero,
    "Trilu" => trilu,
    "EyeLike" => eye_like,
    "AffineGrid" => affine_grid,
    "TensorScatter" => tensor_scatter,
}

fn gather(cx: &mut NodeCx) -> Result<Vec<NodeId>> {
    let (x, i) = (cx.x(0)?, cx.x(1)?);
    let axis = cx.axis(cx.attr_i("axis", 0), cx.rank(x))?;
    Ok(vec![cx.node(Op::Gather { axis }, &[x, i], None)?])
}

/// Indices with negatives wrapped by `n` (a node broadcastable to them), as I64.
fn wrap_negative(cx: &mut NodeCx, idx: NodeId, n: NodeId) -> Result<NodeId> {
    let idx = cx.cast(idx, DType::I64)?;
    let neg = cmp_scalar(cx, CmpOp::Lt, idx, 0.0)?;
    let plus = cx.bin(B::Add, idx, n)?;
    select(cx, neg, plus, idx)
}

fn gather_elements(cx: &mut NodeCx) -> Result<Vec<NodeId>> {
    let (x, i) = (cx.x(0)?, cx.x(1)?);
    let axis = cx.axis(cx.attr_i("axis", 0), cx.rank(x))?;
    let n = cx.static_dims(x, "GatherElements")?[axis];
    let n = cx.scalar(n as f64, DType::I64);
    let i = wrap_negative(cx, i, n)?;
    Ok(vec![cx.node(Op::GatherElements { axis }, &[x, i], None)?])
}

/// Row-major linear index over `dims` of the last axis of `idx [.., k]`
/// (negatives wrapped): `[..]` I64.
fn linear_index(cx: &mut NodeCx, idx: NodeId, dims: &[usize]) -> Result<NodeId> {
    let k = dims.len();
    let sizes = HostTensor::from_vec(dims.iter().map(|&d| d as i64).collect::<Vec<_>>(), &[k])
        .expect("1-d");
    let sizes = cx.constant(&sizes);
    let idx = wrap_negative(cx, idx, sizes)?;
    let mut strides = vec![1i64; k];
    for j in (0..k.saturating_sub(1)).rev() {
        strides[j] = strides[j + 1] * dims[j + 1] as i64;
    }
    let s = cx.i64s(&strides);
    let scaled = cx.bin(B::Mul, idx, s)?;
    let r = cx.rank(scaled);
    cx.reduce(ReduceOp::Sum, scaled, vec![r - 1], false)
}

fn gather_nd(cx: &mut NodeCx) -> Result<Vec<NodeId>> {
    let (x, idx) = (cx.x(0)?, cx.x(1)?);
    let d = cx.static_dims(x, "GatherND")?;
    let id = cx.static_dims(idx, "GatherND indices")?;
    let b = cx.attr_i("batch_dims", 0).max(0) as usize;
    let k = *id
        .last()
        .ok_or_else(|| cx.err("indices must have rank >= 1"))?;
    if b + k > d.len() || b >= id.len() {
        return Err(cx.err(format!(
            "indices {id:?} with batch_dims {b} do not fit data {d:?}"
        )));
    }
    let bt: usize = d[..b].iter().product();
    let inner: usize = d[b..b + k].iter().product();
    let rest = &d[b + k..];
    let m = &id[b..id.len() - 1];
    // indices -> [Bt, M.., k] -> linear [Bt, M..] (+ batch offset).
    let mut idims = vec![bt];
    idims.extend_from_slice(m);
    idims.push(k);
    let idx = cx.reshape_static(idx, &idims)?;
    let mut lin = linear_index(cx, idx, &d[b..b + k])?;
    if b > 0 {
        let ldims = cx.static_dims(lin, "GatherND")?;
        let off = cx.node(
            Op::Iota {
                axis: 0,
                start: 0.0,
                step: inner as f64,
            },
            &[],
            Some(Shape::new(&ldims, DType::I64)),
        )?;
        lin = cx.bin(B::Add, lin, off)?;
    }
    let mut xdims = vec![bt * inner];
    xdims.extend_from_slice(rest);
    let xf = cx.reshape_static(x, &xdims)?;
    let y = cx.node(Op::Gather { axis: 0 }, &[xf, lin], None)?;
    let mut out = id[..b].to_vec();
    out.extend_from_slice(m);
    out.extend_from_slice(rest);
    Ok(vec![cx.reshape_static(y, &out)?])
}

/// Applies scattered `updates` (at `idx` along `axis` of a `data`-shaped
/// tensor) with an ONNX `reduction`.
fn scatter_apply(
    cx: &mut NodeCx,
    data: NodeId,
    idx: NodeId,
    upd: NodeId,
    axis: usize,
) -> Result<NodeId> {
    let reduction = cx.attr_s("reduction", "none");
    let dt = cx.dtype(data);
    let work = if dt == DType::Bool { DType::U8 } else { dt };
    let (data_w, upd_w) = (cx.cast(data, work)?, cx.cast(upd, work)?);
    let y = match reduction.as_str() {
        "add" => cx.node(Op::ScatterAdd { axis }, &[data_w, idx, upd_w], None)?,
        "none" => {
            let zeros = cx.scalar(0.0, work);
            let zeros = cx.broadcast(zeros, cx.shape(data).dims().to_vec())?;
            let summed = cx.node(Op::ScatterAdd { axis }, &[zeros, idx, upd_w], None)?;
            let one = cx.scalar(1.0, work);
            let ones = cx.broadcast(one, cx.shape(upd).dims().to_vec())?;
            let hits = cx.node(Op::ScatterAdd { axis }, &[zeros, idx, ones], None)?;
            let hit = cmp_scalar(cx, CmpOp::Gt, hits, 0.0)?;
            select(cx, hit, summed, data_w)?
        }
        other => {
            return Err(cx.unsupported(format!(
                "reduction=\"{other}\" needs a scatter-{other} IR op (only scatter_add exists)"
            )))
        }
    };
    cx.cast(y, dt)
}

fn scatter_elements(cx: &mut NodeCx) -> Result<Vec<NodeId>> {
    let (x, i, u) = (cx.x(0)?, cx.x(1)?, cx.x(2)?);
    let axis = cx.axis(cx.attr_i("axis", 0), cx.rank(x))?;
    let n = cx.static_dims(x, "ScatterElements")?[axis];
    let n = cx.scalar(n as f64, DType::I64);
    let i = wrap_negative(cx, i, n)?;
    Ok(vec![scatter_apply(cx, x, i, u, axis)?])
}

fn scatter_nd(cx: &mut NodeCx) -> Result<Vec<NodeId>> {
    let (x, idx, upd) = (cx.x(0)?, cx.x(1)?, cx.x(2)?);
    let d = cx.static_dims(x, "ScatterND")?;
    let id = cx.static_dims(idx, "ScatterND indices")?;
    let k = *id
        .last()
        .ok_or_else(|| cx.err("indices must have rank >= 1"))?;
    if k > d.len() {
        return Err(cx.err(format!("indices {id:?} do not fit data {d:?}")));
    }
    let mt: usize = id[..id.len() - 1].iter().product();
    let rest = d[k..].to_vec();
    let lin = linear_index(cx, idx, &d[..k])?;
    let mut ldims = vec![mt];
    ldims.extend(std::iter::repeat_n(1, rest.len()));
    let lin = cx.reshape_static(lin, &ldims)?;
    let mut udims = vec![mt];
    udims.extend_from_slice(&rest);
    let lin = cx.broadcast(lin, udims.iter().map(|&n| Dim::Static(n)).collect())?;
    let upd = cx.reshape_static(upd, &udims)?;
    let mut xdims = vec![d[..k].iter().product::<usize>()];
    xdims.extend_from_slice(&rest);
    let xf = cx.reshape_static(x, &xdims)?;
    let y = scatter_apply(cx, xf, lin, upd, 0)?;
    Ok(vec![cx.reshape_static(y, &d)?])
}

fn topk(cx: &mut NodeCx) -> Result<Vec<NodeId>> {
    let x = cx.x(0)?;
    let k = if cx.opset >= 10 {
        *cx.const_ints(1, "k")?
            .first()
            .ok_or_else(|| cx.err("empty k"))?
    } else {
        cx.attr_i("k", 0)
    };
    let axis = cx.axis(cx.attr_i("axis", -1), cx.rank(x))?;
    let largest = cx.attr_i("largest", 1) != 0;
    let k = k.max(0) as usize;
    let v = cx.node(
        Op::TopK {
            k,
            axis,
            largest,
            output: TopKOutput::Values,
        },
        &[x],
        None,
    )?;
    let i = cx.node(
        Op::TopK {
            k,
            axis,
            largest,
            output: TopKOutput::Indices,
        },
        &[x],
        None,
    )?;
    Ok(vec![v, i])
}

fn range(cx: &mut NodeCx) -> Result<Vec<NodeId>> {
    let dt = cx.dtype(cx.x(0)?);
    let start = cx.const_f64s(0, "start")?.first().copied().unwrap_or(0.0);
    // A symbolic limit counts 0, 1, .. up to a dim symbol.
    if let Some(SymInt::Sym(sym)) = cx
        .shape_value(1)
        .filter(|s| s.scalar)
        .and_then(|s| s.items.first().cloned())
    {
        let delta = cx.const_f64s(2, "delta")?.first().copied().unwrap_or(0.0);
        if start != 0.0 || delta != 1.0 {
            return Err(cx.err(format!(
                "Range({start}, {sym}, {delta}) over a symbolic dim needs start 0 and delta 1"
            )));
        }
        let shape = Shape::from_dims(vec![Dim::sym(sym)], dt);
        return Ok(vec![cx.node(
            Op::Iota {
                axis: 0,
                start: 0.0,
                step: 1.0,
            },
            &[],
            Some(shape),
        )?]);
    }
    let limit = cx.const_f64s(1, "limit")?.first().copied().unwrap_or(0.0);
    let delta = cx.const_f64s(2, "delta")?.first().copied().unwrap_or(0.0);
    if delta == 0.0 {
        return Err(cx.err("delta is 0"));
    }
    let n = ((limit - start) / delta).ceil().max(0.0);
    if n > (1u64 << 32) as f64 {
        return Err(cx.err(format!("{n} elements")));
    }
    Ok(vec![cx.node(
        Op::Iota {
            axis: 0,
            start,
            step: delta,
        },
        &[],
        Some(Shape::new(&[n as usize], dt)),
    )?])
}

fn shape(cx: &mut NodeCx) -> Result<Vec<NodeId>> {
    let x = cx.x(0)?;
    let dims = cx.static_dims(x, "Shape")?;
    let r = dims.len() as i64;
    let clamp = |v: i64| (if v < 0 { v + r } else { v }).clamp(0, r) as usize;
    let (s, e) = (clamp(cx.attr_i("start", 0)), clamp(cx.attr_i("end", r)));
    let v: Vec<i64> = dims[s..e.max(s)].iter().map(|&d| d as i64).collect();
    Ok(vec![cx.i64s(&v)])
}

fn size(cx: &mut NodeCx) -> Result<Vec<NodeId>> {
    let x = cx.x(0)?;
    let n: usize = cx.static_dims(x, "Size")?.iter().product();
    Ok(vec![cx.scalar(n as f64, DType::I64)])
}

fn constant_of_shape(cx: &mut NodeCx) -> Result<Vec<NodeId>> {
    let items = cx.shape_ints(0, "shape")?;
    let value = cx
        .attr_t("value")?
        .unwrap_or_else(|| HostTensor::scalar(0f32));
    let v = value.reshape(&[]).map_err(|e| cx.err(e.to_string()))?;
    let dims: Vec<Dim> = match items
        .iter()
        .map(|i| match i {
            SymInt::Int(v) => Some(*v),
            SymInt::Sym(_) => None,
        })
        .collect::<Option<Vec<i64>>>()
    {
        Some(ints) => {
            let (d, _) = checked_dims(&ints, v.dtype().size_bytes(), "ConstantOfShape")?;
            d.into_iter().map(Dim::Static).collect()
        }
        None => items
            .iter()
            .map(|i| i.dim().unwrap_or(Dim::Static(0)))
            .collect(),
    };
    let s = cx.constant(&v);
    Ok(vec![cx.broadcast(s, dims)?])
}

fn constant(cx: &mut NodeCx) -> Result<Vec<NodeId>> {
    let t = if let Some(t) = cx.attr_t("value")? {
        t
    } else if cx.has_attr("value_float") {
        HostTensor::scalar(cx.attr_f("value_float", 0.0) as f32)
    } else if let Some(v) = cx.attr_floats("value_floats") {
        HostTensor::from_slice(&v, &[v.len()]).expect("1-d")
    } else if cx.has_attr("value_int") {
        HostTensor::scalar(cx.attr_i("value_int", 0))
    } else if let Some(v) = cx.attr_ints("value_ints") {
        HostTensor::from_slice(&v, &[v.len()]).expect("1-d")
    } else {
        return Err(cx.unsupported("string / sparse constants have no RLX dtype"));
    };
    Ok(vec![cx.constant(&t)])
}

fn one_hot(cx: &mut NodeCx) -> Result<Vec<NodeId>> {
    let (idx, values) = (cx.x(0)?, cx.x(2)?);
    let depth = cx.const_f64s(1, "depth")?.first().copied().unwrap_or(0.0) as i64;
    let id = cx.static_dims(idx, "OneHot")?;
    let r = id.len() + 1;
    let axis = cx.axis(cx.attr_i("axis", -1), r)?;
    let mut dims = id.clone();
    dims.insert(axis, depth.max(0) as usize);
    let mut udims = id.clone();
    udims.insert(axis, 1);
    let dn = cx.scalar(depth as f64, DType::I64);
    let i = wrap_negative(cx, idx, dn)?;
    let i = cx.reshape_static(i, &udims)?;
    let iota = cx.iota_i64(&dims, axis)?;
    let hit = cx.node(Op::Compare(CmpOp::Eq), &[iota, i], None)?;
    let off = cx.slice_axis(values, 0, 0, 1, 1)?;
    let on = cx.slice_axis(values, 0, 1, 1, 1)?;
    let off = cx.reshape_static(off, &[])?;
    let on = cx.reshape_static(on, &[])?;
    Ok(vec![select(cx, hit, on, off)?])
}

/// NonZero has a data-dependent shape: only constant inputs (folded).
fn non_zero(cx: &mut NodeCx) -> Result<Vec<NodeId>> {
    let Some(t) = cx.konst(0).cloned() else {
        return Err(cx.unsupported("NonZero of a run-time value has a data-dependent shape"));
    };
    let dims = t.dims().to_vec();
    let vals = t.to_f64_lossy();
    let strides = rlx_ir::contiguous_strides(&dims);
    let hits: Vec<usize> = (0..vals.len()).filter(|&i| vals[i] != 0.0).collect();
    let mut out = vec![0i64; dims.len() * hits.len()];
    for (j, &flat) in hits.iter().enumerate() {
        for (a, &s) in strides.iter().enumerate() {
            out[a * hits.len() + j] = ((flat / s) % dims[a].max(1)) as i64;
        }
    }
    let t =
        HostTensor::from_vec(out, &[dims.len(), hits.len()]).map_err(|e| cx.err(e.to_string()))?;
    Ok(vec![cx.constant(&t)])
}

fn trilu(cx: &mut NodeCx) -> Result<Vec<NodeId>> {
    let x = cx.x(0)?;
    let d = cx.static_dims(x, "Trilu")?;
    let r = d.len();
    if r < 2 {
        return Err(cx.err("input must have rank >= 2"));
    }
    let k = match cx.opt(1) {
        Some(_) => cx.const_ints(1, "k")?.first().copied().unwrap_or(0),
        None => 0,
    };
    let diff = col_minus_row(cx, d[r - 2], d[r - 1], 0)?;
    let op = if cx.attr_i("upper", 1) != 0 {
        CmpOp::Ge
    } else {
        CmpOp::Le
    };
    let keep = cmp_scalar(cx, op, diff, k as f64)?;
    let zero = cx.scalar(0.0, cx.dtype(x));
    Ok(vec![select(cx, keep, x, zero)?])
}

fn eye_like(cx: &mut NodeCx) -> Result<Vec<NodeId>> {
    let x = cx.x(0)?;
    let d = cx.static_dims(x, "EyeLike")?;
    if d.len() != 2 {
        return Err(cx.err("input must be 2-d"));
    }
    let dt = if cx.has_attr("dtype") {
        dtype_of(cx.attr_i("dtype", 1) as i32, "EyeLike dtype")
            .map_err(|e| cx.unsupported(e.to_string()))?
    } else {
        cx.dtype(x)
    };
    let k = cx.attr_i("k", 0);
    let diff = col_minus_row(cx, d[0], d[1], 0)?;
    let hit = cmp_scalar(cx, CmpOp::Eq, diff, k as f64)?;
    Ok(vec![cx.cast(hit, dt)?])
}

/// `col - (row + row_start)` over an `[rows, cols]` I64 grid.
pub(super) fn col_minus_row(
    cx: &mut NodeCx,
    rows: usize,
    cols: usize,
    row_start: usize,
) -> Result<NodeId> {
    let s = Shape::new(&[rows, cols], DType::I64);
    let r = cx.node(
        Op::Iota {
            axis: 0,
            start: row_start as f64,
            step: 1.0,
        },
        &[],
        Some(s.clone()),
    )?;
    let c = cx.node(
        Op::Iota {
            axis: 1,
            start: 0.0,
            step: 1.0,
        },
        &[],
        Some(s),
    )?;
    cx.bin(B::Sub, c, r)
}

/// AffineGrid: `theta [N, k, k+1]` applied to the normalised base grid of
/// `size` (2-d `[N, C, H, W]` or 3-d `[N, C, D, H, W]`); output `[N, *sp, k]`.
fn affine_grid(cx: &mut NodeCx) -> Result<Vec<NodeId>> {
    let theta = cx.x(0)?;
    let size = cx.const_ints(1, "size")?;
    let align = cx.attr_i("align_corners", 0) != 0;
    let k = size.len().saturating_sub(2);
    if !(2..=3).contains(&k) || size.iter().any(|&d| d <= 0) {
        return Err(cx.err(format!(
            "size {size:?} must be [N, C, H, W] or [N, C, D, H, W]"
        )));
    }
    let sp: Vec<usize> = size[2..].iter().map(|&d| d as usize).collect();
    let n = size[0] as usize;
    let coord = |i: usize, len: usize| -> f64 {
        if align {
            if len == 1 {
                0.0
            } else {
                -1.0 + 2.0 * i as f64 / (len - 1) as f64
            }
        } else {
            (2 * i + 1) as f64 / len as f64 - 1.0
        }
    };
    // Base grid rows (x, y[, z], 1) in row-major order of the spatial dims
    // (x runs along the last one).
    let total: usize = sp.iter().product();
    let mut base = Vec::with_capacity(total * (k + 1));
    for flat in 0..total {
        let mut rem = flat;
        let mut idx = vec![0; k];
        for a in (0..k).rev() {
            idx[a] = rem % sp[a];
            rem /= sp[a];
        }
        for a in (0..k).rev() {
            base.push(coord(idx[a], sp[a]) as f32);
        }
        base.push(1.0);
    }
    let b = cx
        .constant(&HostTensor::from_vec(base, &[total, k + 1]).map_err(|e| cx.err(e.to_string()))?);
    let b = cx.cast(b, cx.dtype(theta))?;
    let tt = cx.transpose(theta, vec![0, 2, 1])?;
    let g = cx.node(Op::MatMul, &[b, tt], None)?;
    let mut out = vec![n];
    out.extend(&sp);
    out.push(k);
    Ok(vec![cx.reshape_static(g, &out)?])
}

/// TensorScatter (KV-cache write): `update [B, .., U, ..]` written into
/// `past_cache` at `write_indices[b] + u` along `axis` (wrapping in
/// circular mode).
fn tensor_scatter(cx: &mut NodeCx) -> Result<Vec<NodeId>> {
    let (cache, upd) = (cx.x(0)?, cx.x(1)?);
    let cd = cx.static_dims(cache, "TensorScatter")?;
    let ud = cx.static_dims(upd, "TensorScatter update")?;
    let r = cd.len();
    let axis = cx.axis(cx.attr_i("axis", -2), r)?;
    if ud.len() != r || axis == 0 {
        return Err(cx.err(format!(
            "cache {cd:?} / update {ud:?} / axis {axis} do not match"
        )));
    }
    let pos = cx.iota_i64(&ud, axis)?;
    let pos = match cx.opt(2) {
        Some(w) => {
            let w = cx.cast(w, DType::I64)?;
            let mut wd = vec![1; r];
            wd[0] = cd[0];
            let w = cx.reshape_static(w, &wd)?;
            cx.bin(B::Add, pos, w)?
        }
        None => pos,
    };
    let pos = if cx.attr_s("mode", "linear") == "circular" {
        cx.bin_scalar(B::Mod, pos, cd[axis] as f64)?
    } else {
        pos
    };
    Ok(vec![scatter_apply(cx, cache, pos, upd, axis)?])
}
