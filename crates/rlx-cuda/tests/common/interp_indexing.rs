//! The host interpreter's indexing, top-k, transposed-convolution, resize
//! and dequantize steps, each computed in f64 from the op's definition
//! (numpy / PyTorch / ggml), not from the kernel's loop structure.

use rlx_cuda::geometry::{Resize, Window2d};
use rlx_cuda::plan::AxisIndex;
use std::cmp::Ordering;

/// Row-major coordinates of flat index `i` of `dims`.
fn unravel(mut i: usize, dims: &[usize]) -> Vec<usize> {
    let mut c = vec![0; dims.len()];
    for d in (0..dims.len()).rev() {
        c[d] = i % dims[d];
        i /= dims[d];
    }
    c
}

/// Data offset of index element `i` holding index value `r` (negative
/// counts from the end): its coordinates with the axis replaced by `r`.
fn data_offset(a: &AxisIndex, i: usize, r: f64) -> usize {
    let r = if r < 0.0 { r + a.len as f64 } else { r };
    assert!(
        (0.0..a.len as f64).contains(&r),
        "index {r} outside {}",
        a.len
    );
    let at: i64 = unravel(i, &a.dims)
        .iter()
        .zip(&a.data_strides)
        .map(|(&c, &s)| c as i64 * s)
        .sum();
    (at + r as i64 * a.axis_stride) as usize
}

/// numpy `take_along_axis`.
pub fn gather_elements(x: &[f64], idx: &[f64], a: &AxisIndex) -> Vec<f64> {
    idx.iter()
        .enumerate()
        .map(|(i, &r)| x[data_offset(a, i, r)])
        .collect()
}

/// torch `scatter_add`: the base with each update added at its place.
pub fn scatter_add(base: &[f64], idx: &[f64], upd: &[f64], a: &AxisIndex) -> Vec<f64> {
    let mut y = base.to_vec();
    for (i, (&r, &u)) in idx.iter().zip(upd).enumerate() {
        y[data_offset(a, i, r)] += u;
    }
    y
}

/// torch `topk` per line of `[outer, n, inner]`: a stable sort with NaN
/// above every number (largest first, or smallest first), the first `k`.
pub fn topk(
    x: &[f64],
    [outer, n, inner]: [usize; 3],
    k: usize,
    largest: bool,
    indices: bool,
) -> Vec<f64> {
    let key = |a: f64, b: f64| match (a.is_nan(), b.is_nan()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        _ => a.partial_cmp(&b).unwrap(),
    };
    let mut y = vec![0.0; outer * k * inner];
    for o in 0..outer {
        for c in 0..inner {
            let at = |i: usize| x[(o * n + i) * inner + c];
            let mut order: Vec<usize> = (0..n).collect();
            // `sort_by` is stable: equal values keep the lower index first.
            order.sort_by(|&i, &j| {
                let ord = key(at(i), at(j));
                if largest {
                    ord.reverse()
                } else {
                    ord
                }
            });
            for (j, &i) in order[..k].iter().enumerate() {
                y[(o * k + j) * inner + c] = if indices { i as f64 } else { at(i) };
            }
        }
    }
    y
}

