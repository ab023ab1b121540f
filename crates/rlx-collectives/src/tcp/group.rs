//! [`TcpGroup`]: a full mesh of authenticated TCP connections.

use super::config::{FaultKind, TcpConfig};
use super::conn::Conn;
use super::frame::{self, ReadError, Seal, DATA};
use super::rendezvous;
use crate::error::{CollectiveError, Result};
use crate::group::{check_rank, GroupId, ProcessGroup, Tag};
use crate::mailbox::Mailbox;
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

struct Writer {
    stream: TcpStream,
    seal: Seal,
    seq: u64,
}

/// State the group shares with its reader threads.
struct Shared {
    rank: usize,
    mailbox: Mailbox,
    stop: AtomicBool,
    /// Clones of every peer socket, to shut them all down at once.
    sockets: Vec<TcpStream>,
}

impl Shared {
    /// Fails the group: every receive errors, every socket is shut down so
    /// that the peers learn of it at once.
    fn fail(&self, why: &CollectiveError) {
        if self.mailbox.failure().is_none() {
            log::warn!(
                "rlx-collectives: rank {} failed its TCP group: {why}",
                self.rank
            );
        }
        self.mailbox.fail(why);
        self.stop.store(true, Ordering::Relaxed);
        for s in &self.sockets {
            let _ = s.shutdown(Shutdown::Both);
        }
    }
}

/// One rank of a process group over TCP (`std::net`).
///
/// Formed by [`TcpGroup::join`]; see [`TcpConfig`] for the rendezvous, and
/// the module docs of `tcp::frame` / `tcp::handshake` for the wire format.
/// Each peer connection has a reader thread that queues incoming frames, so
/// sends never wait for the peer to call `recv`. Every receive waits at
/// most [`TcpConfig::timeout`]. After any transport error the group is
/// failed: its sockets are shut (the peers see the disconnect at once),
/// later receives return the error that failed it and later sends
/// [`CollectiveError::GroupFailed`].
pub struct TcpGroup {
    rank: usize,
    world: usize,
    timeout: Duration,
    writers: Vec<Option<Mutex<Writer>>>,
    shared: Arc<Shared>,
    readers: Vec<JoinHandle<()>>,
    seq: AtomicU32,
    frames_sent: AtomicU64,
    fault: Option<super::config::Fault>,
}

impl TcpGroup {
    /// Joins the group described by `cfg` (rank 0 binds `cfg.coordinator`).
    /// Returns once every rank is connected to every other, or an error on
    /// every rank that could not finish.
    pub fn join(cfg: TcpConfig) -> Result<Self> {
        cfg.validate()?;
        if cfg.rank == 0 {
            let l = TcpListener::bind(&cfg.coordinator).map_err(|e| {
                CollectiveError::io(
                    format!("binding the coordinator address {}", cfg.coordinator),
                    &e,
                )
            })?;
            return Self::join_with_listener(cfg, l);
        }
        let conns = rendezvous::form_peer(&cfg)?;
        Self::start(cfg, conns)
    }

    /// Rank 0 only: joins with an already bound coordinator listener (for
    /// example bound to port 0, so the OS picks a free port).
    pub fn join_with_listener(cfg: TcpConfig, listener: TcpListener) -> Result<Self> {
        cfg.validate()?;
        if cfg.rank != 0 {
            return Err(CollectiveError::InvalidConfig(format!(
                "only rank 0 listens for the rendezvous, not rank {}",
                cfg.rank
            )));
        }
        let conns = rendezvous::form_root(&cfg, listener)?;
        Self::start(cfg, conns)
    }

    fn start(cfg: TcpConfig, conns: Vec<Option<Conn>>) -> Result<Self> {
        let mut sockets = Vec::new();
        let mut writers = Vec::new();
        let mut reading = Vec::new();
        for c in conns {
            match c {
                None => writers.push(None),
                Some(c) => {
                    let clone = |s: &TcpStream| {
                        s.try_clone()
                            .map_err(|e| CollectiveError::io("cloning a peer socket", &e))
                    };
                    sockets.push(clone(&c.stream)?);
                    reading.push((clone(&c.stream)?, c.seal, c.peer, c.recv_seq));
                    c.stream
                        .set_write_timeout(Some(cfg.timeout))
                        .map_err(|e| CollectiveError::io("setting the write timeout", &e))?;
                    writers.push(Some(Mutex::new(Writer {
                        stream: c.stream,
                        seal: c.seal,
                        seq: c.send_seq,
                    })));
                }
            }
        }
        let shared = Arc::new(Shared {
            rank: cfg.rank,
            mailbox: Mailbox::new(cfg.world),
            stop: AtomicBool::new(false),
            sockets,
        });
        let mut readers = Vec::new();
        for (stream, seal, peer, seq) in reading {
            let sh = shared.clone();
            let (max, stall) = (cfg.max_frame, cfg.timeout);
            let h = std::thread::Builder::new()
                .name(format!("rlx-tcp-{}<-{}", cfg.rank, peer))
                .spawn(move || read_loop(sh, stream, seal, peer, seq, max, stall))
                .map_err(|e| CollectiveError::io("spawning a reader thread", &e))?;
            readers.push(h);
        }
        Ok(TcpGroup {
            rank: cfg.rank,
            world: cfg.world,
            timeout: cfg.timeout,
            writers,
            shared,
            readers,
            seq: AtomicU32::new(0),
            frames_sent: AtomicU64::new(0),
            fault: cfg.fault,
        })
    }

