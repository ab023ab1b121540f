//! If / While / Scan / CustomFn executed by the CPU backend as real control
//! flow, checked against the same computation written as a plain Rust loop.

use rlx_driver::Device;
use rlx_ir::ops::control::{CustomFnSpec, ScanSpec, WhileSpec};
use rlx_ir::{verify_all, DType, Graph, GraphExt, HostTensor, Op, Shape};
use rlx_runtime::Session;
use std::sync::Arc;

fn f32s(d: &[usize]) -> Shape {
    Shape::new(d, DType::F32)
}

fn run(g: Graph, feeds: &[(&str, HostTensor)]) -> Vec<HostTensor> {
    let mut c = Session::new(Device::Cpu).try_compile(g).unwrap();
    let f: Vec<(&str, &HostTensor)> = feeds.iter().map(|(n, t)| (*n, t)).collect();
    c.try_run_typed(&f).unwrap()
}

fn vals(t: &HostTensor) -> Vec<f32> {
    t.to_vec::<f32>().unwrap()
}

/// `then: x * 2 + y`, `else: x - y` over `x, y: f32[3]`.
fn branches() -> (Graph, Graph) {
    let mut t = Graph::new("then");
    let x = t.input("x", f32s(&[3]));
    let y = t.input("y", f32s(&[3]));
    let x2 = t.mul(x, t.constant(2.0, DType::F32));
    let r = t.add(x2, y);
    t.set_outputs(vec![r]);
    let mut e = Graph::new("else");
    let x = e.input("x", f32s(&[3]));
    let y = e.input("y", f32s(&[3]));
    let r = e.sub(x, y);
    e.set_outputs(vec![r]);
    (t, e)
}

#[test]
fn if_runs_the_taken_branch() {
    let (t, e) = branches();
    let mut g = Graph::new("if");
    let p = g.input("p", Shape::scalar(DType::Bool));
    let x = g.input("x", f32s(&[3]));
    let y = g.input("y", f32s(&[3]));
    let r = g.if_(p, t, e, &[x, y]);
    g.set_outputs(r);
    let xv = [1.0f32, -2.0, 0.5];
    let yv = [3.0f32, 4.0, -1.0];
    for pred in [true, false] {
        let out = run(
            g.clone(),
            &[
                ("p", HostTensor::scalar(pred)),
                ("x", HostTensor::from_slice(&xv, &[3]).unwrap()),
                ("y", HostTensor::from_slice(&yv, &[3]).unwrap()),
            ],
        );
        let want: Vec<f32> = (0..3)
            .map(|i| {
                if pred {
                    xv[i] * 2.0 + yv[i]
                } else {
                    xv[i] - yv[i]
                }
            })
            .collect();
        assert_eq!(vals(&out[0]), want, "pred {pred}");
    }
}

#[test]
fn if_does_not_run_the_other_branch() {
    // The untaken branch would loop past its bound and fail if it ran.
    let mut body = Graph::new("b");
    let c = body.input("c", f32s(&[]));
    let c1 = body.add(c, body.constant(1.0, DType::F32));
    body.set_outputs(vec![c1]);
    let mut cond = Graph::new("forever");
    let c = cond.input("c", f32s(&[]));
    let t = cond.ge(c, cond.constant(0.0, DType::F32));
    cond.set_outputs(vec![t]);
    let mut bad = Graph::new("bad");
    let c = bad.input("c", f32s(&[]));
    let spec = WhileSpec {
        cond: Arc::new(cond),
        body: Arc::new(body),
        max_iterations: 10,
    };
    let r = rlx_ir::ops::control::try_tuple_op(&mut bad, Op::While(spec), &[c]).unwrap();
    bad.set_outputs(r);
    let mut good = Graph::new("good");
    let c = good.input("c", f32s(&[]));
    let c = good.neg(c);
    good.set_outputs(vec![c]);
    let mut g = Graph::new("if");
    let p = g.input("p", Shape::scalar(DType::Bool));
    let c = g.input("c", f32s(&[]));
    let r = g.if_(p, good, bad, &[c]);
    g.set_outputs(r);
    let out = run(
        g.clone(),
        &[
            ("p", HostTensor::scalar(true)),
            ("c", HostTensor::scalar(2.0f32)),
        ],
    );
    assert_eq!(vals(&out[0]), [-2.0]);
    let mut c = Session::new(Device::Cpu).try_compile(g).unwrap();
    let (p, x) = (HostTensor::scalar(false), HostTensor::scalar(2.0f32));
    let e = c
        .try_run_typed(&[("p", &p), ("c", &x)])
        .unwrap_err()
        .to_string();
    assert!(e.contains("max_iterations") && e.contains("while"), "{e}");
}

