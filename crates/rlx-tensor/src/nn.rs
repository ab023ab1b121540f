//! `jax.nn`-style functions: activations, `softmax` / `log_softmax`,
//! normalisation, `one_hot`, convolution and pooling.

use crate::error::{Result, TensorError};
use crate::reduce::{norm_axis, Axes};
use crate::tensor::Tensor;
use rlx_ir::op::{PoolKind, Window};
use rlx_ir::{DType, Op};

/// `max(x, 0)`.
pub fn relu(x: &Tensor) -> Tensor {
    x.relu()
}
/// `min(max(x, 0), 6)`.
pub fn relu6(x: &Tensor) -> Tensor {
    x.relu().minimum(6.0)
}
/// Logistic sigmoid.
pub fn sigmoid(x: &Tensor) -> Tensor {
    x.sigmoid()
}
/// `log(sigmoid(x)) = -softplus(-x)`.
pub fn log_sigmoid(x: &Tensor) -> Tensor {
    -(-x).softplus()
}
/// `log(1 + e^x)`.
pub fn softplus(x: &Tensor) -> Tensor {
    x.softplus()
}
/// `x * sigmoid(x)`.
pub fn silu(x: &Tensor) -> Tensor {
    x.silu()
}
/// Alias of [`silu`].
pub fn swish(x: &Tensor) -> Tensor {
    x.silu()
}
/// GELU: exact (erf) or, with `approximate`, the tanh form (JAX's default is `approximate=True`).
pub fn gelu(x: &Tensor, approximate: bool) -> Tensor {
    if approximate {
        x.gelu_tanh()
    } else {
        x.gelu()
    }
}
/// `x` for `x > 0`, else `alpha (e^x - 1)`.
pub fn elu(x: &Tensor, alpha: f64) -> Tensor {
    crate::np::where_(&x.gt(0.0), x, x.expm1() * alpha)
}
/// `x` for `x >= 0`, else `slope x`.
pub fn leaky_relu(x: &Tensor, negative_slope: f64) -> Tensor {
    crate::np::where_(&x.ge(0.0), x, x * negative_slope)
}
/// `max(-1, min(1, x))`.
pub fn hard_tanh(x: &Tensor) -> Tensor {
    x.clip(Some(-1.0), Some(1.0))
}
/// `relu6(x + 3) / 6`.
pub fn hard_sigmoid(x: &Tensor) -> Tensor {
    relu6(&(x + 3.0)) / 6.0
}
/// `x * hard_sigmoid(x)`.
pub fn hard_silu(x: &Tensor) -> Tensor {
    x * hard_sigmoid(x)
}
/// SELU with the standard constants.
pub fn selu(x: &Tensor) -> Tensor {
    let alpha = 1.673_263_242_354_377_3;
    let scale = 1.050_700_987_355_480_5;
    elu(x, alpha) * scale
}
/// `max(0, x) + min(0, alpha (e^{x/alpha} - 1))`.
pub fn celu(x: &Tensor, alpha: f64) -> Tensor {
    x.relu() + ((x / alpha).expm1() * alpha).minimum(0.0)
}
/// Gated linear unit: halves `a, b` of `axis`, `a * sigmoid(b)`.
pub fn glu(x: &Tensor, axis: i64) -> Tensor {
    let parts = crate::np::split(x, 2, axis);
    match parts.as_slice() {
        [a, b] => a * b.sigmoid(),
        _ => Tensor::sticky(Err(TensorError::invalid("glu", "axis size must be even"))),
    }
}

/// Softmax along `axis`.
pub fn softmax(x: &Tensor, axis: i64) -> Tensor {
    Tensor::sticky_with(|| {
        let x = x.float();
        let a = norm_axis("softmax", axis, x.ndim())?;
        Tensor::op("softmax", Op::Softmax { axis: a }, &[&x], None)
    })
}

/// Log-softmax along `axis`.
pub fn log_softmax(x: &Tensor, axis: i64) -> Tensor {
    Tensor::sticky_with(|| {
        let x = x.float();
        let a = norm_axis("log_softmax", axis, x.ndim())?;
        Tensor::op("log_softmax", Op::LogSoftmax { axis: a }, &[&x], None)
    })
}

/// `log(sum(exp(x)))` over `axes`, stable.
pub fn logsumexp(x: &Tensor, axes: impl Into<Axes>, keepdims: bool) -> Tensor {
    x.logsumexp(axes, keepdims)
}

/// `(x - mean) / sqrt(var + eps)` over `axes` (jax.nn.standardize).
pub fn standardize(x: &Tensor, axes: impl Into<Axes>, eps: f64) -> Tensor {
    let a = axes.into();
    let x = x.float();
    let mu = x.mean(a.clone(), true);
    let var = x.var(a, 0, true);
    (&x - mu) / (var + eps).sqrt()
}

