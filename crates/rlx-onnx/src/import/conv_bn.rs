//! Batch norm folded into the conv before it, as inference runtimes do:
//! `BN(conv(x, W) + b)` with constant weights and statistics is
//! `conv(x, W * s) + (b - mean) * s + shift`, `s = scale / sqrt(var + eps)`
//! per output channel. The network then runs one conv where it ran a conv
//! and a per-channel region of four broadcast ops.

use super::NodeCx;
use crate::Result;
use rlx_ir::{ConstBytes, DType, HostTensor, NodeId, Op};

/// The folded conv when input 0 of the BatchNormalization in `cx` is an f32
/// conv of constant weights (and bias) and the statistics are constants;
/// `None` otherwise (the caller then imports the normalisation as ops). The
/// original conv is left for dead-code elimination, so another reader of
/// its output still sees it unchanged.
pub(super) fn fold(cx: &mut NodeCx, eps: f64) -> Result<Option<NodeId>> {
    let x = cx.x(0)?;
    let conv = cx.g.node(x).clone();
    let Op::Conv { .. } = conv.op else {
        return Ok(None);
    };
    if conv.shape.dtype() != DType::F32 {
        return Ok(None);
    }
    let stats: Option<Vec<Vec<f64>>> = (1..5)
        .map(|i| cx.konst(i).map(HostTensor::to_f64_lossy))
        .collect();
    let (Some(stats), Some(w)) = (stats, super::const_of(cx.g, conv.inputs[1])) else {
        return Ok(None);
    };
    let o = w.dims().first().copied().unwrap_or(0);
    if o == 0 || w.numel() == 0 || w.dtype() != DType::F32 || stats.iter().any(|s| s.len() != o) {
        return Ok(None);
    }
    let bias = match conv.inputs.get(2) {
        Some(&b) => match super::const_of(cx.g, b) {
            Some(t) if t.numel() == o => t.to_f64_lossy(),
            _ => return Ok(None),
        },
        None => vec![0.0; o],
    };
    let (scale, shift, mean, var) = (&stats[0], &stats[1], &stats[2], &stats[3]);
    let s: Vec<f64> = (0..o).map(|c| scale[c] / (var[c] + eps).sqrt()).collect();
    let row_bytes = w.numel() / o * 4;
    let fill = |dst: &mut [u8]| {
        let rows = dst
            .chunks_exact_mut(row_bytes)
            .zip(w.bytes().chunks_exact(row_bytes));
        for ((d_row, s_row), &sc) in rows.zip(&s) {
            for (d, b) in d_row.chunks_exact_mut(4).zip(s_row.chunks_exact(4)) {
                let v = f32::from_le_bytes(b.try_into().expect("4-byte chunk"));
                d.copy_from_slice(&((f64::from(v) * sc) as f32).to_le_bytes());
            }
        }
    };
    // Mapped when large: fewer page faults than a vector's (45 MB of
    // ResNet-18 weights), and page aligned, so the CPU backend uses the
    // folded weight in place.
    let folded_w = match crate::model::large_zeroed(w.bytes().len()) {
        Some(mut m) => {
            fill(m.bytes_mut());
            match m.freeze() {
                Some(m) => ConstBytes::from_owner(m),
                None => return Ok(None), // mprotect failed: import the normalisation as ops
            }
        }
        None => {
            let mut v = vec![0u8; w.bytes().len()];
            fill(&mut v);
            ConstBytes::new(v)
        }
    };
    let folded_b: Vec<f32> = (0..o)
        .map(|c| ((bias[c] - mean[c]) * s[c] + shift[c]) as f32)
        .collect();
    let w_node =
        cx.g.constant_tensor(&HostTensor::from_shared(DType::F32, w.dims(), folded_w)?);
    let b_node = cx.g.constant_tensor(&HostTensor::from_vec(folded_b, &[o])?);
    let y = cx.node(conv.op, &[conv.inputs[0], w_node, b_node], None)?;
    Ok(Some(y))
}
