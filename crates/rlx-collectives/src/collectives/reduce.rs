//! `all_reduce` and `reduce_scatter`.

use super::{chunk_bounds, deterministic, equal_chunk, ring, ReduceKind, ReduceMode};
use crate::element::Element;
use crate::error::{CollectiveError, Result};
use crate::group::{guarded, ProcessGroup};

/// Reduces `data` element-wise across all ranks; every rank gets the result.
///
/// All ranks pass buffers of the same length (any length, zero included).
/// `ReduceKind::Mean` on `i32` is refused with
/// [`CollectiveError::UnsupportedReduce`](crate::CollectiveError::UnsupportedReduce).
///
/// ```
/// use rlx_collectives::{all_reduce, LoopbackGroup, ReduceKind, ReduceMode};
/// use std::time::Duration;
///
/// let ranks = LoopbackGroup::new_world(2, Duration::from_secs(5)).unwrap();
/// let handles: Vec<_> = ranks
///     .into_iter()
///     .map(|pg| std::thread::spawn(move || {
///         let x = [pg_rank_value(&pg), 1.0];
///         all_reduce(&pg, &x, ReduceKind::Sum, ReduceMode::Deterministic).unwrap()
///     }))
///     .collect();
/// # fn pg_rank_value(pg: &LoopbackGroup) -> f32 { use rlx_collectives::ProcessGroup; pg.rank() as f32 }
/// for h in handles {
///     assert_eq!(h.join().unwrap(), vec![1.0, 2.0]);
/// }
/// ```
pub fn all_reduce<T: Element>(
    pg: &dyn ProcessGroup,
    data: &[T],
    kind: ReduceKind,
    mode: ReduceMode,
) -> Result<Vec<T>> {
    let mut out = vec![T::ZERO; data.len()];
    all_reduce_into(pg, data, &mut out, kind, mode)?;
    Ok(out)
}

/// [`all_reduce`] into the caller's `out` (the length of `data`): nothing
/// is allocated on the native path (`ReduceMode::Ring` Sum / Mean of f32 /
/// f64 / i32 on a transport with its own all-reduce, i.e. MPI: one
/// `MPI_Allreduce` from `data` into `out`), so a loop that reuses `out`
/// costs what the transport costs.
///
/// An `out` of another length is refused with
/// [`CollectiveError::OutputLength`](crate::CollectiveError::OutputLength).
pub fn all_reduce_into<T: Element>(
    pg: &dyn ProcessGroup,
    data: &[T],
    out: &mut [T],
    kind: ReduceKind,
    mode: ReduceMode,
) -> Result<()> {
    kind.check::<T>()?;
    if out.len() != data.len() {
        return Err(CollectiveError::OutputLength {
            op: "all_reduce_into",
            input: data.len(),
            output: out.len(),
        });
    }
    let op = pg.next_op();
    let n = pg.world_size();
    guarded(pg, || match mode {
        ReduceMode::Deterministic => {
            out.copy_from_slice(&deterministic::all_reduce(pg, data, kind, op)?);
            Ok(())
        }
        ReduceMode::Ring => {
            const NAME: &str = "all_reduce";
            let native = matches!(kind, ReduceKind::Sum | ReduceKind::Mean)
                .then(|| T::native(data, out).and_then(|b| pg.native_sum(b)))
                .flatten();
            match native {
                Some(done) => done?,
                None => {
                    let bounds = chunk_bounds(out.len(), n);
                    ring::reduce_scatter_in_place(pg, data, out, &bounds, kind, op, NAME)?;
                    let (a, b) = bounds[pg.rank()];
                    for v in &mut out[a..b] {
                        *v = kind.finish(*v, n);
                    }
                    return ring::all_gather_in_place(pg, out, &bounds, op, n - 1, NAME);
                }
            }
            if kind == ReduceKind::Mean {
                out.iter_mut().for_each(|v| *v = kind.finish(*v, n));
            }
            Ok(())
        }
    })
}

/// Reduces `data` (n equal chunks, n = world size) element-wise across
/// ranks; rank `r` gets the reduced chunk `r`.
///
/// A length that is not a multiple of the world size is refused with
/// [`CollectiveError::NotDivisible`](crate::CollectiveError::NotDivisible).
pub fn reduce_scatter<T: Element>(
    pg: &dyn ProcessGroup,
    data: &[T],
    kind: ReduceKind,
    mode: ReduceMode,
) -> Result<Vec<T>> {
    kind.check::<T>()?;
    let chunk = equal_chunk("reduce_scatter", pg, data.len())?;
    let op = pg.next_op();
    let (n, r) = (pg.world_size(), pg.rank());
    guarded(pg, || match mode {
        ReduceMode::Deterministic => deterministic::reduce_scatter(pg, data, chunk, kind, op),
        ReduceMode::Ring => {
            let mut buf = vec![T::ZERO; data.len()];
            let bounds: Vec<_> = (0..n).map(|i| (i * chunk, (i + 1) * chunk)).collect();
            let name = "reduce_scatter";
            ring::reduce_scatter_in_place(pg, data, &mut buf, &bounds, kind, op, name)?;
            Ok(buf[r * chunk..(r + 1) * chunk]
                .iter()
                .map(|&v| kind.finish(v, n))
                .collect())
        }
    })
}
