//! Collectives that only move data: all_gather, broadcast, all_to_all,
//! ppermute, send / recv.

use super::{equal_chunk, ring};
use crate::element::{decode, encode, Element};
use crate::error::{CollectiveError, Result};
use crate::group::{check_rank, guarded, ProcessGroup, Tag};

/// Concatenates every rank's `data` in rank order (ring all-gather).
/// All ranks pass the same length.
pub fn all_gather<T: Element>(pg: &dyn ProcessGroup, data: &[T]) -> Result<Vec<T>> {
    let (n, r) = (pg.world_size(), pg.rank());
    let op = pg.next_op();
    let l = data.len();
    let mut buf = vec![T::ZERO; n * l];
    buf[r * l..(r + 1) * l].copy_from_slice(data);
    let bounds: Vec<_> = (0..n).map(|i| (i * l, (i + 1) * l)).collect();
    guarded(pg, || {
        ring::all_gather_in_place(pg, &mut buf, &bounds, op, 0, "all_gather")
    })?;
    Ok(buf)
}

/// Returns rank `root`'s `data` on every rank. Every rank passes a buffer
/// of the root's length (its contents are ignored off the root).
pub fn broadcast<T: Element>(pg: &dyn ProcessGroup, data: &[T], root: usize) -> Result<Vec<T>> {
    check_rank(pg, root)?;
    let (n, r, gid) = (pg.world_size(), pg.rank(), pg.group_id());
    let op = pg.next_op();
    let tag = Tag::op(gid, op, 0);
    guarded(pg, || {
        if r == root {
            let payload = encode(data);
            for dst in (0..n).filter(|&d| d != root) {
                pg.send(dst, tag, &payload)?;
            }
            Ok(data.to_vec())
        } else {
            decode("broadcast", root, &pg.recv(root, tag)?, Some(data.len()))
        }
    })
}

/// Splits `data` into n equal chunks and sends chunk `j` to rank `j`; the
/// result's chunk `i` is what rank `i` sent here (pairwise exchange).
pub fn all_to_all<T: Element>(pg: &dyn ProcessGroup, data: &[T]) -> Result<Vec<T>> {
    let c = equal_chunk("all_to_all", pg, data.len())?;
    let (n, r, gid) = (pg.world_size(), pg.rank(), pg.group_id());
    let op = pg.next_op();
    let mut out = vec![T::ZERO; data.len()];
    out[r * c..(r + 1) * c].copy_from_slice(&data[r * c..(r + 1) * c]);
    guarded(pg, || {
        for s in 1..n {
            let (dst, src) = ((r + s) % n, (r + n - s) % n);
            let payload = encode(&data[dst * c..(dst + 1) * c]);
            let got = pg.send_recv(dst, &payload, src, Tag::op(gid, op, s as u16))?;
            out[src * c..(src + 1) * c].copy_from_slice(&decode::<T>(
                "all_to_all",
                src,
                &got,
                Some(c),
            )?);
        }
        Ok(out)
    })
}

/// Collective permutation (JAX's `ppermute`): for each `(src, dst)` pair,
/// rank `src`'s `data` becomes rank `dst`'s result; a rank no pair sends to
/// gets zeros. No rank may appear twice as a source or twice as a
/// destination ([`CollectiveError::InvalidPermutation`]).
pub fn ppermute<T: Element>(
    pg: &dyn ProcessGroup,
    data: &[T],
    perm: &[(usize, usize)],
) -> Result<Vec<T>> {
    let (n, r, gid) = (pg.world_size(), pg.rank(), pg.group_id());
    let (mut srcs, mut dsts) = (vec![false; n], vec![false; n]);
    for &(s, d) in perm {
        if s >= n || d >= n {
            return Err(CollectiveError::InvalidPermutation(format!(
                "pair ({s}, {d}) names a rank outside 0..{n}"
            )));
        }
        if std::mem::replace(&mut srcs[s], true) {
            return Err(CollectiveError::InvalidPermutation(format!(
                "rank {s} is a source twice"
            )));
        }
        if std::mem::replace(&mut dsts[d], true) {
            return Err(CollectiveError::InvalidPermutation(format!(
                "rank {d} is a destination twice"
            )));
        }
    }
    let op = pg.next_op();
    let tag = Tag::op(gid, op, 0);
    let to = perm.iter().find(|p| p.0 == r).map(|p| p.1);
    let from = perm.iter().find(|p| p.1 == r).map(|p| p.0);
    guarded(pg, || {
        let got = match (to, from) {
            (Some(d), Some(s)) if d == r && s == r => return Ok(data.to_vec()),
            (Some(d), Some(s)) => Some((s, pg.send_recv(d, &encode(data), s, tag)?)),
            (Some(d), None) => {
                pg.send(d, tag, &encode(data))?;
                None
            }
            (None, Some(s)) => Some((s, pg.recv(s, tag)?)),
            (None, None) => None,
        };
        match got {
            Some((s, bytes)) => decode("ppermute", s, &bytes, Some(data.len())),
            None => Ok(vec![T::ZERO; data.len()]),
        }
    })
}

/// Sends `data` to rank `dst` with user tag `tag` (point to point).
pub fn send<T: Element>(pg: &dyn ProcessGroup, dst: usize, tag: u32, data: &[T]) -> Result<()> {
    check_rank(pg, dst)?;
    pg.send(dst, Tag::user(pg.group_id(), tag), &encode(data))
}

/// Receives the oldest message with user tag `tag` from rank `src`.
pub fn recv<T: Element>(pg: &dyn ProcessGroup, src: usize, tag: u32) -> Result<Vec<T>> {
    check_rank(pg, src)?;
    guarded(pg, || {
        decode(
            "recv",
            src,
            &pg.recv(src, Tag::user(pg.group_id(), tag))?,
            None,
        )
    })
}
