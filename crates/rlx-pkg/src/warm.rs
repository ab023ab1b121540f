//! The warm tier: zstd blocks decoded on demand, and the bounded cache of
//! decoded tensors.

use crate::error::{PkgError, Result};
use crate::toc::TensorEntry;
use std::collections::VecDeque;
use std::sync::Arc;

/// Default byte budget of the warm cache.
pub const DEFAULT_WARM_BUDGET: usize = 256 << 20;

/// Decodes zstd blocks, reusing one zstd context and one scratch buffer.
pub(crate) struct BlockDecoder {
    dctx: Option<zstd::bulk::Decompressor<'static>>,
    scratch: Vec<u8>,
}

impl BlockDecoder {
    pub(crate) fn new() -> Self {
        BlockDecoder {
            dctx: None,
            scratch: Vec::new(),
        }
    }

    /// Appends block `k` of `t` (its stored bytes `stored`, which start at
    /// file offset `file_offset`), decoded and unshuffled, to `out`.
    pub(crate) fn decode(
        &mut self,
        t: &TensorEntry,
        k: usize,
        stored: &[u8],
        file_offset: u64,
        out: &mut Vec<u8>,
    ) -> Result<()> {
        let (s, r) = t.blocks[k];
        let (s, r) = (s as usize, r as usize);
        let fail = |reason: String| PkgError::Decompress {
            name: t.name.clone(),
            block: k,
            offset: file_offset,
            reason,
        };
        let es = if t.shuffle { t.dtype.size_bytes() } else { 1 };
        let BlockDecoder { dctx, scratch } = self;
        let dst = if es > 1 {
            scratch.clear();
            &mut *scratch
        } else {
            &mut *out
        };
        let at = dst.len();
        // `r` is bounded by MAX_BLOCK and MAX_RATIO * stored (checked at open).
        dst.resize(at + r, 0);
        if s == r {
            dst[at..].copy_from_slice(stored);
        } else {
            if dctx.is_none() {
                *dctx = Some(zstd::bulk::Decompressor::new().map_err(|e| fail(e.to_string()))?);
            }
            let d = dctx.as_mut().expect("set above");
            let n = d
                .decompress_to_buffer(stored, &mut dst[at..])
                .map_err(|e| fail(e.to_string()))?;
            if n != r {
                return Err(fail(format!("decodes to {n} bytes, the block says {r}")));
            }
        }
        if es > 1 {
            unshuffle(scratch, es, out);
        }
        Ok(())
    }
}

/// Byte planes -> elements: appends `src` (all first bytes of its `es`-byte
/// elements, then all second bytes, ...) to `out` as whole elements.
pub(crate) fn unshuffle(src: &[u8], es: usize, out: &mut Vec<u8>) {
    let n = src.len() / es;
    let at = out.len();
    out.resize(at + src.len(), 0);
    let dst = &mut out[at..];
    // The common element sizes as zips over the planes: no bounds checks,
    // one contiguous element store per step (vectorizes).
    if n * es == src.len() {
        match es {
            2 => {
                let (p0, p1) = src.split_at(n);
                for ((d, &a), &b) in dst.chunks_exact_mut(2).zip(p0).zip(p1) {
                    d.copy_from_slice(&[a, b]);
                }
                return;
            }
            4 => {
                let (p0, rest) = src.split_at(n);
                let (p1, rest) = rest.split_at(n);
                let (p2, p3) = rest.split_at(n);
                let planes = p0.iter().zip(p1).zip(p2).zip(p3);
                for (d, (((&a, &b), &c), &e)) in dst.chunks_exact_mut(4).zip(planes) {
                    d.copy_from_slice(&[a, b, c, e]);
                }
                return;
            }
            _ => {}
        }
    }
    for (k, plane) in src.chunks_exact(n.max(1)).enumerate().take(es) {
        for (i, &b) in plane.iter().enumerate() {
            dst[i * es + k] = b;
        }
    }
}

/// Elements -> byte planes (the inverse of [`unshuffle`]).
pub(crate) fn shuffle(src: &[u8], es: usize) -> Vec<u8> {
    let n = src.len() / es;
    let mut out = vec![0u8; src.len()];
    for (i, e) in src.chunks_exact(es).enumerate() {
        for (k, &b) in e.iter().enumerate() {
            out[k * n + i] = b;
        }
    }
    out
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

#[cfg(test)]
mod tests {
    #[test]
    fn shuffle_is_byte_planes_and_unshuffle_inverts_it() {
        let src: Vec<u8> = (0..12).collect();
        let s = super::shuffle(&src, 4);
        assert_eq!(s, [0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11]);
        let mut out = vec![99];
        super::unshuffle(&s, 4, &mut out);
        assert_eq!(out[0], 99);
        assert_eq!(&out[1..], &src[..]);
        // Every element size through its path (the fast 2 / 4 and the general one).
        for es in [1usize, 2, 3, 4, 8] {
            let src: Vec<u8> = (0..24 * es as u32).map(|v| (v * 7 % 251) as u8).collect();
            let mut out = Vec::new();
            super::unshuffle(&super::shuffle(&src, es), es, &mut out);
            assert_eq!(out, src, "element size {es}");
        }
    }
}
