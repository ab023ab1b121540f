//! Shape rules of the `collectives.*` ops.

use super::attrs;
use crate::collectives::ReduceKind;
use rlx_ir::custom::CustomOp;
use rlx_ir::{DType, Dim, Shape};

fn one<'a>(ins: &[&'a Shape]) -> Result<&'a Shape, String> {
    let s = ins.first().ok_or("expected one input")?;
    attrs::check_dtype(s.dtype())?;
    Ok(s)
}

fn static_dims(s: &Shape) -> Result<Vec<usize>, String> {
    s.dims()
        .iter()
        .map(|d| match d {
            Dim::Static(n) => Ok(*n),
            _ => Err(format!("collectives need static shapes, got {s}")),
        })
        .collect()
}

fn with_dims(s: &Shape, dims: &[usize]) -> Shape {
    Shape::new(dims, s.dtype())
}

fn axis_of(op: &CustomOp, name: &str, dims: &[usize], s: &Shape) -> Result<usize, String> {
    let axis = attrs::count(op, name)?;
    if axis >= dims.len() {
        return Err(format!(
            "`{name}` = {axis} is out of range for {s} (rank {})",
            dims.len()
        ));
    }
    Ok(axis)
}

fn world_of(op: &CustomOp) -> Result<usize, String> {
    match attrs::count(op, "world")? {
        0 => Err("`world` must be at least 1".into()),
        w => Ok(w),
    }
}

/// Same shape as the input (broadcast, ppermute, send, megatron f / g).
pub(crate) fn same(op: &CustomOp, ins: &[&Shape]) -> Result<Shape, String> {
    attrs::group(op)?;
    Ok(one(ins)?.clone())
}

/// Same shape; the reduction kind must suit the dtype.
pub(crate) fn reduction(op: &CustomOp, ins: &[&Shape]) -> Result<Shape, String> {
    attrs::group(op)?;
    attrs::mode(op)?;
    let s = one(ins)?;
    if attrs::kind(op)? == ReduceKind::Mean && s.dtype() == DType::I32 {
        return Err(format!("a mean reduction of i32 is not defined ({s})"));
    }
    Ok(s.clone())
}

pub(crate) fn all_gather(op: &CustomOp, ins: &[&Shape]) -> Result<Shape, String> {
    attrs::group(op)?;
    let s = one(ins)?;
    let mut dims = static_dims(s)?;
    let axis = axis_of(op, "axis", &dims, s)?;
    dims[axis] *= world_of(op)?;
    Ok(with_dims(s, &dims))
}

pub(crate) fn reduce_scatter(op: &CustomOp, ins: &[&Shape]) -> Result<Shape, String> {
    let s = reduction(op, ins)?;
    let mut dims = static_dims(&s)?;
    let axis = axis_of(op, "axis", &dims, &s)?;
    let world = world_of(op)?;
    if dims[axis] % world != 0 {
        return Err(format!(
            "axis {axis} of {s} has length {}, not a multiple of the world size {world}",
            dims[axis]
        ));
    }
    dims[axis] /= world;
    Ok(with_dims(&s, &dims))
}

pub(crate) fn all_to_all(op: &CustomOp, ins: &[&Shape]) -> Result<Shape, String> {
    attrs::group(op)?;
    let s = one(ins)?;
    let mut dims = static_dims(s)?;
    let split = axis_of(op, "split_axis", &dims, s)?;
    let concat = axis_of(op, "concat_axis", &dims, s)?;
    let world = world_of(op)?;
    if dims[split] % world != 0 {
        return Err(format!(
            "split axis {split} of {s} has length {}, not a multiple of the world size {world}",
            dims[split]
        ));
    }
    dims[split] /= world;
    dims[concat] *= world;
    Ok(with_dims(s, &dims))
}

pub(crate) fn recv(op: &CustomOp, ins: &[&Shape]) -> Result<Shape, String> {
    attrs::group(op)?;
    if !ins.is_empty() {
        return Err(format!("recv takes no inputs, got {}", ins.len()));
    }
    let (dims, dtype) = attrs::recv_shape(op)?;
    attrs::check_dtype(dtype)?;
    Ok(Shape::new(&dims, dtype))
}
