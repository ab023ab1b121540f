//! Property tests: random small graphs of differentiable ops; reverse-mode
//! gradients and forward-mode tangents against central finite differences (f64).

use proptest::prelude::*;
use rlx_autodiff::{grad_with_loss, jvp};
use rlx_driver::Device;
use rlx_ir::{DType, Graph, GraphExt, HostTensor, NodeId, Shape};
use rlx_runtime::Session;

/// One step of a random program: an op code and two operand picks.
type Step = (u8, usize, usize);

fn build(steps: &[Step]) -> (Graph, Vec<NodeId>) {
    let mut g = Graph::new("random");
    let a = g.input("a", Shape::new(&[3], DType::F64));
    let b = g.input("b", Shape::new(&[2, 3], DType::F64));
    let mut pool = vec![a, b];
    for &(op, i, j) in steps {
        let (x, y) = (pool[i % pool.len()], pool[j % pool.len()]);
        let z = match op % 12 {
            0 => g.add(x, y),
            1 => g.sub(x, y),
            2 => g.mul(x, y),
            3 => g.tanh(x),
            4 => g.sin(x),
            5 => g.sigmoid(x),
            6 => g.softplus(x),
            7 => {
                let d = g.mul(y, y);
                let d = g.add(d, 1.0);
                g.div(x, d)
            }
            8 => g.sm(x, -1),
            9 => g.mean(x, &[-1], true),
            10 => g.gelu(x),
            _ => g.maximum(x, y),
        };
        pool.push(z);
    }
    let last = *pool.last().expect("inputs");
    let r = g.rank_of(last);
    let axes: Vec<i64> = (0..r as i64).collect();
    let w = g.cos(last);
    let l = g.sum(w, &axes, false);
    g.set_outputs(vec![l]);
    (g, vec![a, b])
}

trait RankOf {
    fn rank_of(&self, x: NodeId) -> usize;
}
impl RankOf for Graph {
    fn rank_of(&self, x: NodeId) -> usize {
        self.shape(x).rank()
    }
}

/// Runs `g` on `a [3]` and `b` (`[2, 3]` for the random programs, `[3, 3]`
/// for the scans) plus `extra` inputs.
fn eval(g: &Graph, a: &[f64], b: &[f64], extra: &[(&str, Vec<f64>, Vec<usize>)]) -> Vec<Vec<f64>> {
    let b_dims = if b.len() == 9 { [3, 3] } else { [2, 3] };
    let mut c = Session::new(Device::Cpu).try_compile(g.clone()).unwrap();
    let ta = HostTensor::from_vec(a.to_vec(), &[3]).unwrap();
    let tb = HostTensor::from_vec(b.to_vec(), &b_dims).unwrap();
    let te: Vec<HostTensor> = extra
        .iter()
        .map(|(_, v, d)| HostTensor::from_vec(v.clone(), d).unwrap())
        .collect();
    let mut ins: Vec<(&str, &HostTensor)> = vec![("a", &ta), ("b", &tb)];
    for ((n, _, _), t) in extra.iter().zip(&te) {
        ins.push((n, t));
    }
    c.try_run_typed(&ins)
        .unwrap()
        .iter()
        .map(|t| t.to_f64_lossy())
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]
    #[test]
    fn gradients_and_tangents_match_finite_differences(
        steps in prop::collection::vec((any::<u8>(), any::<usize>(), any::<usize>()), 1..7),
        a in prop::collection::vec(-1.5f64..1.5, 3),
        b in prop::collection::vec(-1.5f64..1.5, 6),
        da in prop::collection::vec(-1.0f64..1.0, 3),
        db in prop::collection::vec(-1.0f64..1.0, 6),
    ) {
        let (g, leaves) = build(&steps);
        let f = |a: &[f64], b: &[f64]| eval(&g, a, b, &[])[0][0];
        let eps = 1e-6;
        let close = |x: f64, y: f64| (x - y).abs() <= 1e-5 * (1.0 + x.abs().max(y.abs()));
        let d = grad_with_loss(&g, &leaves).unwrap();
        let got = eval(&d, &a, &b, &[]);
        for j in 0..3 {
            let (mut p, mut m) = (a.clone(), a.clone());
            p[j] += eps;
            m[j] -= eps;
            let want = (f(&p, &b) - f(&m, &b)) / (2.0 * eps);
            prop_assert!(close(got[1][j], want), "d/da[{j}] {} vs {want}\n{g}", got[1][j]);
        }
        for j in 0..6 {
            let (mut p, mut m) = (b.clone(), b.clone());
            p[j] += eps;
            m[j] -= eps;
            let want = (f(&a, &p) - f(&a, &m)) / (2.0 * eps);
            prop_assert!(close(got[2][j], want), "d/db[{j}] {} vs {want}\n{g}", got[2][j]);
        }
        let t = jvp(&g, &leaves).unwrap();
        let tang = eval(&t, &a, &b, &[("tangent_a", da.clone(), vec![3]), ("tangent_b", db.clone(), vec![2, 3])])[1][0];
        let shift = |v: &[f64], d: &[f64], s: f64| -> Vec<f64> { v.iter().zip(d).map(|(x, y)| x + s * eps * y).collect() };
        let want = (f(&shift(&a, &da, 1.0), &shift(&b, &db, 1.0)) - f(&shift(&a, &da, -1.0), &shift(&b, &db, -1.0))) / (2.0 * eps);
        prop_assert!(close(tang, want), "jvp {tang} vs {want}\n{g}");
    }
}

