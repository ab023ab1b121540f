//! Reduction family: reduce, argmax / argmin, cumsum.

use super::{arity, check_axis, InferResult};
use crate::op::ReduceOp;
use crate::{DType, Dim, Shape};

/// The result dtype of a reduction (JAX conventions: Bool sums to I64,
/// an integer mean is F32).
pub fn reduce_dtype(op: ReduceOp, input: DType) -> DType {
    match op {
        ReduceOp::Sum | ReduceOp::Prod if input == DType::Bool => DType::I64,
        ReduceOp::Mean if input.is_int() || input == DType::Bool => DType::F32,
        _ => input,
    }
}

/// Output dims after reducing `axes`.
pub fn reduced_dims(dims: &[Dim], axes: &[usize], keep_dim: bool) -> Vec<Dim> {
    dims.iter()
        .enumerate()
        .filter_map(|(i, d)| {
            if axes.contains(&i) {
                keep_dim.then_some(Dim::Static(1))
            } else {
                Some(d.clone())
            }
        })
        .collect()
}

pub(crate) fn infer_reduce(
    op: ReduceOp,
    axes: &[usize],
    keep_dim: bool,
    inputs: &[&Shape],
) -> InferResult {
    arity(inputs, 1, 1)?;
    let x = inputs[0];
    for w in axes.windows(2) {
        if w[0] >= w[1] {
            return Err(format!("axes {axes:?} must be sorted and unique"));
        }
    }
    for &a in axes {
        check_axis(a, x.rank())?;
    }
    if x.dtype() == DType::C64 && !matches!(op, ReduceOp::Sum | ReduceOp::Mean | ReduceOp::Prod) {
        return Err(format!(
            "reduce {} is not defined for complex values",
            op.name()
        ));
    }
    Ok(Shape::from_dims(
        reduced_dims(x.dims(), axes, keep_dim),
        reduce_dtype(op, x.dtype()),
    ))
}

pub(crate) fn infer_arg_reduce(axis: usize, keep_dim: bool, inputs: &[&Shape]) -> InferResult {
    arity(inputs, 1, 1)?;
    let x = inputs[0];
    check_axis(axis, x.rank())?;
    if x.dtype() == DType::C64 {
        return Err("argmax / argmin are not defined for complex values".into());
    }
    if x.dim(axis) == Some(0) {
        return Err(format!("argmax / argmin of an empty axis {axis} of {x}"));
    }
    Ok(Shape::from_dims(
        reduced_dims(x.dims(), &[axis], keep_dim),
        DType::I64,
    ))
}

pub(crate) fn infer_cumsum(axis: usize, inputs: &[&Shape]) -> InferResult {
    arity(inputs, 1, 1)?;
    let x = inputs[0];
    check_axis(axis, x.rank())?;
    if x.dtype() == DType::Bool {
        return Err("cumsum of bool: cast to an integer type first".into());
    }
    Ok(x.clone())
}
