//! The warm tier: zstd blocks decoded on demand, and the bounded cache of
//! decoded tensors.

use crate::error::{PkgError, Result};
use crate::toc::TensorEntry;
use std::collections::VecDeque;
use std::mem::MaybeUninit;
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
        dst.reserve(r);
        if s == r {
            dst.extend_from_slice(stored);
        } else {
            if dctx.is_none() {
                *dctx = Some(zstd::bulk::Decompressor::new().map_err(|e| fail(e.to_string()))?);
            }
            let d = dctx.as_mut().expect("set above");
            let mut tail = AppendBuf { vec: dst, at };
            let n = d
                .decompress_to_buffer(stored, &mut tail)
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
    out.reserve(src.len());
    // Written straight into the spare capacity: a zero fill first would
    // cost as much as the unshuffle itself.
    let dst = &mut out.spare_capacity_mut()[..src.len()];
    let put = |d: &mut [MaybeUninit<u8>], b: &[u8]| {
        for (d, &b) in d.iter_mut().zip(b) {
            *d = MaybeUninit::new(b);
        }
    };
    match es {
        // The common element sizes as zips over the planes: no bounds
        // checks, one contiguous element store per step (vectorizes).
        2 => {
            let (p0, p1) = src.split_at(n);
            for ((d, &a), &b) in dst.chunks_exact_mut(2).zip(p0).zip(p1) {
                put(d, &[a, b]);
            }
        }
        4 => {
            let (p0, rest) = src.split_at(n);
            let (p1, rest) = rest.split_at(n);
            let (p2, p3) = rest.split_at(n);
            let done = interleave4_simd(p0, p1, p2, p3, dst);
            let planes = p0[done..]
                .iter()
                .zip(&p1[done..])
                .zip(&p2[done..])
                .zip(&p3[done..]);
            for (d, (((&a, &b), &c), &e)) in dst[done * 4..].chunks_exact_mut(4).zip(planes) {
                put(d, &[a, b, c, e]);
            }
        }
        _ => {
            for (k, plane) in src.chunks_exact(n.max(1)).enumerate().take(es) {
                for (i, &b) in plane.iter().enumerate() {
                    dst[i * es + k] = MaybeUninit::new(b);
                }
            }
        }
    }
    // Bytes past the last whole element (none in a valid block) stay zero.
    dst[n * es..].fill(MaybeUninit::new(0));
    // SAFETY: the first n * es bytes of `dst` are written above (every
    // plane byte of every element) and the rest just now.
    unsafe { out.set_len(at + src.len()) };
}

/// Interleaves four byte planes into 4-byte elements 16 at a time with
/// SSE2 (every x86-64 has it): the byte-at-a-time zip costs as much as the
/// zstd decode it follows. Returns how many elements it wrote.
#[cfg(target_arch = "x86_64")]
fn interleave4_simd(
    p0: &[u8],
    p1: &[u8],
    p2: &[u8],
    p3: &[u8],
    dst: &mut [MaybeUninit<u8>],
) -> usize {
    use std::arch::x86_64::*;
    let n = p0
        .len()
        .min(p1.len())
        .min(p2.len())
        .min(p3.len())
        .min(dst.len() / 4);
    let blocks = n / 16;
    for i in 0..blocks {
        let o = i * 16;
        // SAFETY: o + 16 <= n <= each plane's length, and 4 * (o + 16) <=
        // dst.len(); unaligned loads / stores; SSE2 is part of x86-64.
        unsafe {
            let ld = |p: &[u8]| _mm_loadu_si128(p.as_ptr().add(o).cast());
            let (a, b, c, d) = (ld(p0), ld(p1), ld(p2), ld(p3));
            let (ab_lo, ab_hi) = (_mm_unpacklo_epi8(a, b), _mm_unpackhi_epi8(a, b));
            let (cd_lo, cd_hi) = (_mm_unpacklo_epi8(c, d), _mm_unpackhi_epi8(c, d));
            let out = dst.as_mut_ptr().add(4 * o).cast::<__m128i>();
            _mm_storeu_si128(out, _mm_unpacklo_epi16(ab_lo, cd_lo));
            _mm_storeu_si128(out.add(1), _mm_unpackhi_epi16(ab_lo, cd_lo));
            _mm_storeu_si128(out.add(2), _mm_unpacklo_epi16(ab_hi, cd_hi));
            _mm_storeu_si128(out.add(3), _mm_unpackhi_epi16(ab_hi, cd_hi));
        }
    }
    blocks * 16
}

/// No vector path off x86-64: the scalar zip does every element.
#[cfg(not(target_arch = "x86_64"))]
fn interleave4_simd(_: &[u8], _: &[u8], _: &[u8], _: &[u8], _: &mut [MaybeUninit<u8>]) -> usize {
    0
}

/// The spare capacity of `vec` from `at` on as zstd's output buffer:
/// decoded bytes are appended without zero-filling the space first.
struct AppendBuf<'a> {
    vec: &'a mut Vec<u8>,
    at: usize,
}

// SAFETY: the pointer and capacity describe the vector's allocation past
// `at`; `filled_until` only marks as initialized bytes zstd wrote there.
unsafe impl zstd::zstd_safe::WriteBuf for AppendBuf<'_> {
    fn as_slice(&self) -> &[u8] {
        &self.vec[self.at..]
    }
    fn capacity(&self) -> usize {
        self.vec.capacity() - self.at
    }
    fn as_mut_ptr(&mut self) -> *mut u8 {
        self.vec.as_mut_ptr().wrapping_add(self.at)
    }
    unsafe fn filled_until(&mut self, n: usize) {
        // SAFETY: the caller (zstd) wrote the first `n` bytes past `at`.
        unsafe { self.vec.set_len(self.at + n) };
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
        // The 16-element vector path, its tail and an empty block, against
        // the definition (numpy: `planes.T.tobytes()`).
        for n in [0usize, 15, 16, 17, 64, 101] {
            let planes: Vec<u8> = (0..4 * n as u32).map(|v| (v * 13 % 253) as u8).collect();
            let mut out = vec![7u8; 3];
            super::unshuffle(&planes, 4, &mut out);
            assert_eq!(&out[..3], &[7, 7, 7], "n = {n}");
            for i in 0..n {
                for k in 0..4 {
                    assert_eq!(
                        out[3 + i * 4 + k],
                        planes[k * n + i],
                        "n = {n}, element {i}, byte {k}"
                    );
                }
            }
        }
    }
}
