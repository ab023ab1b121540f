//! Shape and layout: `reshape`, `transpose`, `expand_dims`, `squeeze`,
//! `broadcast_to`, `concatenate`, `stack`, `split`, `flip`, `roll`, `tile`,
//! `repeat`, `pad`, `tril` / `triu`, `diagonal`.

use crate::error::{Result, TensorError};
use crate::reduce::{norm_axes, norm_axis, Axes};
use crate::tensor::Tensor;
use rlx_ir::op::{PadMode, SliceSpec};
use rlx_ir::{DType, Dim, Op, Shape};

fn static_dims(x: &Tensor, op: &str) -> Result<Vec<usize>> {
    x.check()?;
    x.dims()
        .ok_or_else(|| TensorError::invalid(op, format!("needs static dims, given {}", x.shape())))
}

impl Tensor {
    /// numpy `reshape` (one dim may be `-1`).
    pub fn try_reshape(&self, dims: &[i64]) -> Result<Tensor> {
        let d = static_dims(self, "reshape")?;
        let total: usize = d.iter().product();
        let holes = dims.iter().filter(|&&x| x == -1).count();
        if holes > 1 || dims.iter().any(|&x| x < -1) {
            return Err(TensorError::invalid(
                "reshape",
                format!("at most one -1 and no other negative dim, given {dims:?}"),
            ));
        }
        let known: usize = dims
            .iter()
            .filter(|&&x| x >= 0)
            .map(|&x| x as usize)
            .product();
        let out: Vec<usize> = dims
            .iter()
            .map(|&x| {
                if x >= 0 {
                    Ok(x as usize)
                } else if known == 0 || !total.is_multiple_of(known) {
                    Err(())
                } else {
                    Ok(total / known)
                }
            })
            .collect::<std::result::Result<_, ()>>()
            .map_err(|_| {
                TensorError::invalid(
                    "reshape",
                    format!("cannot reshape {} into {dims:?}", self.shape()),
                )
            })?;
        if out.iter().product::<usize>() != total {
            return Err(TensorError::invalid(
                "reshape",
                format!(
                    "cannot reshape {} ({total} elements) into {dims:?}",
                    self.shape()
                ),
            ));
        }
        if out == d {
            return Ok(self.clone());
        }
        Tensor::op(
            "reshape",
            Op::Reshape,
            &[self],
            Some(Shape::new(&out, self.dtype())),
        )
    }

    /// [`Tensor::try_reshape`], failing softly.
    pub fn reshape(&self, dims: &[i64]) -> Tensor {
        Tensor::sticky(self.try_reshape(dims))
    }

    /// Flattened to rank 1 (numpy `ravel`).
    pub fn ravel(&self) -> Tensor {
        self.reshape(&[-1])
    }

    /// numpy `transpose(axes)`; an empty `perm` reverses the axes.
    pub fn try_transpose(&self, perm: &[i64]) -> Result<Tensor> {
        self.check()?;
        let r = self.ndim();
        let perm: Vec<usize> = if perm.is_empty() {
            (0..r).rev().collect()
        } else {
            perm.iter()
                .map(|&a| norm_axis("transpose", a, r))
                .collect::<Result<_>>()?
        };
        let mut seen = perm.clone();
        seen.sort_unstable();
        if seen != (0..r).collect::<Vec<_>>() {
            return Err(TensorError::invalid(
                "transpose",
                format!(
                    "{perm:?} is not a permutation of the {r} axes of {}",
                    self.shape()
                ),
            ));
        }
        if perm.iter().enumerate().all(|(i, &p)| i == p) {
            return Ok(self.clone());
        }
        Tensor::op("transpose", Op::Transpose { perm }, &[self], None)
    }

    /// [`Tensor::try_transpose`], failing softly.
    pub fn transpose(&self, perm: &[i64]) -> Tensor {
        Tensor::sticky(self.try_transpose(perm))
    }

    /// Axis permutation (`torch.permute`, numpy `permute_dims`).
    pub fn permute(&self, perm: &[i64]) -> Tensor {
        self.transpose(perm)
    }

    /// All axes reversed (numpy `.T`).
    #[allow(non_snake_case)]
    pub fn T(&self) -> Tensor {
        self.transpose(&[])
    }

