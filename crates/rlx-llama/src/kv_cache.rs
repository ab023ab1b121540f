//! [`KvCache`]: the keys and values of the tokens seen so far, per layer,
//! in the `[n_kv_heads, capacity, head_dim]` layout the step graph reads.

use crate::config::LlamaConfig;
use crate::error::{LlamaError, Result};
use rlx_ir::{DType, HostTensor};

/// Per-layer key / value buffers with a fill length.
#[derive(Debug, Clone)]
pub struct KvCache {
    capacity: usize,
    len: usize,
    n_kv_heads: usize,
    head_dim: usize,
    keys: Vec<HostTensor>,
    values: Vec<HostTensor>,
}

impl KvCache {
    /// An empty cache of `capacity` positions for `config`'s shape.
    pub fn new(config: &LlamaConfig, capacity: usize) -> KvCache {
        let dims = [config.n_kv_heads, capacity, config.head_dim];
        let zeros = || {
            (0..config.n_layers)
                .map(|_| HostTensor::zeros(DType::F32, &dims))
                .collect()
        };
        KvCache {
            capacity,
            len: 0,
            n_kv_heads: config.n_kv_heads,
            head_dim: config.head_dim,
            keys: zeros(),
            values: zeros(),
        }
    }

    /// Positions filled.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no position is filled.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Positions the cache holds at most.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Forgets every position (the buffers are reused).
    pub fn clear(&mut self) {
        self.len = 0;
    }

    /// Drops the positions from `len` on (e.g. to re-run a shared prefix).
    pub fn truncate(&mut self, len: usize) {
        self.len = self.len.min(len);
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

    /// Writes the first `count` of the `s` positions of `k` / `v`
    /// (`[n_kv_heads, s, head_dim]` f32) for layer `l` after the filled ones.
    /// Call [`Self::advance`] once every layer is written.
    pub(crate) fn write(&mut self, l: usize, k: &HostTensor, v: &HostTensor, count: usize) {
        let (len, cap, nkv, hd) = (self.len, self.capacity, self.n_kv_heads, self.head_dim);
        for (dst, src) in [(&mut self.keys[l], k), (&mut self.values[l], v)] {
            let s = src.dims()[1];
            let row = hd * 4;
            let mut bytes =
                std::mem::replace(dst, HostTensor::zeros(DType::F32, &[0])).into_bytes();
            for h in 0..nkv {
                let from = &src.bytes()[h * s * row..][..count * row];
                bytes[(h * cap + len) * row..][..count * row].copy_from_slice(from);
            }
            *dst = HostTensor::from_bytes(DType::F32, &[nkv, cap, hd], bytes)
                .expect("the cache keeps its own length");
        }
    }

    /// Marks `count` more positions filled.
    pub(crate) fn advance(&mut self, count: usize) {
        self.len += count;
    }
}
