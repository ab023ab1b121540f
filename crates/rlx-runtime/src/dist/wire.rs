//! Versioned frames for ship-graph messages and a small binary codec.
//!
//! A frame is `b"RLXD" | version u16 | kind u8 | 0u8 | body length u64 |
//! body`, sent as one process-group message. The receiver checks the magic,
//! the version, the kind it expects and the length (against the message and
//! against [`MAX_MESSAGE`]) before it decodes anything; the body decoder
//! refuses to read past its end. Integers are little-endian.

use super::error::{DistError, DistResult};
use rlx_collectives::{ProcessGroup, Tag};
use rlx_ir::{DType, HostTensor};

const MAGIC: &[u8; 4] = b"RLXD";
/// The frame format version this build speaks.
pub const WIRE_VERSION: u16 = 1;
/// Largest message body accepted (4 GiB); the transport has its own cap too.
pub const MAX_MESSAGE: u64 = 1 << 32;
const HEADER: usize = 16;

/// What a frame carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Kind {
    Stage = 1,
    Activation = 2,
    Stop = 3,
    Train = 4,
    Caps = 5,
    Shard = 6,
    Report = 7,
}

impl Kind {
    fn from_u8(b: u8) -> Option<Kind> {
        Some(match b {
            1 => Kind::Stage,
            2 => Kind::Activation,
            3 => Kind::Stop,
            4 => Kind::Train,
            5 => Kind::Caps,
            6 => Kind::Shard,
            7 => Kind::Report,
            _ => return None,
        })
    }
}

/// The user tag ship-graph frames travel under (one per kind family).
pub(crate) fn tag(pg: &dyn ProcessGroup, channel: u32) -> Tag {
    Tag::user(pg.group_id(), 0x5D00 + channel)
}

/// Channels (message streams between one pair of ranks).
pub(crate) const CH_CONTROL: u32 = 1;
pub(crate) const CH_ACTIVATION: u32 = 2;
pub(crate) const CH_SHARD: u32 = 3;

/// Frames `body` as `kind`.
pub(crate) fn frame(kind: Kind, body: &[u8]) -> Vec<u8> {
    let mut f = Vec::with_capacity(HEADER + body.len());
    f.extend_from_slice(MAGIC);
    f.extend_from_slice(&WIRE_VERSION.to_le_bytes());
    f.push(kind as u8);
    f.push(0);
    f.extend_from_slice(&(body.len() as u64).to_le_bytes());
    f.extend_from_slice(body);
    f
}

/// Checks a frame from `peer` and returns its kind and body.
pub(crate) fn unframe(peer: usize, msg: &[u8]) -> DistResult<(Kind, &[u8])> {
    let bad = |reason: String| DistError::BadMessage { peer, reason };
    if msg.len() < HEADER {
        return Err(bad(format!(
            "truncated header: {} of {HEADER} bytes",
            msg.len()
        )));
    }
    if &msg[..4] != MAGIC {
        return Err(bad("not a ship-graph frame (bad magic)".into()));
    }
    let version = u16::from_le_bytes([msg[4], msg[5]]);
    if version != WIRE_VERSION {
        return Err(bad(format!(
            "frame version {version}, this build speaks {WIRE_VERSION}"
        )));
    }
    let kind = Kind::from_u8(msg[6]).ok_or_else(|| bad(format!("unknown kind {}", msg[6])))?;
    let len = u64::from_le_bytes(msg[8..16].try_into().expect("8 bytes"));
    if len > MAX_MESSAGE {
        return Err(DistError::TooLarge {
            what: format!("frame from rank {peer}"),
            len,
            max: MAX_MESSAGE,
        });
    }
    let body = &msg[HEADER..];
    if body.len() as u64 != len {
        return Err(bad(format!(
            "body of {} bytes where the header says {len}",
            body.len()
        )));
    }
    Ok((kind, body))
}

/// Sends `body` framed as `kind` to `dst` on `channel`.
pub(crate) fn send_frame(
    pg: &dyn ProcessGroup,
    dst: usize,
    channel: u32,
    kind: Kind,
    body: &[u8],
) -> DistResult<()> {
    pg.send(dst, tag(pg, channel), &frame(kind, body))?;
    Ok(())
}

/// Receives one frame from `src` on `channel`.
pub(crate) fn recv_frame(
    pg: &dyn ProcessGroup,
    src: usize,
    channel: u32,
) -> DistResult<(Kind, Vec<u8>)> {
    let msg = pg.recv(src, tag(pg, channel))?;
    let (kind, body) = unframe(src, &msg)?;
    Ok((kind, body.to_vec()))
}

