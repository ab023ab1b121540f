//! More `jax.numpy` names (re-exported by [`crate::np`]): NaN-aware
//! reductions, quantiles, polynomials, windows, index helpers, statistics.
//! Shapes are static; functions whose result size depends on values
//! (`nonzero`, `unique`, ...) are not provided.

#![allow(non_upper_case_globals)]

use crate::creation::{
    arange, array, asarray, eye, full, iota, linspace, ones_like, scalar, zeros_like,
};
use crate::elementwise::Arg;
use crate::error::{Result, TensorError};
use crate::np::{concatenate, stack, where_};
use crate::reduce::{norm_axis, Axes};
use crate::tensor::Tensor;
use rlx_ir::{DType, HostTensor};

/// π.
pub const pi: f64 = std::f64::consts::PI;
/// Euler's number.
pub const e: f64 = std::f64::consts::E;
/// Positive infinity.
pub const inf: f64 = f64::INFINITY;
/// Not a number.
pub const nan: f64 = f64::NAN;
/// The Euler–Mascheroni constant.
pub const euler_gamma: f64 = 0.577_215_664_901_532_9;
/// `np.newaxis` (an entry of [`crate::s!`]).
pub const newaxis: crate::SliceItem = crate::SliceItem::NewAxis;

fn fail(op: &str, reason: impl Into<String>) -> Tensor {
    Tensor::sticky(Err(TensorError::invalid(op, reason)))
}

fn axis_len(x: &Tensor, op: &str, axis: i64) -> Result<(usize, usize)> {
    x.check()?;
    let ax = norm_axis(op, axis, x.ndim())?;
    let n = x
        .shape()
        .dim(ax)
        .ok_or_else(|| TensorError::invalid(op, "needs a static axis"))?;
    Ok((ax, n))
}

/// `|x|` (float).
pub fn fabs(x: &Tensor) -> Tensor {
    x.float().abs()
}
/// `x == -inf` (Bool).
pub fn isneginf(x: &Tensor) -> Tensor {
    x.eq(f64::NEG_INFINITY)
}
/// `x == +inf` (Bool).
pub fn isposinf(x: &Tensor) -> Tensor {
    x.eq(f64::INFINITY)
}
/// Whether each element is real (all true: complex tensors are not built here).
pub fn isreal(x: &Tensor) -> Tensor {
    full_like_bool(x, true)
}
/// Whether each element has a non-zero imaginary part (all false).
pub fn iscomplex(x: &Tensor) -> Tensor {
    full_like_bool(x, false)
}
fn full_like_bool(x: &Tensor, v: bool) -> Tensor {
    match x.dims() {
        Some(d) => full(&d, if v { 1.0 } else { 0.0 }, DType::Bool),
        None => fail("isreal", "needs static dims"),
    }
}
/// The imaginary part of a real tensor: zeros.
pub fn imag(x: &Tensor) -> Tensor {
    zeros_like(x)
}
/// The angle of a real number: `pi` for negatives, else 0.
pub fn angle(x: &Tensor) -> Tensor {
    where_(&x.lt(0), pi, 0.0).astype(x.float().dtype())
}
/// Bitwise not: logical not on Bool, `-x - 1` on integers.
pub fn invert(x: &Tensor) -> Tensor {
    if x.dtype() == DType::Bool {
        x.logical_not()
    } else {
        -x - 1
    }
}
/// Alias of [`invert`].
pub fn bitwise_not(x: &Tensor) -> Tensor {
    invert(x)
}
/// Alias of [`invert`].
pub fn bitwise_invert(x: &Tensor) -> Tensor {
    invert(x)
}
/// `(fractional, integral)` parts with the sign of `x`.
pub fn modf(x: &Tensor) -> (Tensor, Tensor) {
    let i = x.float().trunc();
    (x.float() - &i, i)
}
/// A copy (the same value).
pub fn copy(x: &Tensor) -> Tensor {
    x.clone()
}
/// Whether `x` is a rank-0 tensor.
pub fn isscalar(x: &Tensor) -> bool {
    x.ndim() == 0
}

