//! Reductions (`sum`, `mean`, `max`, `var`, `argmax`, `logsumexp`, ...),
//! cumulative sums and sorting, with numpy's `axis` / `keepdims`.

use crate::error::{Result, TensorError};
use crate::tensor::Tensor;
use rlx_ir::op::{ArgReduceOp, ReduceOp, TopKOutput};
use rlx_ir::{DType, Op};

/// Which axes a reduction runs over: all of them (numpy `axis=None`) or a
/// list (negative axes count from the end).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Axes {
    /// Every axis.
    All,
    /// These axes.
    Some(Vec<i64>),
}

impl From<i32> for Axes {
    fn from(a: i32) -> Axes {
        Axes::Some(vec![a as i64])
    }
}
impl From<i64> for Axes {
    fn from(a: i64) -> Axes {
        Axes::Some(vec![a])
    }
}
impl From<Option<i32>> for Axes {
    fn from(a: Option<i32>) -> Axes {
        a.map_or(Axes::All, Axes::from)
    }
}
impl<const N: usize> From<[i32; N]> for Axes {
    fn from(a: [i32; N]) -> Axes {
        Axes::Some(a.iter().map(|&x| x as i64).collect())
    }
}
impl From<&[i32]> for Axes {
    fn from(a: &[i32]) -> Axes {
        Axes::Some(a.iter().map(|&x| x as i64).collect())
    }
}
impl From<Vec<i64>> for Axes {
    fn from(a: Vec<i64>) -> Axes {
        Axes::Some(a)
    }
}

/// `axis` (negative from the end) as an index into `rank` axes.
pub(crate) fn norm_axis(op: &str, axis: i64, rank: usize) -> Result<usize> {
    let r = rank as i64;
    let a = if axis < 0 { axis + r } else { axis };
    if a < 0 || a >= r {
        return Err(TensorError::invalid(
            op,
            format!("axis {axis} is out of bounds for a tensor of rank {rank}"),
        ));
    }
    Ok(a as usize)
}

/// Sorted, unique axes.
pub(crate) fn norm_axes(op: &str, axes: &Axes, rank: usize) -> Result<Vec<usize>> {
    let mut out = match axes {
        Axes::All => (0..rank).collect(),
        Axes::Some(v) => v
            .iter()
            .map(|&a| norm_axis(op, a, rank))
            .collect::<Result<Vec<_>>>()?,
    };
    let n = out.len();
    out.sort_unstable();
    out.dedup();
    if out.len() != n {
        return Err(TensorError::invalid(
            op,
            format!("repeated axis in {axes:?}"),
        ));
    }
    Ok(out)
}

impl Tensor {
    /// Any reduction over `axes`.
    pub fn try_reduce(
        &self,
        op: ReduceOp,
        axes: impl Into<Axes>,
        keepdims: bool,
    ) -> Result<Tensor> {
        self.check()?;
        let name = op.name();
        let axes = norm_axes(name, &axes.into(), self.ndim())?;
        let x = match (op, self.dtype()) {
            (ReduceOp::Sum | ReduceOp::Prod, DType::Bool) => self.try_astype(DType::I32)?,
            (ReduceOp::Mean, d) if !d.is_float() => self.try_astype(Tensor::float_dtype())?,
            _ => self.clone(),
        };
        if axes.is_empty() {
            return Ok(x);
        }
        Tensor::op(
            name,
            Op::Reduce {
                op,
                axes,
                keep_dim: keepdims,
            },
            &[&x],
            None,
        )
    }

    fn reduce(&self, op: ReduceOp, axes: impl Into<Axes>, keepdims: bool) -> Tensor {
        Tensor::sticky(self.try_reduce(op, axes, keepdims))
    }

    /// numpy `sum(axis, keepdims)` (Bool sums as `I32`).
    pub fn sum(&self, axes: impl Into<Axes>, keepdims: bool) -> Tensor {
        self.reduce(ReduceOp::Sum, axes, keepdims)
    }
    /// numpy `mean(axis, keepdims)` (integers average as floats).
    pub fn mean(&self, axes: impl Into<Axes>, keepdims: bool) -> Tensor {
        self.reduce(ReduceOp::Mean, axes, keepdims)
    }
    /// numpy `max` / `amax`.
    pub fn max(&self, axes: impl Into<Axes>, keepdims: bool) -> Tensor {
        self.reduce(ReduceOp::Max, axes, keepdims)
    }
    /// numpy `min` / `amin`.
    pub fn min(&self, axes: impl Into<Axes>, keepdims: bool) -> Tensor {
        self.reduce(ReduceOp::Min, axes, keepdims)
    }
    /// numpy `prod`.
    pub fn prod(&self, axes: impl Into<Axes>, keepdims: bool) -> Tensor {
        self.reduce(ReduceOp::Prod, axes, keepdims)
    }
    /// numpy `ptp`: `max - min`.
    pub fn ptp(&self, axes: impl Into<Axes>, keepdims: bool) -> Tensor {
        let a = axes.into();
        self.max(a.clone(), keepdims) - self.min(a, keepdims)
    }

