//! Process groups and host collectives for distributed RLX.
//!
//! A [`ProcessGroup`] is a set of ranks that exchange tagged byte messages.
//! Three transports implement it:
//!
//! - [`LoopbackGroup`]: ranks are threads of one process (unit tests);
//! - [`TcpGroup`]: ranks on `std::net`, rendezvous by address + world size,
//!   a shared-secret handshake, MAC-checked length-prefixed frames with a
//!   maximum size, and a timeout on every receive;
//! - `MpiGroup` (feature `mpi`): ranks launched by `mpirun`, through rsmpi.
//!
//! [`SubGroup`] / [`GroupRegistry`] carve sub-groups out of a group and
//! name them by [`GroupId`].
//!
//! The collectives ([`all_reduce`], [`all_gather`], [`reduce_scatter`],
//! [`broadcast`], [`all_to_all`], [`ppermute`], [`send`] / [`recv`]) work
//! on `f16` / `f32` / `f64` / `i32` buffers over any group. Reductions take
//! a [`ReduceKind`] and a [`ReduceMode`]: `Ring` (bandwidth-optimal) or
//! `Deterministic` (bitwise reproducible whatever the arrival order or
//! transport; the exact order is documented on [`ReduceMode::Deterministic`]).
//!
//! [`mesh`] lays ranks out on data / tensor / pipeline axes and plans a
//! placement ([`plan_placement`]) with a predicted step time and memory
//! per device.
//!
//! [`graph`] puts the same collectives inside RLX graphs as custom ops
//! (`collectives.all_reduce`, ...) with derivative and batching rules:
//! [`all_reduce_op_mode`] and friends, run on the group bound with
//! [`bind_groups`] / [`bind_process_groups`].
//!
//! ```
//! use rlx_collectives::{all_gather, LoopbackGroup};
//! use std::time::Duration;
//!
//! let ranks = LoopbackGroup::new_world(3, Duration::from_secs(5)).unwrap();
//! let outs: Vec<Vec<i32>> = std::thread::scope(|s| {
//!     let hs: Vec<_> = ranks
//!         .iter()
//!         .enumerate()
//!         .map(|(r, pg)| s.spawn(move || all_gather(pg, &[r as i32]).unwrap()))
//!         .collect();
//!     hs.into_iter().map(|h| h.join().unwrap()).collect()
//! });
//! assert!(outs.iter().all(|o| o == &[0, 1, 2]));
//! ```
#![deny(missing_docs)]

mod collectives;
mod element;
mod error;
pub mod graph;
mod group;
mod loopback;
mod mailbox;
pub mod mesh;
#[cfg(feature = "mpi")]
mod mpi_group;
mod registry;
pub mod tcp;

pub use collectives::{
    all_gather, all_reduce, all_reduce_into, all_to_all, broadcast, ppermute, recv, reduce_scatter,
    send, ReduceKind, ReduceMode,
};
pub use element::{DType, Element, NativeBuf};
pub use error::{CollectiveError, Result};
pub use graph::{
    all_gather_op, all_reduce_op, all_reduce_op_mode, all_to_all_op, bind_groups,
    bind_process_groups, broadcast_op, megatron_f, megatron_g, ppermute_op, recv_op, reduce_op,
    reduce_scatter_op, register, send_op, unbind_process_groups, GroupsBinding,
};
pub use group::{GroupId, ProcessGroup, Tag};
pub use loopback::LoopbackGroup;
pub use mesh::{
    evaluate_mesh, plan_placement, ring_all_reduce_seconds, ClusterSpec, DeviceMesh, DeviceSpec,
    LayerProfile, LinkSpec, MeshAxis, MeshCoord, MeshGroups, ModelProfile, ParallelPlan, PlanError,
    StepTime,
};
#[cfg(feature = "mpi")]
pub use mpi_group::MpiGroup;
pub use registry::{GroupRegistry, SubGroup};
pub use tcp::{Fault, FaultKind, FrameCheck, TcpConfig, TcpGroup};

/// Everything a distributed program usually needs, for `use rlx_collectives::prelude::*`.
pub mod prelude {
    #[cfg(feature = "mpi")]
    pub use crate::MpiGroup;
    pub use crate::{
        all_gather, all_reduce, all_reduce_into, all_to_all, broadcast, ppermute, recv,
        reduce_scatter, send, CollectiveError, DType, Element, FrameCheck, GroupId, GroupRegistry,
        LoopbackGroup, ProcessGroup, ReduceKind, ReduceMode, SubGroup, TcpConfig, TcpGroup,
    };
    pub use crate::{
        all_gather_op, all_reduce_op, all_reduce_op_mode, all_to_all_op, bind_groups,
        bind_process_groups, broadcast_op, megatron_f, megatron_g, ppermute_op, recv_op, reduce_op,
        reduce_scatter_op, register, send_op,
    };
    pub use crate::{
        evaluate_mesh, plan_placement, ring_all_reduce_seconds, ClusterSpec, DeviceMesh,
        DeviceSpec, LayerProfile, LinkSpec, MeshAxis, MeshCoord, MeshGroups, ModelProfile,
        ParallelPlan, PlanError, StepTime,
    };
}
