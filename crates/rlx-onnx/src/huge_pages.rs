//! Large fresh buffers as anonymous mappings that ask for transparent huge
//! pages. A fresh 4 KiB page costs a fault when first written (about
//! 0.45 ms per MB on the 2-vCPU EPYC VM, against 0.12 ms per MB on 2 MiB
//! pages), so ResNet-18's 47 MB file read into a `Vec` spent ~20 ms in
//! faults, and so did its 45 MB of folded conv weights. A mapping is also
//! page aligned, which lets the CPU backend use such a constant in place
//! instead of copying it into an aligned buffer.

use memmap2::{Mmap, MmapMut};

/// Buffers from one huge page up are mapped. Below it a mapping gets no
/// huge page, and a fresh mapping per load lost to the heap, whose freed
/// pages a later load reuses without a fault (U-Net's import + compile,
/// all weights under 2 MiB, went from 3.0 to 4.7 ms mapped from 64 KiB).
const MAP_FROM: usize = 2 << 20;

/// A zeroed writable buffer of `len` bytes, or `None` for a small one or
/// where the mapping fails (the caller then uses a vector).
pub(crate) fn zeroed(len: usize) -> Option<HugeBuf> {
    if len < MAP_FROM {
        return None;
    }
    let map = MmapMut::map_anon(len).ok()?;
    #[cfg(target_os = "linux")]
    let _ = map.advise(memmap2::Advice::HugePage);
    Some(HugeBuf { map })
}

/// A writable mapped buffer ([`zeroed`]).
pub(crate) struct HugeBuf {
    map: MmapMut,
}

impl HugeBuf {
    /// The bytes, writable.
    pub(crate) fn bytes_mut(&mut self) -> &mut [u8] {
        &mut self.map
    }

    /// The buffer made read-only (shared as constant bytes from then on);
    /// `None` where the protection change fails.
    pub(crate) fn freeze(self) -> Option<Mmap> {
        self.map.make_read_only().ok()
    }
}
