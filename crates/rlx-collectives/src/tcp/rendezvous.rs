//! Forming the full mesh: rank 0 collects every rank's listen address and
//! hands out the table; rank `i` connects to ranks `1..i` and accepts ranks
//! `i+1..n`; everyone reports ready to rank 0, which says go (or abort, with
//! the reason, to everyone).

use super::config::TcpConfig;
use super::conn::Conn;
use super::handshake::{self, Hello, Verdict};
use crate::error::{CollectiveError, Result};
use std::io::ErrorKind;
use std::net::{TcpListener, TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

const TABLE: u8 = b'T';
const READY: u8 = b'R';
const FAIL: u8 = b'F';
const GO: u8 = b'G';
const ABORT: u8 = b'A';

fn remaining(deadline: Instant) -> Duration {
    deadline.saturating_duration_since(Instant::now())
}

fn rdv_timeout(cfg: &TcpConfig, what: String) -> CollectiveError {
    CollectiveError::RendezvousFailed(format!("{what} within {:?}", cfg.rendezvous_timeout))
}

/// Accepts authenticated peers on `listener` until `count` ranks for which
/// `expected` holds have joined; stores them in `conns` (and their listen
/// addresses in `addrs`). Peers that fail authentication are refused and
/// logged; a duplicate or unexpected rank fails the rendezvous.
#[allow(clippy::too_many_arguments)]
fn accept_peers(
    cfg: &TcpConfig,
    key: &[u8; 32],
    listener: &TcpListener,
    conns: &mut [Option<Conn>],
    mut addrs: Option<&mut Vec<String>>,
    expected: impl Fn(usize) -> bool,
    count: usize,
    deadline: Instant,
) -> Result<()> {
    let mut joined = 0;
    while joined < count {
        let (mut s, from) = match listener.accept() {
            Ok(x) => x,
            Err(e) if e.kind() == ErrorKind::WouldBlock => {
                if Instant::now() >= deadline {
                    let missing: Vec<usize> = (0..conns.len())
                        .filter(|&r| expected(r) && conns[r].is_none())
                        .collect();
                    return Err(rdv_timeout(
                        cfg,
                        format!("ranks {missing:?} did not join rank {}", cfg.rank),
                    ));
                }
                std::thread::sleep(Duration::from_millis(5));
                continue;
            }
            Err(e) => return Err(CollectiveError::io("accepting a peer", &e)),
        };
        if let Err(e) = s.set_nonblocking(false) {
            log::warn!(
                "rlx-collectives: rank {}: dropping connection from {from}: {e}",
                cfg.rank
            );
            continue;
        }
        let t = remaining(deadline).min(cfg.timeout);
        let judge = |h: &Hello| {
            if h.world != cfg.world {
                Verdict::WrongWorld
            } else if h.check != cfg.frame_check {
                Verdict::WrongFrameCheck
            } else if h.rank >= conns.len() || !expected(h.rank) {
                Verdict::UnexpectedRank
            } else if conns[h.rank].is_some() {
                Verdict::Duplicate
            } else {
                Verdict::Accept
            }
        };
        match handshake::accept(&mut s, key, t, judge) {
            Err(e) => {
                log::warn!(
                    "rlx-collectives: rank {} refused a connection from {from}: {e}",
                    cfg.rank
                );
            }
            Ok((h, Verdict::Accept, session)) => {
                if let Some(a) = addrs.as_deref_mut() {
                    a[h.rank] = h.listen.clone();
                }
                conns[h.rank] = Some(Conn::new(s, session, cfg.frame_check, h.rank)?);
                joined += 1;
            }
            Ok((h, Verdict::Duplicate, _)) => {
                log::warn!(
                    "rlx-collectives: rank {} refused {from}: rank {} joined twice",
                    cfg.rank,
                    h.rank
                );
                return Err(CollectiveError::DuplicateRank { rank: h.rank });
            }
            Ok((h, v, _)) => {
                let mut why = format!("{from} joined as rank {} of {} ({v:?})", h.rank, h.world);
                if v == Verdict::WrongFrameCheck {
                    why += &format!(
                        ": frame check {:?} where this group uses {:?}",
                        h.check.name(),
                        cfg.frame_check.name()
                    );
                }
                log::warn!("rlx-collectives: rank {} refused {why}", cfg.rank);
                return Err(CollectiveError::RendezvousFailed(why));
            }
        }
    }
    Ok(())
}

/// Connects to `addr` and authenticates as this rank, retrying refused
/// connections until `deadline`.
fn connect_to(
    cfg: &TcpConfig,
    key: &[u8; 32],
    addr: &str,
    peer: usize,
    listen: &str,
    deadline: Instant,
) -> Result<Conn> {
    let hello = Hello {
        rank: cfg.rank,
        world: cfg.world,
        check: cfg.frame_check,
        listen: listen.to_string(),
    };
    loop {
        let resolved: Vec<_> = addr
            .to_socket_addrs()
            .map_err(|e| CollectiveError::InvalidConfig(format!("address {addr:?}: {e}")))?
            .collect();
        let attempt = resolved.iter().find_map(|a| {
            TcpStream::connect_timeout(
                a,
                remaining(deadline).clamp(Duration::from_millis(1), Duration::from_secs(1)),
            )
            .ok()
        });
        if let Some(mut s) = attempt {
            let session =
                handshake::connect(&mut s, key, &hello, remaining(deadline).min(cfg.timeout))?;
            return Conn::new(s, session, cfg.frame_check, peer);
        }
        if Instant::now() >= deadline {
            return Err(rdv_timeout(
                cfg,
                format!("rank {} could not reach rank {peer} at {addr}", cfg.rank),
            ));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn abort_all(cfg: &TcpConfig, conns: &mut [Option<Conn>], reason: &str) {
    let mut msg = vec![ABORT];
    msg.extend_from_slice(reason.as_bytes());
    for c in conns.iter_mut().flatten() {
        let _ = c.send_ctl(cfg.rank, &msg);
    }
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Rank 0's side: returns one connection per other rank.
pub(crate) fn form_root(cfg: &TcpConfig, listener: TcpListener) -> Result<Vec<Option<Conn>>> {
    let key = handshake::secret_key(&cfg.secret);
    let deadline = Instant::now() + cfg.rendezvous_timeout;
    listener
        .set_nonblocking(true)
        .map_err(|e| CollectiveError::io("configuring the coordinator listener", &e))?;
    let n = cfg.world;
    let mut conns: Vec<Option<Conn>> = (0..n).map(|_| None).collect();
    let mut addrs = vec![String::new(); n];
    let joined = accept_peers(
        cfg,
        &key,
        &listener,
        &mut conns,
        Some(&mut addrs),
        |r| r > 0,
        n - 1,
        deadline,
    );
    if let Err(e) = joined {
        abort_all(cfg, &mut conns, &e.to_string());
        return Err(e);
    }
    let mut table = vec![TABLE];
    table.extend_from_slice(addrs.join("\n").as_bytes());
    let mut outcome = Ok(());
    for c in conns.iter_mut().flatten() {
        if let Err(e) = c.send_ctl(0, &table) {
            outcome = Err(e);
            break;
        }
    }
    if outcome.is_ok() {
        for c in conns.iter_mut().flatten() {
            match c.recv_ctl(deadline, cfg.timeout, cfg.max_frame) {
                Ok(m) if m.first() == Some(&READY) => {}
                Ok(m) if m.first() == Some(&FAIL) => {
                    outcome = Err(CollectiveError::RendezvousFailed(format!(
                        "rank {}: {}",
                        c.peer,
                        text(&m[1..])
                    )));
                    break;
                }
                Ok(_) => {
                    outcome = Err(CollectiveError::CorruptFrame {
                        peer: c.peer,
                        reason: "unexpected rendezvous message".into(),
                    });
                    break;
                }
                Err(e) => {
                    outcome = Err(e);
                    break;
                }
            }
        }
    }
    match outcome {
        Ok(()) => {
            for c in conns.iter_mut().flatten() {
                c.send_ctl(0, &[GO])?;
            }
            Ok(conns)
        }
        Err(e) => {
            abort_all(cfg, &mut conns, &e.to_string());
            Err(e)
        }
    }
}

/// A non-zero rank's side: returns one connection per other rank.
pub(crate) fn form_peer(cfg: &TcpConfig) -> Result<Vec<Option<Conn>>> {
    let key = handshake::secret_key(&cfg.secret);
    let deadline = Instant::now() + cfg.rendezvous_timeout;
    let listener = TcpListener::bind((cfg.listen_host.as_str(), 0))
        .map_err(|e| CollectiveError::io(format!("binding {}:0", cfg.listen_host), &e))?;
    listener
        .set_nonblocking(true)
        .map_err(|e| CollectiveError::io("configuring the peer listener", &e))?;
    let listen = listener
        .local_addr()
        .map_err(|e| CollectiveError::io("reading the listen address", &e))?
        .to_string();
    let (n, me) = (cfg.world, cfg.rank);
    let mut conns: Vec<Option<Conn>> = (0..n).map(|_| None).collect();
    let mut c0 = connect_to(cfg, &key, &cfg.coordinator, 0, &listen, deadline)?;
    // Rank 0 decides the rendezvous: when it gives up at its own deadline
    // it tells every peer why, so a peer waits for its word a little past
    // the peer's deadline (the two clocks started apart), and a silent
    // rank 0 is a failed rendezvous, not a collective's timeout.
    let verdict = deadline + cfg.timeout.min(Duration::from_secs(1));
    let from_root = |c0: &mut Conn, what: &str| {
        c0.recv_ctl(verdict, cfg.timeout, cfg.max_frame)
            .map_err(|e| match e {
                CollectiveError::Timeout { .. } => {
                    rdv_timeout(cfg, format!("no {what} from rank 0"))
                }
                e => e,
            })
    };
    let msg = from_root(&mut c0, "address table")?;
    let table: Vec<String> = match msg.split_first() {
        Some((&TABLE, rest)) => text(rest).split('\n').map(str::to_string).collect(),
        Some((&ABORT, rest)) => {
            return Err(CollectiveError::RendezvousFailed(format!(
                "rank 0 aborted: {}",
                text(rest)
            )))
        }
        _ => {
            return Err(CollectiveError::CorruptFrame {
                peer: 0,
                reason: "unexpected rendezvous message".into(),
            })
        }
    };
    if table.len() != n {
        return Err(CollectiveError::RendezvousFailed(format!(
            "address table of {} ranks, want {n}",
            table.len()
        )));
    }
    let mesh = (|| -> Result<()> {
        for (j, addr) in table.iter().enumerate().take(me).skip(1) {
            conns[j] = Some(connect_to(cfg, &key, addr, j, &listen, deadline)?);
        }
        accept_peers(
            cfg,
            &key,
            &listener,
            &mut conns,
            None,
            |r| r > me,
            n - 1 - me,
            deadline,
        )
    })();
    if let Err(e) = mesh {
        let mut m = vec![FAIL];
        m.extend_from_slice(e.to_string().as_bytes());
        let _ = c0.send_ctl(me, &m);
        return Err(e);
    }
    c0.send_ctl(me, &[READY])?;
    match from_root(&mut c0, "go")?.split_first() {
        Some((&GO, _)) => {}
        Some((&ABORT, rest)) => {
            return Err(CollectiveError::RendezvousFailed(format!(
                "rank 0 aborted: {}",
                text(rest)
            )))
        }
        _ => {
            return Err(CollectiveError::CorruptFrame {
                peer: 0,
                reason: "unexpected rendezvous message".into(),
            })
        }
    }
    conns[0] = Some(c0);
    Ok(conns)
}
