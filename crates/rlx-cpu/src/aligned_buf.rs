//! [`AlignedBuf`]: the 64-byte aligned bytes of the executor's arena,
//! params, constants and prepared (packed) weights.
//!
//! Where the bytes come from decides the cost of a compile more than any
//! pass: a fresh 4 KiB page costs a fault when first written (~0.45 ms per
//! MB on the 2-vCPU EPYC VM), so every fresh copy of ResNet-18's 45 MB of
//! weights cost ~20 ms. Hence: a large zeroed buffer is a mapping on
//! transparent huge pages ([`HugeBuf`], ~0.12 ms per MB), and a constant
//! whose bytes are already aligned (an ONNX importer's folded weight, on
//! its own mapping) is shared, not copied, until something writes it.

use rlx_ir::{ConstBytes, HugeBuf};

/// A 64-byte aligned byte buffer: blocks on the heap, a mapping (large
/// zeroed buffers, whose pages the OS zeroes when first touched: a memset
/// of a batch-8 network's arena was most of its compile time), or a
/// constant's own bytes, shared (copied on the first write).
pub(crate) struct AlignedBuf {
    backing: Backing,
    /// The length in bytes.
    pub(crate) len: usize,
}

enum Backing {
    Blocks(Vec<Block>),
    Mapped(HugeBuf),
    Shared(ConstBytes),
}

#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Block([u8; 64]);

/// Zeroed buffers from this size up are mapped rather than allocated
/// (half a huge page: a batch-8 arena's memset, not its faults, was what
/// the mapping saved at first).
const MAP_FROM: usize = 1 << 20;

/// Alignment every buffer's start has.
const ALIGN: usize = 64;

impl Clone for AlignedBuf {
    fn clone(&self) -> AlignedBuf {
        AlignedBuf::from_bytes(self.bytes())
    }
}

impl AlignedBuf {
    pub(crate) fn zeroed(len: usize) -> AlignedBuf {
        if len >= MAP_FROM {
            // Page-aligned (so 64-byte aligned); a failed mapping falls
            // back to the heap.
            if let Some(m) = HugeBuf::zeroed(len) {
                return AlignedBuf {
                    backing: Backing::Mapped(m),
                    len,
                };
            }
        }
        AlignedBuf {
            backing: Backing::Blocks(vec![Block([0; 64]); len.div_ceil(64)]),
            len,
        }
    }

    /// A zeroed buffer of `n` f32s.
    pub(crate) fn zeroed_f32(n: usize) -> AlignedBuf {
        AlignedBuf::zeroed(n * 4)
    }

    /// A copy of `b` (not zeroed first: a model's constants are tens of
    /// megabytes, and a zero pass over them cost as much as the copy).
    pub(crate) fn from_bytes(b: &[u8]) -> AlignedBuf {
        let n = b.len().div_ceil(64);
        let mut blocks: Vec<Block> = Vec::with_capacity(n);
        // SAFETY: the capacity holds `n` blocks = `n * 64 >= b.len()` bytes;
        // the first `b.len()` are copied from `b` and the rest zeroed before
        // the length is set, and a `Block` is plain bytes.
        unsafe {
            let dst = blocks.as_mut_ptr() as *mut u8;
            std::ptr::copy_nonoverlapping(b.as_ptr(), dst, b.len());
            std::ptr::write_bytes(dst.add(b.len()), 0, n * 64 - b.len());
            blocks.set_len(n);
        }
        AlignedBuf {
            backing: Backing::Blocks(blocks),
            len: b.len(),
        }
    }

    /// A constant's bytes: shared when they start 64-byte aligned (no
    /// copy), else copied ([`AlignedBuf::from_bytes`]).
    pub(crate) fn constant(bytes: &ConstBytes) -> AlignedBuf {
        if !(bytes.as_ptr() as usize).is_multiple_of(ALIGN) {
            return AlignedBuf::from_bytes(bytes);
        }
        AlignedBuf {
            backing: Backing::Shared(bytes.clone()),
            len: bytes.len(),
        }
    }

    /// True when the bytes are a constant's, shared (not yet written).
    #[cfg(test)]
    pub(crate) fn is_shared(&self) -> bool {
        matches!(self.backing, Backing::Shared(_))
    }

