//! RNN, GRU, LSTM, unrolled over the (static) sequence: the input
//! projection is one batched matmul, each step a recurrent matmul plus
//! elementwise gates. Forward, reverse and bidirectional; layouts 0 and 1;
//! activations with their alpha / beta; clip; LSTM peepholes and
//! input_forget; GRU linear_before_reset.
//!
//! The two directions of a bidirectional node step together: every
//! per-step tensor carries a leading direction axis (`[2, B, ..]`), the
//! backward direction's input is reversed in time once, so step `k` is one
//! `[2, B, H] x [2, H, G*H]` batched matmul and one set of gate ops for
//! both (half the nodes of stepping each direction alone: at batch 1 the
//! executor's per-node cost is most of a step). Directions with different
//! activations step alone.

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
#[derive(Clone, PartialEq)]
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

/// Directions `ds` (one, or all of them in order) of a `[D, ..]` tensor,
/// the direction axis kept.
fn dirs_of(cx: &mut NodeCx, x: NodeId, ds: &[usize]) -> Result<NodeId> {
    let dims = cx.static_dims(x, "recurrent weights")?;
    match dims.first() {
        None => Err(cx.err("recurrent weights must have a direction axis")),
        Some(&d) if d == ds.len() => Ok(x),
        Some(&d) if ds.len() == 1 && ds[0] < d => cx.slice_axis(x, 0, ds[0], 1, 1),
        Some(&d) => Err(cx.err(format!(
            "a direction axis of {d} where {} directions run",
            ds.len()
        ))),
    }
}

/// The attributes of one recurrent node.
struct Spec {
    cell: Cell,
    seq: usize,
    batch: usize,
    h: usize,
    /// Per direction: true when it runs backward in time.
    rev: Vec<bool>,
    /// `cell.default_activations().len()` per direction, in order.
    acts: Vec<Act>,
    clip: Option<f64>,
    lbr: bool,
    input_forget: bool,
}

