//! In-graph param updates (`CompiledGraph::bind_update`): an output becomes
//! its param's next value after each run, is not returned, and every read
//! in a run sees the value from before it. Checked against f64 loops
//! written here; bad bindings are typed errors that change nothing.

use rlx_driver::Device;
use rlx_ir::{DType, Graph, GraphExt, HostTensor, Shape};
use rlx_runtime::{CompileOptions, CompiledGraph, RuntimeError, Session};

/// Linear regression SGD written out by hand: `e = x @ w - y`,
/// `loss = sum(e * e)`, `w' = w - lr * 2 x.T @ e`. Outputs: loss, w'.
fn regression(lr: f64) -> Graph {
    let mut g = Graph::new("regression");
    let x = g.input("x", Shape::new(&[4, 3], DType::F32));
    let y = g.input("y", Shape::new(&[4, 1], DType::F32));
    let w = g.param("w", Shape::new(&[3, 1], DType::F32));
    let p = g.mm(x, w);
    let e = g.sub(p, y);
    let sq = g.mul(e, e);
    let loss = g.sum(sq, &[0, 1], false);
    let xt = g.transpose_(x, &[1, 0]);
    let grad = g.mm(xt, e);
    let step = g.mul(grad, g.constant(2.0 * lr, DType::F32));
    let next = g.sub(w, step);
    g.set_outputs(vec![loss, next]);
    g
}

const X: [f32; 12] = [
    1.0, 0.5, -1.0, 0.0, 2.0, 1.0, -1.5, 0.25, 0.5, 1.0, -1.0, 2.0,
];
const Y: [f32; 4] = [1.0, -2.0, 0.5, 3.0];

/// The same SGD in f64: the loss before each step, and w after them.
fn reference(steps: usize, lr: f64, mut w: [f64; 3]) -> (Vec<f64>, [f64; 3]) {
    let mut losses = Vec::new();
    for _ in 0..steps {
        let e: Vec<f64> = (0..4)
            .map(|r| (0..3).map(|c| X[r * 3 + c] as f64 * w[c]).sum::<f64>() - Y[r] as f64)
            .collect();
        losses.push(e.iter().map(|v| v * v).sum());
        for (c, wc) in w.iter_mut().enumerate() {
            let g: f64 = (0..4).map(|r| X[r * 3 + c] as f64 * e[r]).sum();
            *wc -= lr * 2.0 * g;
        }
    }
    (losses, w)
}

fn compiled(opts: &CompileOptions) -> CompiledGraph {
    let mut c = Session::new(Device::Cpu)
        .try_compile_with(regression(0.05), opts)
        .unwrap();
    c.set_param("w", &[0.1, -0.2, 0.3]);
    c
}

fn step(c: &mut CompiledGraph) -> Vec<Vec<f32>> {
    c.try_run(&[("x", &X), ("y", &Y)]).unwrap()
}

fn close(got: f32, want: f64) -> bool {
    (got as f64 - want).abs() <= 1e-5 * (1.0 + want.abs())
}

#[test]
fn sgd_steps_update_the_param_in_place() {
    for hoist in [true, false] {
        let mut c = compiled(&CompileOptions::default().hoist_params(hoist));
        c.bind_update(1, "w").unwrap();
        assert_eq!(c.param_updates(), [(1, "w".to_string())]);
        assert_eq!(c.output_shapes(), [Shape::new(&[], DType::F32)]);
        let (losses, w) = reference(5, 0.05, [0.1, -0.2, 0.3]);
        for (i, want) in losses.iter().enumerate() {
            let outs = step(&mut c);
            assert_eq!(outs.len(), 1, "only the loss comes back");
            assert!(
                close(outs[0][0], *want),
                "step {i}: {} vs {want}",
                outs[0][0]
            );
        }
        let got = c.param_value("w").unwrap().to_vec::<f32>().unwrap();
        for (g, want) in got.iter().zip(w) {
            assert!(close(*g, want), "w {got:?} vs {w:?}");
        }
    }
}

