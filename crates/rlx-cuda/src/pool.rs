//! A caching allocator: freed device buffers are kept by size and handed
//! out again, so the arenas of the memory plan (one per executable, sized by
//! `MemoryPlan`) and repeated temporaries cost one `cuMemAlloc` each for
//! the life of the process instead of one per run.

use std::collections::BTreeMap;

/// Something with a size in bytes (a device buffer; tests use `Vec<u8>`).
pub trait SizedBuffer {
    /// Its size in bytes.
    fn bytes(&self) -> usize;
}

/// Cached buffers by size. [`Pool::take`] reuses the smallest cached buffer
/// of at least the size asked for and at most twice it (so a small request
/// does not pin a huge buffer); otherwise the caller allocates.
pub struct Pool<B> {
    free: BTreeMap<usize, Vec<B>>,
    cached_bytes: usize,
}

impl<B: SizedBuffer> Default for Pool<B> {
    fn default() -> Self {
        Pool {
            free: BTreeMap::new(),
            cached_bytes: 0,
        }
    }
}

impl<B: SizedBuffer> Pool<B> {
    /// A cached buffer of `bytes..=2 * bytes` bytes, if one is free.
    pub fn take(&mut self, bytes: usize) -> Option<B> {
        let size = *self.free.range(bytes..=bytes.saturating_mul(2)).next()?.0;
        let list = self.free.get_mut(&size)?;
        let b = list.pop()?;
        if list.is_empty() {
            self.free.remove(&size);
        }
        self.cached_bytes -= size;
        Some(b)
    }

    /// Keeps `b` for a later [`Pool::take`].
    pub fn give(&mut self, b: B) {
        let size = b.bytes();
        self.cached_bytes += size;
        self.free.entry(size).or_default().push(b);
    }

    /// Bytes held in the cache.
    pub fn cached_bytes(&self) -> usize {
        self.cached_bytes
    }

    /// Drops every cached buffer (frees the device memory).
    pub fn clear(&mut self) {
        self.free.clear();
        self.cached_bytes = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    impl SizedBuffer for Vec<u8> {
        fn bytes(&self) -> usize {
            self.len()
        }
    }

    #[test]
    fn reuses_the_smallest_fitting_buffer_within_twice_the_request() {
        let mut p: Pool<Vec<u8>> = Pool::default();
        p.give(vec![0; 100]);
        p.give(vec![0; 300]);
        p.give(vec![0; 1000]);
        assert_eq!(p.cached_bytes(), 1400);
        assert_eq!(p.take(90).map(|b| b.len()), Some(100));
        // 1000 is more than twice 400: not handed out for it.
        assert_eq!(p.take(400), None);
        assert_eq!(p.take(250).map(|b| b.len()), Some(300));
        assert_eq!(p.take(600).map(|b| b.len()), Some(1000));
        assert_eq!(p.cached_bytes(), 0);
        assert_eq!(p.take(1), None);
    }

    #[test]
    fn buffers_of_one_size_are_all_kept() {
        let mut p: Pool<Vec<u8>> = Pool::default();
        p.give(vec![1; 64]);
        p.give(vec![2; 64]);
        assert!(p.take(64).is_some() && p.take(64).is_some());
        assert!(p.take(64).is_none());
        p.give(vec![3; 64]);
        p.clear();
        assert_eq!((p.take(64), p.cached_bytes()), (None, 0));
    }
}
