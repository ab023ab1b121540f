//! Helpers shared by this crate's integration tests.

pub mod yolo_net;
