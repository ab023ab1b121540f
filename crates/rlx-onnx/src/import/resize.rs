//! Resize / Upsample, separable per axis: each resized axis is a sum of
//! gathers at constant source indices times constant weights (nearest: one
//! tap, linear: two, cubic: four), following ONNX's coordinate transforms.

use super::elementwise::select;
use super::NodeCx;
use crate::Result;
use rlx_ir::op::BinaryOp as B;
use rlx_ir::{DType, HostTensor, NodeId, Op};

op_table! {
    "Resize" => resize,
    "Upsample" => upsample,
}

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Nearest,
    Linear,
    Cubic,
}

/// Per-axis settings shared by every resized axis.
struct Settings {
    mode: Mode,
    coord: String,
    nearest: String,
    cubic_a: f64,
    exclude_outside: bool,
    extrapolation: f64,
}

/// The source coordinate of output index `x` on one axis.
fn source_coord(s: &Settings, x: f64, scale: f64, inp: usize, out: usize, roi: (f64, f64)) -> f64 {
    // ONNX maps with the unrounded resized length `scale * input`.
    let inp_f = inp as f64;
    let out_f = if s.coord == "tf_crop_and_resize" {
        out as f64
    } else {
        scale * inp_f
    };
    match s.coord.as_str() {
        "asymmetric" => x / scale,
        "align_corners" => {
            if out_f <= 1.0 {
                0.0
            } else {
                x * (inp_f - 1.0) / (out_f - 1.0)
            }
        }
        "pytorch_half_pixel" => {
            if out_f > 1.0 {
                (x + 0.5) / scale - 0.5
            } else {
                0.0
            }
        }
        "tf_half_pixel_for_nn" => (x + 0.5) / scale,
        "half_pixel_symmetric" => {
            let adjustment = out as f64 / (scale * inp_f);
            let center = inp_f / 2.0;
            let offset = center * (1.0 - adjustment);
            offset + (x + 0.5) / scale - 0.5
        }
        "tf_crop_and_resize" => {
            if out > 1 {
                roi.0 * (inp_f - 1.0) + x * (roi.1 - roi.0) * (inp_f - 1.0) / (out_f - 1.0)
            } else {
                0.5 * (roi.0 + roi.1) * (inp_f - 1.0)
            }
        }
        _ => (x + 0.5) / scale - 0.5, // half_pixel
    }
}

fn nearest_index(mode: &str, v: f64) -> f64 {
    let frac = v - v.floor();
    match mode {
        "floor" => v.floor(),
        "ceil" => v.ceil(),
        "round_prefer_ceil" if frac == 0.5 => v.ceil(),
        "round_prefer_ceil" => v.round(),
        _ if frac == 0.5 => v.floor(), // round_prefer_floor
        _ => v.round(),
    }
}

fn cubic_coeffs(a: f64, s: f64) -> [f64; 4] {
    [
        ((a * (s + 1.0) - 5.0 * a) * (s + 1.0) + 8.0 * a) * (s + 1.0) - 4.0 * a,
        ((a + 2.0) * s - (a + 3.0)) * s * s + 1.0,
        ((a + 2.0) * (1.0 - s) - (a + 3.0)) * (1.0 - s) * (1.0 - s) + 1.0,
        ((a * (2.0 - s) - 5.0 * a) * (2.0 - s) + 8.0 * a) * (2.0 - s) - 4.0 * a,
    ]
}

/// Taps of one axis: per tap, the source index and weight of each output,
/// plus whether each output lies inside the input (for extrapolation).
type Taps = (Vec<Vec<i64>>, Vec<Vec<f64>>, Vec<bool>);