    /// The last two axes swapped (numpy `matrix_transpose`, `.mT`).
    pub fn matrix_transpose(&self) -> Tensor {
        self.swapaxes(-1, -2)
    }

    /// numpy `swapaxes(a, b)`.
    pub fn swapaxes(&self, a: i64, b: i64) -> Tensor {
        let r = self.ndim();
        Tensor::sticky_with(|| {
            let (a, b) = (norm_axis("swapaxes", a, r)?, norm_axis("swapaxes", b, r)?);
            let mut p: Vec<i64> = (0..r as i64).collect();
            p.swap(a, b);
            self.try_transpose(&p)
        })
    }

    /// numpy `moveaxis(source, destination)`.
    pub fn moveaxis(&self, source: i64, destination: i64) -> Tensor {
        let r = self.ndim();
        Tensor::sticky_with(|| {
            let s = norm_axis("moveaxis", source, r)?;
            let d = norm_axis("moveaxis", destination, r)?;
            let mut p: Vec<i64> = (0..r as i64).filter(|&a| a != s as i64).collect();
            p.insert(d, s as i64);
            self.try_transpose(&p)
        })
    }

    /// numpy `expand_dims(axis)`: new size-1 axes at `axes` of the result.
    pub fn expand_dims(&self, axes: impl Into<Axes>) -> Tensor {
        Tensor::sticky_with(|| {
            let d = static_dims(self, "expand_dims")?;
            let axes = axes.into();
            let n_new = match &axes {
                Axes::All => 0,
                Axes::Some(v) => v.len(),
            };
            let ax = norm_axes("expand_dims", &axes, d.len() + n_new)?;
            let mut src = d.iter();
            let out: Vec<i64> = (0..d.len() + n_new)
                .map(|i| {
                    if ax.contains(&i) {
                        1
                    } else {
                        *src.next().unwrap_or(&1) as i64
                    }
                })
                .collect();
            self.try_reshape(&out)
        })
    }

    /// Removes size-1 axes: all of them (`Axes::All`) or the given ones
    /// (an error names an axis that is not of size 1).
    pub fn squeeze(&self, axes: impl Into<Axes>) -> Tensor {
        Tensor::sticky_with(|| {
            let d = static_dims(self, "squeeze")?;
            let drop: Vec<usize> = match axes.into() {
                Axes::All => (0..d.len()).filter(|&i| d[i] == 1).collect(),
                a => {
                    let ax = norm_axes("squeeze", &a, d.len())?;
                    if let Some(&bad) = ax.iter().find(|&&i| d[i] != 1) {
                        return Err(TensorError::invalid(
                            "squeeze",
                            format!("axis {bad} of {} has size {}, not 1", self.shape(), d[bad]),
                        ));
                    }
                    ax
                }
            };
            let out: Vec<i64> = (0..d.len())
                .filter(|i| !drop.contains(i))
                .map(|i| d[i] as i64)
                .collect();
            self.try_reshape(&out)
        })
    }

    /// numpy `broadcast_to(dims)`.
    pub fn try_broadcast_to(&self, dims: &[usize]) -> Result<Tensor> {
        self.check()?;
        let target = Shape::new(dims, self.dtype());
        let b = crate::tensor::broadcast_shapes("broadcast_to", &self.shape(), &target)?;
        if b.len() != dims.len() || b.iter().zip(dims).any(|(x, &y)| *x != Dim::Static(y)) {
            return Err(TensorError::Broadcast {
                op: "broadcast_to".into(),
                lhs: self.shape(),
                rhs: target,
            });
        }
        if self.dims().as_deref() == Some(dims) {
            return Ok(self.clone());
        }
        Tensor::op("broadcast_to", Op::Broadcast, &[self], Some(target))
    }

    /// [`Tensor::try_broadcast_to`], failing softly.
    pub fn broadcast_to(&self, dims: &[usize]) -> Tensor {
        Tensor::sticky(self.try_broadcast_to(dims))
    }

    /// Broadcast to the shape `x` and `self` broadcast to together.
    pub(crate) fn broadcast_to_like(&self, x: &Tensor) -> Tensor {
        Tensor::sticky_with(|| {
            let s = crate::tensor::broadcast_shapes("broadcast", &self.shape(), &x.shape())?;
            let d: Option<Vec<usize>> = s.iter().map(|d| d.as_static()).collect();
            let d = d.ok_or_else(|| TensorError::invalid("broadcast", "needs static dims"))?;
            self.try_broadcast_to(&d)
        })
    }