// ── NaN-aware reductions ──

fn nan_to(x: &Tensor, v: f64) -> Tensor {
    where_(&x.isnan(), v, x)
}
/// `sum` ignoring NaNs.
pub fn nansum(x: &Tensor, axes: impl Into<Axes>, keepdims: bool) -> Tensor {
    nan_to(x, 0.0).sum(axes, keepdims)
}
/// `prod` ignoring NaNs.
pub fn nanprod(x: &Tensor, axes: impl Into<Axes>, keepdims: bool) -> Tensor {
    nan_to(x, 1.0).prod(axes, keepdims)
}
/// `max` ignoring NaNs.
pub fn nanmax(x: &Tensor, axes: impl Into<Axes>, keepdims: bool) -> Tensor {
    nan_to(x, f64::NEG_INFINITY).max(axes, keepdims)
}
/// `min` ignoring NaNs.
pub fn nanmin(x: &Tensor, axes: impl Into<Axes>, keepdims: bool) -> Tensor {
    nan_to(x, f64::INFINITY).min(axes, keepdims)
}
/// `mean` ignoring NaNs.
pub fn nanmean(x: &Tensor, axes: impl Into<Axes>, keepdims: bool) -> Tensor {
    let a = axes.into();
    let n = x
        .isnan()
        .logical_not()
        .astype(x.float().dtype())
        .sum(a.clone(), keepdims);
    nansum(&x.float(), a, keepdims) / n
}
/// `var(ddof)` ignoring NaNs.
pub fn nanvar(x: &Tensor, axes: impl Into<Axes>, ddof: usize, keepdims: bool) -> Tensor {
    let a = axes.into();
    let x = x.float();
    let valid = x.isnan().logical_not().astype(x.dtype());
    let mu = nanmean(&x, a.clone(), true);
    let d = nan_to(&(&x - mu).square(), 0.0).sum(a.clone(), keepdims);
    d / (valid.sum(a, keepdims) - ddof as f64)
}
/// `std(ddof)` ignoring NaNs.
pub fn nanstd(x: &Tensor, axes: impl Into<Axes>, ddof: usize, keepdims: bool) -> Tensor {
    nanvar(x, axes, ddof, keepdims).sqrt()
}
/// `argmax` ignoring NaNs.
pub fn nanargmax(x: &Tensor, axis: Option<i64>, keepdims: bool) -> Tensor {
    nan_to(x, f64::NEG_INFINITY).argmax(axis, keepdims)
}
/// `argmin` ignoring NaNs.
pub fn nanargmin(x: &Tensor, axis: Option<i64>, keepdims: bool) -> Tensor {
    nan_to(x, f64::INFINITY).argmin(axis, keepdims)
}
/// `cumsum` with NaNs as 0.
pub fn nancumsum(x: &Tensor, axis: Option<i64>) -> Tensor {
    nan_to(x, 0.0).cumsum(axis)
}
/// `cumprod` with NaNs as 1.
pub fn nancumprod(x: &Tensor, axis: Option<i64>) -> Tensor {
    cumprod(&nan_to(x, 1.0), axis)
}

/// Cumulative product along `axis` (`None`: flattened), by log-depth
/// doubling (`ceil(log2 n)` multiplies; exact products, any signs).
pub fn cumprod(x: &Tensor, axis: Option<i64>) -> Tensor {
    Tensor::sticky_with(|| {
        let (x, axis) = match axis {
            Some(a) => (x.clone(), a),
            None => (x.ravel(), 0),
        };
        let (ax, n) = axis_len(&x, "cumprod", axis)?;
        let mut acc = if x.dtype() == DType::Bool {
            x.astype(DType::I32)
        } else {
            x.clone()
        };
        let mut k = 1;
        while k < n {
            let head = ones_like(&acc.narrow(ax as i64, 0, k));
            let shifted = concatenate(&[&head, &acc.narrow(ax as i64, 0, n - k)], ax as i64);
            acc = &acc * shifted;
            k *= 2;
        }
        acc.check().cloned()
    })
}
/// Array-API `cumulative_prod`.
pub fn cumulative_prod(x: &Tensor, axis: Option<i64>) -> Tensor {
    cumprod(x, axis)
}

