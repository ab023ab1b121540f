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
//! its register tiles' left operand (no per-call packing); a 1x1 conv the
//! layout plan (`nchwc_layout.rs`) gives a blocked side gets the blocked
//! 1x1 kernel's `[O/16][C][16]` form instead, a small-plane depthwise conv
//! with a blocked side its planned layouts. A Winograd conv of at most
//! 128 x 128 channels and a 1x1 stride-2 conv (ResNet's downsamples) are
//! offered to the plan too: with a side kept blocked they run the NCHWc
//! kernel instead (`Conv2d::nchwc_wins_blocked`); so is a stem conv of
//! at most 4 input channels and whole groups of 64 outputs, which writes
//! blocked on the NCHWc kernel when its reader (ResNet's max pool, CRNN's)
//! reads blocked; a stem the stem kernel keeps (16 / 32 outputs) is
//! offered as a writer and writes blocked itself. Other stem convs get the stem
//! kernel's packed weight ([`conv_stem::prepared_weights`]), and so does
//! a 64-output stem whose max pool runs it in bands
//! (`stem_pool_plan.rs`, [`WinogradWeights::stem_pools`]).
//!
//! A 3x3 stride-1 conv that the plan keeps blocked on both sides (image
//! and output) gets the blocked Winograd F(4,3) transform instead of the
//! NCHWc packing where that kernel wins ([`winograd_blocked`],
//! `Conv2d::winograd_blocked_wins`: ResNet-18's 3x3 stride-1 convs, U-Net's,
//! YOLO's and CRNN's blocked 3x3 convs).

use super::{AlignedBuf, Loc};
use crate::kernels::conv::Prepared;
use crate::kernels::{
    conv_depthwise_small, conv_nchwc, conv_pointwise, conv_pointwise_blocked, conv_stem, winograd,
    winograd_blocked,
};
use rlx_compile::LirModule;
use rlx_ir::{DType, Node, NodeId, Op};

/// One conv's weight in the form its kernel reads.
enum Form {
    Winograd(Vec<f32>),
    /// Blocked on both sides, F(4,3) ([`winograd_blocked::pack`]).
    WinogradBlocked(AlignedBuf),
    Nchwc(AlignedBuf),
    Pointwise(Vec<f32>),
    PointwiseBlocked(Vec<f32>),
    /// A small-plane depthwise conv with a blocked side (plain weight).
    Depthwise,
    /// A 3-channel stem conv ([`conv_stem::prepared_weights`]).
    Stem(Vec<f32>),
}

/// Per node: its transformed or packed weight, when it has one.
pub(super) struct WinogradWeights {
    per_node: Vec<Option<Form>>,
    /// Per node: the sides an NCHWc conv keeps blocked, `input` for a
    /// pool / mean that reads blocked (`nchwc_layout.rs`).
    blocked: Vec<conv_nchwc::BlockedIo>,
    /// Per node: bit `k` set when its epilogue extra `k` is blocked.
    blocked_extras: Vec<u64>,
    /// (max pool, stem conv) pairs that run as one step (`stem_pool_plan.rs`).
    stem_pools: Vec<(NodeId, NodeId)>,
}