    /// A strided slice: per axis `(start, step, len)` (already resolved).
    pub(crate) fn try_strided(&self, parts: &[(usize, i64, usize)]) -> Result<Tensor> {
        let d = static_dims(self, "slice")?;
        if parts
            .iter()
            .enumerate()
            .all(|(i, &(s, st, n))| s == 0 && st == 1 && n == d[i])
        {
            return Ok(self.clone());
        }
        let spec = SliceSpec {
            starts: parts.iter().map(|p| p.0).collect(),
            steps: parts.iter().map(|p| p.1).collect(),
        };
        let out: Vec<usize> = parts.iter().map(|p| p.2).collect();
        Tensor::op(
            "slice",
            Op::Slice(spec),
            &[self],
            Some(Shape::new(&out, self.dtype())),
        )
    }

    /// `len` elements from `start` along `axis` (PyTorch `narrow`).
    pub fn narrow(&self, axis: i64, start: usize, len: usize) -> Tensor {
        Tensor::sticky_with(|| {
            let d = static_dims(self, "narrow")?;
            let ax = norm_axis("narrow", axis, d.len())?;
            if start + len > d[ax] {
                return Err(TensorError::invalid(
                    "narrow",
                    format!(
                        "{start}..{} is out of bounds for axis {ax} of size {}",
                        start + len,
                        d[ax]
                    ),
                ));
            }
            let parts: Vec<(usize, i64, usize)> = (0..d.len())
                .map(|i| {
                    if i == ax {
                        (start, 1, len)
                    } else {
                        (0, 1, d[i])
                    }
                })
                .collect();
            self.try_strided(&parts)
        })
    }

    /// numpy `flip(axis)` (`Axes::All` reverses every axis).
    pub fn flip(&self, axes: impl Into<Axes>) -> Tensor {
        Tensor::sticky_with(|| {
            let d = static_dims(self, "flip")?;
            let ax = norm_axes("flip", &axes.into(), d.len())?;
            let parts: Vec<(usize, i64, usize)> = (0..d.len())
                .map(|i| {
                    if ax.contains(&i) && d[i] > 0 {
                        (d[i] - 1, -1, d[i])
                    } else {
                        (0, 1, d[i])
                    }
                })
                .collect();
            self.try_strided(&parts)
        })
    }

    /// numpy `roll(shift, axis)` (`None`: of the flattened tensor, reshaped back).
    pub fn roll(&self, shift: i64, axis: Option<i64>) -> Tensor {
        Tensor::sticky_with(|| {
            let d = static_dims(self, "roll")?;
            let (x, ax) = match axis {
                Some(a) => (self.clone(), norm_axis("roll", a, d.len())?),
                None => (self.try_reshape(&[-1])?, 0),
            };
            let n = x.dims().map(|v| v[ax]).unwrap_or(0);
            if n == 0 {
                return Ok(self.clone());
            }
            let s = shift.rem_euclid(n as i64) as usize;
            if s == 0 {
                return Ok(self.clone());
            }
            let a = x.narrow(ax as i64, n - s, s);
            let b = x.narrow(ax as i64, 0, n - s);
            let r = crate::np::concatenate(&[&a, &b], ax as i64);
            let r = r.check()?.clone();
            if axis.is_none() {
                let dd: Vec<i64> = d.iter().map(|&v| v as i64).collect();
                r.try_reshape(&dd)
            } else {
                Ok(r)
            }
        })
    }

    /// numpy `repeat(repeats, axis)` (`None`: of the flattened tensor).
    pub fn repeat(&self, repeats: usize, axis: Option<i64>) -> Tensor {
        Tensor::sticky_with(|| {
            let (x, ax) = match axis {
                Some(a) => (self.clone(), norm_axis("repeat", a, self.ndim())?),
                None => (self.try_reshape(&[-1])?, 0),
            };
            let d = static_dims(&x, "repeat")?;
            let mut e = d.clone();
            e.insert(ax + 1, 1);
            let mut b = d.clone();
            b.insert(ax + 1, repeats);
            let mut out: Vec<i64> = d.iter().map(|&v| v as i64).collect();
            out[ax] *= repeats as i64;
            let e: Vec<i64> = e.iter().map(|&v| v as i64).collect();
            x.try_reshape(&e)?.try_broadcast_to(&b)?.try_reshape(&out)
        })
    }

