//! Normalisation family: native softmax / log-softmax / layer / rms / group norm.
use super::{KernelResult, View, ViewMut};

/// softmax or log-softmax along `axis`.
pub fn softmax(_axis: usize, _log: bool, _ins: &[View], _out: &mut ViewMut) -> KernelResult { Err("softmax: kernel pending".into()) }
/// layer norm over axes `axis..`.
pub fn layer_norm(_axis: usize, _eps: f64, _ins: &[View], _out: &mut ViewMut) -> KernelResult { Err("layer_norm: kernel pending".into()) }
/// rms norm over the last axis.
pub fn rms_norm(_eps: f64, _ins: &[View], _out: &mut ViewMut) -> KernelResult { Err("rms_norm: kernel pending".into()) }
/// group norm.
pub fn group_norm(_groups: usize, _eps: f64, _ins: &[View], _out: &mut ViewMut) -> KernelResult { Err("group_norm: kernel pending".into()) }
