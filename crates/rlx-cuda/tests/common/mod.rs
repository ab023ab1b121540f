//! Helpers shared by the rlx-cuda integration tests.
#![allow(dead_code)]

pub mod graphs;
pub mod host_kernels;
pub mod interp;
pub mod interp_indexing;
pub mod interp_updates;
pub mod optim_mirror;
pub mod plan_check;
pub mod reference;
pub mod training;