    /// numpy `var(axis, ddof, keepdims)`.
    pub fn var(&self, axes: impl Into<Axes>, ddof: usize, keepdims: bool) -> Tensor {
        Tensor::sticky(self.try_var(axes.into(), ddof, keepdims))
    }

    fn try_var(&self, axes: Axes, ddof: usize, keepdims: bool) -> Result<Tensor> {
        self.check()?;
        let x = self.float();
        let ax = norm_axes("var", &axes, x.ndim())?;
        let dims = x
            .dims()
            .ok_or_else(|| TensorError::invalid("var", "needs static dims"))?;
        let n: usize = ax.iter().map(|&a| dims[a]).product();
        let ax: Vec<i64> = ax.iter().map(|&a| a as i64).collect();
        let mu = x.mean(ax.clone(), true);
        let d = (&x - &mu).square().sum(ax, keepdims);
        let denom = n.saturating_sub(ddof) as f64;
        Ok(d / denom).and_then(|t: Tensor| t.check().cloned())
    }

    /// numpy `std(axis, ddof, keepdims)`.
    pub fn std(&self, axes: impl Into<Axes>, ddof: usize, keepdims: bool) -> Tensor {
        self.var(axes, ddof, keepdims).sqrt()
    }

    /// `log(sum(exp(x)))` over `axes`, computed stably (shifted by the max).
    pub fn logsumexp(&self, axes: impl Into<Axes>, keepdims: bool) -> Tensor {
        let a = axes.into();
        let x = self.float();
        let m = x.max(a.clone(), true);
        let m = crate::np::where_(&m.isfinite(), &m, 0.0);
        let s = (&x - &m).exp().sum(a.clone(), true).log() + &m;
        if keepdims {
            s
        } else {
            s.squeeze(a)
        }
    }

    fn arg_reduce(&self, op: ArgReduceOp, axis: Option<i64>, keepdims: bool) -> Result<Tensor> {
        self.check()?;
        let name = if op == ArgReduceOp::ArgMax {
            "argmax"
        } else {
            "argmin"
        };
        let (x, axis) = match axis {
            Some(a) => (self.clone(), norm_axis(name, a, self.ndim())?),
            None => (self.try_reshape(&[-1])?, 0),
        };
        let r = Tensor::op(
            name,
            Op::ArgReduce {
                op,
                axis,
                keep_dim: keepdims && self.ndim() == x.ndim(),
            },
            &[&x],
            None,
        )?;
        let r = if keepdims && axis == 0 && self.ndim() != x.ndim() {
            r.try_reshape(&vec![1; self.ndim()])?
        } else {
            r
        };
        r.try_astype(DType::I32)
    }

    /// numpy `argmax(axis, keepdims)` (`I32`; `None` = over the flattened tensor).
    pub fn argmax(&self, axis: Option<i64>, keepdims: bool) -> Tensor {
        Tensor::sticky(self.arg_reduce(ArgReduceOp::ArgMax, axis, keepdims))
    }
    /// numpy `argmin(axis, keepdims)`.
    pub fn argmin(&self, axis: Option<i64>, keepdims: bool) -> Tensor {
        Tensor::sticky(self.arg_reduce(ArgReduceOp::ArgMin, axis, keepdims))
    }

    /// numpy `all` (Bool).
    pub fn all(&self, axes: impl Into<Axes>, keepdims: bool) -> Tensor {
        self.ne(0).astype(DType::I32).min(axes, keepdims).eq(1)
    }
    /// numpy `any` (Bool).
    pub fn any(&self, axes: impl Into<Axes>, keepdims: bool) -> Tensor {
        self.ne(0).astype(DType::I32).max(axes, keepdims).eq(1)
    }
    /// numpy `count_nonzero` (`I32`).
    pub fn count_nonzero(&self, axes: impl Into<Axes>, keepdims: bool) -> Tensor {
        self.ne(0).astype(DType::I32).sum(axes, keepdims)
    }

