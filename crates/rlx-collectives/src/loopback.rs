//! [`LoopbackGroup`]: ranks as threads of one process, for tests.

use crate::error::{CollectiveError, Result};
use crate::group::{GroupId, ProcessGroup, Tag};
use crate::mailbox::Mailbox;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// One rank of a group whose ranks are threads of this process.
///
/// Create all ranks with [`LoopbackGroup::new_world`] and move each to its
/// own thread. Dropping a rank tells the others it is gone: their receives
/// from it fail with [`CollectiveError::PeerDisconnected`]. Like the TCP
/// transport, a rank whose receive fails is failed for good and tells the
/// other ranks at once (they see it as disconnected), so one error never
/// leaves the others waiting for their timeout.
pub struct LoopbackGroup {
    rank: usize,
    boxes: Arc<Vec<Mailbox>>,
    timeout: Duration,
    seq: AtomicU32,
}

impl LoopbackGroup {
    /// All `world` ranks of a new group; every receive waits at most `timeout`.
    pub fn new_world(world: usize, timeout: Duration) -> Result<Vec<LoopbackGroup>> {
        if world == 0 {
            return Err(CollectiveError::InvalidConfig("world size 0".into()));
        }
        let boxes = Arc::new((0..world).map(|_| Mailbox::new(world)).collect::<Vec<_>>());
        Ok((0..world)
            .map(|rank| LoopbackGroup {
                rank,
                boxes: boxes.clone(),
                timeout,
                seq: AtomicU32::new(0),
            })
            .collect())
    }
}

impl ProcessGroup for LoopbackGroup {
    fn rank(&self) -> usize {
        self.rank
    }
    fn world_size(&self) -> usize {
        self.boxes.len()
    }
    fn group_id(&self) -> GroupId {
        GroupId(0)
    }
    fn next_op(&self) -> u32 {
        self.seq.fetch_add(1, Ordering::Relaxed)
    }
    fn send(&self, dst: usize, tag: Tag, data: &[u8]) -> Result<()> {
        crate::group::check_rank(self, dst)?;
        if let Some(f) = self.boxes[self.rank].failure() {
            return Err(f);
        }
        self.boxes[dst].push(self.rank, tag, data.to_vec());
        Ok(())
    }
    fn recv(&self, src: usize, tag: Tag) -> Result<Vec<u8>> {
        crate::group::check_rank(self, src)?;
        self.boxes[self.rank]
            .take(src, tag, self.timeout)
            .inspect_err(|e| self.abort(e))
    }
    fn sends_never_wait(&self) -> bool {
        true // a send is a push onto the receiver's queue
    }
    fn abort(&self, why: &CollectiveError) {
        if self.boxes[self.rank].failure().is_none() {
            self.boxes[self.rank].fail(why);
            self.leave(&format!("failed: {why}"));
        }
    }
}

impl LoopbackGroup {
    fn leave(&self, why: &str) {
        for (r, b) in self.boxes.iter().enumerate() {
            if r != self.rank {
                b.close(
                    self.rank,
                    CollectiveError::PeerDisconnected {
                        peer: self.rank,
                        detail: format!("loopback rank {why}"),
                    },
                );
            }
        }
    }
}

impl Drop for LoopbackGroup {
    fn drop(&mut self) {
        self.leave("dropped");
    }
}