#[test]
fn while_loops_until_the_condition_fails() {
    // Collatz-like: while x < 100 { x = x * 1.5 + i; i += 1 }.
    let mut cond = Graph::new("cond");
    let x = cond.input("x", f32s(&[]));
    let _i = cond.input("i", Shape::scalar(DType::I32));
    let c = cond.lt(x, cond.constant(100.0, DType::F32));
    cond.set_outputs(vec![c]);
    let mut body = Graph::new("body");
    let x = body.input("x", f32s(&[]));
    let i = body.input("i", Shape::scalar(DType::I32));
    let fi = body.cast(i, DType::F32);
    let x15 = body.mul(x, body.constant(1.5, DType::F32));
    let x2 = body.add(x15, fi);
    let i2 = body.add(i, body.constant(1.0, DType::I32));
    body.set_outputs(vec![x2, i2]);
    let mut g = Graph::new("w");
    let x = g.input("x", f32s(&[]));
    let i = g.input("i", Shape::scalar(DType::I32));
    let r = g.while_loop(cond, body, &[x, i]);
    g.set_outputs(r);
    let out = run(
        g,
        &[
            ("x", HostTensor::scalar(1.0f32)),
            ("i", HostTensor::scalar(0i32)),
        ],
    );
    let (mut xv, mut iv) = (1.0f32, 0i32);
    while xv < 100.0 {
        xv = xv * 1.5 + iv as f32;
        iv += 1;
    }
    assert_eq!(vals(&out[0]), [xv]);
    assert_eq!(out[1].to_vec::<i32>().unwrap(), [iv]);
}

/// An Elman RNN step: `h' = tanh(x_t W + h U + b)`, `y_t = h' . v`.
fn rnn_body(nx: usize, nh: usize) -> Graph {
    let mut b = Graph::new("rnn_step");
    let h = b.input("h", f32s(&[nh]));
    let w = b.input("w", f32s(&[nx, nh]));
    let u = b.input("u", f32s(&[nh, nh]));
    let x = b.input("x_t", f32s(&[nx]));
    let xw = b.mm(x, w);
    let hu = b.mm(h, u);
    let s = b.add(xw, hu);
    let h2 = b.tanh(s);
    let y = b.sum(h2, &[0], false);
    b.set_outputs(vec![h2, w, u, y]);
    b
}

fn rnn_reference(
    xs: &[f32],
    w: &[f32],
    u: &[f32],
    h0: &[f32],
    nx: usize,
    nh: usize,
) -> (Vec<f32>, Vec<f32>) {
    let t_len = xs.len() / nx;
    let mut h = h0.to_vec();
    let mut ys = Vec::new();
    for t in 0..t_len {
        let x = &xs[t * nx..(t + 1) * nx];
        let h2: Vec<f32> = (0..nh)
            .map(|j| {
                let s: f32 = (0..nx).map(|i| x[i] * w[i * nh + j]).sum::<f32>()
                    + (0..nh).map(|k| h[k] * u[k * nh + j]).sum::<f32>();
                s.tanh()
            })
            .collect();
        ys.push(h2.iter().sum());
        h = h2;
    }
    (h, ys)
}

fn data(n: usize, seed: u32) -> Vec<f32> {
    (0..n)
        .map(|i| {
            ((((i as u32).wrapping_mul(2654435761) ^ seed.wrapping_mul(40503)) >> 8) % 256) as f32
                / 256.0
                - 0.5
        })
        .collect()
}

