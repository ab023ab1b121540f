//! The node driver: join a group from any host (a server, a phone, an
//! embedded board driving an FPGA) with a programmatic [`NodeConfig`],
//! exchange capabilities, and serve stages, training or one fixed function
//! until told to stop.

mod caps;
mod config;
mod control;
mod fixed;
mod serve;

pub use caps::{collect_caps, platform_tag, send_caps, NodeCaps};
pub use config::{NodeConfig, NodeRole, PeerSource};
pub use control::{NodeControl, NodeStopHandle};
pub use fixed::{
    serve_fixed_function_n, FixedFunction, FixedFunctionDevice, LoopbackFixedFunction,
};
pub use serve::{
    mean_reduce, serve_trainer, serve_trainer_here, serve_worker, serve_worker_n, stop_node,
    NodeReport, TrainReport,
};
