//! # rlx-fusion — fusion passes
//!
//! Home of the passes that fuse MIR (elementwise regions, matmul + bias +
//! activation, residual + norm, attention blocks) and of the fusion report.
//! The compiler issue fills it; today the pipeline runs without fusion and
//! this crate exports nothing.
#![warn(missing_docs)]