#[test]
fn every_read_sees_the_value_from_before_the_run() {
    // Outputs a = p + q and the swap p' = q, q' = p: both updates read the
    // old values, and a run after them sees both new values.
    let mut g = Graph::new("swap");
    let x = g.input("x", Shape::new(&[2], DType::F32));
    let p = g.param("p", Shape::new(&[2], DType::F32));
    let q = g.param("q", Shape::new(&[2], DType::F32));
    let s = g.add(p, q);
    let a = g.mul(s, x);
    let p2 = g.mul(p, x);
    g.set_outputs(vec![a, q, p2]);
    let mut c = Session::new(Device::Cpu).try_compile(g).unwrap();
    c.set_param("p", &[1.0, 2.0]);
    c.set_param("q", &[10.0, 20.0]);
    c.bind_update(1, "p").unwrap();
    c.bind_update(2, "q").unwrap();
    let x = [2.0, 3.0];
    assert_eq!(c.run(&[("x", &x)]), [vec![22.0, 66.0]]);
    // p = [10, 20], q = [2, 6].
    assert_eq!(
        c.param_value("p").unwrap().to_vec::<f32>().unwrap(),
        [10.0, 20.0]
    );
    assert_eq!(
        c.param_value("q").unwrap().to_vec::<f32>().unwrap(),
        [2.0, 6.0]
    );
    assert_eq!(c.run(&[("x", &x)]), [vec![24.0, 78.0]]);
}

#[test]
fn a_shared_param_is_copied_before_its_update() {
    let mut trained = compiled(&CompileOptions::default());
    let mut frozen = compiled(&CompileOptions::default());
    frozen.share_param_from("w", &trained, "w").unwrap();
    trained.bind_update(1, "w").unwrap();
    step(&mut trained);
    let before = [0.1f32, -0.2, 0.3];
    assert_eq!(
        frozen.param_value("w").unwrap().to_vec::<f32>().unwrap(),
        before
    );
    assert_ne!(
        trained.param_value("w").unwrap().to_vec::<f32>().unwrap(),
        before
    );
}

