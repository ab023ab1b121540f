//! Which activations stay in the NCHWc blocked layout `[N][C/16][H][W][16]`.
//!
//! Layout-capable node kinds:
//! - writers (and image readers): a conv whose kernel reads and writes
//!   the blocked layout — the NCHWc dense kernel on a prepared weight
//!   ([`crate::kernels::conv_nchwc`]), the blocked 1x1 kernel
//!   ([`crate::kernels::conv_pointwise_blocked`]), the 16-lane
//!   depthwise one ([`crate::kernels::conv_depthwise_small`]: planes up
//!   to 28 x 28 in either layout, larger ones of whole 16-channel groups
//!   in row bands when a side is blocked);
//! - residual readers: such a conv whose row-chain epilogue reads the
//!   value as a same-shape extra (`RowChain` reads it at the output's
//!   blocked offsets: [`crate::kernels::conv_epilogue`]);
//! - read-only readers: a 2-D max pool and a mean over both spatial axes
//!   (global average pool) ([`crate::kernels::pool_blocked`]), which
//!   write NCHW.
//!
//! A capable conv writes its output blocked when every node reading it
//! is a capable reader of one of those kinds (as its image `x` or an
//! epilogue extra; never as a weight or bias), the value is not a graph
//! output, `O` is a multiple of 16 and its own epilogue runs on blocked
//! rows. The readers then take the blocked value as is: the NCHW ->
//! blocked reorder of a reader and the blocked -> NCHW transpose of the
//! writer cancel in pairs, the way ONNX Runtime's NCHWc transformer drops
//! a ReorderOutput feeding a ReorderInput. So MobileNetV2's inverted
//! residual blocks on 28 x 28 maps and below run blocked end to end
//! (expand 1x1 -> depthwise -> project 1x1 + residual), on 112 / 56 maps
//! from the expand (or the stem) through the depthwise into the project,
//! which writes its 16 / 24 channels NCHW (the blocked 1x1 kernel reads a
//! blocked image for any output count; its last partial block of 24 or
//! 40 outputs is computed padded and stored NCHW), ResNet-18 runs
//! blocked from layer 1's first conv output to the last conv -> global
//! pool, stage transitions and downsamples included (its stem and max
//! pool write NCHW), and the YOLO-style net's conv + SiLU chains
//! stay blocked between convs. Convs whose own best kernel is another
//! one (Winograd up to 128 x 128 channels, a 1x1 of stride 2) are offered
//! too and take the NCHWc kernel only when the plan gives them a blocked
//! side (`Conv2d::nchwc_wins_blocked`). A value of 24 channels (not whole
//! blocks) stays NCHW rather than padded, and so does any value read by
//! another kind of node (larger Winograd convs, the packed GEMM, concat,
//! ...), so no other kernel ever sees a blocked buffer.

use crate::kernels::conv_nchwc::{self, BlockedIo, BLOCK};
use crate::kernels::{pool_blocked, View};
use rlx_compile::LirModule;
use rlx_ir::{DType, NodeId, Op};

/// Per node, the sides of it kept blocked (for a pool / mean: `input`;
/// a conv reading a blocked extra finds it as that extra's producer's
/// `output`); `blockable(i)`: node `i` is a conv on a kernel that reads
/// and writes both layouts (see the module doc); `reads_only(i)`: a
/// blocked image is worth it to conv `i` when its own output stays NCHW
/// (not so for a 1x1 conv with more outputs than inputs: its output
/// transpose costs more than the image packing it saves — MobileNetV2's
/// 16 -> 96 at 112 x 112 took 1.7 ms instead of 1.05).
pub(super) fn plan(
    lir: &LirModule,
    blockable: &dyn Fn(usize) -> bool,
    reads_only: &dyn Fn(usize) -> bool,
) -> Vec<BlockedIo> {
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
        let blocked = blockable(i)
            && !r.is_empty()
            && r.iter()
                .all(|&j| reads_blocked(lir, blockable, id, j).is_some())
            && !lir.io.outputs.iter().any(|(o, _)| *o == id)
            && epilogue_runs_blocked(lir, id);
        if blocked {
            io[i].output = true;
            for &j in r {
                if reads_blocked(lir, blockable, id, j) == Some(true) {
                    io[j].input = true;
                }
            }
        }
    }
    // Edges into a conv that would only read blocked where that does not
    // pay go back to NCHW, until none is left (dropping one can leave its
    // producer such a reader).
    loop {
        let bad = (0..io.len()).find(|&j| io[j].input && !io[j].output && !reads_only(j));
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

/// How node `j` can read value `id` blocked: `Some(true)` as its image
/// (a capable conv's `x`, a pool's / mean's input), `Some(false)` only as
/// same-shape epilogue extras of a capable conv, `None` not at all.
fn reads_blocked(
    lir: &LirModule,
    blockable: &dyn Fn(usize) -> bool,
    id: NodeId,
    j: usize,
) -> Option<bool> {
    let g = &lir.graph;
    let n = g.node(NodeId(j as u32));
    let image = n.inputs.first() == Some(&id);
    if !blockable(j) {
        let dims = |v: NodeId| g.shape(v).static_dims();
        let capable = n.inputs.len() == 1
            && pool_blocked::takes(
                &n.op,
                &dims(id)?,
                &dims(NodeId(j as u32))?,
                g.shape(id).dtype(),
            );
        return (image && capable).then_some(true);
    }
    let arity = match &n.op {
        Op::FusedConv { bias, .. } => rlx_ir::ops::fused_conv::conv_arity(*bias),
        _ => n.inputs.len(),
    };
    if n.inputs[1..arity].contains(&id) {
        return None;
    }
    let in_extras = n.inputs[arity..].contains(&id);
    if in_extras
        && (g.shape(id).static_dims() != n.shape.static_dims()
            || !epilogue_runs_blocked(lir, NodeId(j as u32)))
    {
        return None;
    }
    (image || in_extras).then_some(image)
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
