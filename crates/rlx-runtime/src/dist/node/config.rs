//! [`NodeConfig`]: how a node joins its group and what it does there.

use crate::dist::error::{DistError, DistResult};
use rlx_collectives::{ProcessGroup, TcpConfig, TcpGroup};
use rlx_ir::env::vars::{self, Var};
use std::sync::Arc;
use std::time::Duration;

/// What a node does once it has joined.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeRole {
    /// Serves pipeline stages ([`serve_worker`](super::serve_worker)).
    Worker,
    /// Trains its share of a data-parallel run ([`serve_trainer`](super::serve_trainer)).
    Trainer,
    /// Runs one compiled function for a peer ([`serve_fixed_function_n`](super::serve_fixed_function_n)).
    FixedFunction,
}

impl NodeRole {
    /// Parses `worker`, `trainer` or `fixed-function`.
    pub fn parse(s: &str) -> Option<NodeRole> {
        match s.trim().to_ascii_lowercase().as_str() {
            "worker" => Some(NodeRole::Worker),
            "trainer" => Some(NodeRole::Trainer),
            "fixed-function" | "fixed_function" => Some(NodeRole::FixedFunction),
            _ => None,
        }
    }
}

/// Where a node's peers are.
#[derive(Clone)]
pub enum PeerSource {
    /// A TCP group: rendezvous at `coordinator`, authenticated by `secret`.
    Tcp {
        /// `host:port` of rank 0.
        coordinator: String,
        /// The shared secret.
        secret: Vec<u8>,
    },
    /// A group the caller made (loopback threads, MPI, a sub-group).
    Group(Arc<dyn ProcessGroup>),
}

impl std::fmt::Debug for PeerSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PeerSource::Tcp { coordinator, .. } => f
                .debug_struct("Tcp")
                .field("coordinator", coordinator)
                .field("secret", &"<redacted>")
                .finish(),
            PeerSource::Group(g) => write!(f, "Group(rank {} of {})", g.rank(), g.world_size()),
        }
    }
}

/// A node's whole configuration, built in code (no shell needed) or read
/// with [`NodeConfig::from_env`].
#[derive(Debug, Clone)]
pub struct NodeConfig {
    /// This node's rank.
    pub rank: usize,
    /// Number of ranks.
    pub world: usize,
    /// What it does.
    pub role: NodeRole,
    /// How it reaches its peers.
    pub peers: PeerSource,
    /// Longest wait for any message.
    pub timeout: Duration,
}

/// `v` read through `lookup` and parsed by its declaration (`None`: unset
/// or empty).
fn read<T>(lookup: &dyn Fn(&str) -> Option<String>, v: &Var<T>) -> DistResult<Option<T>> {
    lookup(v.name)
        .filter(|s| !s.trim().is_empty())
        .map(|s| v.parse_value(&s))
        .transpose()
        .map_err(|e| DistError::Config(e.to_string()))
}

fn required<T>(lookup: &dyn Fn(&str) -> Option<String>, v: &Var<T>) -> DistResult<T> {
    read(lookup, v)?.ok_or_else(|| DistError::Config(format!("{} is not set", v.name)))
}

impl NodeConfig {
    /// Rank `rank` of `world` doing `role` over `peers`, 30 s timeout.
    pub fn new(rank: usize, world: usize, role: NodeRole, peers: PeerSource) -> Self {
        NodeConfig {
            rank,
            world,
            role,
            peers,
            timeout: Duration::from_secs(30),
        }
    }

    /// Reads `RLX_NODE_RANK`, `RLX_NODE_WORLD`, `RLX_NODE_ROLE`,
    /// `RLX_NODE_COORDINATOR`, `RLX_NODE_SECRET` and (optional)
    /// `RLX_NODE_TIMEOUT_MS` (declared in `rlx_ir::env::vars`, listed in
    /// `KNOWN_VARS`) through `lookup` (for a platform without a
    /// process environment); a TCP node.
    pub fn from_lookup(lookup: &dyn Fn(&str) -> Option<String>) -> DistResult<Self> {
        let rank = required(lookup, &vars::NODE_RANK)?;
        let world = required(lookup, &vars::NODE_WORLD)?;
        let role_s = read(lookup, &vars::NODE_ROLE)?.unwrap_or_else(|| "worker".into());
        let role = NodeRole::parse(&role_s).ok_or_else(|| {
            DistError::Config(format!(
                "{}={role_s:?} (worker, trainer or fixed-function)",
                vars::NODE_ROLE.name
            ))
        })?;
        let coordinator = required(lookup, &vars::NODE_COORDINATOR)?;
        // Never echo the secret: a parse error would (it cannot fail today).
        let secret = required(lookup, &vars::NODE_SECRET)?;
        let mut cfg = NodeConfig::new(
            rank,
            world,
            role,
            PeerSource::Tcp {
                coordinator,
                secret: secret.into_bytes(),
            },
        );
        if let Some(ms) = read(lookup, &vars::NODE_TIMEOUT_MS)? {
            cfg.timeout = Duration::from_millis(ms as u64);
        }
        Ok(cfg)
    }

    /// [`NodeConfig::from_lookup`] over the process environment.
    pub fn from_env() -> DistResult<Self> {
        Self::from_lookup(&|k| std::env::var(k).ok())
    }

    /// Joins the group (a TCP rendezvous, or the given group after checking
    /// its rank and size).
    pub fn connect(&self) -> DistResult<Arc<dyn ProcessGroup>> {
        match &self.peers {
            PeerSource::Tcp {
                coordinator,
                secret,
            } => {
                let cfg = TcpConfig::new(coordinator.clone(), self.rank, self.world, secret)
                    .timeout(self.timeout)
                    .rendezvous_timeout(self.timeout);
                Ok(Arc::new(TcpGroup::join(cfg)?))
            }
            PeerSource::Group(g) => {
                if g.rank() != self.rank || g.world_size() != self.world {
                    return Err(DistError::Config(format!(
                        "the group is rank {} of {}, the config says {} of {}",
                        g.rank(),
                        g.world_size(),
                        self.rank,
                        self.world
                    )));
                }
                Ok(g.clone())
            }
        }
    }
}
