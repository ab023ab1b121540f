//! The TCP transport: rendezvous, handshake, frames, [`TcpGroup`].

mod config;
mod conn;
mod frame;
mod group;
mod handshake;
mod rendezvous;

pub use config::{Fault, FaultKind, FrameCheck, TcpConfig};
pub use group::TcpGroup;
