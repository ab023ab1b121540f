//! [`MpiGroup`]: the world of an `mpirun` job, through rsmpi (feature `mpi`).

use crate::element::NativeBuf;
use crate::error::{CollectiveError, Result};
use crate::group::{check_rank, GroupId, ProcessGroup, Tag};
use mpi::collective::SystemOperation;
use mpi::environment::Universe;
use mpi::point_to_point::MatchedReceiveVec;
use mpi::topology::{Communicator, SimpleCommunicator};
use mpi::traits::*;
use mpi::Threading;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Messages that arrived before they were asked for, by source.
type Pending = Vec<VecDeque<(Tag, Vec<u8>)>>;

/// MPI tag of every message; the RLX [`Tag`] travels in an 8-byte header.
const MPI_TAG: i32 = 0;

/// The ranks of an MPI job (`MPI_COMM_WORLD`) as a [`ProcessGroup`].
///
/// Messages carry their [`Tag`] in an 8-byte header and are matched on it
/// (a message that arrives early waits in a per-source queue). Receives poll
/// `MPI_Improbe` until the timeout, so a rank that stops sending becomes
/// [`CollectiveError::Timeout`]. `send_recv` posts its send with
/// `MPI_Isend`; if that send cannot complete within the timeout (the peer
/// hangs) there is no way to take the buffer back from MPI, so the job is
/// aborted with `MPI_Abort` (mpirun then ends every rank) rather than hang.
/// A rank that dies ends the job through mpirun as usual.
///
/// [`ReduceMode::Ring`](crate::ReduceMode::Ring) Sum / Mean of f32 / f64 /
/// i32 use `MPI_Allreduce` itself (Open MPI picks the algorithm; no
/// timeout, and ranks passing different lengths is an MPI error, not
/// [`CollectiveError::LengthMismatch`]); everything else runs over
/// point-to-point messages like the other transports.
///
/// `MPI_Finalize` runs when the group is dropped; create it once per process.
pub struct MpiGroup {
    universe: Universe,
    rank: usize,
    world: usize,
    timeout: Duration,
    pending: Mutex<Pending>,
    seq: AtomicU32,
    failed: Mutex<Option<CollectiveError>>,
}

impl MpiGroup {
    /// Initializes MPI and returns the world group; every receive waits at
    /// most `timeout`.
    pub fn init(timeout: Duration) -> Result<Self> {
        let (universe, level) =
            mpi::initialize_with_threading(Threading::Multiple).ok_or_else(|| {
                CollectiveError::Mpi("MPI was already initialized in this process".into())
            })?;
        if level < Threading::Serialized {
            return Err(CollectiveError::Mpi(format!(
                "the MPI library provides thread level {level:?}, Serialized or better is needed"
            )));
        }
        let w = universe.world();
        let (rank, world) = (w.rank() as usize, w.size() as usize);
        Ok(MpiGroup {
            universe,
            rank,
            world,
            timeout,
            pending: Mutex::new((0..world).map(|_| VecDeque::new()).collect()),
            seq: AtomicU32::new(0),
            failed: Mutex::new(None),
        })
    }

    /// The world communicator, for calling MPI directly (for example to
    /// compare against a bare `all_reduce_into`).
    pub fn world(&self) -> SimpleCommunicator {
        self.universe.world()
    }

    fn framed(tag: Tag, data: &[u8]) -> Vec<u8> {
        let mut b = Vec::with_capacity(8 + data.len());
        b.extend_from_slice(&tag.0.to_le_bytes());
        b.extend_from_slice(data);
        b
    }

    fn check_failed(&self) -> Result<()> {
        match &*self.failed.lock().unwrap_or_else(|p| p.into_inner()) {
            Some(e) => Err(CollectiveError::GroupFailed(e.to_string())),
            None => Ok(()),
        }
    }

