//! Winograd weights transformed once: a conv that runs Winograd F(2,3)
//! ([`crate::kernels::winograd`]) and whose weight is a constant (an ONNX
//! initializer) gets `G g Gᵀ` of that weight when the executable is built,
//! instead of on every run (0.06-0.21 ms of a 0.5-1.3 ms conv at
//! ResNet-18's and U-Net's sizes, 1 thread). The transformed copy is 16/9
//! of the weight's size and sits next to the plain constant, which the
//! run still checks. Params stay on the per-run transform (a param can
//! change between runs).
//!
//! Convs that run in the NCHWc kernel ([`crate::kernels::conv_nchwc`])
//! get their weight packed into 16-channel blocks here the same way, and
//! 1x1 convs of the NCHW kernel ([`crate::kernels::conv_pointwise`]) into
//! its register tiles' left operand (no per-call packing).

use super::{AlignedBuf, Loc};
use crate::kernels::conv::Prepared;
use crate::kernels::{conv_nchwc, conv_pointwise, winograd};
use rlx_compile::LirModule;
use rlx_ir::{DType, Op};

/// One conv's weight in the form its kernel reads.
enum Form {
    Winograd(Vec<f32>),
    Nchwc(Vec<f32>),
    Pointwise(Vec<f32>),
}

/// Per node: its transformed or packed weight, when it has one.
pub(super) struct WinogradWeights {
    per_node: Vec<Option<Form>>,
    /// Per node: the sides an NCHWc conv keeps blocked (`nchwc_layout.rs`).
    blocked: Vec<conv_nchwc::BlockedIo>,
}

impl WinogradWeights {
    /// Transforms (packs) the constant weight of every f32 conv of `lir`
    /// that runs Winograd (NCHWc) (`locs` / `constants`: the executable's placement).
    pub(super) fn plan(lir: &LirModule, locs: &[Loc], constants: &[AlignedBuf]) -> Self {
        let g = &lir.graph;
        let per_node = g
            .ids()
            .map(|id| {
                let n = g.node(id);
                let (Op::Conv { window, groups } | Op::FusedConv { window, groups, .. }) = &n.op
                else {
                    return None;
                };
                let (&x, &w) = (n.inputs.first()?, n.inputs.get(1)?);
                let f32s = [n.shape.dtype(), g.shape(x).dtype(), g.shape(w).dtype()];
                if f32s.iter().any(|&d| d != DType::F32) {
                    return None;
                }
                let Loc::Constant(c) = locs[w.index()] else {
                    return None;
                };
                let dims = |i: rlx_ir::NodeId| g.shape(i).static_dims();
                let (xd, wd, od) = (dims(x)?, dims(w)?, n.shape.static_dims()?);
                let wt = super::packed_weights::f32s(&constants[c]);
                let dims = (&xd[..], &wd[..], &od[..]);
                match winograd::prepared_weights(window, *groups, dims, wt) {
                    Some(u) => Some(Form::Winograd(u)),
                    None => conv_nchwc::prepared_weights(window, *groups, dims, wt)
                        .map(Form::Nchwc)
                        .or_else(|| {
                            conv_pointwise::prepared_weights(window, *groups, dims, wt)
                                .map(Form::Pointwise)
                        }),
                }
            })
            .collect::<Vec<_>>();
        let nchwc = |i: usize| matches!(per_node[i], Some(Form::Nchwc(_)));
        let blocked = super::nchwc_layout::plan(lir, &nchwc);
        WinogradWeights { per_node, blocked }
    }

    /// NCHWc convs whose output the next convs read blocked.
    pub(super) fn blocked_outputs(&self) -> usize {
        self.blocked.iter().filter(|b| b.output).count()
    }

    /// Node `node`'s prepared weight, if it has one.
    pub(super) fn of(&self, node: usize) -> Option<Prepared<'_>> {
        Some(match self.per_node.get(node)?.as_ref()? {
            Form::Winograd(u) => Prepared::Winograd(u),
            Form::Nchwc(w) => Prepared::Nchwc(w, self.blocked[node]),
            Form::Pointwise(w) => Prepared::Pointwise(w),
        })
    }
}
