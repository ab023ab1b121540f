//! Capability exchange: [`NodeCaps`], [`platform_tag`], [`send_caps`] /
//! [`collect_caps`].

use crate::dist::error::{DistError, DistResult};
use crate::dist::wire::{expect_frame, send_frame, Kind, Reader, Writer, CH_CONTROL};
use crate::{available_devices, device_label};
use rlx_collectives::ProcessGroup;

/// What one node offers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeCaps {
    /// The node's rank.
    pub rank: usize,
    /// [`platform_tag`] of the node.
    pub platform: String,
    /// Labels of the devices it can run graphs on.
    pub devices: Vec<String>,
    /// Physical memory in bytes (0 when unknown).
    pub memory_bytes: u64,
    /// Hardware threads.
    pub threads: usize,
}

/// `os-arch-features`, e.g. `linux-x86_64-avx2+fma` (features: the SIMD
/// extensions the CPU backend can use, detected at run time).
pub fn platform_tag() -> String {
    #[allow(unused_mut)]
    let mut feats: Vec<&str> = Vec::new();
    #[cfg(target_arch = "x86_64")]
    {
        for (name, on) in [
            ("avx512f", std::arch::is_x86_feature_detected!("avx512f")),
            ("avx2", std::arch::is_x86_feature_detected!("avx2")),
            ("fma", std::arch::is_x86_feature_detected!("fma")),
        ] {
            if on {
                feats.push(name);
            }
        }
    }
    #[cfg(target_arch = "aarch64")]
    feats.push("neon");
    let feats = if feats.is_empty() {
        "base".to_string()
    } else {
        feats.join("+")
    };
    format!(
        "{}-{}-{feats}",
        std::env::consts::OS,
        std::env::consts::ARCH
    )
}

/// Total physical memory from `/proc/meminfo` (0 where that is absent).
fn memory_bytes() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("MemTotal:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024)
}

impl NodeCaps {
    /// This process's capabilities as rank `rank`.
    pub fn local(rank: usize) -> NodeCaps {
        NodeCaps {
            rank,
            platform: platform_tag(),
            devices: available_devices().into_iter().map(device_label).collect(),
            memory_bytes: memory_bytes(),
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
        }
    }

    fn encode(&self) -> Vec<u8> {
        let mut w = Writer::default();
        w.u64(self.rank as u64)
            .str(&self.platform)
            .u64(self.devices.len() as u64);
        for d in &self.devices {
            w.str(d);
        }
        w.u64(self.memory_bytes).u64(self.threads as u64);
        w.0
    }

    fn decode(peer: usize, body: &[u8]) -> DistResult<NodeCaps> {
        let mut r = Reader::new(peer, body);
        let rank = r.usize()?;
        let platform = r.str()?;
        let n = r.usize()?;
        let devices = (0..n.min(1024))
            .map(|_| r.str())
            .collect::<DistResult<Vec<_>>>()?;
        let caps = NodeCaps {
            rank,
            platform,
            devices,
            memory_bytes: r.u64()?,
            threads: r.usize()?,
        };
        r.finish()?;
        if caps.rank != peer {
            return Err(DistError::BadMessage {
                peer,
                reason: format!("capabilities claim rank {}", caps.rank),
            });
        }
        Ok(caps)
    }
}

/// Sends this process's capabilities to rank `dst`.
pub fn send_caps(pg: &dyn ProcessGroup, dst: usize) -> DistResult<()> {
    send_frame(
        pg,
        dst,
        CH_CONTROL,
        Kind::Caps,
        &NodeCaps::local(pg.rank()).encode(),
    )
}

/// On the coordinator: every rank's capabilities, in rank order (its own
/// measured here, the others' received from their [`send_caps`]).
pub fn collect_caps(pg: &dyn ProcessGroup) -> DistResult<Vec<NodeCaps>> {
    (0..pg.world_size())
        .map(|r| {
            if r == pg.rank() {
                Ok(NodeCaps::local(r))
            } else {
                NodeCaps::decode(r, &expect_frame(pg, r, CH_CONTROL, Kind::Caps)?)
            }
        })
        .collect()
}