    /// Takes a queued message or receives one, without waiting.
    fn try_take(&self, src: usize, tag: Tag) -> Result<Option<Vec<u8>>> {
        let mut pend = self.pending.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            if let Some(i) = pend[src].iter().position(|(t, _)| *t == tag) {
                return Ok(pend[src].remove(i).map(|m| m.1));
            }
            let world = self.universe.world();
            let Some(probed) = world
                .process_at_rank(src as i32)
                .immediate_matched_probe_with_tag(MPI_TAG)
            else {
                return Ok(None);
            };
            let (mut buf, _) = probed.matched_receive_vec::<u8>();
            if buf.len() < 8 {
                return Err(CollectiveError::CorruptFrame {
                    peer: src,
                    reason: format!("MPI message of {} bytes has no tag header", buf.len()),
                });
            }
            let t = Tag(u64::from_le_bytes(buf[..8].try_into().expect("8 bytes")));
            buf.drain(..8);
            if t == tag {
                return Ok(Some(buf));
            }
            pend[src].push_back((t, buf));
        }
    }
}

impl ProcessGroup for MpiGroup {
    fn rank(&self) -> usize {
        self.rank
    }
    fn world_size(&self) -> usize {
        self.world
    }
    fn group_id(&self) -> GroupId {
        GroupId(0)
    }
    fn next_op(&self) -> u32 {
        self.seq.fetch_add(1, Ordering::Relaxed)
    }

    fn send(&self, dst: usize, tag: Tag, data: &[u8]) -> Result<()> {
        check_rank(self, dst)?;
        self.check_failed()?;
        if dst == self.rank {
            self.pending.lock().unwrap_or_else(|p| p.into_inner())[dst]
                .push_back((tag, data.to_vec()));
            return Ok(());
        }
        let buf = Self::framed(tag, data);
        self.universe
            .world()
            .process_at_rank(dst as i32)
            .send_with_tag(&buf[..], MPI_TAG);
        Ok(())
    }

    fn recv(&self, src: usize, tag: Tag) -> Result<Vec<u8>> {
        check_rank(self, src)?;
        self.check_failed()?;
        let start = Instant::now();
        loop {
            if let Some(m) = self.try_take(src, tag).inspect_err(|e| self.abort(e))? {
                return Ok(m);
            }
            let waited = start.elapsed();
            if waited >= self.timeout {
                let e = CollectiveError::Timeout {
                    peer: src,
                    after: self.timeout,
                    what: format!("MPI message with tag {:#x}", tag.0),
                };
                self.abort(&e);
                return Err(e);
            }
            if waited > Duration::from_millis(2) {
                std::thread::sleep(Duration::from_micros(20));
            } else {
                std::thread::yield_now();
            }
        }
    }

    fn send_recv(&self, dst: usize, data: &[u8], src: usize, tag: Tag) -> Result<Vec<u8>> {
        check_rank(self, dst)?;
        check_rank(self, src)?;
        if dst == self.rank || src == self.rank {
            self.send(dst, tag, data)?;
            return self.recv(src, tag);
        }
        self.check_failed()?;
        let buf = Self::framed(tag, data);
        let world = self.universe.world();
        mpi::request::scope(|scope| {
            let mut req =
                world
                    .process_at_rank(dst as i32)
                    .immediate_send_with_tag(scope, &buf[..], MPI_TAG);
            let got = self.recv(src, tag);
            let start = Instant::now();
            loop {
                match req.test() {
                    Ok(_) => return got,
                    Err(r) => req = r,
                }
                if start.elapsed() >= self.timeout {
                    log::error!(
                        "rlx-collectives: rank {}: a send to rank {dst} did not complete within {:?}; aborting the MPI job",
                        self.rank,
                        self.timeout
                    );
                    world.abort(70);
                }
                std::thread::yield_now();
            }
        })
    }

    fn native_sum(&self, buf: NativeBuf<'_>) -> Option<Result<()>> {
        if self.check_failed().is_err() {
            return None;
        }
        let world = self.universe.world();
        let op = SystemOperation::sum();
        match buf {
            NativeBuf::F32(x, y) => world.all_reduce_into(x, y, op),
            NativeBuf::F64(x, y) => world.all_reduce_into(x, y, op),
            NativeBuf::I32(x, y) => world.all_reduce_into(x, y, op),
        }
        Some(Ok(()))
    }

    fn abort(&self, why: &CollectiveError) {
        let mut f = self.failed.lock().unwrap_or_else(|p| p.into_inner());
        if f.is_none() {
            log::warn!(
                "rlx-collectives: rank {} failed its MPI group: {why}",
                self.rank
            );
            *f = Some(why.clone());
        }
    }
}