/// A random step `(h [3], x_t [3]) -> (tanh(z + h / 2), sum(z))` with `z` a
/// random program over `h` and `x_t`, scanned over `xs [3, 3]` from `h0`
/// (stored carries, or checkpointed segments, 2 leaving a short one); loss `sum(cos(hT)) + sum(ys)`.
fn build_scan(steps: &[Step], checkpoint: Option<usize>) -> (Graph, Vec<NodeId>) {
    let f64s = |d: &[usize]| Shape::new(d, DType::F64);
    let mut body = Graph::new("step");
    let h = body.input("h", f64s(&[3]));
    let x = body.input("x_t", f64s(&[3]));
    let mut pool = vec![h, x];
    for &(op, i, j) in steps {
        let (a, b) = (pool[i % pool.len()], pool[j % pool.len()]);
        let z = match op % 6 {
            0 => body.add(a, b),
            1 => body.mul(a, b),
            2 => body.tanh(a),
            3 => body.sin(a),
            4 => body.sm(a, -1),
            _ => body.mean(a, &[-1], true),
        };
        pool.push(z);
    }
    let z = *pool.last().expect("inputs");
    let half = body.mul(h, 0.5);
    let s = body.add(z, half);
    let h2 = body.tanh(s);
    let y = body.sum(z, &[0], false);
    body.set_outputs(vec![h2, y]);
    let mut g = Graph::new("scan");
    let h0 = g.input("a", f64s(&[3]));
    let xs = g.input("b", f64s(&[3, 3]));
    let spec = rlx_ir::ops::control::ScanSpec {
        body: std::sync::Arc::new(body),
        num_carry: 1,
        length: 3,
        reverse: false,
        checkpoint,
    };
    let r = rlx_ir::ops::control::try_tuple_op(&mut g, rlx_ir::Op::Scan(spec), &[h0, xs]).unwrap();
    let c = g.cos(r[0]);
    let lc = g.sum(c, &[0], false);
    let ly = g.sum(r[1], &[0], false);
    let l = g.add(lc, ly);
    g.set_outputs(vec![l]);
    (g, vec![h0, xs])
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]
    #[test]
    fn scan_gradients_and_tangents_match_finite_differences(
        steps in prop::collection::vec((any::<u8>(), any::<usize>(), any::<usize>()), 1..5),
        checkpoint in prop::option::of(prop::sample::select(vec![1usize, 2, 3])),
        a in prop::collection::vec(-1.5f64..1.5, 3),
        b in prop::collection::vec(-1.5f64..1.5, 9),
        da in prop::collection::vec(-1.0f64..1.0, 3),
        db in prop::collection::vec(-1.0f64..1.0, 9),
    ) {
        let (g, leaves) = build_scan(&steps, checkpoint);
        let f = |a: &[f64], b: &[f64]| eval(&g, a, b, &[])[0][0];
        let eps = 1e-6;
        let close = |x: f64, y: f64| (x - y).abs() <= 1e-5 * (1.0 + x.abs().max(y.abs()));
        let d = grad_with_loss(&g, &leaves).unwrap();
        let got = eval(&d, &a, &b, &[]);
        for (k, v) in [&a, &b].iter().enumerate() {
            for j in 0..v.len() {
                let (mut p, mut m) = ((*v).clone(), (*v).clone());
                p[j] += eps;
                m[j] -= eps;
                let want = if k == 0 {
                    (f(&p, &b) - f(&m, &b)) / (2.0 * eps)
                } else {
                    (f(&a, &p) - f(&a, &m)) / (2.0 * eps)
                };
                prop_assert!(close(got[1 + k][j], want), "input {k}[{j}] {} vs {want}\n{g}", got[1 + k][j]);
            }
        }
        let t = jvp(&g, &leaves).unwrap();
        let tang = eval(&t, &a, &b, &[("tangent_a", da.clone(), vec![3]), ("tangent_b", db.clone(), vec![3, 3])])[1][0];
        let shift = |v: &[f64], d: &[f64], s: f64| -> Vec<f64> { v.iter().zip(d).map(|(x, y)| x + s * eps * y).collect() };
        let want = (f(&shift(&a, &da, 1.0), &shift(&b, &db, 1.0)) - f(&shift(&a, &da, -1.0), &shift(&b, &db, -1.0))) / (2.0 * eps);
        prop_assert!(close(tang, want), "jvp {tang} vs {want}\n{g}");
    }
}
