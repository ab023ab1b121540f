//! Which activations stay in the NCHWc blocked layout `[N][C/16][H][W][16]`.
//!
//! Layout-capable node kinds ([`Caps`]):
//! - writers and image readers: a conv whose kernel reads and writes
//!   the blocked layout — the NCHWc dense kernel on a prepared weight
//!   ([`crate::kernels::conv_nchwc`]; it also takes a stem of at most 4
//!   input channels and whole groups of 64 outputs, ResNet's 3 -> 64 7x7
//!   and CRNN's 1 -> 64 3x3, whose image is never blocked, when the
//!   stem's output is), the 3-channel stem kernel as a writer only
//!   ([`crate::kernels::conv_stem`], 16 / 32 outputs: YOLO's and
//!   MobileNetV2's stems, U-Net's first 3x3), the blocked 1x1 kernel
//!   ([`crate::kernels::conv_pointwise_blocked`]), the 16-lane
//!   depthwise one ([`crate::kernels::conv_depthwise_small`]: planes up
//!   to 28 x 28 in either layout, larger ones of whole 16-channel groups
//!   in row bands when a side is blocked); and a 2-D max pool
//!   ([`crate::kernels::pool_blocked`]), which reads and writes either
//!   layout (planned to write blocked when it reads blocked; it reads
//!   NCHW only when a later step drops its producer's blocked output);
//! - residual readers: such a conv whose row-chain epilogue reads the
//!   value as a same-shape extra (`RowChain` reads it at the output's
//!   blocked offsets: [`crate::kernels::conv_epilogue`]);
//! - read-only readers: a mean over both spatial axes (global average
//!   pool) ([`crate::kernels::pool_blocked`]);
//! - pass-throughs: a channel concat of 4-D f32 parts of whole 16-channel
//!   blocks. Blocked, each image's part is the same contiguous run
//!   `[C_k/16][H][W][16]` at the same offset as in NCHW, so the concat's
//!   per-image copy and the memory plan's in-place join (batch 1: the
//!   parts' producers write their blocks straight into the concat's
//!   slot) serve both layouts unchanged, as ONNX Runtime's NCHWc
//!   transformer keeps a Concat of whole blocks blocked. A concat is
//!   blocked when every part is written blocked and every reader reads
//!   it blocked: it is offered while its parts' producers are planned,
//!   and withdrawn (the plan redone) when it or one of its parts ends up
//!   NCHW, so a concat and its parts always share one layout;
//! - writers only: a 2x2 stride-2 ConvTranspose run by
//!   [`crate::kernels::conv_transpose`]'s up2 kernel with whole 16-channel
//!   output blocks (U-Net's up-convs: their skip concats then stay
//!   blocked, read in place by the first conv of each up pair).
//!
//! A writer writes its output blocked when every node reading it is a
//! capable reader of one of those kinds (as its image `x` or an epilogue
//! extra; never as a weight or bias), the value is not a graph output,
//! it has whole 16-channel blocks and a conv's own epilogue runs on
//! blocked rows. The readers then take the blocked value as is: the NCHW
//! -> blocked reorder of a reader and the blocked -> NCHW transpose of the
//! writer cancel in pairs, the way ONNX Runtime's NCHWc transformer drops
//! a ReorderOutput feeding a ReorderInput. So MobileNetV2's inverted
//! residual blocks on 28 x 28 maps and below run blocked end to end
//! (expand 1x1 -> depthwise -> project 1x1 + residual), on 112 / 56 maps
//! from the expand (or the stem) through the depthwise into the project,
//! which writes its 16 / 24 channels NCHW (the blocked 1x1 kernel reads a
//! blocked image for any output count; its last partial block of 24 or
//! 40 outputs is computed padded and stored NCHW), ResNet-18 runs
//! blocked from the stem's output to the last conv -> global pool (stem
//! -> max pool -> layer 1's first conv and residual, as ONNX Runtime's
//! NCHWc graph; stage transitions and downsamples included), and the
//! YOLO-style net's conv + SiLU chains stay blocked between convs. Convs
//! whose own best kernel is another one (Winograd up to 128 x 128
//! channels, a 1x1 of stride 2, a stem of 64 outputs) are offered too and
//! take the NCHWc kernel only when the plan gives them a blocked side
//! (`Conv2d::nchwc_wins_blocked`); a 3x3 stride-1 conv given both sides
//! blocked runs the blocked Winograd F(4,3) instead where it wins
//! (`winograd_weights.rs`, `Conv2d::winograd_blocked_wins`). A value of 24 channels (not whole
//! blocks) stays NCHW rather than padded, and so does any value read by
//! another kind of node (larger Winograd convs, the packed GEMM, a
//! ConvTranspose's image, ...), so no other kernel ever sees a blocked
//! buffer. The YOLO-style net's CSP concat (conv + SiLU parts, read by a
//! 1x1) and U-Net's skip concats (skip conv + up-conv parts) are blocked.

