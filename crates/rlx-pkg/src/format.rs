//! The fixed 64-byte header, the checksum and the format's constants
//! (`docs/rlxp.md`, "Fixed header").

use crate::error::{PkgError, Result};

/// The first 8 bytes of every package: `\x89RLXP\r\n\x1a`.
pub const MAGIC: [u8; 8] = [0x89, b'R', b'L', b'X', b'P', b'\r', b'\n', 0x1a];
/// The major version this crate reads and writes.
pub const MAJOR: u16 = 1;
/// The minor version this crate writes.
pub const MINOR: u16 = 0;
/// Bytes of the fixed header; the TOC starts here.
pub const HEADER_LEN: u64 = 64;
/// Alignment of the data section and of every span in it.
pub const ALIGN: u64 = 64;
/// Raw bytes per zstd block the writer cuts.
pub const WRITE_BLOCK: usize = 1 << 20;
/// Largest raw block a reader accepts.
pub const MAX_BLOCK: u64 = 16 << 20;
/// Largest raw / stored ratio of a zstd block a reader accepts (bounds
/// what decompression allocates by what the file holds).
pub const MAX_RATIO: u64 = 1024;

/// XXH3-64 (seed 0) of `bytes`: the checksum of the header, the TOC and
/// every span.
pub fn checksum(bytes: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(bytes)
}

/// The decoded fixed header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// Major version.
    pub major: u16,
    /// Minor version.
    pub minor: u16,
    /// Reserved flags (0).
    pub flags: u32,
    /// First byte of the TOC (64).
    pub toc_offset: u64,
    /// Bytes of the TOC.
    pub toc_len: u64,
    /// First byte of the data section.
    pub data_offset: u64,
    /// Bytes of the data section.
    pub data_len: u64,
    /// XXH3-64 of the TOC.
    pub toc_checksum: u64,
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

impl Header {
    /// The 64 header bytes, with the header checksum.
    pub fn encode(&self) -> [u8; 64] {
        let mut b = [0u8; 64];
        b[0..8].copy_from_slice(&MAGIC);
        b[8..10].copy_from_slice(&self.major.to_le_bytes());
        b[10..12].copy_from_slice(&self.minor.to_le_bytes());
        b[12..16].copy_from_slice(&self.flags.to_le_bytes());
        b[16..24].copy_from_slice(&self.toc_offset.to_le_bytes());
        b[24..32].copy_from_slice(&self.toc_len.to_le_bytes());
        b[32..40].copy_from_slice(&self.data_offset.to_le_bytes());
        b[40..48].copy_from_slice(&self.data_len.to_le_bytes());
        b[48..56].copy_from_slice(&self.toc_checksum.to_le_bytes());
        let sum = checksum(&b[0..56]);
        b[56..64].copy_from_slice(&sum.to_le_bytes());
        b
    }

    /// Decodes and checks the header of a file of `file_len` bytes whose
    /// first bytes are `head` (checks 1 to 4 of `docs/rlxp.md`).
    pub fn decode(head: &[u8], file_len: u64) -> Result<Header> {
        if head.len() < HEADER_LEN as usize {
            return Err(PkgError::Truncated {
                what: "the fixed header".into(),
                start: 0,
                end: HEADER_LEN,
                file_len,
            });
        }
        let found: [u8; 8] = head[0..8].try_into().expect("8 bytes");
        if found != MAGIC {
            return Err(PkgError::BadMagic {
                found,
                expected: MAGIC,
            });
        }
        let stored = u64_at(head, 56);
        let computed = checksum(&head[0..56]);
        if stored != computed {
            return Err(PkgError::HeaderChecksum { stored, computed });
        }
        let h = Header {
            major: u16::from_le_bytes([head[8], head[9]]),
            minor: u16::from_le_bytes([head[10], head[11]]),
            flags: u32::from_le_bytes(head[12..16].try_into().expect("4 bytes")),
            toc_offset: u64_at(head, 16),
            toc_len: u64_at(head, 24),
            data_offset: u64_at(head, 32),
            data_len: u64_at(head, 40),
            toc_checksum: u64_at(head, 48),
        };
        if h.major != MAJOR {
            return Err(PkgError::UnsupportedVersion {
                major: h.major,
                minor: h.minor,
                supported: MAJOR,
            });
        }
        if h.flags != 0 {
            return Err(PkgError::UnsupportedFlags { flags: h.flags });
        }
        h.check_layout(file_len)?;
        Ok(h)
    }

    fn check_layout(&self, file_len: u64) -> Result<()> {
        if self.toc_offset != HEADER_LEN {
            return Err(PkgError::BadLayout {
                reason: format!(
                    "toc_offset (bytes 16..24) is {}, must be {HEADER_LEN}",
                    self.toc_offset
                ),
            });
        }
        let toc_end =
            self.toc_offset
                .checked_add(self.toc_len)
                .ok_or(PkgError::LengthOverflow {
                    what: "the TOC (header bytes 16..32)".into(),
                    offset: self.toc_offset,
                    len: self.toc_len,
                })?;
        let data_end =
            self.data_offset
                .checked_add(self.data_len)
                .ok_or(PkgError::LengthOverflow {
                    what: "the data section (header bytes 32..48)".into(),
                    offset: self.data_offset,
                    len: self.data_len,
                })?;
        if !self.data_offset.is_multiple_of(ALIGN) {
            return Err(PkgError::BadLayout {
                reason: format!(
                    "data_offset (bytes 32..40) is {}, not a multiple of {ALIGN}",
                    self.data_offset
                ),
            });
        }
        if toc_end > self.data_offset {
            return Err(PkgError::BadLayout {
                reason: format!(
                    "the TOC (bytes {}..{toc_end}) runs into the data section at {}",
                    self.toc_offset, self.data_offset
                ),
            });
        }
        if data_end > file_len {
            return Err(PkgError::Truncated {
                what: "the data section".into(),
                start: self.data_offset,
                end: data_end,
                file_len,
            });
        }
        if data_end < file_len {
            return Err(PkgError::BadLayout {
                reason: format!(
                    "the data section ends at {data_end}, but the file has {file_len} bytes (trailing bytes)"
                ),
            });
        }
        Ok(())
    }

    /// The byte range of the TOC.
    pub fn toc_range(&self) -> std::ops::Range<usize> {
        // Both fit in usize: checked against the file length.
        self.toc_offset as usize..(self.toc_offset + self.toc_len) as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trips_and_refuses_a_flipped_bit() {
        let h = Header {
            major: MAJOR,
            minor: MINOR,
            flags: 0,
            toc_offset: 64,
            toc_len: 10,
            data_offset: 128,
            data_len: 64,
            toc_checksum: 7,
        };
        let b = h.encode();
        assert_eq!(Header::decode(&b, 192).unwrap(), h);
        let mut bad = b;
        bad[20] ^= 1;
        assert!(matches!(
            Header::decode(&bad, 192),
            Err(PkgError::HeaderChecksum { .. })
        ));
        assert!(matches!(
            Header::decode(&b, 191),
            Err(PkgError::Truncated { .. })
        ));
    }
}
