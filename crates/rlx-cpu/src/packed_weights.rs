//! Weights packed once ([`crate::kernels::gemm_packed`]): an f32 `[K, N]`
//! param read only as the weight operand of matmuls is rearranged in place
//! into column panels on the first run after it is set, and every matmul
//! reading it streams the panels instead of packing the matrix per call.
//! A constant read only so (an ONNX initializer) is packed when the
//! executable is built.
//!
//! The packed bytes are a permutation of the plain ones (same length), so
//! packing costs no memory. Whatever else touches the buffer sees the
//! plain layout: writes of part of the param and reads of its value unpack
//! it first; a param shared with another executable, updated by the graph
//! itself, or read by anything but a matmul's weight operand stays plain.

use super::{AlignedBuf, CpuExecutable};
use crate::kernels::conv_packed::{self, ConvWeightLayout};
use crate::kernels::{fused, gemm_packed};
use rlx_compile::LirModule;
use rlx_ir::{DType, Op};
use std::sync::Arc;

/// How a packed weight source is laid out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Layout {
    /// `[.., k, n]` matrices in panels of columns (a matmul weight).
    Matrix { k: usize, n: usize },
    /// A conv weight, transposed per group into panels of output channels.
    Conv(ConvWeightLayout),
}

impl Layout {
    /// Packs (`pack`) or unpacks `buf` in place with panels of `nr`.
    fn permute_in_place(&self, buf: &mut [f32], nr: usize, pack: bool) {
        match (self, pack) {
            (Layout::Matrix { k, n }, true) => {
                let from = buf.to_vec();
                gemm_packed::pack(&from, *k, *n, nr, buf)
            }
            (Layout::Matrix { k, n }, false) => {
                let from = buf.to_vec();
                gemm_packed::unpack(&from, *k, *n, nr, buf)
            }
            (Layout::Conv(l), true) => l.pack_in_place(buf, nr),
            (Layout::Conv(l), false) => l.unpack_in_place(buf, nr),
        }
    }
}

/// Which weights may be packed and which nodes read packed weights. A
/// weight source is a param index, or the params' count plus a constant's
/// index (in the executable's constant list).
pub(super) struct Packing {
    /// Panel width of this CPU's tile; `None`: nothing is packed.
    pub(super) panel: Option<usize>,
    /// Per source: only ever read as a weight, in one layout.
    pub(super) packable: Vec<bool>,
    /// Per source: its buffer holds panels now.
    pub(super) packed: Vec<bool>,
    /// Per node: the sources it reads as weights (empty for other nodes).
    weights_of: Vec<Vec<usize>>,
    /// Per source: the layout its readers want (`None`: no weight reader).
    layouts: Vec<Option<Layout>>,
}

/// Operand positions of the weights of a matmul- or conv-family node.
fn weight_operands(op: &Op) -> &'static [usize] {
    match op {
        Op::MatMul | Op::FusedMatMul { .. } => &[1],
        Op::GatedMatMul { .. } => &[1, 2],
        Op::Conv { .. } | Op::FusedConv { .. } => &[1],
        _ => &[],
    }
}

/// The layout node `n` reads its weight operand `slot` in when packed, if
/// it can read it packed at all (`dims(i)`: the static dims of input `i`).
fn weight_layout(
    op: &Op,
    slot: usize,
    dims: impl Fn(usize) -> Vec<usize>,
    out: &[usize],
) -> Option<Layout> {
    match op {
        Op::Conv { window, groups } | Op::FusedConv { window, groups, .. } => {
            conv_packed::packed_layout(window, *groups, &dims(0), &dims(1), out).map(Layout::Conv)
        }
        _ => {
            fused::packed_product_shape(&dims(0), &dims(slot), out)?;
            match dims(slot).as_slice() {
                [.., k, n] => Some(Layout::Matrix { k: *k, n: *n }),
                _ => None,
            }
        }
    }
}

