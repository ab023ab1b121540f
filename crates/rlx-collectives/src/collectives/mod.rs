//! Host collectives on f16 / f32 / f64 / i32 buffers over any [`ProcessGroup`].
//!
//! Every rank of the group calls the same collectives in the same order with
//! buffers of the same length and type; a mismatch is an error
//! ([`CollectiveError::LengthMismatch`], [`CollectiveError::CorruptFrame`]),
//! not garbage. A collective either returns the whole result or an error:
//! never a partial result.

mod deterministic;
mod exact_sum;
mod exchange;
mod reduce;
mod ring;

pub use exchange::{all_gather, all_to_all, broadcast, ppermute, recv, send};
pub use reduce::{all_reduce, all_reduce_into, reduce_scatter};

use crate::element::Element;
use crate::error::{CollectiveError, Result};
use crate::group::ProcessGroup;

/// How a reduction combines the ranks' values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReduceKind {
    /// Element-wise sum (`i32` wraps).
    Sum,
    /// Element-wise sum divided by the world size (not for `i32`).
    Mean,
    /// Element-wise maximum (NaN if any rank has NaN).
    Max,
    /// Element-wise minimum (NaN if any rank has NaN).
    Min,
}

impl ReduceKind {
    /// Lower-case name.
    pub fn name(self) -> &'static str {
        match self {
            ReduceKind::Sum => "sum",
            ReduceKind::Mean => "mean",
            ReduceKind::Max => "max",
            ReduceKind::Min => "min",
        }
    }

    pub(crate) fn check<T: Element>(self) -> Result<()> {
        if self == ReduceKind::Mean && T::ZERO.div_count(1).is_none() {
            return Err(CollectiveError::UnsupportedReduce {
                kind: self.name(),
                dtype: T::DTYPE.name(),
            });
        }
        Ok(())
    }

    /// Combines two partial results (for Mean: sums; divide with [`Self::finish`]).
    pub(crate) fn combine<T: Element>(self, a: T, b: T) -> T {
        match self {
            ReduceKind::Sum | ReduceKind::Mean => a.add(b),
            ReduceKind::Max => a.max(b),
            ReduceKind::Min => a.min(b),
        }
    }

    /// Turns a combined value into the result (Mean: divide by `n`).
    pub(crate) fn finish<T: Element>(self, v: T, n: usize) -> T {
        match self {
            ReduceKind::Mean => v.div_count(n).unwrap_or(v),
            _ => v,
        }
    }
}

/// Which algorithm a reduction uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReduceMode {
    /// Ring reduce-scatter then ring all-gather: each rank sends and receives
    /// about `2 (n-1)/n` of the buffer. Floating sums round to the element
    /// type at every hop, in an order that depends on the rank, so results
    /// may differ from a serial sum in the last bits.
    Ring,
    /// Bitwise reproducible: float Sum is the exact sum of all ranks'
    /// values rounded once (nearest-even) to the element type, Mean the exact
    /// sum divided by the world size rounded once. The exact sum is kept as a
    /// Shewchuk expansion (as Python's `math.fsum`) and every rounding
    /// decision is taken from an exact residual, so the result depends only
    /// on the values, not on the arrival order, the transport, nor how the
    /// same data is split over ranks (a Sum over 1, 2, 3 or 4 ranks of the
    /// same column of values has the same bits). NaN if any value is NaN or
    /// +inf meets -inf; an exact zero is -0.0 only if every value is -0.0.
    /// f64 values whose partial sums overflow (near `f64::MAX`) give ±inf.
    /// `i32` sums wrap; max / min are exact. Every rank receives the same bits.
    Deterministic,
}

/// Element ranges of `n` near-equal chunks of `len` (the first `len % n` one longer).
pub(crate) fn chunk_bounds(len: usize, n: usize) -> Vec<(usize, usize)> {
    let (q, r) = (len / n, len % n);
    let mut out = Vec::with_capacity(n);
    let mut start = 0;
    for i in 0..n {
        let l = q + usize::from(i < r);
        out.push((start, start + l));
        start += l;
    }
    out
}

/// Length of each of `pg.world_size()` equal chunks of `len`, or an error.
pub(crate) fn equal_chunk(op: &'static str, pg: &dyn ProcessGroup, len: usize) -> Result<usize> {
    let n = pg.world_size();
    if !len.is_multiple_of(n) {
        return Err(CollectiveError::NotDivisible { op, len, world: n });
    }
    Ok(len / n)
}

#[cfg(test)]
mod tests {
    use super::chunk_bounds;

    #[test]
    fn chunks_cover_the_buffer() {
        assert_eq!(chunk_bounds(7, 3), vec![(0, 3), (3, 5), (5, 7)]);
        assert_eq!(chunk_bounds(0, 2), vec![(0, 0), (0, 0)]);
        assert_eq!(chunk_bounds(2, 4), vec![(0, 1), (1, 2), (2, 2), (2, 2)]);
    }
}
