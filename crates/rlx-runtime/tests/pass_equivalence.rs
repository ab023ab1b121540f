//! Every optimising pass preserves numerics: random graphs (with planted
//! identities, duplicate sub-expressions and constant sub-graphs, so each
//! pass has work to do) run with all passes off, with each pass alone and
//! with all of them; the results must be identical (fused elementwise
//! regions included: they call the same scalar kernels tile by tile).

use proptest::prelude::*;
use rlx_driver::Device;
use rlx_ir::{DType, Graph, GraphExt, HostTensor, NodeId, Shape};
use rlx_runtime::{CompileOptions, Session};

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