#[test]
fn scan_runs_an_rnn_forwards_and_in_reverse() {
    let (nx, nh, t_len) = (3, 4, 5);
    let xs = data(t_len * nx, 1);
    let w = data(nx * nh, 2);
    let u = data(nh * nh, 3);
    let h0 = data(nh, 4);
    for reverse in [false, true] {
        let mut g = Graph::new("rnn");
        let h = g.input("h0", f32s(&[nh]));
        let wn = g.input("w", f32s(&[nx, nh]));
        let un = g.input("u", f32s(&[nh, nh]));
        let x = g.input("xs", f32s(&[t_len, nx]));
        let (carry, ys) =
            rlx_ir::ops::control::try_scan(&mut g, rnn_body(nx, nh), &[h, wn, un], &[x], reverse)
                .unwrap();
        g.set_outputs(vec![carry[0], ys[0]]);
        assert!(verify_all(&g).is_empty());
        let out = run(
            g,
            &[
                ("h0", HostTensor::from_slice(&h0, &[nh]).unwrap()),
                ("w", HostTensor::from_slice(&w, &[nx, nh]).unwrap()),
                ("u", HostTensor::from_slice(&u, &[nh, nh]).unwrap()),
                ("xs", HostTensor::from_slice(&xs, &[t_len, nx]).unwrap()),
            ],
        );
        let mut xs_order = xs.clone();
        if reverse {
            xs_order = xs.chunks(nx).rev().flatten().copied().collect();
        }
        let (h_want, mut ys_want) = rnn_reference(&xs_order, &w, &u, &h0, nx, nh);
        if reverse {
            ys_want.reverse();
        }
        for (a, b) in vals(&out[0]).iter().zip(&h_want) {
            assert!((a - b).abs() < 1e-5, "h {a} vs {b}");
        }
        assert_eq!(out[1].dims(), &[t_len]);
        for (a, b) in vals(&out[1]).iter().zip(&ys_want) {
            assert!((a - b).abs() < 1e-5, "y {a} vs {b}");
        }
    }
}

#[test]
fn custom_fn_runs_its_body_and_prints_nested() {
    let mut body = Graph::new("square");
    let x = body.input("x", f32s(&[2]));
    let y = body.mul(x, x);
    body.set_outputs(vec![y]);
    let mut g = Graph::new("c");
    let x = g.input("x", f32s(&[2]));
    let spec = CustomFnSpec {
        name: "square".into(),
        body: Arc::new(body),
        vjp: None,
        jvp: None,
    };
    let r = g.custom_fn(spec, &[x]);
    g.set_outputs(r);
    let text = g.to_string();
    assert!(
        text.contains("custom_fn{name=\"square\"") && text.contains("body: graph \"square\""),
        "{text}"
    );
    let out = run(
        g,
        &[("x", HostTensor::from_slice(&[3.0f32, -0.5], &[2]).unwrap())],
    );
    assert_eq!(vals(&out[0]), [9.0, 0.25]);
}

#[test]
fn mismatched_signatures_are_errors_naming_the_op() {
    let (t, _) = branches();
    let mut e = Graph::new("else");
    let x = e.input("x", f32s(&[3]));
    let _y = e.input("y", f32s(&[3]));
    let s = e.sum(x, &[0], true);
    e.set_outputs(vec![s]);
    let mut g = Graph::new("if");
    let p = g.input("p", Shape::scalar(DType::Bool));
    let x = g.input("x", f32s(&[3]));
    let y = g.input("y", f32s(&[3]));
    let err = rlx_ir::ops::control::try_if(&mut g, p, t.clone(), e, &[x, y])
        .unwrap_err()
        .to_string();
    assert!(err.starts_with("if: else-branch outputs"), "{err}");
    // Wrong operand count.
    let err = rlx_ir::ops::control::try_if(&mut g, p, t, branches().1, &[x])
        .unwrap_err()
        .to_string();
    assert!(err.contains("then-branch inputs vs operands"), "{err}");
    // A scan whose xs length disagrees.
    let mut g = Graph::new("s");
    let h = g.input("h", f32s(&[4]));
    let wn = g.input("w", f32s(&[3, 4]));
    let un = g.input("u", f32s(&[4, 4]));
    let x = g.input("xs", f32s(&[5, 3]));
    let spec = ScanSpec {
        body: Arc::new(rnn_body(3, 4)),
        num_carry: 3,
        length: 6,
        reverse: false,
        checkpoint: None,
    };
    let err = g
        .try_node(Op::Scan(spec), &[h, wn, un, x], None)
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("scan{") && err.contains("length 6"),
        "{err}"
    );
    // A hand-built tuple_get that lies about its shape fails verification.
    let (t, e) = branches();
    let mut g = Graph::new("lie");
    let p = g.input("p", Shape::scalar(DType::Bool));
    let x = g.input("x", f32s(&[3]));
    let y = g.input("y", f32s(&[3]));
    let r = g.if_(p, t, e, &[x, y]);
    let tuple = g.node(r[0]).inputs[0];
    let bad = g
        .try_node(
            Op::TupleGet {
                index: 0,
                offset: 0,
                shape: Shape::new(&[3], DType::I32),
            },
            &[tuple],
            None,
        )
        .unwrap();
    g.set_outputs(vec![bad]);
    let errs = verify_all(&g);
    assert!(
        errs.iter().any(|e| e.to_string().contains("tuple_get")),
        "{errs:?}"
    );
}