// ── quantiles ──

/// numpy `quantile(x, q, axis, method="linear")` for one `q` in [0, 1].
pub fn quantile(x: &Tensor, q: f64, axis: Option<i64>, keepdims: bool) -> Tensor {
    Tensor::sticky_with(|| {
        if !(0.0..=1.0).contains(&q) {
            return Err(TensorError::invalid(
                "quantile",
                format!("q must be in [0, 1], given {q}"),
            ));
        }
        let rank = x.ndim();
        let (y, axis_i) = match axis {
            Some(a) => (x.float(), a),
            None => (x.float().ravel(), 0),
        };
        let (ax, n) = axis_len(&y, "quantile", axis_i)?;
        if n == 0 {
            return Err(TensorError::invalid("quantile", "of an empty axis"));
        }
        let s = y.sort(ax as i64);
        let pos = q * (n - 1) as f64;
        let lo = pos.floor() as usize;
        let hi = (lo + 1).min(n - 1);
        let frac = pos - lo as f64;
        let a = s.narrow(ax as i64, lo, 1);
        let b = s.narrow(ax as i64, hi, 1);
        let r = &a + (&b - &a) * frac;
        let r = if keepdims {
            if axis.is_none() {
                r.reshape(&vec![1; rank])
            } else {
                r
            }
        } else {
            r.squeeze(Axes::Some(vec![ax as i64]))
        };
        r.check().cloned()
    })
}
/// numpy `percentile(x, q)` with `q` in [0, 100].
pub fn percentile(x: &Tensor, q: f64, axis: Option<i64>, keepdims: bool) -> Tensor {
    quantile(x, q / 100.0, axis, keepdims)
}

// ── searching / counting ──

/// numpy `searchsorted(a, v, side)`: insertion indices of `v` into the
/// sorted 1-d `a` (`right`: after equal elements). `I32`.
pub fn searchsorted(a: &Tensor, v: &Tensor, right: bool) -> Tensor {
    let ae = a.ravel();
    let ve = v.expand_dims(-1);
    let before = if right { ae.le(&ve) } else { ae.lt(&ve) };
    before.astype(DType::I32).sum(-1, false)
}
/// numpy `digitize(x, bins, right)` for increasing `bins`.
pub fn digitize(x: &Tensor, bins: &Tensor, right: bool) -> Tensor {
    searchsorted(bins, x, !right)
}
/// numpy `isin(element, test_elements)` (Bool).
pub fn isin(element: &Tensor, test: &Tensor) -> Tensor {
    element.expand_dims(-1).eq(test.ravel()).any(-1, false)
}
/// numpy `bincount(x, length)` of non-negative integers (values at or past
/// `length` are not counted; `length` must cover them to match numpy).
pub fn bincount(x: &Tensor, length: usize) -> Tensor {
    crate::nn::one_hot(&x.ravel(), length)
        .astype(DType::I32)
        .sum(0, false)
}
/// numpy `array_equiv`: broadcastable and all equal (Bool scalar).
pub fn array_equiv(a: &Tensor, b: &Tensor) -> Tensor {
    match crate::tensor::broadcast_shapes("array_equiv", &a.shape(), &b.shape()) {
        Ok(_) => a.eq(b).all(None, false),
        Err(_) => scalar(0.0, DType::Bool),
    }
}
/// numpy `broadcast_shapes` of dims.
pub fn broadcast_shapes(a: &[usize], b: &[usize]) -> Result<Vec<usize>> {
    let (sa, sb) = (
        rlx_ir::Shape::new(a, DType::F32),
        rlx_ir::Shape::new(b, DType::F32),
    );
    let d = crate::tensor::broadcast_shapes("broadcast_shapes", &sa, &sb)?;
    Ok(d.iter().filter_map(|d| d.as_static()).collect())
}

