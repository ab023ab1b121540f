//! Device meshes and the placement planner.
//!
//! A [`DeviceMesh`] lays the ranks of a world out on three named axes —
//! data, tensor and pipeline parallel — and registers one sub-group per
//! line of an axis in a [`GroupRegistry`](crate::GroupRegistry), so in-graph
//! collectives can name "my tensor-parallel group" by [`GroupId`](crate::GroupId).
//!
//! [`plan_placement`] chooses a mesh and a layer-to-stage split for a model
//! ([`ModelProfile`]) on a cluster ([`ClusterSpec`]): it predicts each
//! candidate's step time with a closed-form cost model ([`StepTime`]) and
//! its memory per device, keeps the fastest candidate that fits, and
//! refuses with [`PlanError::DoesNotFit`] (device, needed and available
//! bytes) when none does. [`evaluate_mesh`] predicts one given mesh.

mod cost;
mod layout;
mod model;
mod planner;

pub use cost::{ring_all_reduce_seconds, LinkSpec};
pub use layout::{DeviceMesh, MeshAxis, MeshCoord, MeshGroups};
pub use model::{ClusterSpec, DeviceSpec, LayerProfile, ModelProfile};
pub use planner::{evaluate_mesh, plan_placement, ParallelPlan, PlanError, StepTime};
