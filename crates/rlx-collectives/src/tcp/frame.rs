//! Length-prefixed, checked (MAC or checksum) frames on a connection.
//!
//! A frame is a 32-byte header (`b"RLXF"`, kind u32, tag u64, sequence
//! u64, payload length u64; little-endian), the payload, and a trailer over
//! (header, sender rank, payload): with [`FrameCheck::Mac`] a 32-byte
//! BLAKE3 keyed hash under the connection's session key, with
//! [`FrameCheck::Checksum`] a 16-byte XXH3-128 seeded from that key.
//! Sequence numbers count the frames of one direction of one connection
//! from 0, so a dropped, replayed or reordered frame fails the check as
//! well as a changed byte.

use super::config::{FaultKind, FrameCheck};
use crate::error::CollectiveError;
use std::io::{ErrorKind, IoSlice, Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

const MAGIC: [u8; 4] = *b"RLXF";
const HEADER: usize = 32;

/// Frame kinds.
pub(crate) const DATA: u32 = 0;
/// Rendezvous control frames (address table, ready, go, abort).
pub(crate) const CONTROL: u32 = 1;

/// One received frame.
pub(crate) struct Frame {
    pub kind: u32,
    pub tag: u64,
    pub payload: Vec<u8>,
}

/// Why reading a frame stopped.
pub(crate) enum ReadError {
    /// The group is shutting down.
    Stopped,
    /// The peer closed the connection between frames.
    Closed,
    /// No frame started before the deadline.
    Idle,
    /// A named failure.
    Failed(CollectiveError),
}

/// What checks the frames of one connection: its session key and the
/// group's [`FrameCheck`].
#[derive(Clone, Copy)]
pub(crate) struct Seal {
    pub key: [u8; 32],
    pub check: FrameCheck,
}

/// A frame's trailer: the MAC or checksum bytes (`len` of them are sent).
struct Trailer {
    bytes: [u8; 32],
    len: usize,
}

impl Trailer {
    fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }

    /// Whether `got` is this trailer (in constant time for a MAC).
    fn matches(&self, got: &[u8]) -> bool {
        match self.len {
            32 => got
                .try_into()
                .is_ok_and(|g: [u8; 32]| blake3::Hash::from_bytes(g) == self.bytes),
            _ => got == self.as_bytes(),
        }
    }
}

impl Seal {
    fn trailer_len(&self) -> usize {
        match self.check {
            FrameCheck::Mac => 32,
            FrameCheck::Checksum => 16,
        }
    }

    fn trailer(&self, header: &[u8], from: usize, payload: &[&[u8]]) -> Trailer {
        let from = (from as u64).to_le_bytes();
        let mut bytes = [0u8; 32];
        match self.check {
            FrameCheck::Mac => {
                let mut h = blake3::Hasher::new_keyed(&self.key);
                h.update(header);
                h.update(&from);
                payload.iter().for_each(|p| {
                    h.update(p);
                });
                bytes = *h.finalize().as_bytes();
            }
            FrameCheck::Checksum => {
                let seed = u64::from_le_bytes(self.key[..8].try_into().expect("8 bytes"));
                // twox-hash picks AVX2 at run time (xxhash-rust only what
                // the build targets: SSE2), twice as fast on large frames.
                let mut h = twox_hash::XxHash3_128::with_seed(seed);
                h.write(header);
                h.write(&from);
                payload.iter().for_each(|p| h.write(p));
                bytes[..16].copy_from_slice(&h.finish_128().to_le_bytes());
            }
        }
        Trailer {
            bytes,
            len: self.trailer_len(),
        }
    }
}

fn header(kind: u32, tag: u64, seq: u64, len: u64) -> [u8; HEADER] {
    let mut h = [0u8; HEADER];
    h[..4].copy_from_slice(&MAGIC);
    h[4..8].copy_from_slice(&kind.to_le_bytes());
    h[8..16].copy_from_slice(&tag.to_le_bytes());
    h[16..24].copy_from_slice(&seq.to_le_bytes());
    h[24..32].copy_from_slice(&len.to_le_bytes());
    h
}

