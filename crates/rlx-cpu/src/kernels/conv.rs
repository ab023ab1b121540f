//! Convolution family: conv, transposed conv, pooling.
use super::{KernelResult, View, ViewMut};
use rlx_ir::op::{PoolKind, Window};

/// N-d convolution.
pub fn conv(_w: &Window, _groups: usize, _ins: &[View], _out: &mut ViewMut) -> KernelResult { Err("conv: kernel pending".into()) }
/// N-d transposed convolution.
pub fn conv_transpose(_w: &Window, _output_padding: &[usize], _groups: usize, _ins: &[View], _out: &mut ViewMut) -> KernelResult { Err("conv_transpose: kernel pending".into()) }
/// Pooling.
pub fn pool(_kind: PoolKind, _w: &Window, _count_include_pad: bool, _ins: &[View], _out: &mut ViewMut) -> KernelResult { Err("pool: kernel pending".into()) }
