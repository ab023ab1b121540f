//! `jax.numpy` names as free functions (`np::sum(&x, 1, false)`), with
//! numpy's semantics. `docs/tensor-coverage.md` lists which names exist.
//! Every function appends to the active scope and fails softly (see
//! [`crate::TensorError`]).

use crate::elementwise::{nary, select, Arg};
use crate::error::{Result, TensorError};
use crate::reduce::{norm_axis, Axes};
use crate::tensor::Tensor;
use rlx_ir::op::BinaryOp;
use rlx_ir::{DType, Op};

pub use crate::creation::{
    arange, array, asarray, empty, empty_like, eye, full, full_like, identity, linspace, ones,
    ones_like, tri, zeros, zeros_like,
};
pub use crate::linalg::einsum;
pub use crate::np_ext::*;

macro_rules! unary_fns {
    ($($(#[$m:meta])* $name:ident => $method:ident;)*) => {
        $( $(#[$m])* pub fn $name(x: &Tensor) -> Tensor { x.$method() } )*
    };
}

unary_fns! {
    /// `|x|`.
    abs => abs;
    /// `|x|`.
    absolute => abs;
    /// `-x`.
    negative => negative;
    /// `+x`.
    positive => positive;
    /// `e^x`.
    exp => exp;
    /// `2^x`.
    exp2 => exp2;
    /// `e^x - 1`.
    expm1 => expm1;
    /// Natural log.
    log => log;
    /// Base-2 log.
    log2 => log2;
    /// Base-10 log.
    log10 => log10;
    /// `log(1 + x)`.
    log1p => log1p;
    /// Square root.
    sqrt => sqrt;
    /// Cube root.
    cbrt => cbrt;
    /// `x * x`.
    square => square;
    /// `1 / x`.
    reciprocal => reciprocal;
    /// Sine.
    sin => sin;
    /// Cosine.
    cos => cos;
    /// Tangent.
    tan => tan;
    /// Inverse sine.
    arcsin => arcsin;
    /// Inverse sine (array-API name).
    asin => arcsin;
    /// Inverse cosine.
    arccos => arccos;
    /// Inverse cosine (array-API name).
    acos => arccos;
    /// Inverse tangent.
    arctan => arctan;
    /// Inverse tangent (array-API name).
    atan => arctan;
    /// Hyperbolic sine.
    sinh => sinh;
    /// Hyperbolic cosine.
    cosh => cosh;
    /// Hyperbolic tangent.
    tanh => tanh;
    /// Inverse hyperbolic sine.
    arcsinh => arcsinh;
    /// Inverse hyperbolic sine (array-API name).
    asinh => arcsinh;
    /// Inverse hyperbolic cosine.
    arccosh => arccosh;
    /// Inverse hyperbolic cosine (array-API name).
    acosh => arccosh;
    /// Inverse hyperbolic tangent.
    arctanh => arctanh;
    /// Inverse hyperbolic tangent (array-API name).
    atanh => arctanh;
    /// Floor.
    floor => floor;
    /// Ceiling.
    ceil => ceil;
    /// Round toward zero.
    trunc => trunc;
    /// Round toward zero.
    fix => trunc;
    /// Round half to even.
    rint => round;
    /// Sign.
    sign => sign;
    /// Sign bit (Bool).
    signbit => signbit;
    /// NaN test (Bool).
    isnan => isnan;
    /// Infinity test (Bool).
    isinf => isinf;
    /// Finite test (Bool).
    isfinite => isfinite;
    /// Degrees to radians.
    deg2rad => deg2rad;
    /// Degrees to radians.
    radians => deg2rad;
    /// Radians to degrees.
    rad2deg => rad2deg;
    /// Radians to degrees.
    degrees => rad2deg;
    /// Normalised sinc.
    sinc => sinc;
    /// Logical not.
    logical_not => logical_not;
    /// Flattened.
    ravel => ravel;
    /// All axes reversed.
    matrix_transpose => matrix_transpose;
}

/// Round half to even to `decimals` places.
pub fn round(x: &Tensor, decimals: i32) -> Tensor {
    if decimals == 0 {
        return x.round();
    }
    let f = 10f64.powi(decimals);
    (x.float() * f).round() / f
}

/// Alias of [`round`].
pub fn around(x: &Tensor, decimals: i32) -> Tensor {
    round(x, decimals)
}

macro_rules! binary_fns {
    ($($(#[$m:meta])* $name:ident => $method:ident;)*) => {
        $( $(#[$m])* pub fn $name(a: &Tensor, b: impl Into<Arg>) -> Tensor { a.$method(b) } )*
    };
}

binary_fns! {
    /// `a ** b`.
    power => pow;
    /// `a ** b` (array-API name).
    pow => pow;
    /// Elementwise maximum.
    maximum => maximum;
    /// Elementwise minimum.
    minimum => minimum;
    /// Elementwise maximum (NaN-propagating here).
    fmax => maximum;
    /// Elementwise minimum (NaN-propagating here).
    fmin => minimum;
    /// numpy `mod` (sign of the divisor).
    remainder => remainder;
    /// numpy `mod`.
    r#mod => remainder;
    /// C `fmod` (sign of the dividend).
    fmod => fmod;
    /// `atan2(a, b)`.
    arctan2 => arctan2;
    /// `atan2(a, b)` (array-API name).
    atan2 => arctan2;
    /// Floor division.
    floor_divide => floor_divide;
    /// `sqrt(a² + b²)`.
    hypot => hypot;
    /// `log(e^a + e^b)`.
    logaddexp => logaddexp;
    /// `log2(2^a + 2^b)`.
    logaddexp2 => logaddexp2;
    /// `|a|` with the sign of `b`.
    copysign => copysign;
    /// Heaviside step.
    heaviside => heaviside;
    /// `a == b`.
    equal => eq;
    /// `a != b`.
    not_equal => ne;
    /// `a < b`.
    less => lt;
    /// `a <= b`.
    less_equal => le;
    /// `a > b`.
    greater => gt;
    /// `a >= b`.
    greater_equal => ge;
    /// Logical and.
    logical_and => logical_and;
    /// Logical or.
    logical_or => logical_or;
    /// Logical xor.
    logical_xor => logical_xor;
}

/// `a + b`.
pub fn add(a: &Tensor, b: impl Into<Arg>) -> Tensor {
    a + b
}
/// `a - b`.
pub fn subtract(a: &Tensor, b: impl Into<Arg>) -> Tensor {
    a - b
}
/// `a * b`.
pub fn multiply(a: &Tensor, b: impl Into<Arg>) -> Tensor {
    a * b
}
/// True division.
pub fn divide(a: &Tensor, b: impl Into<Arg>) -> Tensor {
    a / b
}
/// True division.
pub fn true_divide(a: &Tensor, b: impl Into<Arg>) -> Tensor {
    a / b
}
/// `a ** b` in float.
pub fn float_power(a: &Tensor, b: impl Into<Arg>) -> Tensor {
    a.float().pow(b)
}
/// `(floor_divide(a, b), mod(a, b))`.
pub fn divmod(a: &Tensor, b: impl Into<Arg> + Clone) -> (Tensor, Tensor) {
    (a.floor_divide(b.clone()), a.remainder(b))
}
/// `a * 2^b`.
pub fn ldexp(a: &Tensor, b: &Tensor) -> Tensor {
    a.float() * b.float().exp2()
}
/// numpy `isclose(a, b, rtol, atol)`.
pub fn isclose(a: &Tensor, b: impl Into<Arg>, rtol: f64, atol: f64) -> Tensor {
    a.isclose(b, rtol, atol)
}
/// numpy `allclose`: every element close (Bool scalar).
pub fn allclose(a: &Tensor, b: impl Into<Arg>, rtol: f64, atol: f64) -> Tensor {
    a.isclose(b, rtol, atol).all(None, false)
}
/// Same shape and all elements equal (Bool scalar; false on a shape mismatch).
pub fn array_equal(a: &Tensor, b: &Tensor) -> Tensor {
    if a.shape().dims() != b.shape().dims() {
        return crate::creation::scalar(0.0, DType::Bool);
    }
    a.eq(b).all(None, false)
}
/// NaN / infinities replaced.
pub fn nan_to_num(x: &Tensor, nan_value: f64, posinf: f64, neginf: f64) -> Tensor {
    x.nan_to_num(nan_value, posinf, neginf)
}
/// `clip(x, lo, hi)`.
pub fn clip(x: &Tensor, lo: Option<f64>, hi: Option<f64>) -> Tensor {
    x.clip(lo, hi)
}

/// numpy `where(cond, a, b)` with broadcasting and promotion.
pub fn where_(cond: &Tensor, a: impl Into<Arg>, b: impl Into<Arg>) -> Tensor {
    Tensor::sticky(select(&cond.into(), &a.into(), &b.into()))
}

/// numpy `select(condlist, choicelist, default)`: the first true condition's choice.
pub fn select_(conds: &[&Tensor], choices: &[&Tensor], default: f64) -> Tensor {
    if conds.len() != choices.len() {
        return Tensor::sticky(Err(TensorError::invalid(
            "select",
            format!("{} conditions for {} choices", conds.len(), choices.len()),
        )));
    }
    let mut acc: Option<Tensor> = None;
    for (c, v) in conds.iter().zip(choices).rev() {
        acc = Some(match acc {
            None => where_(c, *v, default),
            Some(rest) => where_(c, *v, &rest),
        });
    }
    acc.unwrap_or_else(|| crate::creation::scalar(default, Tensor::float_dtype()))
}

/// `x.astype(dtype)`.
pub fn astype(x: &Tensor, dtype: DType) -> Tensor {
    x.astype(dtype)
}

// ── reductions ──

/// numpy `sum`.
pub fn sum(x: &Tensor, axes: impl Into<Axes>, keepdims: bool) -> Tensor {
    x.sum(axes, keepdims)
}
/// numpy `mean`.
pub fn mean(x: &Tensor, axes: impl Into<Axes>, keepdims: bool) -> Tensor {
    x.mean(axes, keepdims)
}
/// numpy `max`.
pub fn max(x: &Tensor, axes: impl Into<Axes>, keepdims: bool) -> Tensor {
    x.max(axes, keepdims)
}
/// numpy `amax`.
pub fn amax(x: &Tensor, axes: impl Into<Axes>, keepdims: bool) -> Tensor {
    x.max(axes, keepdims)
}
/// numpy `min`.
pub fn min(x: &Tensor, axes: impl Into<Axes>, keepdims: bool) -> Tensor {
    x.min(axes, keepdims)
}
/// numpy `amin`.
pub fn amin(x: &Tensor, axes: impl Into<Axes>, keepdims: bool) -> Tensor {
    x.min(axes, keepdims)
}
/// numpy `prod`.
pub fn prod(x: &Tensor, axes: impl Into<Axes>, keepdims: bool) -> Tensor {
    x.prod(axes, keepdims)
}
/// numpy `ptp`.
pub fn ptp(x: &Tensor, axes: impl Into<Axes>, keepdims: bool) -> Tensor {
    x.ptp(axes, keepdims)
}
/// numpy `var(ddof)`.
pub fn var(x: &Tensor, axes: impl Into<Axes>, ddof: usize, keepdims: bool) -> Tensor {
    x.var(axes, ddof, keepdims)
}
/// numpy `std(ddof)`.
pub fn std(x: &Tensor, axes: impl Into<Axes>, ddof: usize, keepdims: bool) -> Tensor {
    x.std(axes, ddof, keepdims)
}
/// numpy `argmax`.
pub fn argmax(x: &Tensor, axis: Option<i64>, keepdims: bool) -> Tensor {
    x.argmax(axis, keepdims)
}
/// numpy `argmin`.
pub fn argmin(x: &Tensor, axis: Option<i64>, keepdims: bool) -> Tensor {
    x.argmin(axis, keepdims)
}
/// numpy `all`.
pub fn all(x: &Tensor, axes: impl Into<Axes>, keepdims: bool) -> Tensor {
    x.all(axes, keepdims)
}
/// numpy `any`.
pub fn any(x: &Tensor, axes: impl Into<Axes>, keepdims: bool) -> Tensor {
    x.any(axes, keepdims)
}
/// numpy `count_nonzero`.
pub fn count_nonzero(x: &Tensor, axes: impl Into<Axes>, keepdims: bool) -> Tensor {
    x.count_nonzero(axes, keepdims)
}
/// numpy `median`.
pub fn median(x: &Tensor, axis: Option<i64>, keepdims: bool) -> Tensor {
    x.median(axis, keepdims)
}
/// numpy `average(weights)`.
pub fn average(x: &Tensor, axes: impl Into<Axes>, weights: Option<&Tensor>) -> Tensor {
    x.average(axes, weights)
}
/// numpy `cumsum`.
pub fn cumsum(x: &Tensor, axis: Option<i64>) -> Tensor {
    x.cumsum(axis)
}
/// Array-API `cumulative_sum`.
pub fn cumulative_sum(x: &Tensor, axis: Option<i64>) -> Tensor {
    x.cumsum(axis)
}
/// numpy `diff(n=1, axis)`.
pub fn diff(x: &Tensor, axis: i64) -> Tensor {
    Tensor::sticky_with(|| {
        let ax = norm_axis("diff", axis, x.ndim())?;
        let n = x
            .shape()
            .dim(ax)
            .ok_or_else(|| TensorError::invalid("diff", "needs a static axis"))?;
        if n == 0 {
            return Err(TensorError::invalid("diff", "of an empty axis"));
        }
        (x.narrow(ax as i64, 1, n - 1) - x.narrow(ax as i64, 0, n - 1))
            .check()
            .cloned()
    })
}
/// numpy `ediff1d`: `diff` of the flattened tensor.
pub fn ediff1d(x: &Tensor) -> Tensor {
    diff(&x.ravel(), 0)
}
/// numpy `sort(axis)`.
pub fn sort(x: &Tensor, axis: i64) -> Tensor {
    x.sort(axis)
}
/// numpy `argsort(axis)`.
pub fn argsort(x: &Tensor, axis: i64) -> Tensor {
    x.argsort(axis)
}
/// numpy `trace(offset)`.
pub fn trace(x: &Tensor, offset: i64) -> Tensor {
    x.trace(offset)
}

// ── shape ──

/// numpy `reshape`.
pub fn reshape(x: &Tensor, dims: &[i64]) -> Tensor {
    x.reshape(dims)
}
/// numpy `transpose` (empty `axes` reverses).
pub fn transpose(x: &Tensor, axes: &[i64]) -> Tensor {
    x.transpose(axes)
}
/// Array-API `permute_dims`.
pub fn permute_dims(x: &Tensor, axes: &[i64]) -> Tensor {
    x.transpose(axes)
}
/// numpy `swapaxes`.
pub fn swapaxes(x: &Tensor, a: i64, b: i64) -> Tensor {
    x.swapaxes(a, b)
}
/// numpy `moveaxis`.
pub fn moveaxis(x: &Tensor, source: i64, destination: i64) -> Tensor {
    x.moveaxis(source, destination)
}
/// numpy `expand_dims`.
pub fn expand_dims(x: &Tensor, axes: impl Into<Axes>) -> Tensor {
    x.expand_dims(axes)
}
/// numpy `squeeze`.
pub fn squeeze(x: &Tensor, axes: impl Into<Axes>) -> Tensor {
    x.squeeze(axes)
}
/// numpy `broadcast_to`.
pub fn broadcast_to(x: &Tensor, dims: &[usize]) -> Tensor {
    x.broadcast_to(dims)
}
/// numpy `broadcast_arrays`.
pub fn broadcast_arrays(xs: &[&Tensor]) -> Vec<Tensor> {
    let mut all: Option<Tensor> = None;
    for x in xs {
        all = Some(match all {
            None => (*x).clone(),
            Some(a) => a.broadcast_to_like(x),
        });
    }
    match all {
        None => Vec::new(),
        Some(a) => xs.iter().map(|x| x.broadcast_to_like(&a)).collect(),
    }
}
/// numpy `atleast_1d`.
pub fn atleast_1d(x: &Tensor) -> Tensor {
    if x.ndim() >= 1 {
        x.clone()
    } else {
        x.reshape(&[1])
    }
}
/// numpy `atleast_2d`.
pub fn atleast_2d(x: &Tensor) -> Tensor {
    match x.ndim() {
        0 => x.reshape(&[1, 1]),
        1 => x.expand_dims(0),
        _ => x.clone(),
    }
}
/// numpy `atleast_3d`.
pub fn atleast_3d(x: &Tensor) -> Tensor {
    match x.ndim() {
        0 => x.reshape(&[1, 1, 1]),
        1 => x.expand_dims([0, 2]),
        2 => x.expand_dims(2),
        _ => x.clone(),
    }
}
/// numpy `flip`.
pub fn flip(x: &Tensor, axes: impl Into<Axes>) -> Tensor {
    x.flip(axes)
}
/// numpy `fliplr`.
pub fn fliplr(x: &Tensor) -> Tensor {
    x.flip(1)
}
/// numpy `flipud`.
pub fn flipud(x: &Tensor) -> Tensor {
    x.flip(0)
}
/// numpy `rot90(k)` in the plane of the first two axes.
pub fn rot90(x: &Tensor, k: i64) -> Tensor {
    match k.rem_euclid(4) {
        0 => x.clone(),
        1 => x.swapaxes(0, 1).flip(0),
        2 => x.flip([0, 1]),
        _ => x.flip(0).swapaxes(0, 1),
    }
}
/// numpy `roll`.
pub fn roll(x: &Tensor, shift: i64, axis: Option<i64>) -> Tensor {
    x.roll(shift, axis)
}
/// numpy `repeat`.
pub fn repeat(x: &Tensor, repeats: usize, axis: Option<i64>) -> Tensor {
    x.repeat(repeats, axis)
}
/// numpy `tile`.
pub fn tile(x: &Tensor, reps: &[usize]) -> Tensor {
    x.tile(reps)
}
/// numpy `pad` with a constant.
pub fn pad(x: &Tensor, pads: &[(usize, usize)], value: f64) -> Tensor {
    x.pad(pads, value)
}
/// numpy `tril`.
pub fn tril(x: &Tensor, k: i64) -> Tensor {
    x.tril(k)
}
/// numpy `triu`.
pub fn triu(x: &Tensor, k: i64) -> Tensor {
    x.triu(k)
}
/// numpy `diagonal(offset)`.
pub fn diagonal(x: &Tensor, offset: i64) -> Tensor {
    x.diagonal(offset)
}
/// numpy `diag`: a 1-d input makes a diagonal matrix; a 2-d input gives its diagonal.
pub fn diag(x: &Tensor, k: i64) -> Tensor {
    if x.ndim() == 2 {
        return x.diagonal(k);
    }
    Tensor::sticky_with(|| {
        let n = x
            .dims()
            .and_then(|d| (d.len() == 1).then(|| d[0]))
            .ok_or_else(|| {
                TensorError::invalid("diag", format!("needs rank 1 or 2, given {}", x.shape()))
            })?;
        let m = n + k.unsigned_abs() as usize;
        let ey = crate::creation::eye(m, None, k).astype(x.dtype());
        let v = x.pad(&[(0, m - n)], 0.0);
        let out = if k >= 0 {
            &ey * v.reshape(&[m as i64, 1])
        } else {
            &ey * v.reshape(&[1, m as i64])
        };
        out.check().cloned()
    })
}

fn join(op: &str, xs: &[&Tensor], axis: i64) -> Result<Tensor> {
    let first = xs
        .first()
        .ok_or_else(|| TensorError::invalid(op, "needs at least one tensor"))?;
    for x in xs {
        x.check()?;
    }
    let ax = norm_axis(op, axis, first.ndim())?;
    let mut dt = first.dtype();
    for x in &xs[1..] {
        dt = crate::tensor::promote_types(dt, x.dtype());
        if x.ndim() != first.ndim() {
            return Err(TensorError::invalid(
                op,
                format!(
                    "all inputs need the same rank, given {} and {}",
                    first.shape(),
                    x.shape()
                ),
            ));
        }
        for i in 0..first.ndim() {
            if i != ax && x.shape().dims()[i] != first.shape().dims()[i] {
                return Err(TensorError::invalid(
                    op,
                    format!(
                        "dims off axis {ax} must match, given {} and {}",
                        first.shape(),
                        x.shape()
                    ),
                ));
            }
        }
    }
    if xs.len() == 1 {
        return first.try_astype(dt);
    }
    let cast: Vec<Tensor> = xs.iter().map(|x| x.try_astype(dt)).collect::<Result<_>>()?;
    let refs: Vec<&Tensor> = cast.iter().collect();
    Tensor::op(op, Op::Concat { axis: ax }, &refs, None)
}

/// numpy `concatenate(xs, axis)`.
pub fn concatenate(xs: &[&Tensor], axis: i64) -> Tensor {
    Tensor::sticky(join("concatenate", xs, axis))
}
/// Array-API `concat`.
pub fn concat(xs: &[&Tensor], axis: i64) -> Tensor {
    Tensor::sticky(join("concat", xs, axis))
}
/// numpy `stack(xs, axis)`: a new axis.
pub fn stack(xs: &[&Tensor], axis: i64) -> Tensor {
    Tensor::sticky_with(|| {
        let r = xs.first().map(|x| x.ndim()).unwrap_or(0) as i64;
        let a = if axis < 0 { axis + r + 1 } else { axis };
        let ex: Vec<Tensor> = xs.iter().map(|x| x.expand_dims(a)).collect();
        let refs: Vec<&Tensor> = ex.iter().collect();
        join("stack", &refs, a)
    })
}
/// numpy `hstack`.
pub fn hstack(xs: &[&Tensor]) -> Tensor {
    let ex: Vec<Tensor> = xs.iter().map(|x| atleast_1d(x)).collect();
    let refs: Vec<&Tensor> = ex.iter().collect();
    let axis = if ex.first().map(|x| x.ndim()) == Some(1) {
        0
    } else {
        1
    };
    concatenate(&refs, axis)
}
/// numpy `vstack` / `row_stack`.
pub fn vstack(xs: &[&Tensor]) -> Tensor {
    let ex: Vec<Tensor> = xs.iter().map(|x| atleast_2d(x)).collect();
    let refs: Vec<&Tensor> = ex.iter().collect();
    concatenate(&refs, 0)
}
/// numpy `dstack`.
pub fn dstack(xs: &[&Tensor]) -> Tensor {
    let ex: Vec<Tensor> = xs.iter().map(|x| atleast_3d(x)).collect();
    let refs: Vec<&Tensor> = ex.iter().collect();
    concatenate(&refs, 2)
}
/// numpy `column_stack`: 1-d inputs become columns.
pub fn column_stack(xs: &[&Tensor]) -> Tensor {
    let ex: Vec<Tensor> = xs
        .iter()
        .map(|x| {
            if x.ndim() < 2 {
                atleast_1d(x).expand_dims(1)
            } else {
                (*x).clone()
            }
        })
        .collect();
    let refs: Vec<&Tensor> = ex.iter().collect();
    concatenate(&refs, 1)
}

/// numpy `split(x, sections, axis)` into equal parts (an error when the
/// axis does not divide).
pub fn split(x: &Tensor, sections: usize, axis: i64) -> Vec<Tensor> {
    split_impl(x, sections, axis, true)
}
/// numpy `array_split`: like [`split`], the first parts one longer when it does not divide.
pub fn array_split(x: &Tensor, sections: usize, axis: i64) -> Vec<Tensor> {
    split_impl(x, sections, axis, false)
}
/// numpy `split(x, indices, axis)` at the given indices.
pub fn split_at(x: &Tensor, indices: &[usize], axis: i64) -> Vec<Tensor> {
    let r = (|| {
        let ax = norm_axis("split", axis, x.ndim())?;
        let n = x
            .shape()
            .dim(ax)
            .ok_or_else(|| TensorError::invalid("split", "needs a static axis"))?;
        let mut bounds = vec![0];
        bounds.extend(indices.iter().map(|&i| i.min(n)));
        bounds.push(n);
        Ok(bounds
            .windows(2)
            .map(|w| x.narrow(ax as i64, w[0], w[1].saturating_sub(w[0])))
            .collect::<Vec<_>>())
    })();
    match r {
        Ok(v) => v,
        Err(err) => vec![Tensor::sticky(Err(err))],
    }
}
fn split_impl(x: &Tensor, sections: usize, axis: i64, exact: bool) -> Vec<Tensor> {
    let r = (|| {
        let ax = norm_axis("split", axis, x.ndim())?;
        let n = x
            .shape()
            .dim(ax)
            .ok_or_else(|| TensorError::invalid("split", "needs a static axis"))?;
        if sections == 0 || (exact && n % sections != 0) {
            return Err(TensorError::invalid(
                "split",
                format!("array split does not result in an equal division: axis {ax} of size {n} into {sections}"),
            ));
        }
        let (q, rem) = (n / sections, n % sections);
        let mut idx = Vec::new();
        let mut at = 0;
        for i in 0..sections - 1 {
            at += q + usize::from(i < rem);
            idx.push(at);
        }
        Ok(split_at(x, &idx, axis))
    })();
    match r {
        Ok(v) => v,
        Err(err) => vec![Tensor::sticky(Err(err))],
    }
}
/// numpy `hsplit`.
pub fn hsplit(x: &Tensor, sections: usize) -> Vec<Tensor> {
    split(x, sections, if x.ndim() == 1 { 0 } else { 1 })
}
/// numpy `vsplit`.
pub fn vsplit(x: &Tensor, sections: usize) -> Vec<Tensor> {
    split(x, sections, 0)
}
/// numpy `dsplit`.
pub fn dsplit(x: &Tensor, sections: usize) -> Vec<Tensor> {
    split(x, sections, 2)
}

// ── indexing ──

/// numpy `take(x, indices, axis)`.
pub fn take(x: &Tensor, indices: &Tensor, axis: Option<i64>) -> Tensor {
    x.take(indices, axis)
}
/// numpy `take_along_axis`.
pub fn take_along_axis(x: &Tensor, indices: &Tensor, axis: i64) -> Tensor {
    x.take_along_axis(indices, axis)
}

// ── products ──

/// numpy `matmul`.
pub fn matmul(a: &Tensor, b: &Tensor) -> Tensor {
    a.matmul(b)
}
/// numpy `dot`.
pub fn dot(a: &Tensor, b: &Tensor) -> Tensor {
    a.dot(b)
}
/// numpy `vdot`.
pub fn vdot(a: &Tensor, b: &Tensor) -> Tensor {
    a.vdot(b)
}
/// Array-API `vecdot`: the sum over the last axis of `a * b`.
pub fn vecdot(a: &Tensor, b: &Tensor) -> Tensor {
    (a * b).sum(-1, false)
}
/// numpy `inner`.
pub fn inner(a: &Tensor, b: &Tensor) -> Tensor {
    a.inner(b)
}
/// numpy `outer`.
pub fn outer(a: &Tensor, b: &Tensor) -> Tensor {
    a.outer(b)
}
/// numpy `tensordot(a, b, (a_axes, b_axes))`.
pub fn tensordot(a: &Tensor, b: &Tensor, a_axes: &[i64], b_axes: &[i64]) -> Tensor {
    a.tensordot(b, a_axes, b_axes)
}
/// numpy `kron`.
pub fn kron(a: &Tensor, b: &Tensor) -> Tensor {
    a.kron(b)
}
/// numpy `cross` of 3-vectors along the last axis.
pub fn cross(a: &Tensor, b: &Tensor) -> Tensor {
    let c = |x: &Tensor, i: usize| x.narrow(-1, i, 1);
    let (a0, a1, a2) = (c(a, 0), c(a, 1), c(a, 2));
    let (b0, b1, b2) = (c(b, 0), c(b, 1), c(b, 2));
    let x = &a1 * &b2 - &a2 * &b1;
    let y = &a2 * &b0 - &a0 * &b2;
    let z = &a0 * &b1 - &a1 * &b0;
    concatenate(&[&x, &y, &z], -1)
}

// ── misc ──

/// The shape's dims of `x` (numpy `shape`).
pub fn shape(x: &Tensor) -> Vec<rlx_ir::Dim> {
    x.shape().dims().to_vec()
}
/// numpy `ndim`.
pub fn ndim(x: &Tensor) -> usize {
    x.ndim()
}
/// numpy `size` (`None` when symbolic).
pub fn size(x: &Tensor) -> Option<usize> {
    x.size()
}
/// numpy `result_type` of two dtypes under JAX's promotion.
pub fn result_type(a: DType, b: DType) -> DType {
    crate::tensor::promote_types(a, b)
}
/// numpy `promote_types` under JAX's promotion.
pub fn promote_types(a: DType, b: DType) -> DType {
    crate::tensor::promote_types(a, b)
}
/// numpy `iscomplexobj`.
pub fn iscomplexobj(x: &Tensor) -> bool {
    x.dtype().is_complex()
}
/// numpy `isrealobj`.
pub fn isrealobj(x: &Tensor) -> bool {
    !x.dtype().is_complex()
}
/// The real part (identity for real tensors).
pub fn real(x: &Tensor) -> Tensor {
    x.clone()
}
/// The complex conjugate (identity for real tensors).
pub fn conj(x: &Tensor) -> Tensor {
    x.clone()
}
/// The complex conjugate (identity for real tensors).
pub fn conjugate(x: &Tensor) -> Tensor {
    x.clone()
}
/// numpy `meshgrid(xs, indexing="xy")` of 1-d tensors.
pub fn meshgrid(xs: &[&Tensor], ij: bool) -> Vec<Tensor> {
    let n = xs.len();
    let mut lens: Vec<usize> = xs.iter().map(|x| x.size().unwrap_or(0)).collect();
    if !ij && n >= 2 {
        lens.swap(0, 1);
    }
    xs.iter()
        .enumerate()
        .map(|(i, x)| {
            let pos = if !ij && n >= 2 && i < 2 { 1 - i } else { i };
            let mut d = vec![1i64; n];
            d[pos] = -1;
            x.reshape(&d).broadcast_to(&lens)
        })
        .collect()
}
/// numpy `logspace(start, stop, num, endpoint, base)`.
pub fn logspace(start: f64, stop: f64, num: usize, endpoint: bool, base: f64) -> Tensor {
    (crate::creation::linspace(start, stop, num, endpoint) * base.ln()).exp()
}
/// numpy `geomspace(start, stop, num, endpoint)` for positive bounds.
pub fn geomspace(start: f64, stop: f64, num: usize, endpoint: bool) -> Tensor {
    logspace(start.log10(), stop.log10(), num, endpoint, 10.0)
}
/// numpy `convolve(a, v, mode="full")` of 1-d tensors.
pub fn convolve(a: &Tensor, v: &Tensor) -> Tensor {
    correlate_full(a, &v.flip(0))
}
/// numpy `correlate(a, v, mode="full")` of 1-d tensors.
pub fn correlate(a: &Tensor, v: &Tensor) -> Tensor {
    correlate_full(a, v)
}
fn correlate_full(a: &Tensor, v: &Tensor) -> Tensor {
    let m = v.size().unwrap_or(1);
    let x = a.float().pad(&[(m - 1, m - 1)], 0.0).reshape(&[1, 1, -1]);
    let w = v.float().reshape(&[1, 1, -1]);
    crate::nn::conv(&x, &w, None, &[], &[], &[], 1).reshape(&[-1])
}
/// Bitwise and (logical on Bool).
pub fn bitwise_and(a: &Tensor, b: impl Into<Arg>) -> Tensor {
    Tensor::sticky(nary(
        "bitwise_and",
        Op::Binary(BinaryOp::And),
        &[&a.into(), &b.into()],
        None,
    ))
}
/// Bitwise or.
pub fn bitwise_or(a: &Tensor, b: impl Into<Arg>) -> Tensor {
    Tensor::sticky(nary(
        "bitwise_or",
        Op::Binary(BinaryOp::Or),
        &[&a.into(), &b.into()],
        None,
    ))
}
/// Bitwise xor.
pub fn bitwise_xor(a: &Tensor, b: impl Into<Arg>) -> Tensor {
    Tensor::sticky(nary(
        "bitwise_xor",
        Op::Binary(BinaryOp::Xor),
        &[&a.into(), &b.into()],
        None,
    ))
}