impl WinogradWeights {
    /// Transforms (packs) the constant weight of every f32 conv of `lir`
    /// that runs Winograd (NCHWc) (`locs` / `constants`: the executable's placement).
    pub(super) fn plan(lir: &LirModule, locs: &[Loc], constants: &[AlignedBuf]) -> Self {
        let g = &lir.graph;
        // Per node: (window, groups, (x, w, out) dims, constant weight) of
        // an f32 conv.
        let convs: Vec<_> = g
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
                let dims = |i: rlx_ir::NodeId| g.shape(i).static_dims();
                let (xd, wd, od) = (dims(x)?, dims(w)?, n.shape.static_dims()?);
                let wt = match locs[w.index()] {
                    Loc::Constant(c) => Some(constants[c].f32s()),
                    _ => None,
                };
                Some((window, *groups, [xd, wd, od], wt))
            })
            .collect();
        let mut per_node: Vec<Option<Form>> = convs
            .iter()
            .map(|conv| {
                let (window, groups, [xd, wd, od], wt) = conv.as_ref()?;
                let (wt, dims) = (wt.as_ref()?, (&xd[..], &wd[..], &od[..]));
                match winograd::prepared_weights(window, *groups, dims, wt) {
                    Some(u) => Some(Form::Winograd(u)),
                    // The stem kernel before NCHWc, as conv's own dispatch.
                    None => conv_stem::prepared_weights(window, *groups, dims, wt)
                        .map(Form::Stem)
                        .or_else(|| {
                            conv_nchwc::prepared_weights(window, *groups, dims, wt).map(Form::Nchwc)
                        })
                        .or_else(|| {
                            conv_pointwise::prepared_weights(window, *groups, dims, wt)
                                .map(Form::Pointwise)
                        }),
                }
            })
            .collect();
        // Asked by the layout plan, before anything is packed: only the
        // convs it blocks get the blocked 1x1 form (packed once, below).
        let runs_1x1 = |i: usize| {
            convs[i]
                .as_ref()
                .is_some_and(|(window, groups, [xd, wd, od], wt)| {
                    let dims = (&xd[..], &wd[..], &od[..]);
                    wt.as_ref().is_some_and(|wt| {
                        conv_pointwise_blocked::runs(window, *groups, dims, wt.len())
                    })
                })
        };
        let blocked_1x1 = |i: usize| {
            let (window, groups, [xd, wd, od], wt) = convs[i].as_ref()?;
            let dims = (&xd[..], &wd[..], &od[..]);
            conv_pointwise_blocked::prepared_weights(window, *groups, dims, wt.as_ref()?)
        };
        let depthwise = |i: usize| {
            convs[i]
                .as_ref()
                .is_some_and(|(window, groups, [xd, wd, od], _)| {
                    conv_depthwise_small::runs(window, *groups, (xd, wd, od))
                })
        };
        // Winograd / packed-GEMM / stem convs the NCHWc kernel beats once a
        // side is blocked: their weight is packed for it if the plan blocks
        // one (only then: it is most of ResNet-18's weights).
        let blocked_nchwc: Vec<bool> = convs
            .iter()
            .zip(&per_node)
            .map(|(conv, form)| {
                let Some((window, groups, [xd, wd, od], Some(wt))) = conv else {
                    return false;
                };
                let dims = (&xd[..], &wd[..], &od[..]);
                let others = matches!(form, Some(Form::Winograd(_) | Form::Stem(_)) | None);
                others && conv_nchwc::runs_blocked(window, *groups, dims, wt.len())
            })
            .collect();
        let pack_blocked = |i: usize| {
            let (window, groups, [xd, wd, od], wt) = convs[i].as_ref()?;
            let dims = (&xd[..], &wd[..], &od[..]);
            conv_nchwc::prepared_weights_blocked(window, *groups, dims, wt.as_ref()?)
        };
        // 1x1 convs: those of the NCHW 1x1 kernel and those the packed-weight
        // GEMM takes (7 x 7 maps), which the blocked form then overrides.
        let blockable = |i: usize| match per_node[i] {
            Some(Form::Nchwc(_)) => true,
            Some(Form::Winograd(_) | Form::Stem(_)) => blocked_nchwc[i],
            Some(Form::Pointwise(_)) | None => depthwise(i) || runs_1x1(i) || blocked_nchwc[i],
            _ => false,
        };
        let reads_only = |i: usize| match &convs[i] {
            Some((_, _, [xd, wd, od], _)) if wd[2..] == [1, 1] => od[1] <= xd[1],
            _ => true,
        };
        // Stems the stem kernel keeps (not the NCHWc kernel's): it writes
        // whole 16-channel blocks blocked too (`Conv2d::stem_writes_blocked`).
        let stem_blocked = |i: usize| {
            matches!(per_node[i], Some(Form::Stem(_)))
                && !blocked_nchwc[i]
                && convs[i]
                    .as_ref()
                    .is_some_and(|(_, _, [_, _, od], _)| od[1].is_multiple_of(conv_nchwc::BLOCK))
        };
        let caps = |i: usize| {
            let b = blockable(i);
            super::nchwc_layout::Caps {
                image: b,
                extras: b,
                output: b || stem_blocked(i),
                reads_only: reads_only(i),
            }
        };
        let blocked = super::nchwc_layout::plan(lir, &caps);
        // Stems whose max pool runs them in bands keep the stem kernel's weight.
        let stem_form = |i: usize| matches!(per_node[i], Some(Form::Stem(_)));
        let stem_pools = super::stem_pool_plan::pairs(lir, &blocked, stem_form);
        let pooled_stem = |i: usize| stem_pools.iter().any(|(_, s)| s.index() == i);
        let convs_blockable: Vec<bool> = (0..g.len()).map(blockable).collect();
        let blocked_extras: Vec<u64> = g
            .ids()
            .map(|id| {
                let n = g.node(id);
                let Op::FusedConv { bias, .. } = &n.op else {
                    return 0;
                };
                let extras = &n.inputs[rlx_ir::ops::fused_conv::conv_arity(*bias)..];
                extras
                    .iter()
                    .enumerate()
                    .filter(|(_, e)| blocked[e.index()].output)
                    .fold(0, |m, (k, _)| m | 1 << k)
            })
            .collect();
        // A 3x3 stride-1 conv blocked on both sides where the blocked
        // Winograd beats the NCHWc tile (`Conv2d::winograd_blocked_wins`).
        let winograd_blocked = |i: usize| {
            let (window, groups, [xd, wd, od], wt) = convs[i].as_ref()?;
            let dims = (&xd[..], &wd[..], &od[..]);
            winograd_blocked::prepared_weights(window, *groups, dims, wt.as_ref()?)
        };
        for (i, io) in blocked.iter().enumerate() {
            let unblockable = !convs_blockable[i] || pooled_stem(i);
            if !(io.input || io.output || blocked_extras[i] != 0) || unblockable {
                continue;
            }
            let both = io.input && io.output;
            if let Some(u) = both.then(|| winograd_blocked(i)).flatten() {
                per_node[i] = Some(Form::WinogradBlocked(u));
            } else if let Some(w) = blocked_nchwc[i].then(|| pack_blocked(i)).flatten() {
                per_node[i] = Some(Form::Nchwc(w));
            } else if matches!(per_node[i], Some(Form::Pointwise(_)) | None) {
                per_node[i] = match blocked_1x1(i) {
                    Some(w) => Some(Form::PointwiseBlocked(w)),
                    None => Some(Form::Depthwise),
                };
            }
        }
        WinogradWeights {
            per_node,
            blocked,
            blocked_extras,
            stem_pools,
        }
    }

    /// Values written blocked for their readers (convs, pools, concats).
    pub(super) fn blocked_outputs(&self) -> usize {
        self.blocked.iter().filter(|b| b.output).count()
    }

    /// Convs that run the blocked Winograd kernel.
    pub(super) fn winograd_blocked_convs(&self) -> usize {
        let taken = |f: &&Option<Form>| matches!(f, Some(Form::WinogradBlocked(_)));
        self.per_node.iter().filter(taken).count()
    }

    /// True when node `node` runs a kernel on the blocked layout, which the
    /// executor takes over the packed-weight GEMM's form of the conv.
    pub(super) fn overrides_packing(&self, node: usize) -> bool {
        let io = self.blocked.get(node).copied().unwrap_or_default();
        io.input || io.output || self.blocked_extras(node) != 0
    }

    /// Node `node`'s epilogue extras read blocked (bit `k`: extra `k`).
    pub(super) fn blocked_extras(&self, node: usize) -> u64 {
        self.blocked_extras.get(node).copied().unwrap_or(0)
    }

    /// The layouts of node `node` (a pool or mean, not a conv or concat)
    /// when a side of it is blocked ([`crate::kernels::pool_blocked`]); a
    /// blocked concat runs its usual kernel (the same bytes either layout).
    pub(super) fn pool_layout(&self, node: &Node, index: usize) -> Option<conv_nchwc::BlockedIo> {
        let io = self.blocked.get(index).copied()?;
        let pool = self.per_node[index].is_none()
            && !matches!(node.op, Op::Concat { .. } | Op::ConvTranspose { .. });
        ((io.input || io.output) && pool).then_some(io)
    }

    /// True when node `index` (a ConvTranspose) writes its output blocked
    /// ([`crate::kernels::conv_transpose::conv_transpose_blocked`]).
    pub(super) fn up_conv_blocked(&self, node: &Node, index: usize) -> bool {
        matches!(node.op, Op::ConvTranspose { .. })
            && self.blocked.get(index).is_some_and(|io| io.output)
    }

    /// The (max pool, stem conv) pairs that run as one step
    /// (`kernels/stem_pool.rs`), with the conv's packed stem weight.
    pub(super) fn stem_pools(&self) -> impl Iterator<Item = (NodeId, NodeId, &[f32])> {
        self.stem_pools
            .iter()
            .filter_map(|&(p, s)| match self.per_node[s.index()].as_ref()? {
                Form::Stem(w) => Some((p, s, &w[..])),
                _ => None,
            })
    }

    /// Node `node`'s prepared weight, if it has one.
    pub(super) fn of(&self, node: usize) -> Option<Prepared<'_>> {
        Some(match self.per_node.get(node)?.as_ref()? {
            Form::Winograd(u) => Prepared::Winograd(u),
            Form::WinogradBlocked(u) => Prepared::WinogradBlocked(u.f32s()),
            Form::Nchwc(w) => Prepared::Nchwc(w.f32s(), self.blocked[node]),
            Form::Pointwise(w) => Prepared::Pointwise(w),
            Form::PointwiseBlocked(w) => Prepared::PointwiseBlocked(w, self.blocked[node]),
            Form::Depthwise => Prepared::DepthwiseBlocked(self.blocked[node]),
            Form::Stem(w) => Prepared::Stem(w, self.blocked[node]),
        })
    }
}