/// Transposed convolution by its definition: every input cell scatters
/// `x · w` into the output cells its taps reach (PyTorch `conv_transpose2d`).
pub fn conv_transpose2d(x: &[f64], wt: &[f64], bias: Option<&[f64]>, g: &Window2d) -> Vec<f64> {
    let (cpg, opg) = (g.in_c / g.groups, g.out_c / g.groups);
    let mut y = vec![0.0; (g.batch * g.out_c * g.oh * g.ow) as usize];
    for n in 0..g.batch {
        for c in 0..g.in_c {
            let group = c / cpg;
            for yi in 0..g.h {
                for xi in 0..g.w {
                    let xv = x[(((n * g.in_c + c) * g.h + yi) * g.w + xi) as usize];
                    for oo in 0..opg {
                        let o = group * opg + oo;
                        for i in 0..g.kh {
                            for j in 0..g.kw {
                                let oy = yi * g.sh - g.ph + i * g.dh;
                                let ox = xi * g.sw - g.pw + j * g.dw;
                                if (0..g.oh).contains(&oy) && (0..g.ow).contains(&ox) {
                                    let wv = wt[(((c * opg + oo) * g.kh + i) * g.kw + j) as usize];
                                    y[(((n * g.out_c + o) * g.oh + oy) * g.ow + ox) as usize] +=
                                        xv * wv;
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    if let Some(b) = bias {
        for (k, v) in y.iter_mut().enumerate() {
            *v += b[(k / (g.oh * g.ow) as usize) % g.out_c as usize];
        }
    }
    y
}

/// The source taps `(i0, i1, weight of i1)` of output index `j` along a
/// dim resized from `n_in` to `n_out` (PyTorch `interpolate`).
fn taps(j: usize, n_in: usize, n_out: usize, linear: bool, align: bool) -> (usize, usize, f64) {
    if n_in == n_out {
        return (j, j, 0.0);
    }
    if !linear {
        let i = (j * n_in / n_out).min(n_in - 1);
        return (i, i, 0.0);
    }
    let src = if align {
        if n_out > 1 {
            j as f64 * (n_in - 1) as f64 / (n_out - 1) as f64
        } else {
            0.0
        }
    } else {
        ((j as f64 + 0.5) * n_in as f64 / n_out as f64 - 0.5).max(0.0)
    };
    let i0 = (src.floor() as usize).min(n_in - 1);
    (i0, (i0 + 1).min(n_in - 1), src - i0 as f64)
}

/// Nearest / multilinear resize of each `[*sp]` plane.
pub fn resize(x: &[f64], r: &Resize) -> Vec<f64> {
    let rank = r.rank as usize;
    let (ins, outs): (Vec<usize>, Vec<usize>) = (0..rank)
        .map(|d| (r.input[d] as usize, r.output[d] as usize))
        .unzip();
    let (in_len, out_len) = (
        ins.iter().product::<usize>(),
        outs.iter().product::<usize>(),
    );
    let mut y = Vec::with_capacity(r.planes as usize * out_len);
    for p in 0..r.planes as usize {
        for o in 0..out_len {
            let t: Vec<_> = unravel(o, &outs)
                .iter()
                .enumerate()
                .map(|(d, &j)| taps(j, ins[d], outs[d], r.linear != 0, r.align_corners != 0))
                .collect();
            let mut acc = 0.0;
            for corner in 0..1usize << rank {
                let (mut w, mut at) = (1.0, 0);
                for (d, &(i0, i1, l)) in t.iter().enumerate() {
                    let hi = corner >> d & 1 == 1;
                    w *= if hi { l } else { 1.0 - l };
                    at = at * ins[d] + if hi { i1 } else { i0 };
                }
                acc += w * x[p * in_len + at];
            }
            y.push(acc);
        }
    }
    y
}

/// GGUF Q4_0 / Q4_1 / Q5_0 / Q5_1 / Q8_0 blocks of 32 values (ggml's
/// `dequantize_row_*`: f32 products, rounded before a min is added) and
/// Q4_K / Q5_K / Q6_K super-blocks of 256 ([`k_quant`]).
pub fn dequantize(bytes: &[u8], format: &str) -> Vec<f64> {
    let f16 = |b: &[u8]| half::f16::from_le_bytes([b[0], b[1]]).to_f32();
    // (block bytes, has a min, offset of the u32 of fifth bits)
    let (block, min, high) = match format {
        "q4_0" => (18, false, None),
        "q4_1" => (20, true, None),
        "q5_0" => (22, false, Some(2)),
        "q5_1" => (24, true, Some(4)),
        "q8_0" => (34, false, None),
        "q4_k" | "q5_k" | "q6_k" => return k_quant(bytes, format),
        other => panic!("no reference dequantize for {other}"),
    };
    let mut y = Vec::with_capacity(bytes.len() / block * 32);
    for b in bytes.chunks_exact(block) {
        let d = f16(b);
        if format == "q8_0" {
            y.extend(b[2..].iter().map(|&q| f64::from(q as i8 as f32 * d)));
            continue;
        }
        let qs = &b[block - 16..];
        let bits = high.map(|at| u32::from_le_bytes(b[at..at + 4].try_into().unwrap()));
        for j in 0..32 {
            let nib = if j < 16 { qs[j] & 0xF } else { qs[j - 16] >> 4 };
            let q = i32::from(nib) | bits.map_or(0, |h| ((h >> j & 1) << 4) as i32);
            let v = if min {
                q as f32 * d + f16(&b[2..])
            } else {
                (q - if high.is_some() { 16 } else { 8 }) as f32 * d
            };
            y.push(f64::from(v));
        }
    }
    y
}

/// Q4_K (144 bytes), Q5_K (176) and Q6_K (210) super-blocks, value by
/// value as `dequant.cu` indexes them, written from ggml's block layouts
/// (`block_q4_K` etc.): f32 products, each rounded (no fused multiply-add).
pub fn k_quant(bytes: &[u8], format: &str) -> Vec<f64> {
    let f16 = |b: &[u8]| half::f16::from_le_bytes([b[0], b[1]]).to_f32();
    // 6-bit scale / min j of the 12 scale bytes `q` (ggml's get_scale_min_k4).
    let scale_min = |q: &[u8], j: usize| -> (f32, f32) {
        let (s, m) = if j < 4 {
            (q[j] & 63, q[j + 4] & 63)
        } else {
            (
                (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4),
                (q[j + 4] >> 4) | ((q[j] >> 6) << 4),
            )
        };
        (f32::from(s), f32::from(m))
    };
    let size = match format {
        "q4_k" => 144,
        "q5_k" => 176,
        _ => 210,
    };
    let mut y = Vec::with_capacity(bytes.len() / size * 256);
    for b in bytes.chunks_exact(size) {
        for r in 0..256 {
            let v = if format == "q6_k" {
                let (n, k, l) = (r / 128, (r % 128) / 32, r % 32);
                let low = b[n * 64 + (k & 1) * 32 + l];
                let low = if k >= 2 { low >> 4 } else { low & 0xF };
                let high = (b[128 + n * 32 + l] >> (2 * k)) & 3;
                let q = i32::from(low | (high << 4)) - 32;
                let scale = f32::from(b[192 + n * 8 + l / 16 + 2 * k] as i8);
                f16(&b[208..]) * scale * q as f32
            } else {
                let (c, hi, l) = (r / 64, (r % 64) / 32, r % 32);
                let j = 2 * c + hi;
                let qs = &b[if format == "q4_k" { 16 } else { 48 }..];
                let mut q = if hi == 1 {
                    qs[c * 32 + l] >> 4
                } else {
                    qs[c * 32 + l] & 0xF
                };
                if format == "q5_k" && (b[16 + l] >> j) & 1 == 1 {
                    q += 16;
                }
                let (s, m) = scale_min(&b[4..16], j);
                f16(b) * s * f32::from(q) - f16(&b[2..]) * m
            };
            y.push(f64::from(v));
        }
    }
    y
}