    /// numpy `tile(reps)`.
    pub fn tile(&self, reps: &[usize]) -> Tensor {
        Tensor::sticky_with(|| {
            let d = static_dims(self, "tile")?;
            let r = d.len().max(reps.len());
            let mut dd = vec![1usize; r - d.len()];
            dd.extend(&d);
            let mut rr = vec![1usize; r - reps.len()];
            rr.extend(reps);
            let inter: Vec<i64> = dd.iter().flat_map(|&v| [1, v as i64]).collect();
            let big: Vec<usize> = rr.iter().zip(&dd).flat_map(|(&a, &b)| [a, b]).collect();
            let out: Vec<i64> = rr.iter().zip(&dd).map(|(&a, &b)| (a * b) as i64).collect();
            self.try_reshape(&inter)?
                .try_broadcast_to(&big)?
                .try_reshape(&out)
        })
    }

    /// numpy `pad(pad_width, constant_values=value)`.
    pub fn pad(&self, pads: &[(usize, usize)], value: f64) -> Tensor {
        self.pad_mode(pads, PadMode::Constant(value))
    }

    /// Padding with a [`PadMode`] (constant, reflect, edge).
    pub fn pad_mode(&self, pads: &[(usize, usize)], mode: PadMode) -> Tensor {
        Tensor::sticky_with(|| {
            self.check()?;
            if pads.len() != self.ndim() {
                return Err(TensorError::invalid(
                    "pad",
                    format!(
                        "{} pad widths for rank {} ({})",
                        pads.len(),
                        self.ndim(),
                        self.shape()
                    ),
                ));
            }
            Tensor::op(
                "pad",
                Op::Pad {
                    pads: pads.to_vec(),
                    mode,
                },
                &[self],
                None,
            )
        })
    }

    fn tri_mask(&self, k: i64, lower: bool) -> Result<Tensor> {
        let d = static_dims(self, if lower { "tril" } else { "triu" })?;
        if d.len() < 2 {
            return Err(TensorError::invalid("tril", "needs rank >= 2"));
        }
        let (n, m) = (d[d.len() - 2], d[d.len() - 1]);
        let r = crate::creation::iota(&[n, m], 0, 0.0, 1.0, DType::I32);
        let c = crate::creation::iota(&[n, m], 1, 0.0, 1.0, DType::I32);
        let diff = c - r;
        let keep = if lower { diff.le(k) } else { diff.ge(k) };
        crate::np::where_(&keep, self, 0).check().cloned()
    }

    /// numpy `tril(k)`: zero above the `k`th diagonal of the last two axes.
    pub fn tril(&self, k: i64) -> Tensor {
        Tensor::sticky(self.tri_mask(k, true))
    }
    /// numpy `triu(k)`: zero below the `k`th diagonal.
    pub fn triu(&self, k: i64) -> Tensor {
        Tensor::sticky(self.tri_mask(k, false))
    }

    /// numpy `diagonal(offset)` of the last two axes.
    pub fn diagonal(&self, offset: i64) -> Tensor {
        Tensor::sticky_with(|| {
            let d = static_dims(self, "diagonal")?;
            if d.len() < 2 {
                return Err(TensorError::invalid("diagonal", "needs rank >= 2"));
            }
            let (n, m) = (d[d.len() - 2] as i64, d[d.len() - 1] as i64);
            let len = if offset >= 0 {
                n.min(m - offset)
            } else {
                (n + offset).min(m)
            }
            .max(0);
            let mask =
                crate::creation::eye(n as usize, Some(m as usize), offset).astype(self.dtype());
            let picked = (self * mask).sum(if offset >= 0 { -1 } else { -2 }, false);
            // Row r holds x[r, r + k] (k >= 0); column c holds x[c - k, c] (k < 0).
            Ok(picked.narrow(-1, 0, len as usize))
        })
    }

    /// numpy `trace(offset)`: sum of the diagonal.
    pub fn trace(&self, offset: i64) -> Tensor {
        self.diagonal(offset).sum(-1, false)
    }
}
