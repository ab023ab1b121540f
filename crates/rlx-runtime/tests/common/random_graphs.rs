//! The random-program generators of the property tests (shared by
//! `pass_equivalence.rs` and `ir_text.rs`; include with
//! `#[path = "common/random_graphs.rs"] mod random_graphs;`).
#![allow(dead_code)] // each test binary uses its own subset

use super::common::values;
use rlx_driver::Device;
use rlx_ir::{DType, Graph, GraphExt, HostTensor, NodeId, Shape};
use rlx_runtime::{CompileOptions, Session};

/// One step of a random program: an op code and two operand picks.
pub type Step = (u8, usize, usize);

pub fn broadcastable(g: &Graph, x: NodeId, y: NodeId) -> bool {
    let (a, b) = (
        g.shape(x).static_dims().unwrap(),
        g.shape(y).static_dims().unwrap(),
    );
    a.iter()
        .rev()
        .zip(b.iter().rev())
        .all(|(&p, &q)| p == q || p == 1 || q == 1)
}

pub fn build(steps: &[Step]) -> Graph {
    let mut g = Graph::new("random");
    let a = g.input("a", Shape::new(&[3], DType::F32));
    let b = g.input("b", Shape::new(&[2, 3], DType::F32));
    let k = g.constant_tensor(
        &HostTensor::from_vec(vec![0.5f32, -1.0, 2.0, 0.25, 1.5, -0.75], &[2, 3]).unwrap(),
    );
    let mut pool = vec![a, b];
    for &(op, i, j) in steps {
        let x = pool[i % pool.len()];
        let y = pool[j % pool.len()];
        let y = if broadcastable(&g, x, y) { y } else { x };
        let rank = g.shape(x).rank();
        let z = match op % 16 {
            0 => g.add(x, y),
            1 => g.sub(x, y),
            2 => g.mul(x, y),
            3 => g.tanh(x),
            4 => {
                let t = g.tanh(x);
                g.exp(t)
            }
            5 => g.add(x, 0.0),
            6 => {
                let one = g.mul(x, 1.0);
                g.div(one, 1.0)
            }
            7 => {
                let n = g.neg(x);
                g.neg(n)
            }
            8 if rank == 2 => {
                let t = g.transpose_(x, &[1, 0]);
                let t = g.tanh(t);
                g.transpose_(t, &[1, 0])
            }
            8 => {
                let r = g.reshape_(x, &[1, -1]);
                g.reshape_(r, &[-1])
            }
            9 => {
                let w = g.cast(x, DType::F64);
                g.cast(w, DType::F32)
            }
            10 => {
                // the same value twice: CSE merges it
                let p = g.sigmoid(x);
                let q = g.sigmoid(x);
                g.add(p, q)
            }
            11 => {
                // a constant sub-graph: folding computes it once
                let e = g.exp(k);
                let s = g.mul(e, 2.0);
                let m = g.sum(s, &[0], false);
                if broadcastable(&g, x, m) {
                    g.add(x, m)
                } else {
                    g.add(x, 1.0)
                }
            }
            12 => g.sm(x, -1),
            13 => g.mean(x, &[-1], true),
            14 => {
                let d = g.mul(y, y);
                let d = g.add(d, 1.0);
                g.div(x, d)
            }
            _ => g.maximum(x, y),
        };
        pool.push(z);
    }
    let n = pool.len();
    g.set_outputs(vec![pool[2.min(n - 1)], pool[n / 2], pool[n - 1]]);
    g
}

pub const T: usize = 4;
pub const D: usize = 8;

