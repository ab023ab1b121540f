//! Indexing family: gather, gather_elements, scatter_add, top-k, iota.

use super::{arity, check_axis, static_dim, InferResult};
use crate::op::TopKOutput;
use crate::{DType, Dim, Shape};

fn int_indices(s: &Shape) -> Result<(), String> {
    if !s.dtype().is_int() {
        return Err(format!("indices must be an integer type, are {s}"));
    }
    Ok(())
}

pub(crate) fn infer_gather(axis: usize, inputs: &[&Shape]) -> InferResult {
    arity(inputs, 2, 2)?;
    let (x, idx) = (inputs[0], inputs[1]);
    check_axis(axis, x.rank())?;
    int_indices(idx)?;
    let mut dims = x.dims()[..axis].to_vec();
    dims.extend_from_slice(idx.dims());
    dims.extend_from_slice(&x.dims()[axis + 1..]);
    Ok(x.with_dims(dims))
}

pub(crate) fn infer_gather_elements(axis: usize, inputs: &[&Shape]) -> InferResult {
    arity(inputs, 2, 2)?;
    let (x, idx) = (inputs[0], inputs[1]);
    check_axis(axis, x.rank())?;
    int_indices(idx)?;
    if idx.rank() != x.rank() {
        return Err(format!("indices {idx} must have the rank of {x}"));
    }
    for i in 0..x.rank() {
        if i == axis {
            continue;
        }
        let (a, b) = (
            static_dim(&idx.dims()[i], "an index dim")?,
            static_dim(&x.dims()[i], "a data dim")?,
        );
        if a > b {
            return Err(format!("indices {idx} exceed data {x} on axis {i}"));
        }
    }
    Ok(idx.with_dtype(x.dtype()))
}

pub(crate) fn infer_scatter_add(axis: usize, inputs: &[&Shape]) -> InferResult {
    arity(inputs, 3, 3)?;
    let (base, idx, upd) = (inputs[0], inputs[1], inputs[2]);
    check_axis(axis, base.rank())?;
    int_indices(idx)?;
    if idx.dims() != upd.dims() {
        return Err(format!(
            "indices {idx} and updates {upd} must have the same dims"
        ));
    }
    if upd.dtype() != base.dtype() {
        return Err(format!("updates {upd} must have the dtype of {base}"));
    }
    infer_gather_elements(axis, &[base, idx])?;
    Ok(base.clone())
}

pub(crate) fn infer_topk(
    k: usize,
    axis: usize,
    output: TopKOutput,
    inputs: &[&Shape],
) -> InferResult {
    arity(inputs, 1, 1)?;
    let x = inputs[0];
    check_axis(axis, x.rank())?;
    if x.dtype() == DType::C64 || x.dtype() == DType::Bool {
        return Err(format!("top-k is not defined for {x}"));
    }
    let n = static_dim(&x.dims()[axis], "the top-k axis")?;
    if k > n {
        return Err(format!("k = {k} exceeds the axis length {n} of {x}"));
    }
    let mut dims = x.dims().to_vec();
    dims[axis] = Dim::Static(k);
    Ok(Shape::from_dims(
        dims,
        match output {
            TopKOutput::Values => x.dtype(),
            TopKOutput::Indices => DType::I64,
        },
    ))
}

pub(crate) fn infer_iota(axis: usize, inputs: &[&Shape], declared: &Shape) -> InferResult {
    arity(inputs, 0, 0)?;
    check_axis(axis, declared.rank())?;
    if declared.dtype() == DType::Bool || declared.dtype() == DType::C64 {
        return Err(format!("iota of dtype {}", declared.dtype()));
    }
    Ok(declared.clone())
}