fn axis_taps(s: &Settings, inp: usize, out: usize, scale: f64, roi: (f64, f64)) -> Taps {
    let ntaps = match s.mode {
        Mode::Nearest => 1,
        Mode::Linear => 2,
        Mode::Cubic => 4,
    };
    let mut idx = vec![Vec::with_capacity(out); ntaps];
    let mut wts = vec![Vec::with_capacity(out); ntaps];
    let mut inside = Vec::with_capacity(out);
    let last = inp as f64 - 1.0;
    let clamp = |i: f64| i.clamp(0.0, last) as i64;
    for x in 0..out {
        let v = source_coord(s, x as f64, scale, inp, out, roi);
        inside.push(v >= 0.0 && v <= last);
        match s.mode {
            Mode::Nearest => {
                idx[0].push(clamp(nearest_index(&s.nearest, v)));
                wts[0].push(1.0);
            }
            Mode::Linear => {
                let v = if s.coord == "tf_crop_and_resize" {
                    v
                } else {
                    v.clamp(0.0, last)
                };
                let f = v.floor();
                let t = v - f;
                idx[0].push(clamp(f));
                idx[1].push(clamp(f + 1.0));
                wts[0].push(1.0 - t);
                wts[1].push(t);
            }
            Mode::Cubic => {
                let f = v.floor();
                let mut c = cubic_coeffs(s.cubic_a, v - f);
                let pos = [f - 1.0, f, f + 1.0, f + 2.0];
                if s.exclude_outside {
                    for k in 0..4 {
                        if pos[k] < 0.0 || pos[k] > last {
                            c[k] = 0.0;
                        }
                    }
                    let sum: f64 = c.iter().sum();
                    if sum != 0.0 {
                        c.iter_mut().for_each(|w| *w /= sum);
                    }
                }
                for k in 0..4 {
                    idx[k].push(clamp(pos[k]));
                    wts[k].push(c[k]);
                }
            }
        }
    }
    (idx, wts, inside)
}

/// Resizes axis `axis` of `x` to `out`.
fn resize_axis(
    cx: &mut NodeCx,
    x: NodeId,
    axis: usize,
    out: usize,
    scale: f64,
    roi: (f64, f64),
    s: &Settings,
) -> Result<NodeId> {
    let dims = cx.static_dims(x, "Resize")?;
    let inp = dims[axis];
    if inp == 0 {
        return Err(cx.err("cannot resize an empty axis"));
    }
    let (idx, wts, inside) = axis_taps(s, inp, out, scale, roi);
    let dt = cx.dtype(x);
    let mut wshape = vec![1usize; dims.len()];
    wshape[axis] = out;
    let mut acc: Option<NodeId> = None;
    for (i, w) in idx.iter().zip(&wts) {
        let it = HostTensor::from_slice(i, &[out]).expect("1-d");
        let it = cx.constant(&it);
        let g = cx.node(Op::Gather { axis }, &[x, it], None)?;
        let term = if s.mode == Mode::Nearest {
            g
        } else {
            let wt = HostTensor::from_slice(w, &wshape).expect("weights");
            let wt = cx.constant(&wt);
            let wt = cx.cast(wt, dt)?;
            cx.bin(B::Mul, g, wt)?
        };
        acc = Some(match acc {
            None => term,
            Some(a) => cx.bin(B::Add, a, term)?,
        });
    }
    let mut y = acc.expect("at least one tap");
    if s.coord == "tf_crop_and_resize" && inside.iter().any(|&v| !v) {
        let m: Vec<u8> = inside.iter().map(|&v| v as u8).collect();
        let m = HostTensor::from_bytes(DType::Bool, &wshape, m).expect("mask");
        let m = cx.constant(&m);
        let e = cx.scalar(s.extrapolation, dt);
        y = select(cx, m, y, e)?;
    }
    Ok(y)
}

fn settings(cx: &NodeCx) -> Result<Settings> {
    let mode = match cx.attr_s("mode", "nearest").as_str() {
        "nearest" => Mode::Nearest,
        "linear" | "bilinear" | "trilinear" => Mode::Linear,
        "cubic" | "bicubic" => Mode::Cubic,
        other => return Err(cx.err(format!("unknown mode \"{other}\""))),
    };
    if cx.attr_i("antialias", 0) != 0 {
        return Err(cx.unsupported("antialias=1 (an area filter per output) is not supported"));
    }
    let legacy = cx.opset < 11 || cx.op_type() == "Upsample";
    let default_coord = if legacy { "asymmetric" } else { "half_pixel" };
    Ok(Settings {
        mode,
        coord: cx.attr_s("coordinate_transformation_mode", default_coord),
        nearest: if legacy {
            "floor".into()
        } else {
            cx.attr_s("nearest_mode", "round_prefer_floor")
        },
        cubic_a: cx.attr_f("cubic_coeff_a", -0.75),
        exclude_outside: cx.attr_i("exclude_outside", 0) != 0,
        extrapolation: cx.attr_f("extrapolation_value", 0.0),
    })
}