use crate::kernels::conv_nchwc::{self, BlockedIo, BLOCK};
use crate::kernels::{conv_transpose, pool_blocked, View};
use rlx_compile::LirModule;
use rlx_ir::{DType, NodeId, Op};

/// What a node's kernel can do with the blocked layout (a conv's from the
/// executor, a pool's / mean's from [`pool_blocked`]).
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Caps {
    /// Reads its image `x` blocked.
    pub(super) image: bool,
    /// Reads same-shape row-chain epilogue extras blocked (a conv).
    pub(super) extras: bool,
    /// Can write its output blocked.
    pub(super) output: bool,
    /// Reading a blocked image pays even when its own output stays NCHW
    /// (not so for a 1x1 conv with more outputs than inputs: its output
    /// transpose costs more than the image packing it saves —
    /// MobileNetV2's 16 -> 96 at 112 x 112 took 1.7 ms instead of 1.05).
    pub(super) reads_only: bool,
}

/// Per node, the sides of it kept blocked (a conv reading a blocked extra
/// finds it as that extra's producer's `output`); `conv_caps(i)`: conv
/// node `i`'s [`Caps`].
pub(super) fn plan(lir: &LirModule, conv_caps: &dyn Fn(usize) -> Caps) -> Vec<BlockedIo> {
    let g = &lir.graph;
    let mut caps: Vec<Caps> = g
        .ids()
        .map(|id| {
            if is_conv(&g.node(id).op) {
                conv_caps(id.index())
            } else if blockable_concat(lir, id) {
                CONCAT_CAPS
            } else if up_conv_writes_blocked(lir, id) {
                UP_CONV_CAPS
            } else {
                pool_caps(lir, id)
            }
        })
        .collect();
    // A concat is offered blocked while planning its parts' producers
    // (planned before it); when it then stays NCHW, or keeps a part NCHW,
    // it is withdrawn and the plan redone, until every concat left has all
    // its parts and itself in one layout (each round withdraws one).
    loop {
        let io = plan_with(lir, &caps);
        let split = g.ids().find(|&id| {
            let n = g.node(id);
            let parts = n.inputs.iter().filter(|p| io[p.index()].output).count();
            matches!(n.op, Op::Concat { .. })
                && caps[id.index()].output
                && (parts
                    != if io[id.index()].output {
                        n.inputs.len()
                    } else {
                        0
                    })
        });
        match split {
            Some(c) => caps[c.index()] = Caps::default(),
            None => return io,
        }
    }
}

/// A channel concat's caps when it may be blocked: it reads every part as
/// an image and its copy (or the in-place join) is the same bytes in
/// either layout, its parts being whole 16-channel blocks.
const CONCAT_CAPS: Caps = Caps {
    image: true,
    extras: false,
    output: true,
    reads_only: true,
};

/// A 2x2 stride-2 ConvTranspose's caps: it reads its image NCHW and can
/// write whole 16-channel blocks ([`conv_transpose::writes_blocked`]).
const UP_CONV_CAPS: Caps = Caps {
    image: false,
    extras: false,
    output: true,
    reads_only: true,
};