/// Layer norm over the last axis with optional `gamma` / `beta` of its size.
pub fn layer_norm(x: &Tensor, gamma: Option<&Tensor>, beta: Option<&Tensor>, eps: f64) -> Tensor {
    Tensor::sticky_with(|| {
        let x = x.float();
        x.check()?;
        if x.ndim() == 0 {
            return Err(TensorError::invalid("layer_norm", "needs rank >= 1"));
        }
        let mut ins = vec![&x];
        let ones;
        match (gamma, beta) {
            (Some(g), Some(b)) => {
                ins.push(g);
                ins.push(b);
            }
            (Some(g), None) => ins.push(g),
            (None, Some(b)) => {
                let n = x.dims().and_then(|d| d.last().copied()).unwrap_or(1);
                ones = crate::creation::full(&[n], 1.0, x.dtype());
                ins.push(&ones);
                ins.push(b);
            }
            (None, None) => {}
        }
        Tensor::op(
            "layer_norm",
            Op::LayerNorm {
                axis: x.ndim() - 1,
                eps,
            },
            &ins,
            None,
        )
    })
}

/// RMS norm over the last axis with an optional `gamma`.
pub fn rms_norm(x: &Tensor, gamma: Option<&Tensor>, eps: f64) -> Tensor {
    Tensor::sticky_with(|| {
        let x = x.float();
        let mut ins = vec![&x];
        if let Some(g) = gamma {
            ins.push(g);
        }
        Tensor::op("rms_norm", Op::RmsNorm { eps }, &ins, None)
    })
}

/// `jax.nn.one_hot(x, num_classes)`: a new last axis; out-of-range
/// indices give all zeros.
pub fn one_hot(x: &Tensor, num_classes: usize) -> Tensor {
    Tensor::sticky_with(|| {
        x.check()?;
        let mut d = x
            .dims()
            .ok_or_else(|| TensorError::invalid("one_hot", "needs static dims"))?;
        d.push(num_classes);
        let classes = crate::creation::iota(&d, d.len() - 1, 0.0, 1.0, DType::I32);
        let xi = x.astype(DType::I32).expand_dims(-1);
        classes
            .eq(&xi)
            .astype(Tensor::float_dtype())
            .check()
            .cloned()
    })
}

fn window(
    op: &str,
    spatial: usize,
    kernel: &[usize],
    stride: &[usize],
    padding: &[(usize, usize)],
    dilation: &[usize],
) -> Result<Window> {
    let fill = |v: &[usize], d: usize, what: &str| -> Result<Vec<usize>> {
        match v.len() {
            0 => Ok(vec![d; spatial]),
            n if n == spatial => Ok(v.to_vec()),
            n => Err(TensorError::invalid(
                op,
                format!("{n} {what} values for {spatial} spatial dims"),
            )),
        }
    };
    let padding = match padding.len() {
        0 => vec![(0, 0); spatial],
        n if n == spatial => padding.to_vec(),
        n => {
            return Err(TensorError::invalid(
                op,
                format!("{n} padding pairs for {spatial} spatial dims"),
            ))
        }
    };
    Ok(Window {
        kernel: kernel.to_vec(),
        stride: fill(stride, 1, "stride")?,
        padding,
        dilation: fill(dilation, 1, "dilation")?,
    })
}

/// N-d convolution (`jax.lax.conv_general_dilated` in NCHW / OIHW layout):
/// `x [N, C, *sp]`, `w [O, C/groups, *k]`, optional `bias [O]`; empty
/// `stride` / `dilation` mean 1 and empty `padding` means none.
pub fn conv(
    x: &Tensor,
    w: &Tensor,
    bias: Option<&Tensor>,
    stride: &[usize],
    padding: &[(usize, usize)],
    dilation: &[usize],
    groups: usize,
) -> Tensor {
    Tensor::sticky_with(|| {
        x.check()?;
        w.check()?;
        let spatial = x.ndim().saturating_sub(2);
        let k = w
            .dims()
            .map(|d| d[2.min(d.len())..].to_vec())
            .ok_or_else(|| TensorError::invalid("conv", "needs a static weight"))?;
        let win = window("conv", spatial, &k, stride, padding, dilation)?;
        let mut ins = vec![x, w];
        if let Some(b) = bias {
            ins.push(b);
        }
        Tensor::op(
            "conv",
            Op::Conv {
                window: win,
                groups,
            },
            &ins,
            None,
        )
    })
}

fn pool(
    kind: PoolKind,
    x: &Tensor,
    kernel: &[usize],
    stride: &[usize],
    padding: &[(usize, usize)],
) -> Tensor {
    Tensor::sticky_with(|| {
        x.check()?;
        let spatial = x.ndim().saturating_sub(2);
        let stride = if stride.is_empty() { kernel } else { stride };
        let win = window("pool", spatial, kernel, stride, padding, &[])?;
        Tensor::op(
            "pool",
            Op::Pool {
                kind,
                window: win,
                count_include_pad: false,
            },
            &[x],
            None,
        )
    })
}

/// Max pooling over the spatial dims of `x [N, C, *sp]` (stride defaults to the kernel).
pub fn max_pool(
    x: &Tensor,
    kernel: &[usize],
    stride: &[usize],
    padding: &[(usize, usize)],
) -> Tensor {
    pool(PoolKind::Max, x, kernel, stride, padding)
}

/// Average pooling (padded cells not counted).
pub fn avg_pool(
    x: &Tensor,
    kernel: &[usize],
    stride: &[usize],
    padding: &[(usize, usize)],
) -> Tensor {
    pool(PoolKind::Avg, x, kernel, stride, padding)
}
