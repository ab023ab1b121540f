//! [`KvCache`]: the keys and values of the tokens seen so far, per layer,
//! in the `[n_kv_heads, capacity, head_dim]` layout the step graph reads.
//!
//! Elements are f32 or f16 ([`KvCacheDtype`]); the step graphs output new
//! keys / values in the cache's dtype, so rows are copied as bytes.
//!
//! The host copy is the reference: each compiled step graph keeps its own
//! cache params and copies in only the rows it has not seen yet (tracked
//! by the cache's [`KvCache::id`], which changes whenever rows are
//! forgotten or the cache is cloned).

use crate::config::{KvCacheDtype, LlamaConfig};
use crate::error::{LlamaError, Result};
use rlx_ir::HostTensor;
use std::sync::atomic::{AtomicU64, Ordering};

/// A fresh cache identity.
fn next_id() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// Per-layer key / value buffers with a fill length.
#[derive(Debug)]
pub struct KvCache {
    id: u64,
    capacity: usize,
    len: usize,
    n_kv_heads: usize,
    head_dim: usize,
    dtype: KvCacheDtype,
    keys: Vec<HostTensor>,
    values: Vec<HostTensor>,
}

impl KvCache {
    /// An empty f32 cache of `capacity` positions for `config`'s shape.
    pub fn new(config: &LlamaConfig, capacity: usize) -> KvCache {
        KvCache::with_dtype(config, capacity, KvCacheDtype::F32)
    }

    /// An empty cache of `capacity` positions of `dtype` elements for
    /// `config`'s shape.
    pub fn with_dtype(config: &LlamaConfig, capacity: usize, dtype: KvCacheDtype) -> KvCache {
        let dims = [config.n_kv_heads, capacity, config.head_dim];
        let zeros = || {
            (0..config.n_layers)
                .map(|_| HostTensor::zeros(dtype.dtype(), &dims))
                .collect()
        };
        KvCache {
            id: next_id(),
            capacity,
            len: 0,
            n_kv_heads: config.n_kv_heads,
            head_dim: config.head_dim,
            dtype,
            keys: zeros(),
            values: zeros(),
        }
    }

    /// This cache's identity: rows `..len` with the same id never change,
    /// so a graph that copied them in keeps them.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// Whether this cache has the layout `config`'s model with a context
    /// of `capacity` positions and a cache of `dtype` writes.
    pub fn fits(&self, config: &LlamaConfig, capacity: usize, dtype: KvCacheDtype) -> bool {
        self.capacity == capacity
            && self.dtype == dtype
            && self.n_kv_heads == config.n_kv_heads
            && self.head_dim == config.head_dim
            && self.keys.len() == config.n_layers
    }

    /// Positions filled.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no position is filled.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The element type.
    pub fn dtype(&self) -> KvCacheDtype {
        self.dtype
    }

    /// Positions the cache holds at most.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Forgets every position (the buffers are reused).
    pub fn clear(&mut self) {
        self.truncate(0);
    }

    /// Drops the positions from `len` on (e.g. to re-run a shared prefix).
    pub fn truncate(&mut self, len: usize) {
        if len < self.len {
            self.len = len;
            self.id = next_id();
        }
    }

    /// Layer `l`'s keys (`[n_kv_heads, capacity, head_dim]`; rows past
    /// [`Self::len`] are stale).
    pub fn keys(&self, l: usize) -> &HostTensor {
        &self.keys[l]
    }

    /// Layer `l`'s values, as [`Self::keys`].
    pub fn values(&self, l: usize) -> &HostTensor {
        &self.values[l]
    }

    /// An error unless `count` more positions fit.
    pub fn check_room(&self, count: usize) -> Result<()> {
        if self.len + count > self.capacity {
            return Err(LlamaError::ContextFull {
                used: self.len,
                capacity: self.capacity,
                requested: count,
            });
        }
        Ok(())
    }

    /// Writes positions `skip .. skip + count` of the `s` positions of `k` /
    /// `v` (`[n_kv_heads, s, head_dim]`, the cache's dtype) for layer `l` after the filled
    /// ones. Call [`Self::advance`] once every layer is written.
    pub(crate) fn write(
        &mut self,
        l: usize,
        k: &HostTensor,
        v: &HostTensor,
        skip: usize,
        count: usize,
    ) {
        let (len, cap, nkv, hd) = (self.len, self.capacity, self.n_kv_heads, self.head_dim);
        let dtype = self.dtype.dtype();
        for (dst, src) in [(&mut self.keys[l], k), (&mut self.values[l], v)] {
            debug_assert_eq!(src.dtype(), dtype);
            let s = src.dims()[1];
            let row = hd * dtype.size_bytes();
            let mut bytes = std::mem::replace(dst, HostTensor::zeros(dtype, &[0])).into_bytes();
            for h in 0..nkv {
                let from = &src.bytes()[(h * s + skip) * row..][..count * row];
                bytes[(h * cap + len) * row..][..count * row].copy_from_slice(from);
            }
            *dst = HostTensor::from_bytes(dtype, &[nkv, cap, hd], bytes)
                .expect("the cache keeps its own length");
        }
    }

    /// Per kv head, the byte range of positions `from..to` in a layer's
    /// key or value buffer and their byte offset in a buffer of the same
    /// layout with `slots` positions (`to <= slots`).
    pub(crate) fn row_bytes(
        &self,
        from: usize,
        to: usize,
        slots: usize,
    ) -> impl Iterator<Item = (std::ops::Range<usize>, usize)> {
        let (cap, row) = (
            self.capacity,
            self.head_dim * self.dtype.dtype().size_bytes(),
        );
        (0..self.n_kv_heads).map(move |h| {
            let start = (h * cap + from) * row;
            (start..(h * cap + to) * row, (h * slots + from) * row)
        })
    }

    /// Marks `count` more positions filled.
    pub(crate) fn advance(&mut self, count: usize) {
        self.len += count;
    }
}

impl Clone for KvCache {
    /// A copy with its own identity (the two may diverge).
    fn clone(&self) -> Self {
        KvCache {
            id: next_id(),
            capacity: self.capacity,
            len: self.len,
            n_kv_heads: self.n_kv_heads,
            head_dim: self.head_dim,
            dtype: self.dtype,
            keys: self.keys.clone(),
            values: self.values.clone(),
        }
    }
}