#[test]
fn bad_bindings_are_typed_errors_that_change_nothing() {
    let mut g = regression(0.05);
    let outs = g.outputs().to_vec();
    let as_int = g.cast(outs[1], DType::I32);
    let wrong_dims = g.reshape_(outs[1], &[1, 3]);
    g.set_outputs(vec![outs[0], outs[1], as_int, wrong_dims]);
    let mut c = Session::new(Device::Cpu).try_compile(g).unwrap();
    c.set_param("w", &[0.1, -0.2, 0.3]);
    let err = c.bind_update(4, "w").unwrap_err();
    assert_eq!(
        err,
        RuntimeError::UnknownOutput {
            index: 4,
            outputs: 4
        }
    );
    let err = c.bind_update(1, "v").unwrap_err();
    assert!(
        matches!(&err, RuntimeError::UnknownParam { name, .. } if name == "v"),
        "{err}"
    );
    let err = c.bind_update(2, "w").unwrap_err();
    assert!(
        matches!(
            &err,
            RuntimeError::DType {
                expected: DType::F32,
                given: DType::I32,
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("output 2"), "{err}");
    let err = c.bind_update(3, "w").unwrap_err();
    assert!(
        matches!(&err, RuntimeError::Shape { given, .. } if given == &[1, 3]),
        "{err}"
    );
    assert!(err.to_string().contains("param \"w\""), "{err}");
    // Nothing bound yet: every output comes back, w unchanged.
    assert!(c.param_updates().is_empty());
    assert_eq!(step(&mut c).len(), 4);
    assert_eq!(
        c.param_value("w").unwrap().to_vec::<f32>().unwrap(),
        [0.1, -0.2, 0.3]
    );
    c.bind_update(1, "w").unwrap();
    let err = c.bind_update(1, "w").unwrap_err();
    assert!(
        matches!(err, RuntimeError::UpdateConflict { output: 1, .. }),
        "{err}"
    );
    assert_eq!(c.param_updates(), [(1, "w".to_string())]);
    assert_eq!(step(&mut c).len(), 3);
}

#[test]
fn param_value_names_unknown_and_unset_params() {
    let c = Session::new(Device::Cpu)
        .try_compile(regression(0.1))
        .unwrap();
    assert!(matches!(
        c.param_value("w"),
        Err(RuntimeError::ParamNotSet { .. })
    ));
    assert!(matches!(
        c.param_value("nope"),
        Err(RuntimeError::UnknownParam { .. })
    ));
    let mut c = c;
    let w = HostTensor::from_slice(&[1.0f32, 2.0, 3.0], &[3, 1]).unwrap();
    c.set_param_typed("w", &w).unwrap();
    assert_eq!(c.param_value("w").unwrap(), w);
}

#[test]
fn an_update_of_a_hoisted_param_recomputes_what_was_hoisted() {
    // y = x @ relu(w.T) (hoisted: param-only), w' = 2 w.
    let mut g = Graph::new("hoisted");
    let x = g.input("x", Shape::new(&[1, 2], DType::F32));
    let w = g.param("w", Shape::new(&[2, 2], DType::F32));
    let t = g.transpose_(w, &[1, 0]);
    let r = g.relu(t);
    let y = g.mm(x, r);
    let next = g.mul(w, g.constant(2.0, DType::F32));
    g.set_outputs(vec![y, next]);
    let mut c = Session::new(Device::Cpu).try_compile(g).unwrap();
    assert!(c.prelude_lir().is_some());
    c.set_param("w", &[1.0, 2.0, -3.0, 4.0]);
    c.bind_update(1, "w").unwrap();
    // relu(w.T) = [[1, 0], [2, 4]]: y = [1 + 2 * 2, 2 * 4].
    assert_eq!(c.run(&[("x", &[1.0, 2.0])]), [vec![5.0, 8.0]]);
    assert_eq!(c.run(&[("x", &[1.0, 2.0])]), [vec![10.0, 16.0]]);
    assert_eq!(c.prelude_runs(), 2);
    assert_eq!(
        c.param_value("w").unwrap().to_vec::<f32>().unwrap(),
        [4.0, 8.0, -12.0, 16.0]
    );
}

#[test]
fn a_lone_elementwise_update_and_a_returned_read_of_the_same_param() {
    // a = 2 p is returned; p' = p + x updates p (in place on the CPU).
    let mut g = Graph::new("accumulate");
    let x = g.input("x", Shape::new(&[3], DType::F32));
    let p = g.param("p", Shape::new(&[3], DType::F32));
    let a = g.mul(p, g.constant(2.0, DType::F32));
    let next = g.add(p, x);
    g.set_outputs(vec![a, next]);
    let mut c = Session::new(Device::Cpu).try_compile(g).unwrap();
    c.set_param("p", &[1.0, 2.0, 3.0]);
    c.bind_update(1, "p").unwrap();
    let x = [0.5, -1.0, 4.0];
    assert_eq!(c.run(&[("x", &x)]), [vec![2.0, 4.0, 6.0]]);
    assert_eq!(c.run(&[("x", &x)]), [vec![3.0, 2.0, 14.0]]);
    assert_eq!(
        c.param_value("p").unwrap().to_vec::<f32>().unwrap(),
        [2.0, 0.0, 11.0]
    );
}

#[test]
fn an_update_of_a_param_assembled_into_another_reaches_the_assembly() {
    // o = x + concat(a, b) (the concat is assembled from a's and b's
    // bytes, not computed); a' = a + 1 updates a.
    let mut g = Graph::new("assembled");
    let x = g.input("x", Shape::new(&[4], DType::F32));
    let a = g.param("a", Shape::new(&[2], DType::F32));
    let b = g.param("b", Shape::new(&[2], DType::F32));
    let cat = g.concat_(&[a, b], 0);
    let o = g.add(x, cat);
    let next = g.add(a, g.constant(1.0, DType::F32));
    g.set_outputs(vec![o, next]);
    let mut c = Session::new(Device::Cpu).try_compile(g).unwrap();
    assert!(
        c.lir()
            .graph
            .nodes()
            .iter()
            .all(|n| !matches!(n.op, rlx_ir::Op::Concat { .. })),
        "the concat is assembled"
    );
    c.set_param("a", &[1.0, 2.0]);
    c.set_param("b", &[10.0, 20.0]);
    c.bind_update(1, "a").unwrap();
    let x = [0.5, 0.5, 0.5, 0.5];
    assert_eq!(c.run(&[("x", &x)]), [vec![1.5, 2.5, 10.5, 20.5]]);
    assert_eq!(c.run(&[("x", &x)]), [vec![2.5, 3.5, 10.5, 20.5]]);
    assert_eq!(
        c.param_value("a").unwrap().to_vec::<f32>().unwrap(),
        [3.0, 4.0]
    );
}