    /// Cumulative sum along `axis` (`None`: of the flattened tensor).
    pub fn cumsum(&self, axis: Option<i64>) -> Tensor {
        Tensor::sticky(self.try_cumsum(axis, false, false))
    }

    /// Cumulative sum with its options: `exclusive` leaves out the current
    /// element, `reverse` accumulates from the end.
    pub fn try_cumsum(&self, axis: Option<i64>, exclusive: bool, reverse: bool) -> Result<Tensor> {
        self.check()?;
        let (x, axis) = match axis {
            Some(a) => (self.clone(), norm_axis("cumsum", a, self.ndim())?),
            None => (self.try_reshape(&[-1])?, 0),
        };
        let x = if x.dtype() == DType::Bool {
            x.try_astype(DType::I32)?
        } else {
            x
        };
        Tensor::op(
            "cumsum",
            Op::Cumsum {
                axis,
                exclusive,
                reverse,
            },
            &[&x],
            None,
        )
    }

    fn topk_full(&self, axis: i64, out: TopKOutput) -> Result<Tensor> {
        self.check()?;
        let ax = norm_axis("sort", axis, self.ndim())?;
        let k = self
            .shape()
            .dim(ax)
            .ok_or_else(|| TensorError::invalid("sort", "needs a static axis"))?;
        Tensor::op(
            "sort",
            Op::TopK {
                k,
                axis: ax,
                largest: false,
                output: out,
            },
            &[self],
            None,
        )
    }

    /// numpy `sort(axis)` (ascending).
    pub fn sort(&self, axis: i64) -> Tensor {
        Tensor::sticky(self.topk_full(axis, TopKOutput::Values))
    }
    /// numpy `argsort(axis)` (stable; `I32`).
    pub fn argsort(&self, axis: i64) -> Tensor {
        Tensor::sticky(
            self.topk_full(axis, TopKOutput::Indices)
                .and_then(|t| t.try_astype(DType::I32)),
        )
    }
    /// The `k` largest values and their indices along `axis` (sorted descending).
    pub fn top_k(&self, k: usize, axis: i64) -> (Tensor, Tensor) {
        let r = |out| {
            self.check()?;
            let ax = norm_axis("top_k", axis, self.ndim())?;
            Tensor::op(
                "top_k",
                Op::TopK {
                    k,
                    axis: ax,
                    largest: true,
                    output: out,
                },
                &[self],
                None,
            )
        };
        (
            Tensor::sticky(r(TopKOutput::Values)),
            Tensor::sticky(r(TopKOutput::Indices).and_then(|t| t.try_astype(DType::I32))),
        )
    }

    /// numpy `median(axis, keepdims)` (`None` = of the flattened tensor).
    pub fn median(&self, axis: Option<i64>, keepdims: bool) -> Tensor {
        Tensor::sticky(self.try_median(axis, keepdims))
    }

    fn try_median(&self, axis: Option<i64>, keepdims: bool) -> Result<Tensor> {
        self.check()?;
        let rank = self.ndim();
        let (x, ax) = match axis {
            Some(a) => (self.float(), norm_axis("median", a, rank)?),
            None => (self.float().try_reshape(&[-1])?, 0),
        };
        let n = x
            .shape()
            .dim(ax)
            .ok_or_else(|| TensorError::invalid("median", "needs a static axis"))?;
        if n == 0 {
            return Err(TensorError::invalid("median", "of an empty axis"));
        }
        let s = x.sort(ax as i64);
        let lo = s.narrow(ax as i64, (n - 1) / 2, 1);
        let hi = s.narrow(ax as i64, n / 2, 1);
        let m = (lo + hi) * 0.5;
        let m = match (axis, keepdims) {
            (_, true) if axis.is_none() => m.reshape(&vec![1; rank]),
            (_, true) => m,
            _ => m.squeeze(Axes::Some(vec![ax as i64])),
        };
        m.check().cloned()
    }

    /// numpy `average(axis, weights)`: `sum(x * w) / sum(w)`; `weights`
    /// broadcast against `x`.
    pub fn average(&self, axes: impl Into<Axes>, weights: Option<&Tensor>) -> Tensor {
        let a = axes.into();
        match weights {
            None => self.mean(a, false),
            Some(w) => {
                let wb = w.float().broadcast_to_like(self);
                (self.float() * &wb).sum(a.clone(), false) / wb.sum(a, false)
            }
        }
    }
}
