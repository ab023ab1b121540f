//! RNN, GRU, LSTM, unrolled over the (static) sequence: the input
//! projection is one batched matmul, each step a recurrent matmul plus
//! elementwise gates. Forward, reverse and bidirectional; layouts 0 and 1;
//! activations with their alpha / beta; clip; LSTM peepholes and
//! input_forget; GRU linear_before_reset.

use super::NodeCx;
use crate::Result;
use rlx_ir::op::{BinaryOp as B, UnaryOp as U};
use rlx_ir::{Dim, NodeId, Op};

op_table! {
    "RNN" => |cx| recurrent(cx, Cell::Rnn),
    "GRU" => |cx| recurrent(cx, Cell::Gru),
    "LSTM" => |cx| recurrent(cx, Cell::Lstm),
}

#[derive(Clone, Copy, PartialEq)]
enum Cell {
    Rnn,
    Gru,
    Lstm,
}

impl Cell {
    fn gates(self) -> usize {
        match self {
            Cell::Rnn => 1,
            Cell::Gru => 3,
            Cell::Lstm => 4,
        }
    }

    fn default_activations(self) -> &'static [&'static str] {
        match self {
            Cell::Rnn => &["Tanh"],
            Cell::Gru => &["Sigmoid", "Tanh"],
            Cell::Lstm => &["Sigmoid", "Tanh", "Tanh"],
        }
    }
}

/// One activation function with its alpha / beta.
#[derive(Clone)]
struct Act {
    name: String,
    alpha: Option<f64>,
    beta: Option<f64>,
}

fn apply(cx: &mut NodeCx, a: &Act, x: NodeId) -> Result<NodeId> {
    let lower = a.name.to_ascii_lowercase();
    let alpha = |d: f64| a.alpha.unwrap_or(d);
    let beta = |d: f64| a.beta.unwrap_or(d);
    match lower.as_str() {
        "sigmoid" => cx.un(U::Sigmoid, x),
        "tanh" => cx.un(U::Tanh, x),
        "relu" => cx.un(U::Relu, x),
        "softplus" => cx.un(U::Softplus, x),
        "softsign" => {
            let ab = cx.un(U::Abs, x)?;
            let d = cx.bin_scalar(B::Add, ab, 1.0)?;
            cx.bin(B::Div, x, d)
        }
        "affine" => {
            let y = cx.bin_scalar(B::Mul, x, alpha(1.0))?;
            cx.bin_scalar(B::Add, y, beta(0.0))
        }
        "scaledtanh" => {
            let y = cx.bin_scalar(B::Mul, x, beta(1.0))?;
            let t = cx.un(U::Tanh, y)?;
            cx.bin_scalar(B::Mul, t, alpha(1.0))
        }
        "hardsigmoid" => {
            let y = cx.bin_scalar(B::Mul, x, alpha(0.2))?;
            let y = cx.bin_scalar(B::Add, y, beta(0.5))?;
            let y = cx.bin_scalar(B::Min, y, 1.0)?;
            cx.bin_scalar(B::Max, y, 0.0)
        }
        "leakyrelu" => {
            let neg = super::elementwise::cmp_scalar(cx, rlx_ir::op::CmpOp::Lt, x, 0.0)?;
            let ax = cx.bin_scalar(B::Mul, x, alpha(0.01))?;
            super::elementwise::select(cx, neg, ax, x)
        }
        "thresholdedrelu" => {
            let keep = super::elementwise::cmp_scalar(cx, rlx_ir::op::CmpOp::Gt, x, alpha(1.0))?;
            let zero = cx.scalar(0.0, cx.dtype(x));
            super::elementwise::select(cx, keep, x, zero)
        }
        "elu" => {
            let neg = super::elementwise::cmp_scalar(cx, rlx_ir::op::CmpOp::Lt, x, 0.0)?;
            let e = cx.un(U::Exp, x)?;
            let e = cx.bin_scalar(B::Sub, e, 1.0)?;
            let e = cx.bin_scalar(B::Mul, e, alpha(1.0))?;
            super::elementwise::select(cx, neg, e, x)
        }
        other => Err(cx.unsupported(format!("activation \"{other}\""))),
    }
}

/// `x[.., i*h .. (i+1)*h]` on the last axis.
fn part(cx: &mut NodeCx, x: NodeId, i: usize, h: usize) -> Result<NodeId> {
    let last = cx
        .rank(x)
        .checked_sub(1)
        .ok_or_else(|| cx.err("a gate tensor is a scalar"))?;
    cx.slice_axis(x, last, i * h, h, 1)
}

/// Direction `d` of a `[D, ..]` tensor, without the leading axis.
fn dir(cx: &mut NodeCx, x: NodeId, d: usize) -> Result<NodeId> {
    let dims = cx.static_dims(x, "recurrent weights")?;
    if dims.is_empty() {
        return Err(cx.err("recurrent weights must have a direction axis"));
    }
    let s = cx.slice_axis(x, 0, d, 1, 1)?;
    cx.reshape_static(s, &dims[1..])
}

