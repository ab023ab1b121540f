//! Attention family: fused scaled dot-product attention and rope.
use super::{KernelResult, View, ViewMut};
use rlx_ir::op::MaskKind;

/// Scaled dot-product attention.
pub fn attention(_mask: MaskKind, _scale: Option<f64>, _softcap: Option<f64>, _ins: &[View], _out: &mut ViewMut) -> KernelResult { Err("attention: kernel pending".into()) }
/// Rotary embedding.
pub fn rope(_interleaved: bool, _ins: &[View], _out: &mut ViewMut) -> KernelResult { Err("rope: kernel pending".into()) }