    pub(crate) fn bytes(&self) -> &[u8] {
        match &self.backing {
            // SAFETY: blocks are plain bytes; len <= blocks.len() * 64.
            Backing::Blocks(b) => unsafe {
                std::slice::from_raw_parts(b.as_ptr() as *const u8, self.len)
            },
            Backing::Mapped(m) => &m.bytes()[..self.len],
            Backing::Shared(c) => c,
        }
    }

    /// The bytes, writable: a shared constant's are copied first.
    pub(crate) fn bytes_mut(&mut self) -> &mut [u8] {
        let len = self.len;
        // SAFETY: `base` points at `len` writable bytes this buffer owns.
        unsafe { std::slice::from_raw_parts_mut(self.base(), len) }
    }

    /// The start of the bytes, writable: a shared constant's are copied
    /// first (copy on write).
    pub(crate) fn base(&mut self) -> *mut u8 {
        if let Backing::Shared(c) = &self.backing {
            *self = AlignedBuf::from_bytes(c);
        }
        match &mut self.backing {
            Backing::Blocks(b) => b.as_mut_ptr() as *mut u8,
            Backing::Mapped(m) => m.bytes_mut().as_mut_ptr(),
            Backing::Shared(_) => unreachable!("copied above"),
        }
    }

    /// The start of the bytes, for kernels that write the arena through a
    /// shared borrow of the executable (each to its own planned slot). A
    /// shared constant's bytes may be a read-only mapping, so it has none.
    pub(crate) fn base_ptr(&self) -> *mut u8 {
        match &self.backing {
            Backing::Blocks(b) => b.as_ptr() as *mut u8,
            Backing::Mapped(m) => m.bytes().as_ptr() as *mut u8,
            Backing::Shared(_) => {
                unreachable!("a shared constant is never written in place (`base` copies it)")
            }
        }
    }

    /// The f32s of the buffer.
    pub(crate) fn f32s(&self) -> &[f32] {
        let bytes = self.bytes();
        // SAFETY: the buffer is 64-byte aligned and holds `len / 4` f32s' bytes.
        unsafe { std::slice::from_raw_parts(bytes.as_ptr() as *const f32, bytes.len() / 4) }
    }

    /// The f32s of the buffer, writable (a shared constant's copied first).
    pub(crate) fn f32s_mut(&mut self) -> &mut [f32] {
        let len = self.len / 4;
        // SAFETY: the buffer is 64-byte aligned and holds `len` f32s' bytes.
        unsafe { std::slice::from_raw_parts_mut(self.base() as *mut f32, len) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An aligned constant is shared until written, then copied: the
    /// constant itself never changes.
    #[test]
    fn shared_constant_copied_on_write() {
        let mut buf = AlignedBuf::zeroed(MAP_FROM);
        buf.bytes_mut()[..4].copy_from_slice(&[1, 2, 3, 4]);
        let Backing::Mapped(m) = buf.backing else {
            panic!("a mapping");
        };
        let c = ConstBytes::from_owner(m);
        let mut shared = AlignedBuf::constant(&c);
        assert!(shared.is_shared());
        assert_eq!(shared.bytes().as_ptr(), c.as_ptr());
        shared.bytes_mut()[0] = 9;
        assert!(!shared.is_shared());
        assert_eq!(&shared.bytes()[..4], &[9, 2, 3, 4]);
        assert_eq!(&c[..4], &[1, 2, 3, 4]);
    }

    /// Misaligned bytes are copied into an aligned buffer.
    #[test]
    fn misaligned_constant_copied() {
        let c = ConstBytes::from(vec![0u8; 200]);
        let offset = (ALIGN - c.as_ptr() as usize % ALIGN) % ALIGN + 1;
        let v = c[offset..offset + 100].to_vec();
        let inner = ConstBytes::from_owner(OffsetSlice(c.clone(), offset));
        let buf = AlignedBuf::constant(&inner);
        assert!(!buf.is_shared());
        assert_eq!(buf.bytes(), &v[..]);
        assert_eq!(buf.bytes().as_ptr() as usize % ALIGN, 0);
    }

    struct OffsetSlice(ConstBytes, usize);
    impl AsRef<[u8]> for OffsetSlice {
        fn as_ref(&self) -> &[u8] {
            &self.0[self.1..self.1 + 100]
        }
    }
}
