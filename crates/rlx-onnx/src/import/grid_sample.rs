//! GridSample (2-d and 3-d): nearest / linear / cubic sampling of `X` at
//! the normalised coordinates of a run-time `grid`, with zeros / border /
//! reflection padding, following PyTorch's `grid_sampler` (which ONNX's
//! reference matches): coordinates are padded first for nearest / linear,
//! each tap for cubic. Every tap is a `gather_elements` over the flattened
//! spatial dims, weighted and summed.

use super::elementwise::{cmp_scalar, select};
use super::NodeCx;
use crate::Result;
use rlx_ir::op::{BinaryOp as B, CmpOp, UnaryOp as U};
use rlx_ir::{DType, Dim, NodeId, Op};

op_table! {
    "GridSample" => grid_sample,
}

#[derive(Clone, Copy, PartialEq)]
enum Padding {
    Zeros,
    Border,
    Reflection,
}

/// PyTorch's `reflect_coordinates` then a clip to `[0, size - 1]`.
fn reflect(cx: &mut NodeCx, c: NodeId, size: usize, align: bool) -> Result<NodeId> {
    let (lo2, hi2) = if align {
        (0.0, 2.0 * (size as f64 - 1.0))
    } else {
        (-1.0, 2.0 * size as f64 - 1.0)
    };
    if lo2 == hi2 {
        let z = cx.scalar(0.0, cx.dtype(c));
        return cx.bin(B::Mul, c, z);
    }
    let (min, span) = (lo2 / 2.0, (hi2 - lo2) / 2.0);
    let d = cx.bin_scalar(B::Sub, c, min)?;
    let d = cx.un(U::Abs, d)?;
    let extra = cx.bin_scalar(B::Mod, d, span)?;
    let q = cx.bin_scalar(B::Div, d, span)?;
    let flips = cx.un(U::Floor, q)?;
    let parity = cx.bin_scalar(B::Mod, flips, 2.0)?;
    let even = cmp_scalar(cx, CmpOp::Eq, parity, 0.0)?;
    let a = cx.bin_scalar(B::Add, extra, min)?;
    let neg = cx.un(U::Neg, extra)?;
    let b = cx.bin_scalar(B::Add, neg, span + min)?;
    let r = select(cx, even, a, b)?;
    clip(cx, r, size)
}

fn clip(cx: &mut NodeCx, c: NodeId, size: usize) -> Result<NodeId> {
    let c = cx.bin_scalar(B::Max, c, 0.0)?;
    cx.bin_scalar(B::Min, c, size as f64 - 1.0)
}

fn pad_coord(cx: &mut NodeCx, c: NodeId, size: usize, align: bool, p: Padding) -> Result<NodeId> {
    match p {
        Padding::Zeros => Ok(c),
        Padding::Border => clip(cx, c, size),
        Padding::Reflection => reflect(cx, c, size, align),
    }
}

/// Cubic convolution weights (A = -0.75) of the four taps around `t` in [0, 1).
fn cubic_weights(cx: &mut NodeCx, t: NodeId) -> Result<[NodeId; 4]> {
    let a = -0.75;
    // w(d) = ((a+2)d - (a+3))d^2 + 1 for |d| <= 1; ((a d - 5a) d + 8a) d - 4a for 1 < |d| < 2.
    let near = |cx: &mut NodeCx, d: NodeId| -> Result<NodeId> {
        let p = cx.bin_scalar(B::Mul, d, a + 2.0)?;
        let p = cx.bin_scalar(B::Sub, p, a + 3.0)?;
        let d2 = cx.bin(B::Mul, d, d)?;
        let p = cx.bin(B::Mul, p, d2)?;
        cx.bin_scalar(B::Add, p, 1.0)
    };
    let far = |cx: &mut NodeCx, d: NodeId| -> Result<NodeId> {
        let p = cx.bin_scalar(B::Mul, d, a)?;
        let p = cx.bin_scalar(B::Sub, p, 5.0 * a)?;
        let p = cx.bin(B::Mul, p, d)?;
        let p = cx.bin_scalar(B::Add, p, 8.0 * a)?;
        let p = cx.bin(B::Mul, p, d)?;
        cx.bin_scalar(B::Sub, p, 4.0 * a)
    };
    let one = cx.scalar(1.0, cx.dtype(t));
    let t1 = cx.bin_scalar(B::Add, t, 1.0)?;
    let omt = cx.bin(B::Sub, one, t)?;
    let tmt = cx.bin_scalar(B::Add, omt, 1.0)?;
    Ok([far(cx, t1)?, near(cx, t)?, near(cx, omt)?, far(cx, tmt)?])
}

