//! [`TcpConfig`] and the test-only [`Fault`] injection.

use crate::error::{CollectiveError, Result};
use std::time::Duration;

/// How this rank joins a TCP group.
///
/// Rank 0 listens on `coordinator`; the other ranks connect to it, prove
/// they know the shared secret, and learn each other's addresses; then every
/// pair of ranks connects directly (a full mesh, one connection per pair).
#[derive(Clone)]
pub struct TcpConfig {
    /// `host:port` rank 0 listens on and the others connect to.
    pub coordinator: String,
    /// This process's rank.
    pub rank: usize,
    /// Number of ranks.
    pub world: usize,
    pub(crate) secret: Vec<u8>,
    /// Longest wait for any message (and for a stalled frame to continue).
    pub timeout: Duration,
    /// Longest wait for the whole group to form.
    pub rendezvous_timeout: Duration,
    /// Largest frame payload accepted, in bytes; a longer one is an error.
    pub max_frame: u64,
    /// Host the non-zero ranks listen on for their peers (port chosen by the OS).
    pub listen_host: String,
    /// How every frame's bytes are checked on arrival (all ranks must agree).
    pub frame_check: FrameCheck,
    /// Makes this rank misbehave on purpose (fault tests only).
    pub fault: Option<Fault>,
}

/// How each frame is checked on arrival. Peers are authenticated by the
/// shared-secret handshake either way; the ranks of a group must agree
/// (a rank with the other setting is refused at the rendezvous, by name).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FrameCheck {
    /// A BLAKE3 keyed hash under the connection's session key (the
    /// default): any change to a frame is detected, including a deliberate
    /// one by someone on the network path.
    #[default]
    Mac,
    /// An XXH3-128 checksum seeded from the session key: truncated,
    /// corrupted, dropped, replayed or reordered frames are still detected,
    /// but a deliberate forgery by someone on the path is not. For a
    /// trusted network (as MPI and Gloo assume); about 10x cheaper per byte
    /// than [`FrameCheck::Mac`], which bounds the TCP ring on small buffers.
    Checksum,
}

impl FrameCheck {
    /// Lower-case name.
    pub fn name(self) -> &'static str {
        match self {
            FrameCheck::Mac => "mac",
            FrameCheck::Checksum => "checksum",
        }
    }

    pub(crate) fn code(self) -> u8 {
        match self {
            FrameCheck::Mac => 0,
            FrameCheck::Checksum => 1,
        }
    }

    pub(crate) fn from_code(c: u8) -> Option<Self> {
        match c {
            0 => Some(FrameCheck::Mac),
            1 => Some(FrameCheck::Checksum),
            _ => None,
        }
    }
}

impl std::fmt::Debug for TcpConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TcpConfig")
            .field("coordinator", &self.coordinator)
            .field("rank", &self.rank)
            .field("world", &self.world)
            .field("secret", &"<redacted>")
            .field("timeout", &self.timeout)
            .field("rendezvous_timeout", &self.rendezvous_timeout)
            .field("max_frame", &self.max_frame)
            .field("listen_host", &self.listen_host)
            .field("frame_check", &self.frame_check)
            .field("fault", &self.fault)
            .finish()
    }
}

impl TcpConfig {
    /// Rank `rank` of `world`, rendezvous at `coordinator`, authenticated by
    /// `secret` (any non-empty bytes every rank shares). Defaults: 30 s
    /// message timeout, 60 s rendezvous timeout, 1 GiB frames, peers on
    /// 127.0.0.1.
    pub fn new(
        coordinator: impl Into<String>,
        rank: usize,
        world: usize,
        secret: impl AsRef<[u8]>,
    ) -> Self {
        TcpConfig {
            coordinator: coordinator.into(),
            rank,
            world,
            secret: secret.as_ref().to_vec(),
            timeout: Duration::from_secs(30),
            rendezvous_timeout: Duration::from_secs(60),
            max_frame: 1 << 30,
            listen_host: "127.0.0.1".into(),
            frame_check: FrameCheck::Mac,
            fault: None,
        }
    }

    /// Sets the message timeout.
    pub fn timeout(mut self, t: Duration) -> Self {
        self.timeout = t;
        self
    }

    /// Sets the rendezvous timeout.
    pub fn rendezvous_timeout(mut self, t: Duration) -> Self {
        self.rendezvous_timeout = t;
        self
    }

    /// Sets the largest accepted frame payload in bytes.
    pub fn max_frame(mut self, bytes: u64) -> Self {
        self.max_frame = bytes;
        self
    }

    /// Sets the host the non-zero ranks listen on.
    pub fn listen_host(mut self, host: impl Into<String>) -> Self {
        self.listen_host = host.into();
        self
    }

    /// Sets how frames are checked (see [`FrameCheck`]; every rank the same).
    pub fn frame_check(mut self, check: FrameCheck) -> Self {
        self.frame_check = check;
        self
    }

    /// Injects a fault (for tests of the other ranks' error handling).
    pub fn fault(mut self, fault: Fault) -> Self {
        self.fault = Some(fault);
        self
    }

    pub(crate) fn validate(&self) -> Result<()> {
        if self.world == 0 {
            return Err(CollectiveError::InvalidConfig("world size 0".into()));
        }
        if self.rank >= self.world {
            return Err(CollectiveError::InvalidRank {
                rank: self.rank,
                world: self.world,
            });
        }
        if self.secret.is_empty() {
            return Err(CollectiveError::InvalidConfig("empty shared secret".into()));
        }
        if self.max_frame == 0 {
            return Err(CollectiveError::InvalidConfig("max_frame 0".into()));
        }
        if self.world > u16::MAX as usize {
            return Err(CollectiveError::InvalidConfig(format!(
                "world size {} over 65535",
                self.world
            )));
        }
        Ok(())
    }
}

/// A fault this rank injects into its own traffic, so that tests can check
/// how the other ranks cope. Counted over the data frames this rank sends
/// (to any peer) after the group formed, from 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fault {
    /// Index of the data frame the fault hits.
    pub at_frame: u64,
    /// What happens to it.
    pub kind: FaultKind,
}

/// What an injected [`Fault`] does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultKind {
    /// Send the header and half the payload, then close every connection.
    Truncate,
    /// Announce a payload far over any maximum, then close every connection.
    Oversize,
    /// Flip one bit of the payload after its MAC / checksum was computed.
    Corrupt,
    /// Stop responding: sleep this long before sending the frame.
    Stall(Duration),
    /// Close every connection at once, as a crash would.
    Die,
}
