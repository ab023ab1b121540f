//! Shared-secret challenge / response between two ranks.
//!
//! 1. connector -> acceptor: hello = `b"RLXH"`, version, rank, world,
//!    32-byte random nonce, frame check, listen address.
//! 2. acceptor -> connector: 32-byte random nonce `na` and
//!    `MAC(k, "acceptor" | hello | na)`.
//! 3. connector checks it (else: the acceptor does not know the secret)
//!    and answers `MAC(k, "connector" | hello | na)`.
//! 4. acceptor checks it (else: refused and logged) and sends a verdict
//!    byte (accepted, duplicate rank, wrong world size, unexpected rank,
//!    other frame check).
//!
//! `k` is derived from the secret with BLAKE3's `derive_key`; MACs are
//! BLAKE3 keyed hashes; the connection's session key is
//! `MAC(k, "session" | hello | na)`. Both nonces are fresh per connection,
//! so an old answer cannot be replayed.

use super::config::FrameCheck;
use crate::error::{CollectiveError, Result};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

const MAGIC: [u8; 4] = *b"RLXH";
const VERSION: u32 = 2;
const MAX_ADDR: usize = 512;
/// Bytes of a hello before the listen address.
const FIXED: usize = 51;

/// What the acceptor decides about a peer that proved the secret.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    Accept = 0,
    Duplicate = 1,
    WrongWorld = 2,
    UnexpectedRank = 3,
    WrongFrameCheck = 4,
}

/// The connector's introduction.
#[derive(Debug, Clone)]
pub(crate) struct Hello {
    pub rank: usize,
    pub world: usize,
    pub check: FrameCheck,
    pub listen: String,
}

/// The derived secret key.
pub(crate) fn secret_key(secret: &[u8]) -> [u8; 32] {
    blake3::derive_key("rlx-collectives tcp v1 shared secret", secret)
}

fn keyed(key: &[u8; 32], parts: &[&[u8]]) -> blake3::Hash {
    let mut h = blake3::Hasher::new_keyed(key);
    for p in parts {
        h.update(p);
    }
    h.finalize()
}

fn nonce() -> Result<[u8; 32]> {
    let mut n = [0u8; 32];
    getrandom::fill(&mut n)
        .map_err(|e| CollectiveError::InvalidConfig(format!("no OS randomness: {e}")))?;
    Ok(n)
}

fn auth_err(s: &TcpStream, detail: impl Into<String>) -> CollectiveError {
    CollectiveError::AuthFailed {
        peer_addr: s.peer_addr().map_or_else(|_| "?".into(), |a| a.to_string()),
        detail: detail.into(),
    }
}

fn io_auth<'a>(s: &'a TcpStream, step: &str) -> impl Fn(std::io::Error) -> CollectiveError + 'a {
    let step = step.to_string();
    move |e| auth_err(s, format!("{step}: {e}"))
}

fn encode_hello(h: &Hello, nonce: &[u8; 32]) -> Vec<u8> {
    let mut b = Vec::with_capacity(FIXED + h.listen.len());
    b.extend_from_slice(&MAGIC);
    b.extend_from_slice(&VERSION.to_le_bytes());
    b.extend_from_slice(&(h.rank as u32).to_le_bytes());
    b.extend_from_slice(&(h.world as u32).to_le_bytes());
    b.extend_from_slice(nonce);
    b.push(h.check.code());
    b.extend_from_slice(&(h.listen.len() as u16).to_le_bytes());
    b.extend_from_slice(h.listen.as_bytes());
    b
}