fn recurrent(cx: &mut NodeCx, cell: Cell) -> Result<Vec<NodeId>> {
    let (mut x, w, r) = (cx.x(0)?, cx.x(1)?, cx.x(2)?);
    let layout = cx.attr_i("layout", 0);
    if layout != 0 {
        x = cx.transpose(x, vec![1, 0, 2])?;
    }
    let xd = cx.static_dims(x, cx.op_type())?;
    let wd = cx.static_dims(w, "W")?;
    if xd.len() != 3 || wd.len() != 3 || cx.rank(r) != 3 {
        return Err(cx.err(format!("X {xd:?} and W {wd:?} must be 3-d")));
    }
    let (seq, batch) = (xd[0], xd[1]);
    let h = cx.attr_i("hidden_size", 0).max(0) as usize;
    let h = if h == 0 { wd[1] / cell.gates() } else { h };
    let g = cell.gates();
    let direction = cx.attr_s("direction", "forward");
    let dirs: Vec<bool> = match direction.as_str() {
        "forward" => vec![false],
        "reverse" => vec![true],
        "bidirectional" => vec![false, true],
        other => return Err(cx.err(format!("unknown direction \"{other}\""))),
    };
    if let Some(lens) = cx.opt_const_ints(4, "sequence_lens")? {
        if lens.iter().any(|&l| l != seq as i64) {
            return Err(
                cx.unsupported("sequence_lens shorter than the sequence (per-batch masking)")
            );
        }
    }
    let names = cx.attr_strings("activations").unwrap_or_default();
    let alphas = cx.attr_floats("activation_alpha").unwrap_or_default();
    let betas = cx.attr_floats("activation_beta").unwrap_or_default();
    let per = cell.default_activations().len();
    let acts: Vec<Act> = (0..per * dirs.len())
        .map(|i| Act {
            name: names
                .get(i)
                .cloned()
                .unwrap_or_else(|| cell.default_activations()[i % per].to_string()),
            alpha: alphas.get(i).map(|&v| v as f64),
            beta: betas.get(i).map(|&v| v as f64),
        })
        .collect();
    let clip = cx.has_attr("clip").then(|| cx.attr_f("clip", 0.0));
    let lbr = cx.attr_i("linear_before_reset", 0) != 0;
    let input_forget = cx.attr_i("input_forget", 0) != 0;
    let dt = cx.dtype(x);
    let (mut ys, mut hs, mut cs) = (Vec::new(), Vec::new(), Vec::new());
    for (di, &rev) in dirs.iter().enumerate() {
        let act = &acts[di * per..(di + 1) * per];
        let wt = dir(cx, w, di)?;
        let wt = cx.transpose(wt, vec![1, 0])?;
        let rt = dir(cx, r, di)?;
        let rt = cx.transpose(rt, vec![1, 0])?;
        // X W^T + Wb for every step at once: [S, B, G*H].
        let mut xw = cx.node(Op::MatMul, &[x, wt], None)?;
        let mut rb = None;
        if let Some(b) = cx.opt(3) {
            let bd = dir(cx, b, di)?;
            let wb = part(cx, bd, 0, g * h)?;
            xw = cx.bin(B::Add, xw, wb)?;
            rb = Some(part(cx, bd, 1, g * h)?);
        }
        let zeros = |cx: &mut NodeCx| -> Result<NodeId> {
            let z = cx.scalar(0.0, dt);
            cx.broadcast(z, vec![Dim::Static(batch), Dim::Static(h)])
        };
        let mut ht = match cx.opt(5) {
            Some(i) => dir(cx, i, di)?,
            None => zeros(cx)?,
        };
        let mut ct = match (cell, cx.opt(6)) {
            (Cell::Lstm, Some(i)) => dir(cx, i, di)?,
            _ => zeros(cx)?,
        };
        let peep = match (cell, cx.opt(7)) {
            (Cell::Lstm, Some(p)) => Some(dir(cx, p, di)?),
            _ => None,
        };
        let mut steps = vec![None; seq];
        let order: Vec<usize> = if rev {
            (0..seq).rev().collect()
        } else {
            (0..seq).collect()
        };
        for &t in &order {
            let xt = cx.slice_axis(xw, 0, t, 1, 1)?;
            let xt = cx.reshape_static(xt, &[batch, g * h])?;
            let clip_to = |cx: &mut NodeCx, v: NodeId| -> Result<NodeId> {
                match clip {
                    Some(c) => {
                        let v = cx.bin_scalar(B::Max, v, -c)?;
                        cx.bin_scalar(B::Min, v, c)
                    }
                    None => Ok(v),
                }
            };
            match cell {
                Cell::Rnn => {
                    let hr = cx.node(Op::MatMul, &[ht, rt], None)?;
                    let mut a = cx.bin(B::Add, xt, hr)?;
                    if let Some(rb) = rb {
                        a = cx.bin(B::Add, a, rb)?;
                    }
                    let a = clip_to(cx, a)?;
                    ht = apply(cx, &act[0], a)?;
                }
                Cell::Gru => {
                    // Gates z, r, h.
                    let rz_rr = part(cx, rt, 0, 2 * h)?;
                    let rh = part(cx, rt, 2, h)?;
                    let hr = cx.node(Op::MatMul, &[ht, rz_rr], None)?;
                    let xzr = part(cx, xt, 0, 2 * h)?;
                    let mut zr = cx.bin(B::Add, xzr, hr)?;
                    if let Some(rb) = rb {
                        let rbzr = part(cx, rb, 0, 2 * h)?;
                        zr = cx.bin(B::Add, zr, rbzr)?;
                    }
                    let zr = clip_to(cx, zr)?;
                    let zr = apply(cx, &act[0], zr)?;
                    let (z, rg) = (part(cx, zr, 0, h)?, part(cx, zr, 1, h)?);
                    let rbh = match rb {
                        Some(rb) => Some(part(cx, rb, 2, h)?),
                        None => None,
                    };
                    let rec = if lbr {
                        let mut m = cx.node(Op::MatMul, &[ht, rh], None)?;
                        if let Some(b) = rbh {
                            m = cx.bin(B::Add, m, b)?;
                        }
                        cx.bin(B::Mul, rg, m)?
                    } else {
                        let rh_t = cx.bin(B::Mul, rg, ht)?;
                        let mut m = cx.node(Op::MatMul, &[rh_t, rh], None)?;
                        if let Some(b) = rbh {
                            m = cx.bin(B::Add, m, b)?;
                        }
                        m
                    };
                    let xh = part(cx, xt, 2, h)?;
                    let pre = cx.bin(B::Add, xh, rec)?;
                    let pre = clip_to(cx, pre)?;
                    let cand = apply(cx, &act[1], pre)?;
                    // H = (1 - z) * cand + z * H.
                    let one = cx.scalar(1.0, dt);
                    let omz = cx.bin(B::Sub, one, z)?;
                    let a = cx.bin(B::Mul, omz, cand)?;
                    let b = cx.bin(B::Mul, z, ht)?;
                    ht = cx.bin(B::Add, a, b)?;
                }
                Cell::Lstm => {
                    // Gates i, o, f, c.
                    let hr = cx.node(Op::MatMul, &[ht, rt], None)?;
                    let mut pre = cx.bin(B::Add, xt, hr)?;
                    if let Some(rb) = rb {
                        pre = cx.bin(B::Add, pre, rb)?;
                    }
                    let gate = |cx: &mut NodeCx,
                                k: usize,
                                peep_k: Option<(usize, NodeId)>|
                     -> Result<NodeId> {
                        let mut v = part(cx, pre, k, h)?;
                        if let (Some(p), Some((pk, c))) = (peep, peep_k) {
                            let pp = part(cx, p, pk, h)?;
                            let pc = cx.bin(B::Mul, pp, c)?;
                            v = cx.bin(B::Add, v, pc)?;
                        }
                        clip_to(cx, v)
                    };
                    let i_pre = gate(cx, 0, Some((0, ct)))?;
                    let i = apply(cx, &act[0], i_pre)?;
                    let f = if input_forget {
                        let one = cx.scalar(1.0, dt);
                        cx.bin(B::Sub, one, i)?
                    } else {
                        let f_pre = gate(cx, 2, Some((2, ct)))?;
                        apply(cx, &act[0], f_pre)?
                    };
                    let c_pre = gate(cx, 3, None)?;
                    let cand = apply(cx, &act[1], c_pre)?;
                    let fc = cx.bin(B::Mul, f, ct)?;
                    let ic = cx.bin(B::Mul, i, cand)?;
                    ct = cx.bin(B::Add, fc, ic)?;
                    let o_pre = gate(cx, 1, Some((1, ct)))?;
                    let o = apply(cx, &act[0], o_pre)?;
                    let hc = apply(cx, &act[2], ct)?;
                    ht = cx.bin(B::Mul, o, hc)?;
                }
            }
            steps[t] = Some(cx.reshape_static(ht, &[1, 1, batch, h])?);
        }
        let steps: Vec<NodeId> = steps.into_iter().map(|s| s.expect("every step")).collect();
        ys.push(if steps.len() == 1 {
            steps[0]
        } else {
            cx.node(Op::Concat { axis: 0 }, &steps, None)?
        });
        hs.push(cx.reshape_static(ht, &[1, batch, h])?);
        cs.push(cx.reshape_static(ct, &[1, batch, h])?);
    }
    let cat = |cx: &mut NodeCx, v: Vec<NodeId>, axis: usize| -> Result<NodeId> {
        if v.len() == 1 {
            Ok(v[0])
        } else {
            cx.node(Op::Concat { axis }, &v, None)
        }
    };
    let mut y = cat(cx, ys, 1)?; // [S, D, B, H]
    let mut yh = cat(cx, hs, 0)?; // [D, B, H]
    let mut yc = cat(cx, cs, 0)?;
    if layout != 0 {
        y = cx.transpose(y, vec![2, 0, 1, 3])?;
        yh = cx.transpose(yh, vec![1, 0, 2])?;
        yc = cx.transpose(yc, vec![1, 0, 2])?;
    }
    let mut outs = vec![y, yh];
    if cell == Cell::Lstm {
        outs.push(yc);
    }
    Ok(outs)
}