// ── construction / rearrangement ──

/// numpy `append(x, values, axis)` (`None`: both flattened).
pub fn append(x: &Tensor, values: &Tensor, axis: Option<i64>) -> Tensor {
    match axis {
        None => concatenate(&[&x.ravel(), &values.ravel()], 0),
        Some(a) => concatenate(&[x, values], a),
    }
}
/// numpy `delete(x, index, axis)` of one index (negative from the end).
pub fn delete(x: &Tensor, index: i64, axis: i64) -> Tensor {
    Tensor::sticky_with(|| {
        let (ax, n) = axis_len(x, "delete", axis)?;
        let i = if index < 0 { index + n as i64 } else { index };
        if i < 0 || i >= n as i64 {
            return Err(TensorError::invalid(
                "delete",
                format!("index {index} is out of bounds for axis {ax} with size {n}"),
            ));
        }
        let i = i as usize;
        concatenate(
            &[
                &x.narrow(ax as i64, 0, i),
                &x.narrow(ax as i64, i + 1, n - i - 1),
            ],
            ax as i64,
        )
        .check()
        .cloned()
    })
}
/// numpy `insert(x, index, value, axis)`: one slice of `value` before `index`.
pub fn insert(x: &Tensor, index: usize, value: f64, axis: i64) -> Tensor {
    Tensor::sticky_with(|| {
        let (ax, n) = axis_len(x, "insert", axis)?;
        if index > n {
            return Err(TensorError::invalid(
                "insert",
                format!("index {index} is out of bounds for axis {ax} with size {n}"),
            ));
        }
        let mut d = x.dims().unwrap_or_default();
        d[ax] = 1;
        let v = full(&d, value, x.dtype());
        concatenate(
            &[
                &x.narrow(ax as i64, 0, index),
                &v,
                &x.narrow(ax as i64, index, n - index),
            ],
            ax as i64,
        )
        .check()
        .cloned()
    })
}
/// Array-API `unstack`: the slices along `axis`.
pub fn unstack(x: &Tensor, axis: i64) -> Vec<Tensor> {
    match axis_len(x, "unstack", axis) {
        Ok((ax, n)) => (0..n)
            .map(|i| {
                x.narrow(ax as i64, i, 1)
                    .squeeze(Axes::Some(vec![ax as i64]))
            })
            .collect(),
        Err(err) => vec![Tensor::sticky(Err(err))],
    }
}
/// numpy `rollaxis(x, axis, start)`.
pub fn rollaxis(x: &Tensor, axis: i64, start: i64) -> Tensor {
    Tensor::sticky_with(|| {
        let r = x.ndim() as i64;
        let a = norm_axis("rollaxis", axis, x.ndim())? as i64;
        let s = if start < 0 { start + r } else { start };
        if !(0..=r).contains(&s) {
            return Err(TensorError::invalid(
                "rollaxis",
                format!("start {start} out of range for rank {r}"),
            ));
        }
        let dst = if a < s { s - 1 } else { s };
        x.moveaxis(a, dst).check().cloned()
    })
}
/// numpy `resize(x, dims)`: the flattened data repeated to fill `dims`.
pub fn resize(x: &Tensor, dims: &[usize]) -> Tensor {
    Tensor::sticky_with(|| {
        let total: usize = dims.iter().product();
        let n = x
            .size()
            .ok_or_else(|| TensorError::invalid("resize", "needs static dims"))?;
        if n == 0 {
            return Ok(zeros_like(x)
                .reshape(&[0])
                .pad(&[(0, total)], 0.0)
                .reshape(&dims.iter().map(|&d| d as i64).collect::<Vec<_>>()));
        }
        let reps = total.div_ceil(n);
        let flat = x.ravel().tile(&[reps]).narrow(0, 0, total);
        flat.try_reshape(&dims.iter().map(|&d| d as i64).collect::<Vec<_>>())
    })
}
/// numpy `diagflat(v, k)`.
pub fn diagflat(v: &Tensor, k: i64) -> Tensor {
    crate::np::diag(&v.ravel(), k)
}
/// `jnp.fill_diagonal(x, val, inplace=False)` of a 2-d tensor.
pub fn fill_diagonal(x: &Tensor, val: f64) -> Tensor {
    match x.dims() {
        Some(d) if d.len() == 2 => where_(&eye(d[0], Some(d[1]), 0).ne(0.0), val, x),
        _ => fail(
            "fill_diagonal",
            format!("needs a 2-d tensor, given {}", x.shape()),
        ),
    }
}
/// numpy `indices(dims)`: a `[rank, *dims]` `I32` grid.
pub fn indices(dims: &[usize]) -> Tensor {
    let parts: Vec<Tensor> = (0..dims.len())
        .map(|a| iota(dims, a, 0.0, 1.0, DType::I32))
        .collect();
    let refs: Vec<&Tensor> = parts.iter().collect();
    stack(&refs, 0)
}
/// numpy `diag_indices(n)`: `(arange(n), arange(n))`.
pub fn diag_indices(n: usize) -> (Tensor, Tensor) {
    (
        arange(0.0, n as f64, 1.0, None),
        arange(0.0, n as f64, 1.0, None),
    )
}
fn tri_indices(n: usize, k: i64, m: usize, lower: bool) -> (Tensor, Tensor) {
    let mut rows = Vec::new();
    let mut cols = Vec::new();
    for r in 0..n {
        for c in 0..m {
            let d = c as i64 - r as i64;
            if (lower && d <= k) || (!lower && d >= k) {
                rows.push(r as i32);
                cols.push(c as i32);
            }
        }
    }
    let t = |v: Vec<i32>| {
        let len = v.len();
        match HostTensor::from_vec(v, &[len]) {
            Ok(h) => asarray(&h),
            Err(err) => Tensor::sticky(Err(TensorError::ir("tri_indices", err))),
        }
    };
    (t(rows), t(cols))
}
/// numpy `tril_indices(n, k, m)` (row-major order, `I32`).
pub fn tril_indices(n: usize, k: i64, m: Option<usize>) -> (Tensor, Tensor) {
    tri_indices(n, k, m.unwrap_or(n), true)
}
/// numpy `triu_indices(n, k, m)`.
pub fn triu_indices(n: usize, k: i64, m: Option<usize>) -> (Tensor, Tensor) {
    tri_indices(n, k, m.unwrap_or(n), false)
}
/// numpy `tril_indices_from(x, k)`.
pub fn tril_indices_from(x: &Tensor, k: i64) -> (Tensor, Tensor) {
    let d = x.dims().unwrap_or_default();
    tri_indices(
        d.first().copied().unwrap_or(0),
        k,
        d.get(1).copied().unwrap_or(0),
        true,
    )
}
/// numpy `triu_indices_from(x, k)`.
pub fn triu_indices_from(x: &Tensor, k: i64) -> (Tensor, Tensor) {
    let d = x.dims().unwrap_or_default();
    tri_indices(
        d.first().copied().unwrap_or(0),
        k,
        d.get(1).copied().unwrap_or(0),
        false,
    )
}
/// numpy `ravel_multi_index(indices, dims)`: flat indices of `I32` index tensors.
pub fn ravel_multi_index(idx: &[&Tensor], dims: &[usize]) -> Tensor {
    if idx.len() != dims.len() {
        return fail(
            "ravel_multi_index",
            format!("{} index tensors for {} dims", idx.len(), dims.len()),
        );
    }
    let mut acc: Option<Tensor> = None;
    let mut stride = 1usize;
    for (i, &d) in idx.iter().zip(dims).rev() {
        let term = i.astype(DType::I32) * (stride as i64);
        acc = Some(match acc {
            None => term,
            Some(a) => a + term,
        });
        stride *= d;
    }
    acc.unwrap_or_else(|| scalar(0.0, DType::I32))
}
/// numpy `unravel_index(indices, dims)`: one `I32` tensor per dim.
pub fn unravel_index(idx: &Tensor, dims: &[usize]) -> Vec<Tensor> {
    let i = idx.astype(DType::I32);
    let mut stride: usize = dims.iter().product();
    dims.iter()
        .map(|&d| {
            stride /= d.max(1);
            crate::np::remainder(&i.floor_divide(stride as i64), d as i64)
        })
        .collect()
}