/// Receives a frame that must be of kind `want`.
pub(crate) fn expect_frame(
    pg: &dyn ProcessGroup,
    src: usize,
    channel: u32,
    want: Kind,
) -> DistResult<Vec<u8>> {
    let (kind, body) = recv_frame(pg, src, channel)?;
    if kind != want {
        return Err(DistError::BadMessage {
            peer: src,
            reason: format!("expected a {want:?} frame, got {kind:?}"),
        });
    }
    Ok(body)
}

/// Receives a frame whose kind is one of `want`.
pub(crate) fn expect_kinds(
    pg: &dyn ProcessGroup,
    src: usize,
    channel: u32,
    want: &[Kind],
) -> DistResult<(Kind, Vec<u8>)> {
    let (kind, body) = recv_frame(pg, src, channel)?;
    if !want.contains(&kind) {
        return Err(DistError::BadMessage {
            peer: src,
            reason: format!("expected one of {want:?}, got a {kind:?} frame"),
        });
    }
    Ok((kind, body))
}

/// Appends values to a message body.
#[derive(Default)]
pub(crate) struct Writer(pub Vec<u8>);

impl Writer {
    pub fn u64(&mut self, v: u64) -> &mut Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    pub fn f64(&mut self, v: f64) -> &mut Self {
        self.u64(v.to_bits())
    }
    pub fn bytes(&mut self, b: &[u8]) -> &mut Self {
        self.u64(b.len() as u64);
        self.0.extend_from_slice(b);
        self
    }
    pub fn str(&mut self, s: &str) -> &mut Self {
        self.bytes(s.as_bytes())
    }
    pub fn tensor(&mut self, t: &HostTensor) -> &mut Self {
        self.str(t.dtype().short_name()).u64(t.dims().len() as u64);
        for &d in t.dims() {
            self.u64(d as u64);
        }
        self.bytes(t.bytes())
    }
}

/// Reads values back from a message body; never reads past its end.
pub(crate) struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
    peer: usize,
}

impl<'a> Reader<'a> {
    pub fn new(peer: usize, buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0, peer }
    }
    fn bad(&self, reason: impl Into<String>) -> DistError {
        DistError::BadMessage {
            peer: self.peer,
            reason: reason.into(),
        }
    }
    fn take(&mut self, n: u64) -> DistResult<&'a [u8]> {
        let left = (self.buf.len() - self.pos) as u64;
        if n > left {
            return Err(self.bad(format!(
                "body ends early: {n} bytes wanted at offset {}, {left} left",
                self.pos
            )));
        }
        let s = &self.buf[self.pos..self.pos + n as usize];
        self.pos += n as usize;
        Ok(s)
    }
    pub fn u64(&mut self) -> DistResult<u64> {
        Ok(u64::from_le_bytes(
            self.take(8)?.try_into().expect("8 bytes"),
        ))
    }
    pub fn usize(&mut self) -> DistResult<usize> {
        let v = self.u64()?;
        usize::try_from(v).map_err(|_| self.bad(format!("{v} does not fit a usize")))
    }
    pub fn f64(&mut self) -> DistResult<f64> {
        Ok(f64::from_bits(self.u64()?))
    }
    pub fn bytes(&mut self) -> DistResult<&'a [u8]> {
        let n = self.u64()?;
        self.take(n)
    }
    pub fn str(&mut self) -> DistResult<String> {
        let b = self.bytes()?;
        String::from_utf8(b.to_vec()).map_err(|_| self.bad("a string is not UTF-8"))
    }
    pub fn tensor(&mut self) -> DistResult<HostTensor> {
        let name = self.str()?;
        let dtype =
            DType::parse(&name).ok_or_else(|| self.bad(format!("unknown dtype {name:?}")))?;
        let rank = self.usize()?;
        if rank > 16 {
            return Err(self.bad(format!("tensor of rank {rank}")));
        }
        let dims = (0..rank)
            .map(|_| self.usize())
            .collect::<DistResult<Vec<_>>>()?;
        let bytes = self.bytes()?.to_vec();
        HostTensor::from_bytes(dtype, &dims, bytes).map_err(|e| self.bad(e.to_string()))
    }
    /// Errors unless every byte was read.
    pub fn finish(&self) -> DistResult<()> {
        if self.pos != self.buf.len() {
            return Err(self.bad(format!("{} trailing bytes", self.buf.len() - self.pos)));
        }
        Ok(())
    }
}
