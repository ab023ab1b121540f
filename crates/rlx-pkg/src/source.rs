//! Where a package's bytes come from: a memory map, an owned buffer, or
//! the file read on demand; and [`TensorBytes`], the bytes handed out.

use crate::error::{PkgError, Result};
use memmap2::Mmap;
use std::borrow::Cow;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::ops::Deref;
use std::sync::{Arc, Mutex};

/// How [`crate::Package::open_with`] makes a package's bytes available.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum MaterializeMode {
    /// Memory-map the file: hot tensors are used in place (zero-copy),
    /// warm ones decompressed on first use, cold ones never touched until
    /// asked for. Open reads only the header and TOC.
    #[default]
    Mmap,
    /// Copy the hot and warm tensors' stored bytes into memory at open
    /// (their checksums verified then); cold tensors are read from the
    /// file when asked for. For file systems where a map is unsafe (the
    /// file may change under it).
    Copy,
    /// Read nothing but the header and TOC at open; every tensor is read
    /// from the file (and verified) when asked for.
    Lazy,
}

/// The bytes of a package: mapped, owned, or a file read on demand.
pub(crate) enum Source {
    Mapped(Mmap),
    Owned(Vec<u8>),
    File(Mutex<File>),
}

impl Source {
    /// Bytes `start..end` (checked against the file length by the caller).
    pub(crate) fn read(&self, path: &str, start: u64, end: u64) -> Result<Cow<'_, [u8]>> {
        match self {
            Source::Mapped(m) => Ok(Cow::Borrowed(&m[start as usize..end as usize])),
            Source::Owned(v) => Ok(Cow::Borrowed(&v[start as usize..end as usize])),
            Source::File(f) => {
                let io = |source| PkgError::Io {
                    path: path.to_string(),
                    source,
                };
                let mut f = f.lock().unwrap_or_else(|p| p.into_inner());
                f.seek(SeekFrom::Start(start)).map_err(io)?;
                let mut buf = vec![0u8; (end - start) as usize];
                f.read_exact(&mut buf).map_err(io)?;
                Ok(Cow::Owned(buf))
            }
        }
    }

    /// Whether [`Self::read`] borrows (a map or an owned buffer).
    pub(crate) fn in_memory(&self) -> bool {
        !matches!(self, Source::File(_))
    }
}

/// A tensor's decoded bytes: borrowed from the package (hot tier, in
/// place), shared with the warm cache, or owned.
pub enum TensorBytes<'a> {
    /// In place in the map (or the copied buffer).
    Borrowed(&'a [u8]),
    /// Decompressed, shared with the warm cache.
    Shared(Arc<Vec<u8>>),
    /// Read or decompressed for this call only.
    Owned(Vec<u8>),
}

impl Deref for TensorBytes<'_> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            TensorBytes::Borrowed(b) => b,
            TensorBytes::Shared(a) => a,
            TensorBytes::Owned(v) => v,
        }
    }
}

impl<'a> From<Cow<'a, [u8]>> for TensorBytes<'a> {
    fn from(c: Cow<'a, [u8]>) -> Self {
        match c {
            Cow::Borrowed(b) => TensorBytes::Borrowed(b),
            Cow::Owned(v) => TensorBytes::Owned(v),
        }
    }
}
