//! The ONNX protobuf messages (`onnx.proto`, proto2), generated once by
//! `tools/onnx_protogen` (protox + prost-build) and committed.
#![allow(missing_docs, clippy::all, clippy::pedantic, rustdoc::all)]

include!("onnx.rs");