/// Writes one frame from rank `from` whose payload is the concatenation
/// of `payload` (written piece by piece, never copied), applying `fault` if
/// given. A truncating or oversize fault leaves the stream unusable and
/// returns an error.
#[allow(clippy::too_many_arguments)]
pub(crate) fn write_frame(
    w: &mut TcpStream,
    seal: &Seal,
    from: usize,
    seq: u64,
    kind: u32,
    tag: u64,
    payload: &[&[u8]],
    fault: Option<FaultKind>,
) -> std::io::Result<()> {
    let len: usize = payload.iter().map(|p| p.len()).sum();
    let h = header(kind, tag, seq, len as u64);
    let m = seal.trailer(&h, from, payload);
    match fault {
        Some(FaultKind::Truncate) => {
            w.write_all(&h)?;
            w.write_all(&payload.concat()[..len / 2])?;
            w.flush()?;
            return Err(std::io::Error::other("fault injected: truncated frame"));
        }
        Some(FaultKind::Oversize) => {
            w.write_all(&header(kind, tag, seq, u64::MAX / 2))?;
            w.flush()?;
            return Err(std::io::Error::other("fault injected: oversize frame"));
        }
        Some(FaultKind::Corrupt) => {
            let mut bad = payload.concat();
            let mut bad_mac = m.as_bytes().to_vec();
            match bad.last_mut() {
                Some(b) => *b ^= 0x10,
                None => bad_mac[0] ^= 0x10,
            }
            w.write_all(&h)?;
            w.write_all(&bad)?;
            w.write_all(&bad_mac)?;
            return w.flush();
        }
        _ => {}
    }
    let mut parts: Vec<IoSlice<'_>> = Vec::with_capacity(payload.len() + 2);
    parts.push(IoSlice::new(&h));
    parts.extend(payload.iter().map(|p| IoSlice::new(p)));
    parts.push(IoSlice::new(m.as_bytes()));
    write_all_vectored(w, &mut parts)?;
    w.flush()
}

