//! Heterogeneous placement: one graph split across devices.
//!
//! A [`DeviceMap`] says which [`DeviceCandidate`](crate::DeviceCandidate) runs each node (by
//! explicit node, by "split at node k", by op mnemonic, else a default).
//! [`HeteroExecutable`] cuts the graph into segments — maximal runs of
//! consecutive nodes (in topological order) on one device — compiles each
//! on its device, and runs them in order, moving a value between segments
//! (a [`Transfer`], reported) wherever an edge crosses a cut. Leaves
//! (inputs, params, constants) are copied into every segment that reads them.
//! [`HeteroExecutable::compile_with_fallback`] builds the map itself: the
//! nodes a device has no kernel for go to the CPU when the
//! [`DevicePolicy`](crate::DevicePolicy) allows fallback ([`FallbackReport`]).

mod fallback;
mod map;
mod split;

pub use fallback::{CpuPlacement, FallbackReport};
pub use map::DeviceMap;
pub use split::{HeteroExecutable, Transfer};