/// True for a ConvTranspose the up2 kernel runs that can write its output
/// blocked (static 4-D dims, whole 16-channel output blocks).
fn up_conv_writes_blocked(lir: &LirModule, id: NodeId) -> bool {
    let g = &lir.graph;
    let n = g.node(id);
    let dims = |v: NodeId| g.shape(v).static_dims();
    match (n.inputs.first(), n.inputs.get(1)) {
        (Some(&x), Some(&w)) => match (dims(x), dims(w), n.shape.static_dims()) {
            (Some(xd), Some(wd), Some(yd)) => {
                conv_transpose::writes_blocked(&n.op, &xd, &wd, &yd, g.shape(x).dtype())
            }
            _ => false,
        },
        _ => false,
    }
}

/// The plan for fixed per-node caps (concats included as offered).
fn plan_with(lir: &LirModule, caps: &[Caps]) -> Vec<BlockedIo> {
    let g = &lir.graph;
    let mut readers: Vec<Vec<usize>> = vec![Vec::new(); g.len()];
    for id in g.ids() {
        for &i in &g.node(id).inputs {
            if readers[i.index()].last() != Some(&id.index()) {
                readers[i.index()].push(id.index());
            }
        }
    }
    let mut io = vec![BlockedIo::default(); g.len()];
    for id in g.ids() {
        let i = id.index();
        let r = &readers[i];
        // A conv's epilogue must run blocked; a pool writes blocked only
        // from a blocked input (its producers are planned before it):
        // transposing an NCHW image in cost U-Net's 2x2 pools 3-6x their
        // NCHW time, more than their readers' reorder.
        let own = match &g.node(id).op {
            op if is_conv(op) => epilogue_runs_blocked(lir, id),
            Op::Concat { .. } => g.node(id).inputs.iter().all(|p| io[p.index()].output),
            Op::ConvTranspose { .. } => true,
            _ => io[i].input,
        };
        let blocked = caps[i].output
            && own
            && !r.is_empty()
            && r.iter().all(|&j| reads_blocked(lir, caps, id, j).is_some())
            && !lir.io.outputs.iter().any(|(o, _)| *o == id);
        if blocked {
            io[i].output = true;
            for &j in r {
                if reads_blocked(lir, caps, id, j) == Some(true) {
                    io[j].input = true;
                }
            }
        }
    }
    // Edges into a conv that would only read blocked where that does not
    // pay go back to NCHW, until none is left (dropping one can leave its
    // producer such a reader).
    loop {
        let bad = (0..io.len()).find(|&j| io[j].input && !io[j].output && !caps[j].reads_only);
        let Some(j) = bad else {
            return io;
        };
        let producer = g.node(NodeId(j as u32)).inputs[0].index();
        io[producer].output = false;
        for &k in &readers[producer] {
            io[k].input = false;
        }
    }
}

/// True for a concat of 4-D f32 values on the channel axis whose every
/// part has whole 16-channel blocks: blocked, each image's part `k` is the
/// same contiguous run as in NCHW (`[C_k/16][H][W][16]` at channel offset
/// `c_k * H * W`), so the concat kernel's per-image copy and the memory
/// plan's in-place join (batch 1) serve both layouts unchanged.
fn blockable_concat(lir: &LirModule, id: NodeId) -> bool {
    let g = &lir.graph;
    let n = g.node(id);
    let whole = |v: NodeId| {
        let s = g.shape(v);
        s.dtype() == DType::F32
            && s.static_dims()
                .is_some_and(|d| d.len() == 4 && d[1].is_multiple_of(BLOCK))
    };
    matches!(n.op, Op::Concat { axis: 1 }) && whole(id) && n.inputs.iter().all(|&p| whole(p))
}

/// True for a conv node (plain or fused).
fn is_conv(op: &Op) -> bool {
    matches!(op, Op::Conv { .. } | Op::FusedConv { .. })
}