// ── numerical ──

/// numpy `trapezoid(y, dx, axis)`.
pub fn trapezoid(y: &Tensor, dx: f64, axis: i64) -> Tensor {
    Tensor::sticky_with(|| {
        let (ax, n) = axis_len(y, "trapezoid", axis)?;
        if n < 2 {
            return Ok(zeros_like(&y.float()).sum(ax as i64, false));
        }
        let y = y.float();
        let s = (y.narrow(ax as i64, 1, n - 1) + y.narrow(ax as i64, 0, n - 1)) * (0.5 * dx);
        s.sum(ax as i64, false).check().cloned()
    })
}
/// numpy `gradient(y, axis)` with unit spacing: central differences inside,
/// one-sided at the ends.
pub fn gradient(y: &Tensor, axis: i64) -> Tensor {
    Tensor::sticky_with(|| {
        let (ax, n) = axis_len(y, "gradient", axis)?;
        if n < 2 {
            return Err(TensorError::invalid(
                "gradient",
                "needs at least 2 points along the axis",
            ));
        }
        let y = y.float();
        let a = ax as i64;
        let first = y.narrow(a, 1, 1) - y.narrow(a, 0, 1);
        let last = y.narrow(a, n - 1, 1) - y.narrow(a, n - 2, 1);
        if n == 2 {
            return concatenate(&[&first, &last], a).check().cloned();
        }
        let mid = (y.narrow(a, 2, n - 2) - y.narrow(a, 0, n - 2)) * 0.5;
        concatenate(&[&first, &mid, &last], a).check().cloned()
    })
}
/// numpy `cov(x)` of the rows of a 2-d tensor (`ddof = 1`).
pub fn cov(x: &Tensor) -> Tensor {
    let x = crate::np::atleast_2d(&x.float());
    let n = x.dims().map(|d| d[1]).unwrap_or(1);
    let c = &x - x.mean(1, true);
    c.matmul(&c.T()) / (n as f64 - 1.0)
}
/// numpy `corrcoef(x)` of the rows of a 2-d tensor.
pub fn corrcoef(x: &Tensor) -> Tensor {
    let c = cov(x);
    let d = c.diagonal(0).sqrt();
    &c / d.expand_dims(1) / d.expand_dims(0)
}
/// numpy `vander(x, n, increasing)`.
pub fn vander(x: &Tensor, n: Option<usize>, increasing: bool) -> Tensor {
    let m = n.unwrap_or_else(|| x.size().unwrap_or(0));
    let p = if increasing {
        arange(0.0, m as f64, 1.0, None)
    } else {
        arange(m as f64 - 1.0, -1.0, -1.0, None)
    };
    x.float().expand_dims(1).pow(p.astype(x.float().dtype()))
}
/// numpy `polyval(p, x)` (highest power first), by Horner's rule.
pub fn polyval(p: &Tensor, x: &Tensor) -> Tensor {
    let n = p.size().unwrap_or(0);
    let x = x.float();
    let mut acc = zeros_like(&x);
    for i in 0..n {
        acc = &acc * &x + p.at(crate::s![i]);
    }
    acc
}
fn pad_front(p: &Tensor, to: usize) -> Tensor {
    let n = p.size().unwrap_or(0);
    p.pad(&[(to - n.min(to), 0)], 0.0)
}
/// numpy `polyadd`.
pub fn polyadd(a: &Tensor, b: &Tensor) -> Tensor {
    let n = a.size().unwrap_or(0).max(b.size().unwrap_or(0));
    pad_front(a, n) + pad_front(b, n)
}
/// numpy `polysub`.
pub fn polysub(a: &Tensor, b: &Tensor) -> Tensor {
    let n = a.size().unwrap_or(0).max(b.size().unwrap_or(0));
    pad_front(a, n) - pad_front(b, n)
}
/// numpy `polymul` (the full convolution of the coefficients).
pub fn polymul(a: &Tensor, b: &Tensor) -> Tensor {
    crate::np::convolve(a, b)
}
/// numpy `polyder(p)` (first derivative).
pub fn polyder(p: &Tensor) -> Tensor {
    let n = p.size().unwrap_or(0);
    if n <= 1 {
        return zeros_like(&p.float())
            .narrow(0, 0, 1.min(n))
            .pad(&[(0, 1 - n.min(1))], 0.0);
    }
    let pw = arange(n as f64 - 1.0, 0.0, -1.0, None).astype(p.float().dtype());
    p.float().narrow(0, 0, n - 1) * pw
}
/// numpy `polyint(p)` (integration constant 0).
pub fn polyint(p: &Tensor) -> Tensor {
    let n = p.size().unwrap_or(0);
    let pw = arange(n as f64, 0.0, -1.0, None).astype(p.float().dtype());
    (p.float() / pw).pad(&[(0, 1)], 0.0)
}