fn grid_sample(cx: &mut NodeCx) -> Result<Vec<NodeId>> {
    let (x, grid) = (cx.x(0)?, cx.x(1)?);
    let xd = cx.static_dims(x, "GridSample")?;
    let gd = cx.static_dims(grid, "GridSample grid")?;
    let k = xd.len().saturating_sub(2);
    if !(1..=3).contains(&k) || gd.len() != k + 2 || gd[k + 1] != k || gd[0] != xd[0] {
        return Err(cx.err(format!("X {xd:?} and grid {gd:?} do not match")));
    }
    let mode = cx.attr_s("mode", "linear");
    let padding = match cx.attr_s("padding_mode", "zeros").as_str() {
        "zeros" => Padding::Zeros,
        "border" => Padding::Border,
        "reflection" => Padding::Reflection,
        other => return Err(cx.err(format!("unknown padding_mode \"{other}\""))),
    };
    let align = cx.attr_i("align_corners", 0) != 0;
    let (n, c) = (xd[0], xd[1]);
    let sp = &xd[2..];
    let out: Vec<usize> = gd[1..=k].to_vec();
    let q: usize = out.iter().product();
    let dt = cx.dtype(x);
    let g = cx.reshape_static(grid, &[n, q, k])?;
    // Per spatial axis a (X order), its taps: (index node, weight node) of [N, Q].
    let mut taps: Vec<Vec<(NodeId, Option<NodeId>)>> = Vec::new();
    let mut valid_of: Vec<Vec<Option<NodeId>>> = Vec::new();
    for (a, &size) in sp.iter().enumerate() {
        let comp = k - 1 - a; // grid's last dim lists x (the last axis) first
        let gc = cx.slice_axis(g, 2, comp, 1, 1)?;
        let gc = cx.reshape_static(gc, &[n, q])?;
        // Unnormalise: align ? (g+1)/2*(size-1) : ((g+1)*size - 1)/2.
        let g1 = cx.bin_scalar(B::Add, gc, 1.0)?;
        let coord = if align {
            let h = cx.bin_scalar(B::Mul, g1, 0.5)?;
            cx.bin_scalar(B::Mul, h, size as f64 - 1.0)?
        } else {
            let s = cx.bin_scalar(B::Mul, g1, size as f64)?;
            let s = cx.bin_scalar(B::Sub, s, 1.0)?;
            cx.bin_scalar(B::Mul, s, 0.5)?
        };
        let mut axis_taps = Vec::new();
        match mode.as_str() {
            "nearest" => {
                let c = pad_coord(cx, coord, size, align, padding)?;
                axis_taps.push((cx.un(U::Round, c)?, None));
            }
            "linear" | "bilinear" => {
                let c = pad_coord(cx, coord, size, align, padding)?;
                let f = cx.un(U::Floor, c)?;
                let t = cx.bin(B::Sub, c, f)?;
                let one = cx.scalar(1.0, cx.dtype(t));
                let w0 = cx.bin(B::Sub, one, t)?;
                let f1 = cx.bin_scalar(B::Add, f, 1.0)?;
                axis_taps.push((f, Some(w0)));
                axis_taps.push((f1, Some(t)));
            }
            "cubic" | "bicubic" => {
                let f = cx.un(U::Floor, coord)?;
                let t = cx.bin(B::Sub, coord, f)?;
                let w = cubic_weights(cx, t)?;
                for (o, wk) in w.into_iter().enumerate() {
                    let idx = cx.bin_scalar(B::Add, f, o as f64 - 1.0)?;
                    let idx = pad_coord(cx, idx, size, align, padding)?;
                    axis_taps.push((idx, Some(wk)));
                }
            }
            other => return Err(cx.err(format!("unknown mode \"{other}\""))),
        }
        // In-range masks (zeros padding drops taps outside).
        let mut valid = Vec::new();
        for (idx, _) in &axis_taps {
            valid.push(if padding == Padding::Zeros {
                let lo = cmp_scalar(cx, CmpOp::Ge, *idx, 0.0)?;
                let hi = cmp_scalar(cx, CmpOp::Le, *idx, size as f64 - 1.0)?;
                Some(cx.bin(B::And, lo, hi)?)
            } else {
                None
            });
        }
        taps.push(axis_taps);
        valid_of.push(valid);
    }
    let strides = rlx_ir::contiguous_strides(sp);
    let total: usize = sp.iter().product();
    let xf = cx.reshape_static(x, &[n, c, total])?;
    let per: Vec<usize> = taps.iter().map(Vec::len).collect();
    let combos: usize = per.iter().product();
    let mut acc: Option<NodeId> = None;
    for combo in 0..combos {
        let mut rem = combo;
        let mut flat: Option<NodeId> = None;
        let mut weight: Option<NodeId> = None;
        let mut valid: Option<NodeId> = None;
        for a in (0..k).rev() {
            let t = rem % per[a];
            rem /= per[a];
            let (idx, w) = taps[a][t];
            let idx = clip(cx, idx, sp[a])?;
            let term = cx.bin_scalar(B::Mul, idx, strides[a] as f64)?;
            flat = Some(match flat {
                Some(f) => cx.bin(B::Add, f, term)?,
                None => term,
            });
            if let Some(w) = w {
                weight = Some(match weight {
                    Some(p) => cx.bin(B::Mul, p, w)?,
                    None => w,
                });
            }
            if let Some(v) = valid_of[a][t] {
                valid = Some(match valid {
                    Some(p) => cx.bin(B::And, p, v)?,
                    None => v,
                });
            }
        }
        let flat = cx.cast(flat.expect("k >= 1"), DType::I64)?;
        let flat = cx.reshape_static(flat, &[n, 1, q])?;
        let flat = cx.broadcast(flat, vec![Dim::Static(n), Dim::Static(c), Dim::Static(q)])?;
        let mut v = cx.node(Op::GatherElements { axis: 2 }, &[xf, flat], None)?;
        if let Some(w) = weight {
            let w = cx.cast(w, dt)?;
            let w = cx.reshape_static(w, &[n, 1, q])?;
            v = cx.bin(B::Mul, v, w)?;
        }
        if let Some(m) = valid {
            let m = cx.reshape_static(m, &[n, 1, q])?;
            let zero = cx.scalar(0.0, dt);
            v = select(cx, m, v, zero)?;
        }
        acc = Some(match acc {
            Some(p) => cx.bin(B::Add, p, v)?,
            None => v,
        });
    }
    let mut dims = vec![n, c];
    dims.extend(&out);
    Ok(vec![cx.reshape_static(acc.expect("a tap"), &dims)?])
}