fn run(
    cx: &mut NodeCx,
    x: NodeId,
    scales: Option<Vec<f64>>,
    sizes: Option<Vec<i64>>,
    roi: Option<Vec<f64>>,
) -> Result<Vec<NodeId>> {
    let s = settings(cx)?;
    let dims = cx.static_dims(x, "Resize")?;
    let r = dims.len();
    let axes: Vec<usize> = match cx.attr_ints("axes") {
        Some(a) => a.iter().map(|&a| cx.axis(a, r)).collect::<Result<_>>()?,
        None => (0..r).collect(),
    };
    let k = axes.len();
    let mut out = dims.clone();
    let mut sc = vec![1.0; r];
    if let Some(sz) = sizes.filter(|v| !v.is_empty()) {
        if sz.len() != k {
            return Err(cx.err(format!("sizes {sz:?} need {k} entries")));
        }
        let ratios: Vec<f64> = (0..k)
            .map(|i| sz[i] as f64 / dims[axes[i]] as f64)
            .collect();
        let policy = cx.attr_s("keep_aspect_ratio_policy", "stretch");
        let common = match policy.as_str() {
            "not_larger" => Some(ratios.iter().copied().fold(f64::INFINITY, f64::min)),
            "not_smaller" => Some(ratios.iter().copied().fold(0.0, f64::max)),
            _ => None,
        };
        for (i, &a) in axes.iter().enumerate() {
            match common {
                Some(c) => {
                    sc[a] = c;
                    out[a] = (c * dims[a] as f64 + 0.5).floor() as usize;
                }
                None => {
                    sc[a] = ratios[i];
                    out[a] = sz[i].max(0) as usize;
                }
            }
        }
    } else if let Some(scv) = scales.filter(|v| !v.is_empty()) {
        if scv.len() != k {
            return Err(cx.err(format!("scales {scv:?} need {k} entries")));
        }
        for (i, &a) in axes.iter().enumerate() {
            if scv[i] <= 0.0 {
                return Err(cx.err(format!("scale {} must be positive", scv[i])));
            }
            sc[a] = scv[i];
            out[a] = (dims[a] as f64 * scv[i]).floor() as usize;
        }
    } else {
        return Err(cx.err("one of scales / sizes is required"));
    }
    // Bound the per-axis tap tables a hostile size could blow up.
    if let Some(&big) = out.iter().find(|&&n| n > 1 << 26) {
        return Err(cx.err(format!("output size {big} exceeds the limit {}", 1 << 26)));
    }
    let roi = roi.unwrap_or_default();
    let mut y = x;
    for (i, &a) in axes.iter().enumerate() {
        if out[a] == dims[a] && sc[a] == 1.0 && s.coord != "tf_crop_and_resize" {
            continue;
        }
        let r_lo_hi = if roi.len() == 2 * k {
            (roi[i], roi[k + i])
        } else {
            (0.0, 1.0)
        };
        y = resize_axis(cx, y, a, out[a], sc[a], r_lo_hi, &s)?;
    }
    Ok(vec![y])
}

fn resize(cx: &mut NodeCx) -> Result<Vec<NodeId>> {
    let x = cx.x(0)?;
    if cx.opset < 11 {
        let scales = cx.const_f64s(1, "scales")?;
        return run(cx, x, Some(scales), None, None);
    }
    let roi = match cx.opt(1) {
        Some(_) => Some(cx.const_f64s(1, "roi")?),
        None => None,
    };
    let scales = match cx.opt(2) {
        Some(_) => Some(cx.const_f64s(2, "scales")?),
        None => None,
    };
    let sizes = cx.opt_const_ints(3, "sizes")?;
    run(cx, x, scales, sizes, roi)
}

fn upsample(cx: &mut NodeCx) -> Result<Vec<NodeId>> {
    let x = cx.x(0)?;
    let scales = match cx.attr_floats("scales") {
        Some(s) => s.iter().map(|&v| v as f64).collect(),
        None => cx.const_f64s(1, "scales")?,
    };
    run(cx, x, Some(scales), None, None)
}
