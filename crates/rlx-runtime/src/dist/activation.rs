//! Activations between pipeline stages: [`send_activation`] /
//! [`recv_activation`], and the stop frame that ends a pipeline.

use super::error::{DistError, DistResult};
use super::wire::{expect_kinds, send_frame, Kind, Reader, Writer, CH_ACTIVATION};
use rlx_collectives::ProcessGroup;
use rlx_ir::HostTensor;

/// Sends the tensors of one activation (a stage's inputs or outputs, in
/// order) to rank `dst`.
pub fn send_activation(
    pg: &dyn ProcessGroup,
    dst: usize,
    tensors: &[HostTensor],
) -> DistResult<()> {
    let mut w = Writer::default();
    w.u64(tensors.len() as u64);
    for t in tensors {
        w.tensor(t);
    }
    send_frame(pg, dst, CH_ACTIVATION, Kind::Activation, &w.0)
}

/// Tells rank `dst` that no more activations follow (it forwards the stop
/// down the pipeline).
pub fn send_stop(pg: &dyn ProcessGroup, dst: usize) -> DistResult<()> {
    send_frame(pg, dst, CH_ACTIVATION, Kind::Stop, &[])
}

/// Receives the next activation from rank `src`: `Some(tensors)`, or `None`
/// when `src` sent the stop frame.
pub fn recv_activation(pg: &dyn ProcessGroup, src: usize) -> DistResult<Option<Vec<HostTensor>>> {
    let (kind, body) = expect_kinds(pg, src, CH_ACTIVATION, &[Kind::Activation, Kind::Stop])?;
    if kind == Kind::Stop {
        return Ok(None);
    }
    let mut r = Reader::new(src, &body);
    let n = r.usize()?;
    if n > 4096 {
        return Err(DistError::BadMessage {
            peer: src,
            reason: format!("an activation of {n} tensors"),
        });
    }
    let ts = (0..n).map(|_| r.tensor()).collect::<DistResult<Vec<_>>>()?;
    r.finish()?;
    Ok(Some(ts))
}
