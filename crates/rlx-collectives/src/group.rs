//! The [`ProcessGroup`] trait: ranks that exchange tagged byte messages.

use crate::element::NativeBuf;
use crate::error::{CollectiveError, Result};

/// Identifies a process group among those a [`GroupRegistry`](crate::GroupRegistry)
/// knows. The world group is `GroupId(0)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GroupId(pub u16);

/// A message tag. Collectives build it with [`Tag::op`]; user
/// point-to-point messages with [`Tag::user`]. Messages between one pair
/// of ranks with one tag arrive in the order they were sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Tag(pub u64);

impl Tag {
    const USER: u64 = 1 << 47;

    /// Tag of step `step` of the collective numbered `op` on group `group`
    /// (bits 63..48 group, 46..16 op number, 15..0 step).
    pub fn op(group: GroupId, op: u32, step: u16) -> Tag {
        Tag(((group.0 as u64) << 48) | (((op as u64) & 0x7FFF_FFFF) << 16) | step as u64)
    }

    /// Tag of a user point-to-point message with tag `tag` on group `group`.
    pub fn user(group: GroupId, tag: u32) -> Tag {
        Tag(((group.0 as u64) << 48) | Self::USER | ((tag as u64) << 16))
    }
}

/// Ranks `0..world_size()` that send each other tagged byte messages.
///
/// Implemented by [`LoopbackGroup`](crate::LoopbackGroup) (threads),
/// [`TcpGroup`](crate::TcpGroup) (`std::net`), `MpiGroup` (feature `mpi`)
/// and [`SubGroup`](crate::SubGroup) (a subset of another group). The
/// collectives in this crate run on any of them.
///
/// Every rank must call the collectives of one group in the same order:
/// [`ProcessGroup::next_op`] numbers them so that the messages of two
/// consecutive collectives never mix.
pub trait ProcessGroup: Send + Sync {
    /// This process's rank in the group.
    fn rank(&self) -> usize;
    /// Number of ranks in the group.
    fn world_size(&self) -> usize;
    /// The group's id (part of every tag it sends).
    fn group_id(&self) -> GroupId;
    /// Returns the number of the next collective on this group (0, 1, 2, ...).
    fn next_op(&self) -> u32;
    /// Sends `data` to rank `dst`. May return before `dst` received it.
    fn send(&self, dst: usize, tag: Tag, data: &[u8]) -> Result<()>;
    /// Receives the oldest message from rank `src` with tag `tag`, waiting at
    /// most the group's timeout.
    fn recv(&self, src: usize, tag: Tag) -> Result<Vec<u8>>;
    /// Sends `data` to `dst` and receives from `src` (both with `tag`),
    /// without deadlocking when every rank does the same at once.
    fn send_recv(&self, dst: usize, data: &[u8], src: usize, tag: Tag) -> Result<Vec<u8>> {
        self.send(dst, tag, data)?;
        self.recv(src, tag)
    }
    /// Sends the concatenation of `parts` as one message. The default
    /// copies them into one buffer; a streaming transport (TCP) writes
    /// them one after the other instead.
    fn send_parts(&self, dst: usize, tag: Tag, parts: &[&[u8]]) -> Result<()> {
        match parts {
            [one] => self.send(dst, tag, one),
            _ => self.send(dst, tag, &parts.concat()),
        }
    }
    /// [`send_recv`](Self::send_recv) of the concatenation of `parts`.
    fn send_recv_parts(
        &self,
        dst: usize,
        parts: &[&[u8]],
        src: usize,
        tag: Tag,
    ) -> Result<Vec<u8>> {
        match parts {
            [one] => self.send_recv(dst, one, src, tag),
            _ => self.send_recv(dst, &parts.concat(), src, tag),
        }
    }
    /// Whether [`send`](Self::send) / [`send_parts`](Self::send_parts)
    /// always return without waiting for the destination to receive
    /// (TCP and loopback queue on the receiving side; an MPI send of a
    /// large message may wait for the matching receive). Where it holds,
    /// the ring sends pieces ahead of the ones it is folding. The default
    /// is `false`.
    fn sends_never_wait(&self) -> bool {
        false
    }
    /// Hands back a buffer that [`recv`](Self::recv) returned and the caller
    /// is done with, so that the transport can receive into it again
    /// instead of allocating (and page-faulting) a fresh one. The default
    /// drops it.
    fn recycle(&self, buf: Vec<u8>) {
        drop(buf);
    }
    /// Fails the group because of `why` (a collective found a bad message):
    /// the other ranks must learn of it at once instead of waiting for their
    /// timeout. Transports fail themselves on their own errors already.
    fn abort(&self, why: &CollectiveError);
    /// Sums the input of `buf` element-wise across all ranks into its output
    /// with the transport's own all-reduce, if it has one (MPI: `MPI_Allreduce`).
    /// Used by [`ReduceMode::Ring`](crate::ReduceMode::Ring) Sum / Mean;
    /// `None` (the default) means "not available, use the ring".
    fn native_sum(&self, buf: NativeBuf<'_>) -> Option<Result<()>> {
        let _ = buf;
        None
    }
}

/// Runs the communicating part of a collective; on error, fails the group.
pub(crate) fn guarded<T>(pg: &dyn ProcessGroup, f: impl FnOnce() -> Result<T>) -> Result<T> {
    f().inspect_err(|e| pg.abort(e))
}

/// Checks that `rank` is a rank of `pg`.
pub(crate) fn check_rank(pg: &dyn ProcessGroup, rank: usize) -> Result<()> {
    if rank >= pg.world_size() {
        return Err(CollectiveError::InvalidRank {
            rank,
            world: pg.world_size(),
        });
    }
    Ok(())
}
