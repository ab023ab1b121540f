//! Ship-graph distribution (feature `dist`): send graphs, weights and data
//! to the ranks of a [`ProcessGroup`](rlx_collectives::ProcessGroup) and run
//! them there.
//!
//! - Pipeline inference: [`ship_stage`] a [`StageSpec`] (textual IR +
//!   [`WeightRef`]s + compile options + neighbour ranks) to each worker,
//!   which [`serve_stage`]s it: [`recv_activation`] -> run ->
//!   [`send_activation`] until the stop frame ([`send_stop`]).
//! - Data-parallel training: [`run_train`] a [`TrainSpec`] on every rank
//!   ([`ship_train`] / [`recv_train`] move it), gradients all-reduced in a
//!   graph; [`TrainMetrics`] back.
//! - Weights: [`resolve_weight_uri`] (`file://…safetensors#name`),
//!   [`WeightCache`] by content hash, [`push_shards`] / [`pull_shards`].
//! - [`split_pipeline`] cuts one graph into such stages; [`pipeline_stages`]
//!   adds their weights and ranks, [`run_pipeline`] drives them from rank 0.
//! - Diagnostics: [`backend_divergence`] (devices of this process) and
//!   [`pipeline_divergence`] (one process against a pipeline over ranks).
//! - [`node`]: the node driver.
//!
//! Every message is a versioned frame (magic, version, kind, length) checked
//! before it is decoded; a malformed one is [`DistError::BadMessage`], a
//! transport failure [`DistError::Collective`] — never a panic or a hang
//! (receives wait at most the group's timeout).

mod activation;
mod divergence;
mod error;
pub mod node;
mod pipeline;
mod shards;
mod split;
mod stage;
mod train;
mod train_spec;
mod weights;
mod wire;

pub use activation::{recv_activation, send_activation, send_stop};
pub use divergence::{
    backend_divergence, report_backend_divergence, BackendDivergence, RunDivergence,
};
pub use error::{DistError, DistResult};
pub use pipeline::{pipeline_divergence, pipeline_stages, run_pipeline};
pub use shards::{pull_shards, push_shards};
pub use split::split_pipeline;
pub use stage::{recv_stage, serve_stage, serve_stage_uri, ship_stage, StageSpec, WorkerStage};
pub use train::{run_train, GradReduce, TrainMetrics};
pub use train_spec::{recv_train, ship_train, DataRef, OptimSpec, TrainSpec};
pub use weights::{
    resolve_weight_bytes, resolve_weight_uri, uri_resolver, Resolver, WeightCache, WeightRef,
};
pub use wire::{MAX_MESSAGE, WIRE_VERSION};
