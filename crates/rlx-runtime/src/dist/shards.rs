//! [`push_shards`] / [`pull_shards`]: named weights scattered to the ranks
//! by rows (axis 0) and gathered back.

use super::error::{DistError, DistResult};
use super::wire::{expect_frame, send_frame, Kind, Reader, Writer, CH_SHARD};
use rlx_collectives::ProcessGroup;
use rlx_ir::HostTensor;

type Named = Vec<(String, HostTensor)>;

fn encode(ts: &[(String, HostTensor)]) -> Vec<u8> {
    let mut w = Writer::default();
    w.u64(ts.len() as u64);
    for (n, t) in ts {
        w.str(n).tensor(t);
    }
    w.0
}

fn decode(peer: usize, body: &[u8]) -> DistResult<Named> {
    let mut r = Reader::new(peer, body);
    let n = r.usize()?;
    let out = (0..n)
        .map(|_| Ok((r.str()?, r.tensor()?)))
        .collect::<DistResult<Vec<_>>>()?;
    r.finish()?;
    Ok(out)
}

/// Rows `part` of `world` equal parts of `t`.
fn shard(t: &HostTensor, name: &str, part: usize, world: usize) -> DistResult<HostTensor> {
    let rows = t.dims().first().copied().unwrap_or(1);
    if t.dims().is_empty() || !rows.is_multiple_of(world) {
        return Err(DistError::InvalidSpec(format!(
            "weight {name:?} of dims {:?} does not split by rows over {world} ranks",
            t.dims()
        )));
    }
    let (per, row) = (rows / world, t.bytes().len() / rows);
    let mut dims = t.dims().to_vec();
    dims[0] = per;
    let bytes = t.bytes()[part * per * row..(part + 1) * per * row].to_vec();
    HostTensor::from_bytes(t.dtype(), &dims, bytes).map_err(|e| DistError::graph(name, e))
}

/// Scatters `weights` (significant on `root` only; others pass `&[]`) by
/// rows: rank `r` gets rows `r*n/w .. (r+1)*n/w` of each. Every rank calls
/// it and gets its own shards back.
pub fn push_shards(
    pg: &dyn ProcessGroup,
    root: usize,
    weights: &[(String, HostTensor)],
) -> DistResult<Named> {
    let world = pg.world_size();
    if pg.rank() != root {
        return decode(root, &expect_frame(pg, root, CH_SHARD, Kind::Shard)?);
    }
    let mut mine = Vec::new();
    for r in 0..world {
        let part = weights
            .iter()
            .map(|(n, t)| Ok((n.clone(), shard(t, n, r, world)?)))
            .collect::<DistResult<Vec<_>>>()?;
        if r == root {
            mine = part;
        } else {
            send_frame(pg, r, CH_SHARD, Kind::Shard, &encode(&part))?;
        }
    }
    Ok(mine)
}

/// Gathers every rank's `shards` on `root`, concatenated by rows in rank
/// order (the inverse of [`push_shards`]): `Some` on `root`, `None` elsewhere.
pub fn pull_shards(
    pg: &dyn ProcessGroup,
    root: usize,
    shards: &[(String, HostTensor)],
) -> DistResult<Option<Named>> {
    if pg.rank() != root {
        send_frame(pg, root, CH_SHARD, Kind::Shard, &encode(shards))?;
        return Ok(None);
    }
    let mut parts = Vec::new();
    for r in 0..pg.world_size() {
        parts.push(if r == root {
            shards.to_vec()
        } else {
            decode(r, &expect_frame(pg, r, CH_SHARD, Kind::Shard)?)?
        });
    }
    let mut out = Vec::new();
    for (i, (name, first)) in shards.iter().enumerate() {
        let mut bytes = Vec::new();
        let mut rows = 0;
        for (r, p) in parts.iter().enumerate() {
            let t = match p.get(i) {
                Some((n, t))
                    if n == name
                        && !first.dims().is_empty()
                        && !t.dims().is_empty()
                        && t.dtype() == first.dtype()
                        && t.dims()[1..] == first.dims()[1..] =>
                {
                    t
                }
                _ => {
                    return Err(DistError::BadMessage {
                        peer: r,
                        reason: format!("its shard {i} does not match {name:?} {:?}", first.dims()),
                    })
                }
            };
            rows += t.dims()[0];
            bytes.extend_from_slice(t.bytes());
        }
        let mut dims = first.dims().to_vec();
        dims[0] = rows;
        let t = HostTensor::from_bytes(first.dtype(), &dims, bytes)
            .map_err(|e| DistError::graph(name.clone(), e))?;
        out.push((name.clone(), t));
    }
    Ok(Some(out))
}