impl Packing {
    /// The packing of `lir`'s weights. A node `elsewhere` says runs on a
    /// weight prepared in another form (the NCHWc layout's,
    /// [`super::winograd_weights`]) reads no panels, so it neither asks for
    /// its weight to be packed nor forbids it: a constant only such nodes
    /// read stays plain and shared (packing it would copy it for nothing).
    pub(super) fn plan(lir: &LirModule, elsewhere: impl Fn(usize) -> bool) -> Packing {
        let g = &lir.graph;
        let params = &lir.io.params;
        let disabled = rlx_ir::env::vars::CPU_PACK_WEIGHTS.get().ok().flatten() == Some(false);
        let panel = gemm_packed::panel_width().filter(|_| !disabled);
        // Sources in the executable's order: params, then constants.
        let mut source = vec![None; g.len()];
        let mut nodes = Vec::new();
        for (i, (id, _, _)) in params.iter().enumerate() {
            source[id.index()] = Some(i);
            nodes.push(*id);
        }
        for id in g.ids() {
            if matches!(g.node(id).op, Op::Constant { .. }) {
                source[id.index()] = Some(nodes.len());
                nodes.push(id);
            }
        }
        let param_of = |id: rlx_ir::NodeId| source[id.index()];
        let mut packable: Vec<bool> = nodes
            .iter()
            .map(|&id| {
                let shape = g.shape(id);
                panel.is_some()
                    && shape.dtype() == DType::F32
                    && shape.rank() >= 2
                    && shape
                        .static_dims()
                        .is_some_and(|d| d.iter().all(|&x| x > 0))
                    && !lir.io.outputs.iter().any(|(o, _)| *o == id)
            })
            .collect();
        let mut layouts: Vec<Option<Layout>> = vec![None; nodes.len()];
        let mut weights_of = vec![Vec::new(); g.len()];
        for id in g.ids() {
            let n = g.node(id);
            let slots = weight_operands(&n.op);
            let f32_node = n.shape.dtype() == DType::F32
                && n.inputs
                    .first()
                    .is_some_and(|&x| g.shape(x).dtype() == DType::F32);
            let weights: Vec<Option<usize>> = slots
                .iter()
                .map(|&s| n.inputs.get(s).and_then(|&x| param_of(x)))
                .collect();
            let all_params = weights.iter().all(Option::is_some);
            let dims = |i: usize| {
                n.inputs
                    .get(i)
                    .and_then(|&x| g.shape(x).static_dims())
                    .unwrap_or_default()
            };
            let out = n.shape.static_dims().unwrap_or_default();
            let wanted: Vec<Option<Layout>> = slots
                .iter()
                .map(|&s| weight_layout(&n.op, s, dims, &out))
                .collect();
            let shapes_ok = wanted.iter().all(Option::is_some);
            let prepared_elsewhere = elsewhere(id.index());
            for (pos, &input) in n.inputs.iter().enumerate() {
                let Some(p) = param_of(input) else { continue };
                let slot = slots.iter().position(|&s| s == pos);
                if prepared_elsewhere && slot.is_some() {
                    continue;
                }
                let layout = slot.and_then(|i| wanted[i]);
                match layout.filter(|_| f32_node && all_params && shapes_ok) {
                    Some(l) if layouts[p].is_none_or(|had| had == l) => {
                        layouts[p] = Some(l);
                        weights_of[id.index()].push(p);
                    }
                    _ => packable[p] = false,
                }
            }
        }
        for (ok, layout) in packable.iter_mut().zip(&layouts) {
            *ok &= layout.is_some();
        }
        let mut packing = Packing {
            panel,
            packed: vec![false; nodes.len()],
            packable,
            weights_of,
            layouts,
        };
        packing.settle();
        packing
    }

    /// A node's weights are all packed or all plain (one kernel reads
    /// them): every weight of a node with an unpackable one becomes
    /// unpackable, until nothing changes; such nodes read no packed weights.
    fn settle(&mut self) {
        loop {
            let mut changed = false;
            for ws in &self.weights_of {
                if ws.iter().any(|&p| !self.packable[p]) {
                    for &p in ws {
                        changed |= std::mem::replace(&mut self.packable[p], false);
                    }
                }
            }
            if !changed {
                break;
            }
        }
        for ws in &mut self.weights_of {
            if ws.iter().any(|&p| !self.packable[p]) {
                ws.clear();
            }
        }
    }

    /// The panel width node `node` reads its weights packed in, if it does.
    pub(super) fn packed_weights(&self, node: usize) -> Option<usize> {
        let ws = &self.weights_of[node];
        if ws.is_empty() || !ws.iter().all(|&p| self.packed[p]) {
            return None;
        }
        self.panel
    }
}

impl CpuExecutable {
    /// The buffer of weight source `s`, when this executable alone holds
    /// it (a param shared with another executable is left alone).
    fn source_buf(&mut self, s: usize) -> Option<&mut AlignedBuf> {
        let params = self.params.len();
        if s < params {
            self.params[s].as_mut().and_then(Arc::get_mut)
        } else {
            self.constants.get_mut(s - params)
        }
    }

    /// Packs (`pack`) or unpacks source `s` in place.
    fn repack(&mut self, s: usize, pack: bool) -> bool {
        let nr = self.packing.panel.expect("packing has a panel width");
        let layout = self.packing.layouts[s].expect("a packable weight has a layout");
        let Some(buf) = self.source_buf(s) else {
            return false;
        };
        layout.permute_in_place(buf.f32s_mut(), nr, pack);
        self.packing.packed[s] = pack;
        true
    }

    /// Packs every packable weight not yet packed: constants when the
    /// executable is built, params before a run.
    pub(super) fn pack_weights(&mut self) {
        if self.packing.panel.is_none() {
            return;
        }
        for s in 0..self.packing.packed.len() {
            let set = s >= self.params.len() || self.params[s].is_some();
            if self.packing.packable[s] && !self.packing.packed[s] && set {
                self.repack(s, true);
            }
        }
    }

    /// Puts param `p` back in the plain layout (before a partial write or
    /// a read of its value).
    pub(super) fn unpack_param(&mut self, p: usize) {
        if self.packing.packed[p] {
            assert!(self.repack(p, false), "a packed param is not shared");
        }
    }

    /// Param `p` gets a new plain buffer or value.
    pub(super) fn param_replaced(&mut self, p: usize) {
        self.packing.packed[p] = false;
    }

    /// Param `p` is rewritten by runs (an in-graph update): it stays plain.
    /// (So do the other weights of the nodes reading it.)
    pub(super) fn never_pack(&mut self, p: usize) {
        if !self.packing.packable[p] {
            return;
        }
        self.packing.packable[p] = false;
        self.packing.settle();
        for s in 0..self.packing.packed.len() {
            if !self.packing.packable[s] && self.packing.packed[s] {
                assert!(self.repack(s, false), "a packed weight is not shared");
            }
        }
    }

    /// The plain bytes of param `p` (unpacked into a copy when packed).
    pub(super) fn plain_param_bytes(&self, p: usize) -> Option<Vec<u8>> {
        let buf = self.params[p].as_ref()?;
        if !self.packing.packed[p] {
            return Some(buf.bytes().to_vec());
        }
        let nr = self.packing.panel.expect("packed with a panel width");
        let layout = self.packing.layouts[p].expect("a packed weight has a layout");
        let mut plain = buf.f32s().to_vec();
        layout.permute_in_place(&mut plain, nr, false);
        Some(crate::kernels::f32_bytes(&plain).to_vec())
    }
}