/// A random transformer-ish program over `[T, D]` values: residual adds
/// into layer / rms norms (whose sums later steps may read again), gated
/// MLP products, attention blocks written out of primitives and matmuls
/// sharing an input, mixed with plain elementwise steps.
pub fn build_blocks(steps: &[Step]) -> Graph {
    let mut g = Graph::new("blocks");
    let x = g.input("x", Shape::new(&[T, D], DType::F32));
    let y = g.input("y", Shape::new(&[T, D], DType::F32));
    let mut pool = vec![x, y];
    let mut seed = 0u64;
    let mut constant = |g: &mut Graph, dims: &[usize], scale: f32| {
        seed += 1;
        let n = dims.iter().product();
        g.constant_tensor(&HostTensor::from_vec(values(n, seed, scale), dims).unwrap())
    };
    for &(op, i, j) in steps {
        let a = pool[i % pool.len()];
        let b = pool[j % pool.len()];
        match op % 11 {
            0 => {
                let s = g.add(a, b);
                let gamma = constant(&mut g, &[D], 1.0);
                let beta = constant(&mut g, &[D], 0.5);
                let n = g.ln(s, gamma, beta, 1e-5);
                pool.extend([s, n]);
            }
            1 => {
                let s = g.add(a, b);
                let gamma = constant(&mut g, &[D], 1.0);
                let n = g.rms_norm(s, gamma, 1e-6);
                pool.extend([s, n]);
            }
            2 | 3 => {
                let wg = constant(&mut g, &[D, D], 0.4);
                let wu = constant(&mut g, &[D, D], 0.4);
                let gate = g.mm(a, wg);
                let gate = if op % 8 == 2 {
                    g.silu(gate)
                } else {
                    g.gelu(gate)
                };
                let up = g.mm(a, wu);
                pool.push(g.mul(gate, up));
            }
            4 => {
                let kt = g.transpose_(b, &[1, 0]);
                let s = g.mm(a, kt);
                let s = g.mul(s, 0.35);
                let s = if j % 2 == 0 {
                    let mask = constant(&mut g, &[T, T], 2.0);
                    g.add(s, mask)
                } else {
                    s
                };
                let p = g.sm(s, -1);
                pool.push(g.mm(p, a));
            }
            5 => {
                let w1 = constant(&mut g, &[D, D], 0.4);
                let w2 = constant(&mut g, &[D, D], 0.4);
                let w3 = constant(&mut g, &[D, D], 0.4);
                pool.extend([g.mm(a, w1), g.mm(a, w2), g.mm(a, w3)]);
            }
            6 => pool.push(g.tanh(a)),
            8 => {
                // Attention scaled on q and k and by a division on the scores.
                let qs = g.mul(a, 0.7);
                let ks = g.mul(b, 1.25);
                let kt = g.transpose_(ks, &[1, 0]);
                let s = g.mm(qs, kt);
                let s = g.div(s, 2.0);
                let p = g.sm(s, -1);
                pool.push(g.mm(p, b));
            }
            9 => {
                // A causal mask as a where with -inf (or -1e9 on the other branch).
                let k = g.sub(b, 0.25);
                let kt = g.transpose_(k, &[1, 0]);
                let s = g.mm(a, kt);
                let s = g.mul(s, 0.35);
                let keep: Vec<bool> = (0..T * T).map(|i| i % T <= i / T).collect();
                let s = if j % 2 == 0 {
                    let keep = g.constant_tensor(&HostTensor::from_vec(keep, &[T, T]).unwrap());
                    g.where_(keep, s, f64::NEG_INFINITY)
                } else {
                    let masked: Vec<bool> = keep.iter().map(|k| !k).collect();
                    let masked = g.constant_tensor(&HostTensor::from_vec(masked, &[T, T]).unwrap());
                    g.where_(masked, -1e9, s)
                };
                let p = g.sm(s, -1);
                pool.push(g.mm(p, a));
            }
            10 => {
                // GELU spelled with erf.
                let z = g.div(a, std::f64::consts::SQRT_2);
                let e = g.unary(rlx_ir::op::UnaryOp::Erf, z);
                let one = g.add(e, 1.0);
                let h = g.mul(a, 0.5);
                pool.push(g.mul(h, one));
            }
            _ => pool.push(g.mul(a, b)),
        }
    }
    let n = pool.len();
    g.set_outputs(vec![pool[n / 2], pool[n - 2], pool[n - 1]]);
    g
}

/// Runs `g` with every pass off, feeding each declared input
/// deterministic values in [-1, 1].
pub fn run_unoptimised(g: &Graph) -> Vec<Vec<f32>> {
    let off = CompileOptions::default().optimize(false);
    let mut c = Session::new(Device::Cpu)
        .try_compile_with(g.clone(), &off)
        .unwrap_or_else(|e| panic!("compile failed: {e}\n{g}"));
    let feeds: Vec<(String, Vec<f32>)> = g
        .inputs()
        .iter()
        .enumerate()
        .map(|(i, (_, name, shape))| {
            let n = shape.numel().unwrap();
            (name.to_string(), values(n, 17 + i as u64, 1.0))
        })
        .collect();
    let refs: Vec<(&str, &[f32])> = feeds.iter().map(|(n, v)| (n.as_str(), &v[..])).collect();
    c.try_run(&refs).unwrap()
}

/// The same values (`==`, so `0.0` equals `-0.0`; any NaN equals any NaN).
pub fn same_bits(x: &[Vec<f32>], y: &[Vec<f32>]) -> bool {
    x.len() == y.len()
        && x.iter().zip(y).all(|(p, q)| {
            p.len() == q.len()
                && p.iter()
                    .zip(q)
                    .all(|(u, v)| u == v || (u.is_nan() && v.is_nan()))
        })
}