    fn fail(&self, e: CollectiveError) -> CollectiveError {
        self.shared.fail(&e);
        e
    }
}

#[allow(clippy::too_many_arguments)]
fn read_loop(
    sh: Arc<Shared>,
    mut s: TcpStream,
    seal: Seal,
    peer: usize,
    mut seq: u64,
    max: u64,
    stall: Duration,
) {
    loop {
        match frame::read_frame(
            &mut s,
            &seal,
            peer,
            seq,
            max,
            None,
            stall,
            Some(&sh.stop),
            |bytes| sh.mailbox.spare_buffer(bytes),
        ) {
            Ok(f) if f.kind == DATA => {
                seq += 1;
                sh.mailbox.push(peer, Tag(f.tag), f.payload);
            }
            Ok(f) => {
                sh.fail(&CollectiveError::CorruptFrame {
                    peer,
                    reason: format!("unexpected frame kind {}", f.kind),
                });
                return;
            }
            Err(ReadError::Stopped) => return,
            Err(ReadError::Idle) => continue,
            Err(ReadError::Closed) => {
                sh.mailbox.close(
                    peer,
                    CollectiveError::PeerDisconnected {
                        peer,
                        detail: "connection closed".into(),
                    },
                );
                return;
            }
            Err(ReadError::Failed(e)) => {
                log::warn!("rlx-collectives: rank {} <- rank {peer}: {e}", sh.rank);
                sh.mailbox.close(peer, e.clone());
                if !matches!(e, CollectiveError::PeerDisconnected { .. }) {
                    sh.fail(&e);
                }
                return;
            }
        }
    }
}

impl ProcessGroup for TcpGroup {
    fn rank(&self) -> usize {
        self.rank
    }
    fn world_size(&self) -> usize {
        self.world
    }
    fn group_id(&self) -> GroupId {
        GroupId(0)
    }
    fn next_op(&self) -> u32 {
        self.seq.fetch_add(1, Ordering::Relaxed)
    }

    fn send(&self, dst: usize, tag: Tag, data: &[u8]) -> Result<()> {
        self.send_parts(dst, tag, &[data])
    }

    fn send_parts(&self, dst: usize, tag: Tag, data: &[&[u8]]) -> Result<()> {
        check_rank(self, dst)?;
        if let Some(f) = self.shared.mailbox.failure() {
            return Err(f);
        }
        let Some(w) = &self.writers[dst] else {
            self.shared.mailbox.push(self.rank, tag, data.concat());
            return Ok(());
        };
        let n = self.frames_sent.fetch_add(1, Ordering::Relaxed);
        let fault = self.fault.filter(|f| f.at_frame == n).map(|f| f.kind);
        match fault {
            Some(FaultKind::Stall(d)) => std::thread::sleep(d),
            Some(FaultKind::Die) => {
                return Err(self.fail(CollectiveError::GroupFailed(
                    "fault injected: rank died".into(),
                )));
            }
            _ => {}
        }
        let mut w = w.lock().unwrap_or_else(|p| p.into_inner());
        let Writer { stream, seal, seq } = &mut *w;
        let wrote = frame::write_frame(stream, seal, self.rank, *seq, DATA, tag.0, data, fault);
        *seq += 1;
        drop(w);
        wrote.map_err(|e| {
            // A write that fails because this group was just failed (its
            // sockets shut by a reader that found a bad frame) reports
            // that cause, not the broken pipe it led to.
            if let Some(cause) = self.shared.mailbox.cause() {
                return cause;
            }
            let err = match e.kind() {
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut => {
                    CollectiveError::Timeout {
                        peer: dst,
                        after: self.timeout,
                        what: "the peer to accept data".into(),
                    }
                }
                _ => CollectiveError::PeerDisconnected {
                    peer: dst,
                    detail: format!("sending: {e}"),
                },
            };
            self.fail(err)
        })
    }

    fn send_recv_parts(
        &self,
        dst: usize,
        parts: &[&[u8]],
        src: usize,
        tag: Tag,
    ) -> Result<Vec<u8>> {
        // Sends never wait for the peer's recv (reader threads queue), so
        // sending first cannot deadlock.
        self.send_parts(dst, tag, parts)?;
        self.recv(src, tag)
    }

    fn recv(&self, src: usize, tag: Tag) -> Result<Vec<u8>> {
        check_rank(self, src)?;
        self.shared
            .mailbox
            .take(src, tag, self.timeout)
            .map_err(|e| self.fail(e))
    }

    fn recycle(&self, buf: Vec<u8>) {
        self.shared.mailbox.recycle(buf);
    }
    fn sends_never_wait(&self) -> bool {
        true // reader threads drain every connection into the mailbox
    }
    fn abort(&self, why: &CollectiveError) {
        self.shared.fail(why);
    }
}

impl Drop for TcpGroup {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        for s in &self.shared.sockets {
            let _ = s.shutdown(Shutdown::Both);
        }
        for h in self.readers.drain(..) {
            let _ = h.join();
        }
    }
}
