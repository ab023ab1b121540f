//! Ring reduce-scatter and ring all-gather over a chunked buffer.
//!
//! Each ring step moves one chunk as several pieces of about
//! [`PIECE_BYTES`], so that on a streaming transport (TCP) the peer checks
//! and folds one piece while the next is encoded and sent, instead of
//! every stage waiting for a whole chunk.

use super::{chunk_bounds, ReduceKind};
use crate::element::{decode_fold, Element, Wire};
use crate::error::Result;
use crate::group::{ProcessGroup, Tag};

/// Largest piece a ring step sends in one message. 256 KiB measured best
/// for the TCP ring on 2 ranks (64 KiB pays per-frame hand-offs, 1 MiB
/// leaves a 1 MB all-reduce's chunk in one piece with nothing overlapped).
const PIECE_BYTES: usize = 1 << 18;

/// Pieces per chunk for a `len`-element buffer on `n` ranks: the same on
/// every rank (it depends only on the buffer and the world), and few enough
/// that every (step, piece) of both ring phases has its own 16-bit tag step.
fn pieces<T: Element>(len: usize, n: usize) -> usize {
    let steps = 2 * n.saturating_sub(1).max(1);
    let max = (usize::from(u16::MAX) / steps).max(1);
    (len.div_ceil(n.max(1)) * T::SIZE)
        .div_ceil(PIECE_BYTES)
        .clamp(1, max)
}

/// Pieces a ring step keeps in flight ahead of the one it folds, on a
/// transport whose sends never wait for the receiver: the peer's next piece
/// crosses the link while this rank folds the current one.
const LOOKAHEAD: usize = 2;

/// Where a ring step reads: the chunk it sends comes from `src` when
/// `send_src` (else from the buffer), and its fold combines the received
/// values with `src` when given (else with the buffer's own values).
#[derive(Clone, Copy)]
struct Source<'a, T> {
    src: Option<&'a [T]>,
    send_src: bool,
}

impl<'a, T> Source<'a, T> {
    /// The slice whose chunk is sent: `src` or the buffer.
    fn sent<'b>(&self, buf: &'b [T]) -> &'b [T]
    where
        'a: 'b,
    {
        match self.src {
            Some(src) if self.send_src => src,
            _ => buf,
        }
    }
}

/// Step `step` of a ring phase: sends the `send` chunk to the right
/// neighbour and folds what the left one sends into `buf[recv]` with `f`,
/// piece by piece (tag steps `step * k ..`). The chunk to send is complete
/// before the step starts (it was folded or received by the previous step,
/// or is the caller's input), so pieces can be sent ahead of the receives.
#[allow(clippy::too_many_arguments)]
fn ring_step<T: Element>(
    pg: &dyn ProcessGroup,
    buf: &mut [T],
    from: Source<'_, T>,
    send: (usize, usize),
    recv: (usize, usize),
    (op, step, k): (u32, usize, usize),
    name: &'static str,
    f: impl Fn(T, T) -> T + Copy,
) -> Result<()> {
    let (n, r) = (pg.world_size(), pg.rank());
    let (right, left) = ((r + 1) % n, (r + n - 1) % n);
    let sp = chunk_bounds(send.1 - send.0, k);
    let rp = chunk_bounds(recv.1 - recv.0, k);
    let tag = |j: usize| Tag::op(pg.group_id(), op, (step * k + j) as u16);
    let piece = |j: usize| send.0 + sp[j].0..send.0 + sp[j].1;
    let ahead = if pg.sends_never_wait() { LOOKAHEAD } else { 0 };
    for j in 0..ahead.min(k) {
        let wire = Wire::new(&from.sent(buf)[piece(j)]);
        pg.send_parts(right, tag(j), &wire.parts())?;
    }
    for (j, q) in rp.iter().enumerate() {
        let got = if ahead == 0 {
            let wire = Wire::new(&from.sent(buf)[piece(j)]);
            pg.send_recv_parts(right, &wire.parts(), left, tag(j))?
        } else {
            pg.recv(left, tag(j))?
        };
        let range = recv.0 + q.0..recv.0 + q.1;
        let old = from.src.map(|s| &s[range.clone()]);
        decode_fold(name, left, &got, old, &mut buf[range], f)?;
        pg.recycle(got);
        if ahead > 0 && j + ahead < k {
            let wire = Wire::new(&from.sent(buf)[piece(j + ahead)]);
            pg.send_parts(right, tag(j + ahead), &wire.parts())?;
        }
    }
    Ok(())
}