/// A node other than a conv: a max pool reads and writes blocked, a
/// spatial mean reads blocked ([`pool_blocked::takes`] /
/// [`pool_blocked::writes`] on its static dims), anything else neither.
fn pool_caps(lir: &LirModule, id: NodeId) -> Caps {
    let g = &lir.graph;
    let n = g.node(id);
    let (Some(x), Some(y)) = (
        n.inputs.first().and_then(|&x| g.shape(x).static_dims()),
        n.shape.static_dims(),
    ) else {
        return Caps::default();
    };
    let dtype = g.shape(n.inputs[0]).dtype();
    let one = n.inputs.len() == 1;
    Caps {
        image: one && pool_blocked::takes(&n.op, &x, &y, dtype),
        extras: false,
        output: one && pool_blocked::writes(&n.op, &x, &y, dtype),
        reads_only: true,
    }
}

/// How node `j` can read value `id` blocked: `Some(true)` as its image
/// (a capable conv's `x`, a pool's / mean's input), `Some(false)` only as
/// same-shape epilogue extras of a capable conv, `None` not at all.
fn reads_blocked(lir: &LirModule, caps: &[Caps], id: NodeId, j: usize) -> Option<bool> {
    let g = &lir.graph;
    let n = g.node(NodeId(j as u32));
    if matches!(n.op, Op::Concat { .. }) {
        return caps[j].image.then_some(true);
    }
    let image = n.inputs.first() == Some(&id);
    let arity = match &n.op {
        Op::FusedConv { bias, .. } => rlx_ir::ops::fused_conv::conv_arity(*bias),
        Op::Conv { .. } => n.inputs.len(),
        _ => 1,
    };
    if n.inputs[1..arity].contains(&id) {
        return None;
    }
    let in_extras = n.inputs[arity..].contains(&id);
    let extras_ok = caps[j].extras
        && g.shape(id).static_dims() == n.shape.static_dims()
        && epilogue_runs_blocked(lir, NodeId(j as u32));
    if in_extras && !extras_ok {
        return None;
    }
    if image {
        return caps[j].image.then_some(true);
    }
    in_extras.then_some(false)
}

/// True when conv `id` has whole 16-channel output blocks and no epilogue,
/// or one that is a row chain over its extras (checked on zeroed stand-ins
/// of the extras: a row chain depends only on their dims and dtypes).
fn epilogue_runs_blocked(lir: &LirModule, id: NodeId) -> bool {
    let g = &lir.graph;
    let n = g.node(id);
    let Some(out) = n.shape.static_dims() else {
        return false;
    };
    if out.len() != 4 || !out[1].is_multiple_of(BLOCK) || n.shape.dtype() != DType::F32 {
        return false;
    }
    let Op::FusedConv { bias, epilogue, .. } = &n.op else {
        return matches!(n.op, Op::Conv { .. });
    };
    let extras = &n.inputs[rlx_ir::ops::fused_conv::conv_arity(*bias)..];
    let Some(dims) = extras
        .iter()
        .map(|&e| g.shape(e).static_dims())
        .collect::<Option<Vec<_>>>()
    else {
        return false;
    };
    let zeros: Vec<Vec<f32>> = extras
        .iter()
        .zip(&dims)
        .map(|(&e, d)| {
            let bytes = d.iter().product::<usize>() * g.shape(e).dtype().size_bytes();
            vec![0f32; bytes.div_ceil(4)]
        })
        .collect();
    let views: Vec<View> = extras
        .iter()
        .zip(&dims)
        .zip(&zeros)
        .map(|((&e, d), z)| View {
            dims: d,
            dtype: g.shape(e).dtype(),
            bytes: bytemuck_bytes(z),
        })
        .collect();
    conv_nchwc::epilogue_runs_blocked(epilogue, &views, &out)
}

/// The bytes of `v`.
fn bytemuck_bytes(v: &[f32]) -> &[u8] {
    // SAFETY: f32 is plain data; the bytes cover exactly `v`.
    unsafe { std::slice::from_raw_parts(v.as_ptr() as *const u8, std::mem::size_of_val(v)) }
}
