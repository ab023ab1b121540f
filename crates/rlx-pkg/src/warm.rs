//! The warm tier: zstd blocks decoded on demand, and the bounded cache of
//! decoded tensors.

use crate::error::{PkgError, Result};
use crate::toc::TensorEntry;
use std::collections::VecDeque;
use std::sync::Arc;

/// Default byte budget of the warm cache.
pub const DEFAULT_WARM_BUDGET: usize = 256 << 20;

/// Decodes block `k` of `t` (its stored bytes `stored`, which start at
/// file offset `file_offset`) into `out`.
pub(crate) fn decode_block(
    t: &TensorEntry,
    k: usize,
    stored: &[u8],
    file_offset: u64,
    out: &mut Vec<u8>,
) -> Result<()> {
    let (s, r) = t.blocks[k];
    let (s, r) = (s as usize, r as usize);
    if s == r {
        out.extend_from_slice(stored);
        return Ok(());
    }
    let fail = |reason: String| PkgError::Decompress {
        name: t.name.clone(),
        block: k,
        offset: file_offset,
        reason,
    };
    // `r` is bounded by MAX_BLOCK and MAX_RATIO * stored (checked at open).
    let mut buf = vec![0u8; r];
    let n = zstd::bulk::Decompressor::new()
        .and_then(|mut d| d.decompress_to_buffer(stored, &mut buf))
        .map_err(|e| fail(e.to_string()))?;
    if n != r {
        return Err(fail(format!("decodes to {n} bytes, the block says {r}")));
    }
    out.extend_from_slice(&buf);
    Ok(())
}

/// Calls `each(k, range)` for every block of `t`: its index and the byte
/// range of its stored bytes within the tensor's stored bytes.
pub(crate) fn block_ranges(
    t: &TensorEntry,
) -> impl Iterator<Item = (usize, std::ops::Range<usize>)> + '_ {
    let mut at = 0usize;
    t.blocks.iter().enumerate().map(move |(k, &(s, _))| {
        let r = at..at + s as usize;
        at += s as usize;
        (k, r)
    })
}

/// Decoded warm tensors, least recently used first, within a byte budget.
pub(crate) struct WarmCache {
    budget: usize,
    used: usize,
    entries: VecDeque<(usize, Arc<Vec<u8>>)>,
}

impl WarmCache {
    pub(crate) fn new(budget: usize) -> Self {
        WarmCache {
            budget,
            used: 0,
            entries: VecDeque::new(),
        }
    }

    pub(crate) fn get(&mut self, i: usize) -> Option<Arc<Vec<u8>>> {
        let pos = self.entries.iter().position(|e| e.0 == i)?;
        let e = self.entries.remove(pos).expect("found");
        let v = e.1.clone();
        self.entries.push_back(e);
        Some(v)
    }

    /// Keeps `v` if it fits the budget, evicting the least recently used.
    pub(crate) fn insert(&mut self, i: usize, v: Arc<Vec<u8>>) {
        if v.len() > self.budget {
            return;
        }
        while self.used + v.len() > self.budget {
            let (_, old) = self.entries.pop_front().expect("used > 0");
            self.used -= old.len();
        }
        self.used += v.len();
        self.entries.push_back((i, v));
    }

    pub(crate) fn set_budget(&mut self, budget: usize) {
        self.budget = budget;
        while self.used > self.budget {
            let (_, old) = self.entries.pop_front().expect("used > 0");
            self.used -= old.len();
        }
    }

    pub(crate) fn used(&self) -> usize {
        self.used
    }
}