/// Writes every byte of `parts` with as few `writev` calls as the socket
/// takes: one per frame in the common case, where three `write`s would
/// each push a segment (the socket has `TCP_NODELAY`), the header and the
/// trailer as tiny packets of their own.
fn write_all_vectored(w: &mut TcpStream, mut parts: &mut [IoSlice<'_>]) -> std::io::Result<()> {
    while !parts.is_empty() {
        match w.write_vectored(parts) {
            Ok(0) => return Err(ErrorKind::WriteZero.into()),
            Ok(n) => IoSlice::advance_slices(&mut parts, n),
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

enum Fill {
    Full,
    Eof(usize),
    Stalled(usize),
    Idle,
    Stopped,
    Io(std::io::Error),
}

/// Fills `buf`. Before the first byte waits until `first` (forever if
/// `None`); after it, fails when no byte arrives for `stall`.
fn fill(
    s: &mut TcpStream,
    buf: &mut [u8],
    first: Option<Instant>,
    stall: Duration,
    stop: Option<&AtomicBool>,
) -> Fill {
    let mut got = 0;
    let mut last = Instant::now();
    while got < buf.len() {
        match s.read(&mut buf[got..]) {
            Ok(0) => return Fill::Eof(got),
            Ok(k) => {
                got += k;
                last = Instant::now();
            }
            Err(e)
                if matches!(
                    e.kind(),
                    ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted
                ) =>
            {
                if stop.is_some_and(|f| f.load(Ordering::Relaxed)) {
                    return Fill::Stopped;
                }
                let now = Instant::now();
                if got == 0 {
                    if first.is_some_and(|d| now >= d) {
                        return Fill::Idle;
                    }
                } else if now.duration_since(last) >= stall {
                    return Fill::Stalled(got);
                }
            }
            Err(e) => return Fill::Io(e),
        }
    }
    Fill::Full
}

/// Appends `n` bytes to `buf` (reading into its spare capacity: no zero
/// fill first); fails like [`fill`] when no byte arrives for `stall`.
fn fill_vec(
    s: &mut TcpStream,
    buf: &mut Vec<u8>,
    n: usize,
    stall: Duration,
    stop: Option<&AtomicBool>,
) -> Fill {
    let (start, end) = (buf.len(), buf.len() + n);
    buf.reserve_exact(n);
    let mut last = Instant::now();
    while buf.len() < end {
        let before = buf.len();
        let res = (&mut *s).take((end - before) as u64).read_to_end(buf);
        if buf.len() > before {
            last = Instant::now();
        }
        match res {
            Ok(_) if buf.len() < end => return Fill::Eof(buf.len() - start),
            Ok(_) => {}
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                if stop.is_some_and(|f| f.load(Ordering::Relaxed)) {
                    return Fill::Stopped;
                }
                if last.elapsed() >= stall {
                    return Fill::Stalled(buf.len() - start);
                }
            }
            Err(e) => return Fill::Io(e),
        }
    }
    Fill::Full
}

/// Reads one frame from rank `peer`, whose sequence number must be `seq`.
/// The stream must have a short read timeout (it is the polling interval).
/// The payload is read into `buffer(bytes)` (an empty vector; hand out a
/// recycled one that holds `bytes` to skip an allocation), asked for once
/// the header announced the length.
#[allow(clippy::too_many_arguments)]
pub(crate) fn read_frame(
    s: &mut TcpStream,
    seal: &Seal,
    peer: usize,
    seq: u64,
    max: u64,
    first: Option<Instant>,
    stall: Duration,
    stop: Option<&AtomicBool>,
    buffer: impl FnOnce(usize) -> Vec<u8>,
) -> Result<Frame, ReadError> {
    let disconnected = |e: std::io::Error| {
        ReadError::Failed(CollectiveError::PeerDisconnected {
            peer,
            detail: e.to_string(),
        })
    };
    let truncated = |what: &str, got: usize, of: u64, how: &str| {
        ReadError::Failed(CollectiveError::TruncatedFrame {
            peer,
            detail: format!("{how} after {got} of {of} {what} bytes"),
        })
    };
    let mut h = [0u8; HEADER];
    match fill(s, &mut h, first, stall, stop) {
        Fill::Full => {}
        Fill::Eof(0) => return Err(ReadError::Closed),
        Fill::Eof(n) => return Err(truncated("header", n, HEADER as u64, "connection closed")),
        Fill::Stalled(n) => return Err(truncated("header", n, HEADER as u64, "stalled")),
        Fill::Idle => return Err(ReadError::Idle),
        Fill::Stopped => return Err(ReadError::Stopped),
        Fill::Io(e) => return Err(disconnected(e)),
    }
    let corrupt =
        |reason: String| ReadError::Failed(CollectiveError::CorruptFrame { peer, reason });
    if h[..4] != MAGIC {
        return Err(corrupt(format!("bad magic {:02x?}", &h[..4])));
    }
    let word = |i: usize| u64::from_le_bytes(h[i..i + 8].try_into().expect("8 bytes"));
    let kind = u32::from_le_bytes(h[4..8].try_into().expect("4 bytes"));
    let (tag, got_seq, len) = (word(8), word(16), word(24));
    if len > max {
        return Err(ReadError::Failed(CollectiveError::FrameTooLarge {
            peer,
            len,
            max,
        }));
    }
    let trailer = seal.trailer_len();
    let mut body = buffer(len as usize + trailer);
    body.clear();
    match fill_vec(s, &mut body, len as usize + trailer, stall, stop) {
        Fill::Full => {}
        Fill::Eof(n) => {
            return Err(truncated(
                "payload",
                n,
                len + trailer as u64,
                "connection closed",
            ))
        }
        Fill::Stalled(n) => return Err(truncated("payload", n, len + trailer as u64, "stalled")),
        Fill::Idle => return Err(truncated("payload", 0, len + trailer as u64, "stalled")),
        Fill::Stopped => return Err(ReadError::Stopped),
        Fill::Io(e) => return Err(disconnected(e)),
    }
    let (payload, tail) = body.split_at(len as usize);
    if !seal.trailer(&h, peer, &[payload]).matches(tail) {
        return Err(corrupt(format!(
            "{} mismatch (changed bytes or wrong key)",
            seal.check.name()
        )));
    }
    if got_seq != seq {
        return Err(corrupt(format!(
            "sequence {got_seq} where {seq} was expected"
        )));
    }
    body.truncate(len as usize);
    Ok(Frame {
        kind,
        tag,
        payload: body,
    })
}
