//! [`ReduceMode::Deterministic`](super::ReduceMode::Deterministic): gather in
//! rank order, reduce in a fixed order, hand every rank the same bits.

use super::exact_sum::ExactSum;
use super::ReduceKind;
use crate::element::{decode, encode, DType, Element};
use crate::error::Result;
use crate::group::{ProcessGroup, Tag};

/// Reduces `parts` (one slice per rank) element-wise: float sums and means are
/// the exact sum (divided by the rank count) rounded once, so the result does
/// not depend on the order of `parts` nor on how values were split.
pub(crate) fn fold<T: Element>(kind: ReduceKind, parts: &[&[T]]) -> Vec<T> {
    let n = parts.len();
    let len = parts.first().map_or(0, |p| p.len());
    let float_sum = T::DTYPE != DType::I32 && matches!(kind, ReduceKind::Sum | ReduceKind::Mean);
    let mut acc = ExactSum::default();
    (0..len)
        .map(|i| {
            if float_sum {
                acc.clear();
                parts.iter().for_each(|p| acc.add(p[i].to_f64()));
                let divisor = if kind == ReduceKind::Mean { n } else { 1 };
                T::from_f64(acc.quotient(divisor, T::DTYPE == DType::F64))
            } else {
                let mut acc = parts[0][i];
                for p in &parts[1..] {
                    acc = kind.combine(acc, p[i]);
                }
                acc
            }
        })
        .collect()
}

/// Deterministic all-reduce: every rank sends its buffer to rank 0, which
/// folds them in rank order and sends the result back.
pub(crate) fn all_reduce<T: Element>(
    pg: &dyn ProcessGroup,
    data: &[T],
    kind: ReduceKind,
    op: u32,
) -> Result<Vec<T>> {
    const NAME: &str = "all_reduce";
    let (n, r, gid) = (pg.world_size(), pg.rank(), pg.group_id());
    if r != 0 {
        pg.send(0, Tag::op(gid, op, 0), &encode(data))?;
        let got = pg.recv(0, Tag::op(gid, op, 1))?;
        return decode(NAME, 0, &got, Some(data.len()));
    }
    let mut others = Vec::with_capacity(n - 1);
    for src in 1..n {
        let got = pg.recv(src, Tag::op(gid, op, 0))?;
        others.push(decode::<T>(NAME, src, &got, Some(data.len()))?);
    }
    let mut parts: Vec<&[T]> = vec![data];
    parts.extend(others.iter().map(|v| v.as_slice()));
    let out = fold(kind, &parts);
    let payload = encode(&out);
    for dst in 1..n {
        pg.send(dst, Tag::op(gid, op, 1), &payload)?;
    }
    Ok(out)
}

/// Deterministic reduce-scatter: rank `j` receives every rank's chunk `j`
/// (pairwise exchange) and folds them in rank order.
pub(crate) fn reduce_scatter<T: Element>(
    pg: &dyn ProcessGroup,
    data: &[T],
    chunk: usize,
    kind: ReduceKind,
    op: u32,
) -> Result<Vec<T>> {
    const NAME: &str = "reduce_scatter";
    let (n, r, gid) = (pg.world_size(), pg.rank(), pg.group_id());
    let mut got: Vec<Option<Vec<T>>> = vec![None; n];
    for s in 1..n {
        let (dst, src) = ((r + s) % n, (r + n - s) % n);
        let payload = encode(&data[dst * chunk..(dst + 1) * chunk]);
        let bytes = pg.send_recv(dst, &payload, src, Tag::op(gid, op, s as u16))?;
        got[src] = Some(decode(NAME, src, &bytes, Some(chunk))?);
    }
    let own = &data[r * chunk..(r + 1) * chunk];
    let parts: Vec<&[T]> = (0..n)
        .map(|i| {
            if i == r {
                own
            } else {
                got[i].as_deref().unwrap_or(own)
            }
        })
        .collect();
    Ok(fold(kind, &parts))
}
