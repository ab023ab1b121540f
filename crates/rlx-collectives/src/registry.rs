//! Sub-groups and the [`GroupRegistry`] that names them by [`GroupId`].

use crate::error::{CollectiveError, Result};
use crate::group::{GroupId, ProcessGroup, Tag};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

/// A subset of another group's ranks, renumbered `0..members.len()` in the
/// order given. Its messages travel over the parent group, tagged with the
/// sub-group's own id so they never mix with the parent's.
pub struct SubGroup {
    parent: Arc<dyn ProcessGroup>,
    members: Vec<usize>,
    rank: usize,
    id: GroupId,
    seq: AtomicU32,
}

impl SubGroup {
    /// This process's view of the sub-group `members` (parent ranks) with id
    /// `id`, or `None` when this process is not a member.
    pub fn new(
        parent: Arc<dyn ProcessGroup>,
        members: &[usize],
        id: GroupId,
    ) -> Result<Option<Self>> {
        let world = parent.world_size();
        let mut seen = vec![false; world];
        for &m in members {
            if m >= world {
                return Err(CollectiveError::InvalidRank { rank: m, world });
            }
            if std::mem::replace(&mut seen[m], true) {
                return Err(CollectiveError::InvalidConfig(format!(
                    "rank {m} listed twice in a sub-group"
                )));
            }
        }
        if members.is_empty() {
            return Err(CollectiveError::InvalidConfig("empty sub-group".into()));
        }
        let Some(rank) = members.iter().position(|&m| m == parent.rank()) else {
            return Ok(None);
        };
        Ok(Some(SubGroup {
            parent,
            members: members.to_vec(),
            rank,
            id,
            seq: AtomicU32::new(0),
        }))
    }

    /// The parent ranks of the members, in sub-group rank order.
    pub fn members(&self) -> &[usize] {
        &self.members
    }

    fn parent_rank(&self, r: usize) -> Result<usize> {
        self.members
            .get(r)
            .copied()
            .ok_or(CollectiveError::InvalidRank {
                rank: r,
                world: self.members.len(),
            })
    }
}

impl ProcessGroup for SubGroup {
    fn rank(&self) -> usize {
        self.rank
    }
    fn world_size(&self) -> usize {
        self.members.len()
    }
    fn group_id(&self) -> GroupId {
        self.id
    }
    fn next_op(&self) -> u32 {
        self.seq.fetch_add(1, Ordering::Relaxed)
    }
    fn send(&self, dst: usize, tag: Tag, data: &[u8]) -> Result<()> {
        self.parent.send(self.parent_rank(dst)?, tag, data)
    }
    fn recv(&self, src: usize, tag: Tag) -> Result<Vec<u8>> {
        self.parent.recv(self.parent_rank(src)?, tag)
    }
    fn send_recv(&self, dst: usize, data: &[u8], src: usize, tag: Tag) -> Result<Vec<u8>> {
        self.parent
            .send_recv(self.parent_rank(dst)?, data, self.parent_rank(src)?, tag)
    }
    fn send_parts(&self, dst: usize, tag: Tag, parts: &[&[u8]]) -> Result<()> {
        self.parent.send_parts(self.parent_rank(dst)?, tag, parts)
    }
    fn send_recv_parts(
        &self,
        dst: usize,
        parts: &[&[u8]],
        src: usize,
        tag: Tag,
    ) -> Result<Vec<u8>> {
        self.parent
            .send_recv_parts(self.parent_rank(dst)?, parts, self.parent_rank(src)?, tag)
    }
    fn recycle(&self, buf: Vec<u8>) {
        self.parent.recycle(buf)
    }
    fn sends_never_wait(&self) -> bool {
        self.parent.sends_never_wait()
    }
    fn native_sum(&self, buf: crate::element::NativeBuf<'_>) -> Option<Result<()>> {
        // Only the whole parent group can use the parent's own all-reduce.
        if self.members.len() == self.parent.world_size()
            && self.members.iter().enumerate().all(|(i, &m)| i == m)
        {
            self.parent.native_sum(buf)
        } else {
            None
        }
    }
    fn abort(&self, why: &CollectiveError) {
        // Messages of all groups share the parent's connections.
        self.parent.abort(why)
    }
}

/// The groups one process takes part in, by [`GroupId`]: the world group
/// (id 0) and the sub-groups made from it.
///
/// Ids are handed out in creation order, so every process must create the
/// same sub-groups in the same order (also the ones it is not a member of)
/// for an id to mean the same group everywhere. In-graph collectives name
/// their group by id and look it up here.
pub struct GroupRegistry {
    world: Arc<dyn ProcessGroup>,
    groups: Mutex<BTreeMap<u16, Option<Arc<dyn ProcessGroup>>>>,
}

impl GroupRegistry {
    /// A registry whose group 0 is `world`.
    pub fn new(world: Arc<dyn ProcessGroup>) -> Self {
        let mut groups = BTreeMap::new();
        groups.insert(0u16, Some(world.clone()));
        GroupRegistry {
            world,
            groups: Mutex::new(groups),
        }
    }

    /// Registers the sub-group of world ranks `members` and returns its id
    /// (also on processes that are not members).
    pub fn new_subgroup(&self, members: &[usize]) -> Result<GroupId> {
        let mut groups = self.groups.lock().unwrap_or_else(|p| p.into_inner());
        let next = groups.len();
        let id = u16::try_from(next)
            .map(GroupId)
            .map_err(|_| CollectiveError::InvalidConfig("more than 65535 sub-groups".into()))?;
        let sub = SubGroup::new(self.world.clone(), members, id)?;
        groups.insert(id.0, sub.map(|s| Arc::new(s) as Arc<dyn ProcessGroup>));
        Ok(id)
    }

    /// The group with id `id`, if this process is a member of it.
    pub fn get(&self, id: GroupId) -> Result<Arc<dyn ProcessGroup>> {
        let groups = self.groups.lock().unwrap_or_else(|p| p.into_inner());
        match groups.get(&id.0) {
            None => Err(CollectiveError::UnknownGroup(id.0)),
            Some(None) => Err(CollectiveError::NotAMember {
                id: id.0,
                rank: self.world.rank(),
            }),
            Some(Some(g)) => Ok(g.clone()),
        }
    }

    /// The world group (id 0).
    pub fn world(&self) -> Arc<dyn ProcessGroup> {
        self.world.clone()
    }
}
