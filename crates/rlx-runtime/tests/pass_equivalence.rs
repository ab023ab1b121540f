//! Every optimising pass preserves numerics: random graphs (with planted
//! identities, duplicate sub-expressions and constant sub-graphs, so each
//! pass has work to do) run with all passes off, with each pass alone and
//! with all of them; the results must be identical (fused elementwise
//! regions included: they call the same scalar kernels tile by tile).

use proptest::prelude::*;
use rlx_driver::Device;
use rlx_ir::{DType, Graph, GraphExt, HostTensor, NodeId, Shape};
use rlx_runtime::{CompileOptions, Session};

mod common;
use common::values;

/// One step of a random program: an op code and two operand picks.
type Step = (u8, usize, usize);

fn broadcastable(g: &Graph, x: NodeId, y: NodeId) -> bool {
    let (a, b) = (
        g.shape(x).static_dims().unwrap(),
        g.shape(y).static_dims().unwrap(),
    );
    a.iter()
        .rev()
        .zip(b.iter().rev())
        .all(|(&p, &q)| p == q || p == 1 || q == 1)
}

fn build(steps: &[Step]) -> Graph {
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

fn run(g: &Graph, opts: &CompileOptions) -> (Vec<Vec<f32>>, usize) {
    let mut c = Session::new(Device::Cpu)
        .try_compile_with(g.clone(), opts)
        .unwrap_or_else(|e| panic!("compile failed: {e}\n{g}"));
    let a = [0.3f32, -1.2, 0.7];
    let b = [1.0f32, -0.5, 0.25, 2.0, -1.5, 0.1];
    let out = c.try_run(&[("a", &a), ("b", &b)]).unwrap();
    (out, c.lir().graph.len())
}

fn same_bits(x: &[Vec<f32>], y: &[Vec<f32>]) -> bool {
    x.len() == y.len()
        && x.iter().zip(y).all(|(p, q)| {
            p.len() == q.len()
                && p.iter()
                    .zip(q)
                    .all(|(u, v)| u == v || (u.is_nan() && v.is_nan()))
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn each_pass_preserves_numerics(steps in prop::collection::vec((0u8..16, 0usize..64, 0usize..64), 1..14)) {
        let g = build(&steps);
        let off = CompileOptions::default().optimize(false);
        let (reference, unoptimised_len) = run(&g, &off);
        let variants = [
            ("simplify", off.clone().simplify(true)),
            ("cse", off.clone().cse(true)),
            ("fold", off.clone().fold_constants(true)),
            ("fusion", off.clone().fusion(true)),
            ("all", CompileOptions::default()),
        ];
        for (name, opts) in variants {
            let (out, len) = run(&g, &opts);
            prop_assert!(same_bits(&reference, &out), "{name} changed the results of\n{g}\n{reference:?}\nvs\n{out:?}");
            prop_assert!(len <= unoptimised_len, "{name} grew the graph: {len} > {unoptimised_len}");
        }
    }
}

#[test]
fn planted_work_is_removed() {
    // One of every planted pattern: the optimised graph must be much smaller.
    let steps: Vec<Step> = (0..16).map(|op| (op, 1, 1)).collect();
    let g = build(&steps);
    let (_, before) = run(&g, &CompileOptions::default().optimize(false));
    let (_, after) = run(&g, &CompileOptions::default());
    assert!(after + 12 <= before, "only {before} -> {after} nodes");
}

const T: usize = 4;
const D: usize = 8;

/// A random transformer-ish program over `[T, D]` values: residual adds
/// into layer / rms norms (whose sums later steps may read again), gated
/// MLP products, attention blocks written out of primitives and matmuls
/// sharing an input, mixed with plain elementwise steps.
fn build_blocks(steps: &[Step]) -> Graph {
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

fn run_blocks(g: &Graph, opts: &CompileOptions) -> Vec<Vec<f32>> {
    let mut c = Session::new(Device::Cpu)
        .try_compile_with(g.clone(), opts)
        .unwrap_or_else(|e| panic!("compile failed: {e}\n{g}"));
    let plan = &c.lir().plan;
    rlx_compile::check_plan(&c.lir().graph, plan).unwrap();
    let (x, y) = (values(T * D, 101, 1.0), values(T * D, 202, 1.0));
    c.try_run(&[("x", &x), ("y", &y)]).unwrap()
}

fn within(x: &[Vec<f32>], y: &[Vec<f32>], tol: f32) -> bool {
    x.len() == y.len()
        && x.iter().zip(y).all(|(p, q)| {
            p.len() == q.len()
                && p.iter()
                    .zip(q)
                    .all(|(u, v)| (u - v).abs() <= tol * (1.0 + v.abs()))
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Each pattern fusion alone, then all passes: add + norm, gated matmul
    /// and shared-input matmuls are bit-exact; attention recognition (every
    /// spelling: scaled q, divided scores, where masks) swaps the unfused
    /// softmax for the fused kernel's, and the native GELU the erf formula
    /// for its own: both stay within 1e-5.
    #[test]
    fn pattern_fusions_preserve_numerics(steps in prop::collection::vec((0u8..11, 0usize..64, 0usize..64), 1..10)) {
        let g = build_blocks(&steps);
        let off = CompileOptions::default().optimize(false);
        let reference = run_blocks(&g, &off);
        let none = rlx_compile::FusionOptions::disabled();
        let alone = |f: fn(&mut rlx_compile::FusionOptions)| {
            let mut o = off.clone();
            let mut fo = none.clone();
            f(&mut fo);
            o.fusion = fo;
            o
        };
        let exact = [
            ("add_norm", alone(|f| f.add_norm = true)),
            ("gated_matmul", alone(|f| f.gated_matmul = true)),
            ("shared_input", alone(|f| f.shared_input = true)),
        ];
        for (name, opts) in exact {
            let out = run_blocks(&g, &opts);
            prop_assert!(same_bits(&reference, &out), "{name} changed the results of\n{g}\n{reference:?}\nvs\n{out:?}");
        }
        for (name, opts) in [
            ("attention", alone(|f| f.attention = true)),
            ("gelu", alone(|f| f.gelu = true)),
            ("all", CompileOptions::default()),
        ] {
            let out = run_blocks(&g, &opts);
            prop_assert!(within(&reference, &out, 1e-5), "{name} changed the results of\n{g}\n{reference:?}\nvs\n{out:?}");
        }
    }
}

#[test]
fn every_pattern_fuses_in_a_planted_program() {
    // One of each pattern step; the report must show each fusion kind.
    let steps: Vec<Step> = vec![
        (0, 0, 1),
        (1, 2, 1),
        (2, 0, 0),
        (3, 1, 1),
        (4, 0, 0),
        (4, 1, 1),
        (5, 0, 0),
        (6, 2, 0),
        (7, 3, 4),
        (8, 0, 1),
        (9, 1, 0),
        (9, 0, 1),
        (10, 2, 0),
    ];
    let mut g = build_blocks(&steps);
    // Every value no step reads is an output, so no pattern is dead code.
    let mut read = vec![false; g.len()];
    for n in g.nodes() {
        n.inputs.iter().for_each(|i| read[i.index()] = true);
    }
    let sinks = g
        .ids()
        .filter(|&i| !read[i.index()] && !g.node(i).op.is_leaf())
        .collect();
    g.set_outputs(sinks);
    let c = Session::new(Device::Cpu).compile(g.clone());
    let report = &c.lir().fusion;
    use rlx_compile::FusionKind::*;
    for kind in [AddNorm, GatedMatMul, Attention, SharedInput, Gelu] {
        assert!(
            !report.of_kind(kind).is_empty(),
            "no {kind:?}:\n{report}\n{g}"
        );
    }
    assert!(report.missed.is_empty(), "{report}");
    let off = CompileOptions::default().optimize(false);
    assert!(within(
        &run_blocks(&g, &off),
        &run_blocks(&g, &CompileOptions::default()),
        1e-5
    ));
}