/// Ring reduce-scatter of `src` into `buf` (same length; its contents on
/// entry are ignored): afterwards chunk `rank` of `buf` (by `bounds`) holds
/// the combination of every rank's chunk `rank` (not yet finished: a Mean
/// is still a sum); other chunks hold partial sums. Uses steps `0..n-1`
/// of op `op`. The input is read where it lies: step 0 sends this rank's
/// chunk `r-1` from `src`, and each fold (chunk `r-s-2` at step `s`, each
/// chunk once) combines the received values with `src`'s, so no copy of
/// the input is made.
pub(crate) fn reduce_scatter_in_place<T: Element>(
    pg: &dyn ProcessGroup,
    src: &[T],
    buf: &mut [T],
    bounds: &[(usize, usize)],
    kind: ReduceKind,
    op: u32,
    name: &'static str,
) -> Result<()> {
    let (n, r) = (pg.world_size(), pg.rank());
    if n == 1 {
        buf.copy_from_slice(src);
        return Ok(());
    }
    let k = pieces::<T>(buf.len(), n);
    for s in 0..n - 1 {
        // Step s: pass on chunk r-s-1 (accumulated so far), fold in chunk r-s-2.
        let send_idx = (r + 2 * n - s - 1) % n;
        let recv_idx = (r + 2 * n - s - 2) % n;
        let (send, recv, at) = (bounds[send_idx], bounds[recv_idx], (op, s, k));
        let from = Source {
            src: Some(src),
            send_src: s == 0,
        };
        // One monomorphic fold per kind, so the inner loop has no branch.
        match kind {
            ReduceKind::Sum | ReduceKind::Mean => {
                ring_step(pg, buf, from, send, recv, at, name, |v, old| v.add(old))
            }
            ReduceKind::Max => ring_step(pg, buf, from, send, recv, at, name, |v, old| v.max(old)),
            ReduceKind::Min => ring_step(pg, buf, from, send, recv, at, name, |v, old| v.min(old)),
        }?;
    }
    Ok(())
}

/// Ring all-gather in place: rank `rank` starts with chunk `rank` of `buf`
/// filled, and ends with every chunk. Uses steps `first_step..first_step + n-1`.
pub(crate) fn all_gather_in_place<T: Element>(
    pg: &dyn ProcessGroup,
    buf: &mut [T],
    bounds: &[(usize, usize)],
    op: u32,
    first_step: usize,
    name: &'static str,
) -> Result<()> {
    let (n, r) = (pg.world_size(), pg.rank());
    let k = pieces::<T>(buf.len(), n);
    for s in 0..n.saturating_sub(1) {
        let send_idx = (r + n - s) % n;
        let recv_idx = (r + 2 * n - s - 1) % n;
        let from = Source {
            src: None,
            send_src: false,
        };
        ring_step(
            pg,
            buf,
            from,
            bounds[send_idx],
            bounds[recv_idx],
            (op, first_step + s, k),
            name,
            |v, _| v,
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::pieces;

    #[test]
    fn pieces_fit_the_tag_space() {
        assert_eq!(pieces::<f32>(0, 2), 1);
        assert_eq!(pieces::<f32>(16 << 20, 2), 128); // 32 MiB chunks
        for n in [2, 64, 1000] {
            let k = pieces::<f64>(1 << 34, n);
            assert!(2 * (n - 1) * k <= usize::from(u16::MAX), "{n}: {k}");
        }
    }
}
