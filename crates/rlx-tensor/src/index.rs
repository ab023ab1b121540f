//! numpy basic indexing: [`s!`](crate::s), [`SliceItem`], [`ix`], [`rg`],
//! [`ax`], [`tail`], [`Tensor::at`]; and integer-array indexing
//! ([`Tensor::take`], [`Tensor::take_along_axis`]).

use crate::error::{Result, TensorError};
use crate::reduce::norm_axis;
use crate::tensor::Tensor;
use rlx_ir::{DType, Op};
use std::ops::{Range, RangeFrom, RangeFull, RangeInclusive, RangeTo, RangeToInclusive};

/// One entry of a numpy basic index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SliceItem {
    /// An integer index (negative from the end); drops the axis.
    Index(i64),
    /// `start:stop:step` with Python's defaults and clamping.
    Range {
        /// First index (`None`: the start in the step's direction).
        start: Option<i64>,
        /// End, exclusive (`None`: past the end in the step's direction).
        stop: Option<i64>,
        /// Step (non-zero; negative walks backwards).
        step: i64,
    },
    /// `np.newaxis` / `None`: a new size-1 axis.
    NewAxis,
    /// `...`: as many full axes as needed.
    Ellipsis,
}

impl SliceItem {
    /// This range with a step (`rg(0, 8).step(2)`); an index stays an index.
    pub fn step(self, step: i64) -> SliceItem {
        match self {
            SliceItem::Range { start, stop, .. } => SliceItem::Range { start, stop, step },
            other => other,
        }
    }
}

/// The full axis (`:`).
pub fn ax() -> SliceItem {
    SliceItem::Range {
        start: None,
        stop: None,
        step: 1,
    }
}

/// One index (negative from the end); drops the axis, as `x[i]` does.
pub fn ix(i: i64) -> SliceItem {
    SliceItem::Index(i)
}

/// `start:stop` (either may be negative).
pub fn rg(start: i64, stop: i64) -> SliceItem {
    SliceItem::Range {
        start: Some(start),
        stop: Some(stop),
        step: 1,
    }
}

/// `start:` to the end (negative `start` counts from the end: `tail(-3)` is the last 3).
pub fn tail(start: i64) -> SliceItem {
    SliceItem::Range {
        start: Some(start),
        stop: None,
        step: 1,
    }
}

/// A new size-1 axis (`np.newaxis`).
pub const NEW_AXIS: SliceItem = SliceItem::NewAxis;

/// What [`s!`](crate::s) accepts per entry: integers, Rust ranges of
/// integers (`1..4`, `..`, `-3..`, `..=2`), `None` (new axis) and
/// [`SliceItem`]s.
pub trait IntoSliceItem {
    /// The entry.
    fn into_slice_item(self) -> SliceItem;
}

impl IntoSliceItem for SliceItem {
    fn into_slice_item(self) -> SliceItem {
        self
    }
}
impl IntoSliceItem for RangeFull {
    fn into_slice_item(self) -> SliceItem {
        ax()
    }
}
impl IntoSliceItem for Option<std::convert::Infallible> {
    fn into_slice_item(self) -> SliceItem {
        SliceItem::NewAxis
    }
}

macro_rules! int_items {
    ($($t:ty),*) => { $(
        impl IntoSliceItem for $t {
            fn into_slice_item(self) -> SliceItem { SliceItem::Index(self as i64) }
        }
        impl IntoSliceItem for Range<$t> {
            fn into_slice_item(self) -> SliceItem {
                SliceItem::Range { start: Some(self.start as i64), stop: Some(self.end as i64), step: 1 }
            }
        }
        impl IntoSliceItem for RangeFrom<$t> {
            fn into_slice_item(self) -> SliceItem {
                SliceItem::Range { start: Some(self.start as i64), stop: None, step: 1 }
            }
        }
        impl IntoSliceItem for RangeTo<$t> {
            fn into_slice_item(self) -> SliceItem {
                SliceItem::Range { start: None, stop: Some(self.end as i64), step: 1 }
            }
        }
        impl IntoSliceItem for RangeInclusive<$t> {
            fn into_slice_item(self) -> SliceItem {
                let end = *self.end() as i64;
                SliceItem::Range { start: Some(*self.start() as i64), stop: if end == -1 { None } else { Some(end + 1) }, step: 1 }
            }
        }
        impl IntoSliceItem for RangeToInclusive<$t> {
            fn into_slice_item(self) -> SliceItem {
                let end = self.end as i64;
                SliceItem::Range { start: None, stop: if end == -1 { None } else { Some(end + 1) }, step: 1 }
            }
        }
    )* };
}
int_items!(i32, i64, usize, isize);

