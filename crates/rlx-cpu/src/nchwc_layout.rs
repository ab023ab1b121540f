//! Which activations stay in the NCHWc blocked layout between convs.
//!
//! A conv whose kernel can read and write the blocked layout — the NCHWc
//! dense kernel on a prepared weight ([`crate::kernels::conv_nchwc`]), the
//! blocked 1x1 kernel ([`crate::kernels::conv_pointwise_blocked`]) or the
//! small-plane depthwise one ([`crate::kernels::conv_depthwise_small`]) —
//! writes its output blocked, `[N][O/16][H][W][16]`, when every node
//! reading that output is another such conv reading it as its image `x`
//! (none as a weight, bias or epilogue operand), the value is not a graph
//! output, `O` is a multiple of 16 and the producer's epilogue runs on
//! blocked rows. Those readers then take the blocked image as is: the
//! NCHW -> blocked reorder of the reader and the blocked -> NCHW transpose
//! of the writer cancel in pairs, the way ONNX Runtime's NCHWc transformer
//! drops a ReorderOutput feeding a ReorderInput. So MobileNetV2's expand
//! 1x1 -> depthwise 3x3 -> project 1x1 keeps its two inner edges blocked
//! (on 28 x 28 maps and below, where the depthwise kernel runs); an edge
//! of 24 channels (not whole blocks) stays NCHW rather than padded, and
//! so does a block's input that its residual add reads. Everything else
//! keeps NCHW, so no other kernel ever sees a blocked buffer.

use crate::kernels::conv_nchwc::{self, BlockedIo, BLOCK};
use crate::kernels::View;
use rlx_compile::LirModule;
use rlx_ir::{DType, NodeId, Op};

/// Per node, the sides of it kept blocked; `blockable(i)`: node `i` runs a
/// kernel that reads and writes both layouts (see the module doc);
/// `reads_only(i)`: a blocked image is worth it to node `i` when its own
/// output stays NCHW (not so for a 1x1 conv with more outputs than inputs:
/// its output transpose costs more than the image packing it saves —
/// MobileNetV2's 16 -> 96 at 112 x 112 took 1.7 ms instead of 1.05).
pub(super) fn plan(
    lir: &LirModule,
    blockable: &dyn Fn(usize) -> bool,
    reads_only: &dyn Fn(usize) -> bool,
) -> Vec<BlockedIo> {
    let g = &lir.graph;
    let mut readers: Vec<Vec<usize>> = vec![Vec::new(); g.len()];
    for id in g.ids() {
        for &i in &g.node(id).inputs {
            readers[i.index()].push(id.index());
        }
    }
    let mut io = vec![BlockedIo::default(); g.len()];
    for id in g.ids() {
        let i = id.index();
        let r = &readers[i];
        let reads_as_image = |j: &usize| {
            let ins = &g.node(NodeId(*j as u32)).inputs;
            blockable(*j) && ins[0] == id && !ins[1..].contains(&id)
        };
        let blocked = blockable(i)
            && !r.is_empty()
            && r.iter().all(reads_as_image)
            && !lir.io.outputs.iter().any(|(o, _)| *o == id)
            && epilogue_runs_blocked(lir, id);
        if blocked {
            io[i].output = true;
            for &j in r {
                io[j].input = true;
            }
        }
    }
    // Edges into a reader that would only read blocked where that does not
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
