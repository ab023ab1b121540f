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

fn eval(g: &Graph, a: &[f64], b: &[f64], extra: &[(&str, Vec<f64>, Vec<usize>)]) -> Vec<Vec<f64>> {
    let mut c = Session::new(Device::Cpu).try_compile(g.clone()).unwrap();
    let ta = HostTensor::from_vec(a.to_vec(), &[3]).unwrap();
    let tb = HostTensor::from_vec(b.to_vec(), &[2, 3]).unwrap();
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