/// `item` with a step (what `s![a..b;k]` expands to).
#[doc(hidden)]
pub fn __stepped(item: impl IntoSliceItem, step: i64) -> SliceItem {
    match item.into_slice_item() {
        // `..;-1` walks backwards over the whole axis.
        SliceItem::Range { start, stop, .. } => SliceItem::Range { start, stop, step },
        other => other,
    }
}

/// A numpy basic index: a list of [`SliceItem`]s (built by [`s!`](crate::s)).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SliceSpec {
    /// The entries.
    pub items: Vec<SliceItem>,
}

impl SliceSpec {
    /// From entries.
    pub fn new(items: Vec<SliceItem>) -> SliceSpec {
        SliceSpec { items }
    }
}

/// numpy basic indexing: `s![.., 1..4, ..;2]` is `[:, 1:4, ::2]`.
///
/// Entries: an integer (negative from the end; drops the axis), a range
/// `a..b`, `a..`, `..b`, `..`, `a..=b`, any of them with a step after `;`
/// (`..;2`, `4..0;-1`), `None` or [`NEW_AXIS`] for a new axis, `...` for
/// the ellipsis, or a [`SliceItem`] ([`ix`], [`rg`], [`ax`], [`tail`]).
/// Apply it with [`Tensor::at`].
///
/// ```
/// use rlx_tensor::{graph, s, shape, ix};
/// let g = graph("idx", |g| {
///     let x = g.input("x", shape![4, 6, 8]);
///     let a = x.at(s![.., 1..4, ..;2]);   // [4, 3, 4]
///     let b = x.at(s![-1, ..., None]);    // [6, 8, 1]
///     let c = x.at(s![ix(0), 5..;-2]);    // [3, 8]
///     assert_eq!(a.dims(), Some(vec![4, 3, 4]));
///     assert_eq!(b.dims(), Some(vec![6, 8, 1]));
///     assert_eq!(c.dims(), Some(vec![3, 8]));
///     a
/// });
/// assert!(g.is_ok());
/// ```
#[macro_export]
macro_rules! s {
    ($($t:tt)*) => { $crate::__s_munch!([] $($t)*) };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __s_munch {
    ([$($acc:expr,)*]) => { $crate::SliceSpec::new(vec![$($acc),*]) };
    ([$($acc:expr,)*] ... $(, $($rest:tt)*)?) => {
        $crate::__s_munch!([$($acc,)* $crate::SliceItem::Ellipsis,] $($($rest)*)?)
    };
    ([$($acc:expr,)*] $e:expr ; $step:expr $(, $($rest:tt)*)?) => {
        $crate::__s_munch!([$($acc,)* {
            // `4..0` is an empty Rust range but a valid numpy slice.
            #[allow(clippy::reversed_empty_ranges)]
            let item = $e;
            $crate::__stepped(item, $step)
        },] $($($rest)*)?)
    };
    ([$($acc:expr,)*] $e:expr $(, $($rest:tt)*)?) => {
        $crate::__s_munch!([$($acc,)* {
            #[allow(clippy::reversed_empty_ranges)]
            let item = $e;
            $crate::IntoSliceItem::into_slice_item(item)
        },] $($($rest)*)?)
    };
}

/// Python's `slice(start, stop, step).indices(n)`: first index and length.
fn resolve_range(n: usize, start: Option<i64>, stop: Option<i64>, step: i64) -> (usize, usize) {
    let (s, e) = if step > 0 {
        (start.unwrap_or(0), stop.unwrap_or(i64::MAX))
    } else {
        (start.unwrap_or(i64::MAX), stop.unwrap_or(i64::MIN))
    };
    rlx_ir::python_slice(n, s, e, step)
}

impl Tensor {
    /// numpy basic indexing with a [`s!`](crate::s) spec.
    pub fn try_at(&self, spec: SliceSpec) -> Result<Tensor> {
        self.check()?;
        let dims = self.dims().ok_or_else(|| {
            TensorError::invalid(
                "index",
                format!("needs static dims, given {}", self.shape()),
            )
        })?;
        let items = &spec.items;
        let ellipses = items.iter().filter(|i| **i == SliceItem::Ellipsis).count();
        if ellipses > 1 {
            return Err(TensorError::invalid(
                "index",
                "an index can only have a single ellipsis ('...')",
            ));
        }
        let consuming = items
            .iter()
            .filter(|i| matches!(i, SliceItem::Index(_) | SliceItem::Range { .. }))
            .count();
        if consuming > dims.len() {
            return Err(TensorError::invalid(
                "index",
                format!(
                    "too many indices: {consuming} for a tensor of rank {} ({})",
                    dims.len(),
                    self.shape()
                ),
            ));
        }
        // Expand the ellipsis (or pad at the end) with full axes.
        let mut full = Vec::new();
        let fill = dims.len() - consuming;
        let mut filled = false;
        for it in items {
            if *it == SliceItem::Ellipsis {
                full.extend(std::iter::repeat_n(ax(), fill));
                filled = true;
            } else {
                full.push(*it);
            }
        }
        if !filled {
            full.extend(std::iter::repeat_n(ax(), fill));
        }
        let mut parts = Vec::with_capacity(dims.len());
        let mut out: Vec<i64> = Vec::new();
        let mut axis = 0;
        for it in &full {
            match *it {
                SliceItem::NewAxis => out.push(1),
                SliceItem::Index(i) => {
                    let n = dims[axis] as i64;
                    let j = if i < 0 { i + n } else { i };
                    if j < 0 || j >= n {
                        return Err(TensorError::invalid(
                            "index",
                            format!("index {i} is out of bounds for axis {axis} with size {n}"),
                        ));
                    }
                    parts.push((j as usize, 1, 1));
                    axis += 1;
                }
                SliceItem::Range { start, stop, step } => {
                    if step == 0 || step == i64::MIN {
                        return Err(TensorError::invalid(
                            "index",
                            format!(
                                "slice step cannot be {} (axis {axis})",
                                if step == 0 {
                                    "zero".to_string()
                                } else {
                                    step.to_string()
                                }
                            ),
                        ));
                    }
                    let (first, len) = resolve_range(dims[axis], start, stop, step);
                    parts.push((first, step, len));
                    out.push(len as i64);
                    axis += 1;
                }
                SliceItem::Ellipsis => unreachable!("expanded above"),
            }
        }
        let sliced = self.try_strided(&parts)?;
        sliced.try_reshape(&out)
    }

    /// [`Tensor::try_at`], failing softly.
    pub fn at(&self, spec: SliceSpec) -> Tensor {
        Tensor::sticky(self.try_at(spec))
    }

    /// Alias of [`Tensor::at`].
    pub fn slice(&self, spec: SliceSpec) -> Tensor {
        self.at(spec)
    }

    /// numpy `take(indices, axis)`: integer indices (negative from the end)
    /// select along `axis` (`None`: of the flattened tensor).
    pub fn try_take(&self, indices: &Tensor, axis: Option<i64>) -> Result<Tensor> {
        self.check()?;
        indices.check()?;
        if indices.dtype().is_float() || indices.dtype() == DType::Bool {
            return Err(TensorError::invalid(
                "take",
                format!("indices must be integers, given {}", indices.shape()),
            ));
        }
        let (x, ax) = match axis {
            Some(a) => (self.clone(), norm_axis("take", a, self.ndim())?),
            None => (self.try_reshape(&[-1])?, 0),
        };
        Tensor::op("take", Op::Gather { axis: ax }, &[&x, indices], None)
    }

    /// [`Tensor::try_take`], failing softly.
    pub fn take(&self, indices: &Tensor, axis: Option<i64>) -> Tensor {
        Tensor::sticky(self.try_take(indices, axis))
    }

    /// numpy `take_along_axis(indices, axis)`.
    pub fn take_along_axis(&self, indices: &Tensor, axis: i64) -> Tensor {
        Tensor::sticky_with(|| {
            self.check()?;
            let ax = norm_axis("take_along_axis", axis, self.ndim())?;
            Tensor::op(
                "take_along_axis",
                Op::GatherElements { axis: ax },
                &[self, indices],
                None,
            )
        })
    }
}