/// Runs the connector side; returns the session key. `timeout` bounds each read.
pub(crate) fn connect(
    s: &mut TcpStream,
    key: &[u8; 32],
    hello: &Hello,
    timeout: Duration,
) -> Result<[u8; 32]> {
    s.set_read_timeout(Some(timeout.max(Duration::from_millis(1))))
        .map_err(|e| CollectiveError::io("set read timeout", &e))?;
    let hb = encode_hello(hello, &nonce()?);
    s.write_all(&hb).map_err(io_auth(s, "sending hello"))?;
    let mut ch = [0u8; 64];
    s.read_exact(&mut ch)
        .map_err(io_auth(s, "reading challenge"))?;
    let na = &ch[..32];
    let mac_a: [u8; 32] = ch[32..].try_into().expect("32 bytes");
    if keyed(key, &[b"acceptor", &hb, na]) != blake3::Hash::from_bytes(mac_a) {
        let e = auth_err(s, "the peer does not know the shared secret");
        log::warn!("rlx-collectives: refused {e}");
        return Err(e);
    }
    let mac_c = keyed(key, &[b"connector", &hb, na]);
    s.write_all(mac_c.as_bytes())
        .map_err(io_auth(s, "sending response"))?;
    let mut v = [0u8; 1];
    s.read_exact(&mut v)
        .map_err(io_auth(s, "reading verdict (refused: wrong secret?)"))?;
    match v[0] {
        0 => Ok(*keyed(key, &[b"session", &hb, na]).as_bytes()),
        1 => Err(CollectiveError::DuplicateRank { rank: hello.rank }),
        2 => Err(CollectiveError::RendezvousFailed(format!(
            "{} refused world size {}",
            s.peer_addr().map_or_else(|_| "?".into(), |a| a.to_string()),
            hello.world
        ))),
        4 => Err(CollectiveError::RendezvousFailed(format!(
            "{} refused frame check {:?}: the group uses the other one",
            s.peer_addr().map_or_else(|_| "?".into(), |a| a.to_string()),
            hello.check.name()
        ))),
        x => Err(CollectiveError::RendezvousFailed(format!(
            "peer refused rank {} (verdict {x})",
            hello.rank
        ))),
    }
}

/// Runs the acceptor side; `judge` decides about an authenticated peer.
/// Returns the peer's hello, the verdict sent, and the session key.
pub(crate) fn accept(
    s: &mut TcpStream,
    key: &[u8; 32],
    timeout: Duration,
    judge: impl FnOnce(&Hello) -> Verdict,
) -> Result<(Hello, Verdict, [u8; 32])> {
    s.set_read_timeout(Some(timeout.max(Duration::from_millis(1))))
        .map_err(|e| CollectiveError::io("set read timeout", &e))?;
    let mut fixed = [0u8; FIXED];
    s.read_exact(&mut fixed)
        .map_err(io_auth(s, "reading hello"))?;
    if fixed[..4] != MAGIC {
        return Err(auth_err(s, "not an RLX peer (bad hello magic)"));
    }
    let word = |i: usize| u32::from_le_bytes(fixed[i..i + 4].try_into().expect("4 bytes"));
    if word(4) != VERSION {
        return Err(auth_err(
            s,
            format!("protocol version {} (want {VERSION})", word(4)),
        ));
    }
    let check = FrameCheck::from_code(fixed[48])
        .ok_or_else(|| auth_err(s, format!("unknown frame check {}", fixed[48])))?;
    let alen = u16::from_le_bytes([fixed[49], fixed[50]]) as usize;
    if alen > MAX_ADDR {
        return Err(auth_err(s, format!("listen address of {alen} bytes")));
    }
    let mut addr = vec![0u8; alen];
    s.read_exact(&mut addr)
        .map_err(io_auth(s, "reading hello"))?;
    let mut hb = fixed.to_vec();
    hb.extend_from_slice(&addr);
    let na = nonce()?;
    let mac_a = keyed(key, &[b"acceptor", &hb, &na]);
    let mut ch = na.to_vec();
    ch.extend_from_slice(mac_a.as_bytes());
    s.write_all(&ch).map_err(io_auth(s, "sending challenge"))?;
    let mut mac_c = [0u8; 32];
    s.read_exact(&mut mac_c).map_err(io_auth(
        s,
        "reading response (the peer has a different secret?)",
    ))?;
    if keyed(key, &[b"connector", &hb, &na]) != blake3::Hash::from_bytes(mac_c) {
        return Err(auth_err(
            s,
            "wrong response: the peer does not know the shared secret",
        ));
    }
    let hello = Hello {
        rank: word(8) as usize,
        world: word(12) as usize,
        check,
        listen: String::from_utf8(addr).map_err(|_| auth_err(s, "listen address is not UTF-8"))?,
    };
    let verdict = judge(&hello);
    s.write_all(&[verdict as u8])
        .map_err(io_auth(s, "sending verdict"))?;
    Ok((
        hello,
        verdict,
        *keyed(key, &[b"session", &hb, &na]).as_bytes(),
    ))
}
