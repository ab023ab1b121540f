//! Indexing family: gather, gather_elements, scatter_add, top-k, iota.
use super::{KernelResult, View, ViewMut};
use rlx_ir::op::TopKOutput;

/// numpy `take`.
pub fn gather(_axis: usize, _ins: &[View], _out: &mut ViewMut) -> KernelResult { Err("gather: kernel pending".into()) }
/// numpy `take_along_axis`.
pub fn gather_elements(_axis: usize, _ins: &[View], _out: &mut ViewMut) -> KernelResult { Err("gather_elements: kernel pending".into()) }
/// torch `scatter_add`.
pub fn scatter_add(_axis: usize, _ins: &[View], _out: &mut ViewMut) -> KernelResult { Err("scatter_add: kernel pending".into()) }
/// top-k values or indices.
pub fn topk(_k: usize, _axis: usize, _largest: bool, _output: TopKOutput, _ins: &[View], _out: &mut ViewMut) -> KernelResult { Err("topk: kernel pending".into()) }
/// iota.
pub fn iota(_axis: usize, _start: f64, _step: f64, _out: &mut ViewMut) -> KernelResult { Err("iota: kernel pending".into()) }
