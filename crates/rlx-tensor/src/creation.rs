//! Array creation in the active scope: `zeros`, `ones`, `full`, `arange`,
//! `linspace`, `eye`, `tri`, constants from host data.

use crate::error::{Result, TensorError};
use crate::tensor::Tensor;
use rlx_ir::{DType, HostTensor, Op, Shape};

/// A rank-0 constant.
pub fn scalar(value: f64, dtype: DType) -> Tensor {
    Tensor::sticky(try_scalar(value, dtype))
}

/// [`scalar`], returning the error.
pub fn try_scalar(value: f64, dtype: DType) -> Result<Tensor> {
    Tensor::leaf("scalar", |g| Ok(g.scalar(value, dtype)))
}

/// A rank-0 constant `value` that combines with `like` as a weakly typed
/// literal would (its dtype, or float when `value` is not integral).
pub(crate) fn scalar_like(value: f64, like: &Tensor) -> Result<Tensor> {
    like.check()?;
    let dt = if !like.dtype().is_float() && (value.fract() != 0.0 || !value.is_finite()) {
        Tensor::float_dtype()
    } else {
        like.dtype()
    };
    try_scalar(value, dt)
}

/// `value` broadcast to `dims`.
pub fn try_full(dims: &[usize], value: f64, dtype: DType) -> Result<Tensor> {
    let s = try_scalar(value, dtype)?;
    if dims.is_empty() {
        return Ok(s);
    }
    Tensor::op("full", Op::Broadcast, &[&s], Some(Shape::new(dims, dtype)))
}

/// numpy `full(dims, value, dtype)`.
pub fn full(dims: &[usize], value: f64, dtype: DType) -> Tensor {
    Tensor::sticky(try_full(dims, value, dtype))
}

/// numpy `zeros` (the scope's float dtype).
pub fn zeros(dims: &[usize]) -> Tensor {
    full(dims, 0.0, Tensor::float_dtype())
}

/// numpy `ones` (the scope's float dtype).
pub fn ones(dims: &[usize]) -> Tensor {
    full(dims, 1.0, Tensor::float_dtype())
}

/// numpy `empty`: zeros (a graph has no uninitialised memory).
pub fn empty(dims: &[usize]) -> Tensor {
    zeros(dims)
}

fn like_dims(x: &Tensor, op: &str) -> Result<Vec<usize>> {
    x.check()?;
    x.dims()
        .ok_or_else(|| TensorError::invalid(op, format!("needs static dims, given {}", x.shape())))
}

/// `value` with the shape and dtype of `x`.
pub fn full_like(x: &Tensor, value: f64) -> Tensor {
    Tensor::sticky(like_dims(x, "full_like").and_then(|d| try_full(&d, value, x.dtype())))
}

/// Zeros with the shape and dtype of `x`.
pub fn zeros_like(x: &Tensor) -> Tensor {
    full_like(x, 0.0)
}

/// Ones with the shape and dtype of `x`.
pub fn ones_like(x: &Tensor) -> Tensor {
    full_like(x, 1.0)
}

/// [`zeros_like`] (a graph has no uninitialised memory).
pub fn empty_like(x: &Tensor) -> Tensor {
    zeros_like(x)
}

/// `start + step * i` along `axis` of a new tensor of `dims`.
pub fn iota(dims: &[usize], axis: usize, start: f64, step: f64, dtype: DType) -> Tensor {
    Tensor::sticky(Tensor::leaf("iota", |g| {
        g.try_node(
            Op::Iota { axis, start, step },
            &[],
            Some(Shape::new(dims, dtype)),
        )
        .map_err(|e| TensorError::ir("iota", e))
    }))
}

/// numpy `arange(start, stop, step)`; `dtype` `None` is `I32` when all three
/// are integral (JAX without x64), else the scope's float dtype.
pub fn arange(start: f64, stop: f64, step: f64, dtype: Option<DType>) -> Tensor {
    if step == 0.0 || !step.is_finite() {
        return Tensor::sticky(Err(TensorError::invalid(
            "arange",
            format!("step must be finite and non-zero, given {step}"),
        )));
    }
    let integral = [start, stop, step].iter().all(|v| v.fract() == 0.0);
    let dt = dtype.unwrap_or(if integral {
        DType::I32
    } else {
        Tensor::float_dtype()
    });
    let n = ((stop - start) / step).ceil().max(0.0) as usize;
    iota(&[n], 0, start, step, dt)
}

/// numpy `linspace(start, stop, num, endpoint=True)`.
pub fn linspace(start: f64, stop: f64, num: usize, endpoint: bool) -> Tensor {
    let div = if endpoint { num.saturating_sub(1) } else { num };
    let step = if div == 0 {
        0.0
    } else {
        (stop - start) / div as f64
    };
    iota(&[num], 0, start, step, Tensor::float_dtype())
}

/// numpy `eye(n, m, k)`: ones on the `k`th diagonal.
pub fn eye(n: usize, m: Option<usize>, k: i64) -> Tensor {
    let m = m.unwrap_or(n);
    let r = iota(&[n, m], 0, 0.0, 1.0, DType::I32);
    let c = iota(&[n, m], 1, 0.0, 1.0, DType::I32);
    (c - r).eq(k).astype(Tensor::float_dtype())
}

/// numpy `identity(n)`.
pub fn identity(n: usize) -> Tensor {
    eye(n, None, 0)
}

/// numpy `tri(n, m, k)`: ones at and below the `k`th diagonal.
pub fn tri(n: usize, m: Option<usize>, k: i64) -> Tensor {
    let m = m.unwrap_or(n);
    let r = iota(&[n, m], 0, 0.0, 1.0, DType::I32);
    let c = iota(&[n, m], 1, 0.0, 1.0, DType::I32);
    (c - r).le(k).astype(Tensor::float_dtype())
}

/// A constant from a host tensor (numpy `asarray` of host data).
pub fn asarray(t: &HostTensor) -> Tensor {
    Tensor::sticky(Tensor::leaf("asarray", |g| Ok(g.constant_tensor(t))))
}

/// An `F32` constant of `dims` from row-major values (numpy `array`).
pub fn array(values: &[f32], dims: &[usize]) -> Tensor {
    Tensor::sticky(
        HostTensor::from_slice(values, dims)
            .map_err(|e| TensorError::ir("array", e))
            .and_then(|t| Tensor::leaf("array", |g| Ok(g.constant_tensor(&t)))),
    )
}

impl Tensor {
    /// A constant of `dims` from row-major `F32` values, in the active
    /// scope (with feature `eval` and no scope active: an eager tensor).
    pub fn from_vec(values: Vec<f32>, dims: &[usize]) -> Tensor {
        Tensor::sticky_with(|| {
            let t =
                HostTensor::from_vec(values, dims).map_err(|e| TensorError::ir("from_vec", e))?;
            Tensor::leaf("from_vec", |g| Ok(g.constant_tensor(&t)))
        })
    }

    /// A constant holding a host tensor of any dtype.
    pub fn from_host(t: &HostTensor) -> Tensor {
        asarray(t)
    }
}