impl Spec {
    fn acts(&self, d: usize) -> &[Act] {
        let per = self.cell.default_activations().len();
        &self.acts[d * per..(d + 1) * per]
    }
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
    if seq == 0 {
        return Err(cx.err("an empty sequence"));
    }
    let h = cx.attr_i("hidden_size", 0).max(0) as usize;
    let h = if h == 0 { wd[1] / cell.gates() } else { h };
    let direction = cx.attr_s("direction", "forward");
    let rev: Vec<bool> = match direction.as_str() {
        "forward" => vec![false],
        "reverse" => vec![true],
        "bidirectional" => vec![false, true],
        other => return Err(cx.err(format!("unknown direction \"{other}\""))),
    };
    if wd[0] != rev.len() {
        return Err(cx.err(format!(
            "W {wd:?} has {} directions, direction \"{direction}\" {}",
            wd[0],
            rev.len()
        )));
    }
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
    let acts: Vec<Act> = (0..per * rev.len())
        .map(|i| Act {
            name: names
                .get(i)
                .cloned()
                .unwrap_or_else(|| cell.default_activations()[i % per].to_string()),
            alpha: alphas.get(i).map(|&v| v as f64),
            beta: betas.get(i).map(|&v| v as f64),
        })
        .collect();
    let spec = Spec {
        cell,
        seq,
        batch,
        h,
        rev,
        acts,
        clip: cx.has_attr("clip").then(|| cx.attr_f("clip", 0.0)),
        lbr: cx.attr_i("linear_before_reset", 0) != 0,
        input_forget: cx.attr_i("input_forget", 0) != 0,
    };
    // Both directions step together (one batched matmul and one set of
    // gate ops per step for the two) unless their activations differ.
    let together = spec.rev.len() == 2 && spec.acts(0) == spec.acts(1);
    let groups: Vec<Vec<usize>> = if together {
        vec![vec![0, 1]]
    } else {
        (0..spec.rev.len()).map(|d| vec![d]).collect()
    };
    let (mut ys, mut hs, mut cs) = (Vec::new(), Vec::new(), Vec::new());
    for ds in &groups {
        let (y, yh, yc) = directions(cx, &spec, x, ds)?;
        ys.extend(y);
        hs.push(yh);
        cs.push(yc);
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

/// How a step's gate tensors are laid out. Gate-major `[G', Dg, B, H]`
/// at batch 1: the recurrent weight is `[G, Dg, H, H]`, one step one
/// batched matmul of `G * Dg` vector-matrix products (the same kernel as
/// one `[1, H] x [H, G*H]` product, no packing), and each gate a
/// contiguous slice of the product (a view: slicing `[Dg, 1, G*H]` by gate
/// would copy). Direction-major `[Dg, B, G'*H]` at larger batches, where
/// `G * Dg` small GEMMs would cost far more than `Dg` of `[B, H] x [H,
/// G*H]` (and the gate slices are strided either way).
#[derive(Clone, Copy)]
struct Gates {
    major: bool,
    dg: usize,
    h: usize,
}

impl Gates {
    /// Gates `k .. k + n` of `v`, in this layout.
    fn sub(self, cx: &mut NodeCx, v: NodeId, k: usize, n: usize) -> Result<NodeId> {
        if self.major {
            cx.slice_axis(v, 0, k, n, 1)
        } else {
            part(cx, v, k, n * self.h)
        }
    }

    /// Gate `k` of `v` as `[Dg, B, H]` (`[Dg, 1, H]` for a bias).
    fn one(self, cx: &mut NodeCx, v: NodeId, k: usize) -> Result<NodeId> {
        let s = self.sub(cx, v, k, 1)?;
        if !self.major {
            return Ok(s);
        }
        let dims = cx.static_dims(s, "a gate tensor")?;
        cx.reshape_static(s, &dims[1..])
    }

    /// A `[Dg, n * H]` per-direction vector (recurrent bias, peepholes),
    /// broadcast over the batch: `[n, Dg, 1, H]` or `[Dg, 1, n * H]`.
    fn vector(self, cx: &mut NodeCx, v: NodeId, n: usize) -> Result<NodeId> {
        let (dg, h) = (self.dg, self.h);
        if !self.major {
            return cx.reshape_static(v, &[dg, 1, n * h]);
        }
        let v = cx.reshape_static(v, &[dg, n, h])?;
        let v = cx.transpose(v, vec![1, 0, 2])?;
        cx.reshape_static(v, &[n, dg, 1, h])
    }

    /// The recurrent weight `[Dg, G*H, H]`: `[G, Dg, H, H]` or `[Dg, H,
    /// G*H]`.
    fn weight(self, cx: &mut NodeCx, r: NodeId, g: usize) -> Result<NodeId> {
        if !self.major {
            return cx.transpose(r, vec![0, 2, 1]);
        }
        let r = cx.reshape_static(r, &[self.dg, g, self.h, self.h])?;
        cx.transpose(r, vec![1, 0, 3, 2])
    }

    /// The input projection `[Dg, S * B, G*H]` as `[S, ..]` of step
    /// tensors: `[S, G, Dg, B, H]` or `[S, Dg, B, G*H]`.
    fn steps(
        self,
        cx: &mut NodeCx,
        xw: NodeId,
        seq: usize,
        batch: usize,
        g: usize,
    ) -> Result<NodeId> {
        let (dg, h) = (self.dg, self.h);
        if !self.major {
            let xw = cx.reshape_static(xw, &[dg, seq, batch, g * h])?;
            return cx.transpose(xw, vec![1, 0, 2, 3]);
        }
        let xw = cx.reshape_static(xw, &[dg, seq, batch, g, h])?;
        cx.transpose(xw, vec![1, 3, 0, 2, 4])
    }
}

/// Directions `ds` of the node, stepped together: every step tensor
/// carries the directions on an axis (`Dg = ds.len()`, layout [`Gates`]),
/// so one step is one batched recurrent matmul and one set of gate ops
/// for all of them. A backward direction reads its input reversed in
/// time, so step `k` is time `k` forward and `S - 1 - k` backward.
/// Returns each direction's `Y` (`[S, 1, B, H]`, time order) and the
/// final `Y_h` / `Y_c` (`[Dg, B, H]`).
fn directions(
    cx: &mut NodeCx,
    spec: &Spec,
    x: NodeId,
    ds: &[usize],
) -> Result<(Vec<NodeId>, NodeId, NodeId)> {
    let (seq, batch, h, g) = (spec.seq, spec.batch, spec.h, spec.cell.gates());
    let dg = ds.len();
    let lay = Gates {
        major: batch == 1,
        dg,
        h,
    };
    let act = spec.acts(ds[0]);
    let clip = spec.clip;
    let dt = cx.dtype(x);
    let (w, r) = (cx.x(1)?, cx.x(2)?);
    let wt = dirs_of(cx, w, ds)?;
    let wt = cx.transpose(wt, vec![0, 2, 1])?; // [Dg, I, G*H]
    let rd = dirs_of(cx, r, ds)?;
    let rt = lay.weight(cx, rd, g)?;
    // Each direction's input in its step order: [Dg, S * B, I].
    let xs: Vec<NodeId> = ds
        .iter()
        .map(|&d| {
            let xd = if spec.rev[d] {
                cx.slice_axis(x, 0, seq - 1, seq, -1)?
            } else {
                x
            };
            let dims = cx.static_dims(xd, "X")?;
            cx.reshape_static(xd, &[1, seq * batch, dims[2]])
        })
        .collect::<Result<_>>()?;
    let xs = if xs.len() == 1 {
        xs[0]
    } else {
        cx.node(Op::Concat { axis: 0 }, &xs, None)?
    };
    // X W^T + Wb for every step at once.
    let mut xw = cx.node(Op::MatMul, &[xs, wt], None)?;
    let mut rb = None;
    if let Some(b) = cx.opt(3) {
        let bd = dirs_of(cx, b, ds)?;
        let wb = part(cx, bd, 0, g * h)?;
        let wb = cx.reshape_static(wb, &[dg, 1, g * h])?;
        xw = cx.bin(B::Add, xw, wb)?;
        let rbd = part(cx, bd, 1, g * h)?;
        rb = Some(lay.vector(cx, rbd, g)?);
    }
    let xw = lay.steps(cx, xw, seq, batch, g)?;
    let step_dims = cx.static_dims(xw, "X")?[1..].to_vec();
    let zeros = |cx: &mut NodeCx| -> Result<NodeId> {
        let z = cx.scalar(0.0, dt);
        cx.broadcast(z, vec![Dim::Static(dg), Dim::Static(batch), Dim::Static(h)])
    };
    let mut ht = match cx.opt(5) {
        Some(i) => dirs_of(cx, i, ds)?,
        None => zeros(cx)?,
    };
    let mut ct = match (spec.cell, cx.opt(6)) {
        (Cell::Lstm, Some(i)) => dirs_of(cx, i, ds)?,
        _ => zeros(cx)?,
    };
    let peep = match (spec.cell, cx.opt(7)) {
        (Cell::Lstm, Some(p)) => {
            let pd = dirs_of(cx, p, ds)?;
            Some(lay.vector(cx, pd, 3)?)
        }
        _ => None,
    };
    // steps[j][t]: direction ds[j]'s output at time t.
    let mut steps = vec![vec![None; seq]; dg];
    for k in 0..seq {
        let xt = cx.slice_axis(xw, 0, k, 1, 1)?;
        let xt = cx.reshape_static(xt, &step_dims)?;
        let clip_to = |cx: &mut NodeCx, v: NodeId| -> Result<NodeId> {
            match clip {
                Some(c) => {
                    let v = cx.bin_scalar(B::Max, v, -c)?;
                    cx.bin_scalar(B::Min, v, c)
                }
                None => Ok(v),
            }
        };
        match spec.cell {
            Cell::Rnn => {
                let hr = cx.node(Op::MatMul, &[ht, rt], None)?;
                let mut a = cx.bin(B::Add, xt, hr)?;
                if let Some(rb) = rb {
                    a = cx.bin(B::Add, a, rb)?;
                }
                let a = lay.one(cx, a, 0)?;
                let a = clip_to(cx, a)?;
                ht = apply(cx, &act[0], a)?;
            }
            Cell::Gru => {
                // Gates z, r, h.
                let rz_rr = lay.sub(cx, rt, 0, 2)?;
                let rh = lay.sub(cx, rt, 2, 1)?;
                let hr = cx.node(Op::MatMul, &[ht, rz_rr], None)?;
                let xzr = lay.sub(cx, xt, 0, 2)?;
                let mut zr = cx.bin(B::Add, xzr, hr)?;
                if let Some(rb) = rb {
                    let rbzr = lay.sub(cx, rb, 0, 2)?;
                    zr = cx.bin(B::Add, zr, rbzr)?;
                }
                let zr = clip_to(cx, zr)?;
                let zr = apply(cx, &act[0], zr)?;
                let (z, rg) = (lay.one(cx, zr, 0)?, lay.one(cx, zr, 1)?);
                let rbh = match rb {
                    Some(rb) => Some(lay.one(cx, rb, 2)?),
                    None => None,
                };
                let rec = if spec.lbr {
                    let m = cx.node(Op::MatMul, &[ht, rh], None)?;
                    let mut m = lay.one(cx, m, 0)?;
                    if let Some(b) = rbh {
                        m = cx.bin(B::Add, m, b)?;
                    }
                    cx.bin(B::Mul, rg, m)?
                } else {
                    let rh_t = cx.bin(B::Mul, rg, ht)?;
                    let m = cx.node(Op::MatMul, &[rh_t, rh], None)?;
                    let mut m = lay.one(cx, m, 0)?;
                    if let Some(b) = rbh {
                        m = cx.bin(B::Add, m, b)?;
                    }
                    m
                };
                let xh = lay.one(cx, xt, 2)?;
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
                    let mut v = lay.one(cx, pre, k)?;
                    if let (Some(p), Some((pk, c))) = (peep, peep_k) {
                        let pp = lay.one(cx, p, pk)?;
                        let pc = cx.bin(B::Mul, pp, c)?;
                        v = cx.bin(B::Add, v, pc)?;
                    }
                    clip_to(cx, v)
                };
                let i_pre = gate(cx, 0, Some((0, ct)))?;
                let i = apply(cx, &act[0], i_pre)?;
                let f = if spec.input_forget {
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
        for (j, &d) in ds.iter().enumerate() {
            let t = if spec.rev[d] { seq - 1 - k } else { k };
            let hj = cx.slice_axis(ht, 0, j, 1, 1)?;
            steps[j][t] = Some(cx.reshape_static(hj, &[1, 1, batch, h])?);
        }
    }
    let mut ys = Vec::with_capacity(dg);
    for s in steps {
        let s: Vec<NodeId> = s.into_iter().map(|s| s.expect("every step")).collect();
        ys.push(if s.len() == 1 {
            s[0]
        } else {
            cx.node(Op::Concat { axis: 0 }, &s, None)?
        });
    }
    Ok((ys, ht, ct))
}