#[test]
fn control_flow_compiles_under_every_precision_and_decomposition_option() {
    use rlx_runtime::{CompileOptions, Precision};
    // then: softmax(x) * y (a composite inside a sub-graph); else: x - y.
    let mut t = Graph::new("then");
    let x = t.input("x", f32s(&[3]));
    let y = t.input("y", f32s(&[3]));
    let s = t.sm(x, 0);
    let r = t.mul(s, y);
    t.set_outputs(vec![r]);
    let (_, e) = branches();
    let mut g = Graph::new("if");
    let p = g.input("p", Shape::scalar(DType::Bool));
    let x = g.input("x", f32s(&[3]));
    let y = g.input("y", f32s(&[3]));
    let r = g.if_(p, t, e, &[x, y]);
    let r2 = g.mul(r[0], g.constant(2.0, DType::F32));
    g.set_outputs(vec![r2]);
    let xv = [0.5f32, -1.0, 2.0];
    let yv = [1.0f32, 2.0, 3.0];
    let z: f32 = xv.iter().map(|v| v.exp()).sum();
    let want: Vec<f32> = (0..3).map(|i| 2.0 * xv[i].exp() / z * yv[i]).collect();
    for (prec, tol) in [
        (Precision::F32, 1e-6),
        (Precision::F16, 2e-2),
        (Precision::BF16, 5e-2),
    ] {
        for decompose in [false, true] {
            let opts = CompileOptions::default()
                .precision(prec)
                .decompose_composites(decompose);
            let mut c = Session::new(Device::Cpu)
                .try_compile_with(g.clone(), &opts)
                .unwrap_or_else(|e| panic!("{prec:?} {decompose}: {e}"));
            let (pt, xt, yt) = (
                HostTensor::scalar(true),
                HostTensor::from_slice(&xv, &[3]).unwrap(),
                HostTensor::from_slice(&yv, &[3]).unwrap(),
            );
            let out = c
                .try_run_typed(&[("p", &pt), ("x", &xt), ("y", &yt)])
                .unwrap();
            for (a, b) in out[0].to_f64_lossy().iter().zip(&want) {
                assert!(
                    (a - *b as f64).abs() < tol,
                    "{prec:?} {decompose}: {a} vs {b}"
                );
            }
        }
    }
}

#[test]
fn control_flow_over_constants_folds_or_runs() {
    // Every operand is a constant, so constant folding may evaluate the
    // whole loop at compile time; either way the result is the same.
    let mut cond = Graph::new("cond");
    let c = cond.input("c", f32s(&[2]));
    let s = cond.sum(c, &[0], false);
    let t = cond.lt(s, cond.constant(50.0, DType::F32));
    cond.set_outputs(vec![t]);
    let mut body = Graph::new("body");
    let c = body.input("c", f32s(&[2]));
    let c2 = body.mul(c, body.constant(3.0, DType::F32));
    body.set_outputs(vec![c2]);
    let mut g = Graph::new("const_loop");
    let x = g.input("x", f32s(&[2]));
    let init = g.constant_tensor(&HostTensor::from_slice(&[1.0f32, 2.0], &[2]).unwrap());
    let r = g.while_loop(cond, body, &[init]);
    let y = g.add(r[0], x);
    g.set_outputs(vec![y]);
    let out = run(
        g,
        &[("x", HostTensor::from_slice(&[0.5f32, 0.25], &[2]).unwrap())],
    );
    // 3 -> 9 -> 27 -> 81 (sum of [27, 54] = 81 >= 50).
    assert_eq!(vals(&out[0]), [27.5, 54.25]);
}