// ── windows ──

fn window_n(n: usize) -> Tensor {
    linspace(0.0, n.saturating_sub(1) as f64, n, true)
}
/// numpy `hamming(n)`.
pub fn hamming(n: usize) -> Tensor {
    if n == 1 {
        return array(&[1.0], &[1]);
    }
    0.54 - (window_n(n) * (2.0 * pi / (n as f64 - 1.0))).cos() * 0.46
}
/// numpy `hanning(n)`.
pub fn hanning(n: usize) -> Tensor {
    if n == 1 {
        return array(&[1.0], &[1]);
    }
    0.5 - (window_n(n) * (2.0 * pi / (n as f64 - 1.0))).cos() * 0.5
}
/// numpy `blackman(n)`.
pub fn blackman(n: usize) -> Tensor {
    if n == 1 {
        return array(&[1.0], &[1]);
    }
    let t = window_n(n) * (2.0 * pi / (n as f64 - 1.0));
    0.42 - t.cos() * 0.5 + (&t * 2.0).cos() * 0.08
}
/// numpy `bartlett(n)`.
pub fn bartlett(n: usize) -> Tensor {
    if n == 1 {
        return array(&[1.0], &[1]);
    }
    let h = (n as f64 - 1.0) / 2.0;
    1.0 - ((window_n(n) - h) / h).abs()
}

// ── products ──

/// numpy `matvec(a, v)`: `a [.., m, n] @ v [.., n]`.
pub fn matvec(a: &Tensor, v: &Tensor) -> Tensor {
    a.matmul(&v.expand_dims(-1)).squeeze(-1)
}
/// numpy `vecmat(v, a)`: `v [.., m] @ a [.., m, n]`.
pub fn vecmat(v: &Tensor, a: &Tensor) -> Tensor {
    v.expand_dims(-2).matmul(a).squeeze(-2)
}

/// Scalars as tensors in `np` calls (`np::asarray_scalar(2.0)`): a rank-0
/// tensor of the scope's float dtype.
pub fn asarray_scalar(v: impl Into<Arg>) -> Tensor {
    match v.into() {
        Arg::Tensor(t) => t,
        Arg::Scalar(s) => scalar(s, Tensor::float_dtype()),
    }
}
