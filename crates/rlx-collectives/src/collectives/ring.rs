//! Ring reduce-scatter and ring all-gather over a chunked buffer.

use super::ReduceKind;
use crate::element::{decode_fold, encode, Element};
use crate::error::Result;
use crate::group::{ProcessGroup, Tag};

/// Ring reduce-scatter in place: afterwards chunk `rank` of `buf` (by
/// `bounds`) holds the combination of every rank's chunk `rank` (not yet
/// finished: a Mean is still a sum). Uses steps `0..n-1` of op `op`.
pub(crate) fn reduce_scatter_in_place<T: Element>(
    pg: &dyn ProcessGroup,
    buf: &mut [T],
    bounds: &[(usize, usize)],
    kind: ReduceKind,
    op: u32,
    name: &'static str,
) -> Result<()> {
    let (n, r) = (pg.world_size(), pg.rank());
    let (right, left) = ((r + 1) % n, (r + n - 1) % n);
    for s in 0..n.saturating_sub(1) {
        // Step s: pass on chunk r-s-1 (accumulated so far), fold in chunk r-s-2.
        let send_idx = (r + 2 * n - s - 1) % n;
        let recv_idx = (r + 2 * n - s - 2) % n;
        let (a, b) = bounds[send_idx];
        let payload = encode(&buf[a..b]);
        let got = pg.send_recv(right, &payload, left, Tag::op(pg.group_id(), op, s as u16))?;
        let (c, d) = bounds[recv_idx];
        decode_fold(name, left, &got, &mut buf[c..d], |v, old| kind.combine(v, old))?;
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
    let (right, left) = ((r + 1) % n, (r + n - 1) % n);
    for s in 0..n.saturating_sub(1) {
        let send_idx = (r + n - s) % n;
        let recv_idx = (r + 2 * n - s - 1) % n;
        let (a, b) = bounds[send_idx];
        let payload = encode(&buf[a..b]);
        let tag = Tag::op(pg.group_id(), op, (first_step + s) as u16);
        let got = pg.send_recv(right, &payload, left, tag)?;
        let (c, d) = bounds[recv_idx];
        decode_fold(name, left, &got, &mut buf[c..d], |v, _| v)?;
    }
    Ok(())
}
