//! Per-source queues of received messages, shared by the transports.

use crate::error::{CollectiveError, Result};
use crate::group::Tag;
use std::collections::VecDeque;
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// How many spare receive buffers a mailbox keeps for reuse.
const SPARE_BUFFERS: usize = 8;

#[derive(Default)]
struct State {
    queues: Vec<VecDeque<(Tag, Vec<u8>)>>,
    closed: Vec<Option<CollectiveError>>,
    failed: Option<CollectiveError>,
    /// Buffers handed back by receivers, to read the next messages into.
    spare: Vec<Vec<u8>>,
}

/// Messages that arrived for one rank, by source, waiting to be received.
pub(crate) struct Mailbox {
    state: Mutex<State>,
    cv: Condvar,
}

impl Mailbox {
    /// An empty mailbox for messages from `world` ranks.
    pub(crate) fn new(world: usize) -> Self {
        Mailbox {
            state: Mutex::new(State {
                queues: (0..world).map(|_| VecDeque::new()).collect(),
                closed: vec![None; world],
                failed: None,
                spare: Vec::new(),
            }),
            cv: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A poisoned lock only means another thread panicked while holding
        // it; the queues are still consistent (every update is one push/pop).
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Queues a message from `src`.
    pub(crate) fn push(&self, src: usize, tag: Tag, data: Vec<u8>) {
        self.lock().queues[src].push_back((tag, data));
        self.cv.notify_all();
    }

    /// An empty spare buffer to receive a message of `need` bytes into:
    /// the smallest one on hand that holds it (so that a large buffer is
    /// not tied up by a small message whose receiver never recycles it),
    /// or a new one of exactly that capacity.
    pub(crate) fn spare_buffer(&self, need: usize) -> Vec<u8> {
        let mut s = self.lock();
        // Of equally small fits, the one recycled last: its bytes are the
        // likeliest to be in cache still (the receive copies into it).
        let fits = (0..s.spare.len())
            .rev()
            .filter(|&i| s.spare[i].capacity() >= need)
            .min_by_key(|&i| s.spare[i].capacity());
        match fits {
            Some(i) => s.spare.remove(i),
            None => Vec::with_capacity(need),
        }
    }

    /// Keeps `buf` for a later receive: up to [`SPARE_BUFFERS`], a full
    /// store trading its smallest buffer for a larger one (so that the
    /// spares follow the message sizes in use).
    pub(crate) fn recycle(&self, mut buf: Vec<u8>) {
        if buf.capacity() == 0 {
            return;
        }
        buf.clear();
        let mut s = self.lock();
        if s.spare.len() < SPARE_BUFFERS {
            s.spare.push(buf);
        } else if let Some(i) = (0..s.spare.len()).min_by_key(|&i| s.spare[i].capacity()) {
            if s.spare[i].capacity() < buf.capacity() {
                s.spare[i] = buf;
            }
        }
    }

    /// Records that nothing more will come from `src`, and why. Messages
    /// already queued are still delivered.
    pub(crate) fn close(&self, src: usize, why: CollectiveError) {
        let mut s = self.lock();
        if s.closed[src].is_none() {
            s.closed[src] = Some(why);
        }
        drop(s);
        self.cv.notify_all();
    }

    /// Fails every current and later receive with `why` (the first error
    /// that failed the group, so that each waiting rank names the cause).
    pub(crate) fn fail(&self, why: &CollectiveError) {
        let mut s = self.lock();
        if s.failed.is_none() {
            s.failed = Some(why.clone());
        }
        drop(s);
        self.cv.notify_all();
    }

    /// The error that failed the group, if it failed.
    pub(crate) fn cause(&self) -> Option<CollectiveError> {
        self.lock().failed.clone()
    }

    /// [`CollectiveError::GroupFailed`] with the cause, if the group failed.
    pub(crate) fn failure(&self) -> Option<CollectiveError> {
        self.lock()
            .failed
            .as_ref()
            .map(|e| CollectiveError::GroupFailed(e.to_string()))
    }

    /// Takes the oldest message from `src` tagged `tag`, waiting at most `timeout`.
    pub(crate) fn take(&self, src: usize, tag: Tag, timeout: Duration) -> Result<Vec<u8>> {
        let deadline = Instant::now() + timeout;
        let mut s = self.lock();
        loop {
            if let Some(f) = &s.failed {
                return Err(f.clone());
            }
            if let Some(i) = s.queues[src].iter().position(|(t, _)| *t == tag) {
                let (_, data) = s.queues[src].remove(i).expect("index from position");
                return Ok(data);
            }
            if let Some(e) = &s.closed[src] {
                return Err(e.clone());
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(CollectiveError::Timeout {
                    peer: src,
                    after: timeout,
                    what: format!("message with tag {:#x}", tag.0),
                });
            }
            s = self
                .cv
                .wait_timeout(s, deadline - now)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Mailbox, SPARE_BUFFERS};

    #[test]
    fn spare_buffers_are_the_smallest_that_fit() {
        let m = Mailbox::new(1);
        for cap in [64, 1024, 256] {
            m.recycle(Vec::with_capacity(cap));
        }
        assert!((256..1024).contains(&m.spare_buffer(200).capacity()));
        assert!(m.spare_buffer(300).capacity() >= 1024);
        // Nothing on hand fits: a new buffer, the spares stay.
        assert_eq!(m.spare_buffer(4096).capacity(), 4096);
        assert!(m.spare_buffer(10).capacity() >= 64);
    }

    #[test]
    fn a_full_store_keeps_the_larger_buffers() {
        let m = Mailbox::new(1);
        for _ in 0..SPARE_BUFFERS {
            m.recycle(Vec::with_capacity(16));
        }
        m.recycle(Vec::with_capacity(1 << 20));
        let big = m.spare_buffer(1 << 20);
        assert!(big.capacity() >= 1 << 20);
        m.recycle(big);
        m.recycle(Vec::with_capacity(8)); // smaller than every spare: dropped
        let caps: Vec<usize> = (0..SPARE_BUFFERS)
            .map(|_| m.spare_buffer(1).capacity())
            .collect();
        assert!(caps.iter().all(|&c| c >= 16), "{caps:?}");
    }
}
