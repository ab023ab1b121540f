//! [`HugeBuf`]: a large fresh buffer as an anonymous mapping that asks for
//! transparent huge pages, for the importers' and backends' buffers of
//! weights (one place for both: the ONNX importer's file read and folded
//! weights, the CPU backend's arena and packed weights).
//!
//! A fresh 4 KiB page costs a fault when first written (about 0.45 ms per
//! MB on the 2-vCPU EPYC VM, against 0.12 ms per MB on 2 MiB pages), so
//! every fresh copy of ResNet-18's 45 MB of weights cost ~20 ms in faults.
//! A mapping's pages are zero until written (no memset), and it is page
//! aligned, so a backend can use a constant frozen from it in place.
//! Below a huge page a mapping gets no huge page and a fresh mapping per
//! load loses to the heap, whose freed pages a later load reuses without a
//! fault: each caller picks the size it maps from, measured on its own
//! buffers.

use memmap2::{Mmap, MmapMut};

/// The size of one transparent huge page on x86-64 and most aarch64
/// kernels: a mapping smaller than this gets none.
pub const HUGE_PAGE: usize = 2 << 20;

/// A zeroed, writable, page-aligned mapping ([`HugeBuf::zeroed`]).
///
/// ```
/// use rlx_ir::{ConstBytes, HugeBuf};
/// let mut buf = HugeBuf::zeroed(rlx_ir::HUGE_PAGE).expect("mapped");
/// assert!(buf.bytes().iter().all(|&b| b == 0));
/// buf.bytes_mut()[0] = 7;
/// let frozen = ConstBytes::from_owner(buf.freeze().expect("read-only"));
/// assert_eq!(frozen[0], 7);
/// assert_eq!(frozen.as_ptr() as usize % 4096, 0);
/// ```
pub struct HugeBuf {
    map: MmapMut,
}

/// A [`HugeBuf`] made read-only ([`HugeBuf::freeze`]).
pub struct FrozenBuf {
    map: Mmap,
}

impl HugeBuf {
    /// A zeroed buffer of `len` bytes on huge pages where the OS has them
    /// (512x fewer first-touch faults, fewer TLB misses on every run), or
    /// `None` where the mapping fails (the caller then uses the heap).
    pub fn zeroed(len: usize) -> Option<HugeBuf> {
        let map = MmapMut::map_anon(len).ok()?;
        #[cfg(target_os = "linux")]
        let _ = map.advise(memmap2::Advice::HugePage);
        Some(HugeBuf { map })
    }

    /// The bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.map
    }

    /// The bytes, writable.
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        &mut self.map
    }

    /// The buffer made read-only (to be shared as constant bytes from then
    /// on); `None` where the protection change fails.
    pub fn freeze(self) -> Option<FrozenBuf> {
        self.map.make_read_only().ok().map(|map| FrozenBuf { map })
    }
}

impl AsRef<[u8]> for HugeBuf {
    fn as_ref(&self) -> &[u8] {
        &self.map
    }
}

impl AsRef<[u8]> for FrozenBuf {
    fn as_ref(&self) -> &[u8] {
        &self.map
    }
}
